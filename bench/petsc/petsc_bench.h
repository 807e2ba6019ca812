/* What the PETSc peer drivers of desync's comparisons share (petsc_poisson3d.c, petsc_poisson2d_asm.c):
 * desync-style --options, JSON string quoting, and the one JSON line each run prints. */
#ifndef DESYNC_PETSC_BENCH_H
#define DESYNC_PETSC_BENCH_H

#include <petscsys.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* argv with --option turned into -option (PETSc's option database wants one dash); free() it after
 * PetscFinalize. */
static char** petsc_bench_one_dash(int argc, char** argv) {
  char** args = (char**)malloc((size_t)(argc + 1) * sizeof(char*));
  for (int a = 0; a < argc; ++a) args[a] = (a > 0 && strncmp(argv[a], "--", 2) == 0 && argv[a][2]) ? argv[a] + 1 : argv[a];
  args[argc] = NULL;
  return args;
}

/* s as a quoted JSON string in out (truncated to size). */
static void json_string(char* out, size_t size, const char* s) {
  size_t o = 0;
  if (o + 1 < size) out[o++] = '"';
  for (; *s && o + 3 < size; ++s) {
    if (*s == '"' || *s == '\\') out[o++] = '\\';
    out[o++] = *s;
  }
  if (o + 1 < size) out[o++] = '"';
  out[o < size ? o : size - 1] = '\0';
}

/* The run's JSON line on stdout, and in json_path when given (a message names `program` if it cannot
 * be written). */
static void petsc_bench_emit(const char* program, const char* line, PetscBool has_json, const char* json_path) {
  printf("%s\n", line);
  fflush(stdout);
  if (has_json && json_path[0]) {
    FILE* f = fopen(json_path, "w");
    if (!f) {
      fprintf(stderr, "%s: cannot write %s\n", program, json_path);
    } else {
      fprintf(f, "%s\n", line);
      fclose(f);
    }
  }
}

#endif
