/* The poisson3d system of `desync cg`, solved with PETSc's CG family, for the side-by-side
 * comparison in bench/cg_compare.py (docs/benchmarks.md, "CG side by side with PETSc").
 *
 *   mpirun -np 2 petsc_poisson3d -n 128 -method cg|cg-sr|pipecg|groppcg -pc none|jacobi -rtol 1e-6 [-json FILE]
 *
 * The system is the one desync builds for `--problem poisson3d --global N`: the unknowns are the
 * nx*ny*nz interior points of the grid, A is the 7-point stencil with 6 on the diagonal and -1 to
 * each neighbour (no h^2 scaling), the Dirichlet value u = 1 on the boundary is moved to the right-hand
 * side (b_i = number of neighbours of point i on the boundary), so the exact solution is u = 1. The
 * initial guess is zero and the run stops at the first iteration k with ||r_k||_2 <= rtol * ||b||_2,
 * r_k being the unpreconditioned residual (KSP_NORM_UNPRECONDITIONED and a convergence test against
 * ||b||_2, whatever the preconditioner), which is desync's criterion.
 *
 * The grid is a DMDA (star stencil, width 1) on the process grid MPI_Dims_create chooses, with x split
 * first, as desync's Cartesian decomposition: rank r owns the same block of points in both programs and
 * numbers them the same way (rank-major, x fastest inside a rank), block sizes differing by at most one
 * with the larger blocks first. The matrix is the DMDA's AIJ matrix (MPIAIJ on more than one rank).
 *
 * Timing: MPI_Wtime around KSPSolve only, after KSPSetUp and a barrier; the reported solve time is the
 * slowest rank's. After the solve the true residual ||b - A x||_2 / ||b||_2 is computed with a fresh
 * MatMult. Rank 0 prints one JSON line to stdout (and writes it to -json FILE when given).
 *
 * Options (one or two leading dashes):
 *   -n N | -nx NX -ny NY -nz NZ   interior points per direction (default 128)
 *   -dims PXxPYxPZ                process grid as desync's --dims; 0 entries are chosen by
 *                                 MPI_Dims_create (default 0x0x0)
 *   -method cg|cg-sr|pipecg|groppcg
 *                                 KSPCG; KSPCG with KSPCGUseSingleReduction (the two dot products of an
 *                                 iteration in one reduction, Chronopoulos/Gear, the counterpart of
 *                                 desync's cg-cg); KSPPIPECG; KSPGROPPCG (default cg)
 *   -pc none|jacobi               preconditioner (default none)
 *   -rtol R                       relative tolerance against ||b||_2 (default 1e-6)
 *   -maxit K                      iteration limit (default 10000)
 *   -warmup W                     untimed solves before the timed one (default 0: the timed solve is
 *                                 the process's first, as desync's is)
 *   -json FILE                    also write the JSON line to FILE
 * Further PETSc options (-log_view, -dm_mat_type, -ksp_monitor, ...) are passed on to PETSc.
 */
#include <petscdmda.h>
#include <petscksp.h>

#include "petsc_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ||r_k|| <= rtol * ||b||, with ||b|| fixed before the solve (not PETSc's default reference, the
 * initial residual norm; with the zero initial guess both are ||b||, but this holds for any guess). */
typedef struct {
  PetscReal rtol;
  PetscReal bnorm;
} StopCtx;

static PetscErrorCode stop_test(KSP ksp, PetscInt it, PetscReal rnorm, KSPConvergedReason* reason, void* vctx) {
  StopCtx* ctx = (StopCtx*)vctx;
  (void)ksp;
  (void)it;
  *reason = KSP_CONVERGED_ITERATING;
  if (PetscIsInfOrNanReal(rnorm))
    *reason = KSP_DIVERGED_NANORINF;
  else if (rnorm <= ctx->rtol * ctx->bnorm)
    *reason = KSP_CONVERGED_RTOL;
  return 0;
}

/* b: number of the point's neighbours on the boundary; A: 6 on the diagonal, -1 to interior neighbours. */
static PetscErrorCode assemble(DM da, Mat A, Vec b) {
  PetscInt xs, ys, zs, xm, ym, zm, mx, my, mz;
  PetscScalar*** bb;
  PetscFunctionBeginUser;
  PetscCall(DMDAGetInfo(da, NULL, &mx, &my, &mz, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(DMDAVecGetArray(da, b, &bb));
  for (PetscInt k = zs; k < zs + zm; ++k)
    for (PetscInt j = ys; j < ys + ym; ++j)
      for (PetscInt i = xs; i < xs + xm; ++i) {
        MatStencil row = {0}, col[7];
        PetscScalar val[7];
        PetscInt nc = 0, on_boundary = 0;
        row.i = i;
        row.j = j;
        row.k = k;
        /* neighbours z-, y-, x-, then the diagonal, then x+, y+, z+; neighbours outside the grid are
         * boundary points, whose value 1 goes to the right-hand side */
        const PetscInt di[6] = {0, 0, -1, 1, 0, 0}, dj[6] = {0, -1, 0, 0, 1, 0}, dk[6] = {-1, 0, 0, 0, 0, 1};
        for (int s = 0; s < 6; ++s) {
          if (s == 3) {
            col[nc] = row;
            val[nc++] = 6.0;
          }
          PetscInt ni = i + di[s], nj = j + dj[s], nk = k + dk[s];
          if (ni < 0 || ni >= mx || nj < 0 || nj >= my || nk < 0 || nk >= mz) {
            ++on_boundary;
            continue;
          }
          col[nc].i = ni;
          col[nc].j = nj;
          col[nc].k = nk;
          col[nc].c = 0;
          val[nc++] = -1.0;
        }
        PetscCall(MatSetValuesStencil(A, 1, &row, nc, col, val, INSERT_VALUES));
        bb[k][j][i] = (PetscScalar)on_boundary;
      }
  PetscCall(DMDAVecRestoreArray(da, b, &bb));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

int main(int argc, char** argv) {
  /* Accept --option as well as -option. */
  char** args = petsc_bench_one_dash(argc, argv);
  char** pargs = args;

  PetscCall(PetscInitialize(&argc, &pargs, NULL,
                            "petsc_poisson3d: desync's poisson3d system with PETSc's CG family\n"));
  MPI_Comm comm = PETSC_COMM_WORLD;
  PetscMPIInt rank, size;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));

  PetscInt n = 128, nx, ny, nz, maxit = 10000, warmup = 0;
  PetscReal rtol = 1e-6;
  char method[32] = "cg", pc_name[32] = "none", dims_text[64] = "0x0x0", json_path[PETSC_MAX_PATH_LEN] = "";
  PetscBool has_json = PETSC_FALSE;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  nx = ny = nz = n;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nx", &nx, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ny", &ny, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nz", &nz, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-dims", dims_text, sizeof dims_text, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-maxit", &maxit, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-warmup", &warmup, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-method", method, sizeof method, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-pc", pc_name, sizeof pc_name, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-json", json_path, sizeof json_path, &has_json));

  KSPType ksp_type;
  PetscBool single_reduction = PETSC_FALSE;
  if (!strcmp(method, "cg"))
    ksp_type = KSPCG;
  else if (!strcmp(method, "cg-sr")) {
    ksp_type = KSPCG;
    single_reduction = PETSC_TRUE;
  }
  else if (!strcmp(method, "pipecg"))
    ksp_type = KSPPIPECG;
  else if (!strcmp(method, "groppcg"))
    ksp_type = KSPGROPPCG;
  else
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "-method must be cg, cg-sr, pipecg or groppcg, not '%s'", method);
  PCType pc_type;
  if (!strcmp(pc_name, "none"))
    pc_type = PCNONE;
  else if (!strcmp(pc_name, "jacobi"))
    pc_type = PCJACOBI;
  else
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "-pc must be none or jacobi, not '%s'", pc_name);
  PetscCheck(nx > 0 && ny > 0 && nz > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "grid sizes must be positive");

  /* desync's process grid: MPI_Dims_create over (x, y, z) with the hint, larger counts first, so x is
   * split first; DMDA numbers ranks x fastest, as desync's Cartesian communicator does. */
  int dims[3] = {0, 0, 0};
  {
    char tail = 0;
    PetscCheck(sscanf(dims_text, "%dx%dx%d%c", &dims[0], &dims[1], &dims[2], &tail) == 3 && dims[0] >= 0 &&
                   dims[1] >= 0 && dims[2] >= 0,
               comm, PETSC_ERR_ARG_WRONG, "-dims '%s': expected PXxPYxPZ, e.g. 2x1x1 or 0x0x0", dims_text);
    const int fixed = (dims[0] ? dims[0] : 1) * (dims[1] ? dims[1] : 1) * (dims[2] ? dims[2] : 1);
    const int all_fixed = dims[0] && dims[1] && dims[2];
    PetscCheck(all_fixed ? fixed == size : size % fixed == 0, comm, PETSC_ERR_ARG_WRONG,
               "-dims %s does not fit %d ranks", dims_text, (int)size);
  }
  PetscCallMPI(MPI_Dims_create(size, 3, dims));
  PetscCheck(dims[0] <= nx && dims[1] <= ny && dims[2] <= nz, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "process grid %dx%dx%d has more ranks than points along an axis", dims[0], dims[1], dims[2]);

  DM da;
  PetscCall(DMDACreate3d(comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, nx, ny,
                         nz, dims[0], dims[1], dims[2], 1, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  Mat A;
  Vec x, b, r;
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(DMCreateGlobalVector(da, &b));
  PetscCall(VecDuplicate(b, &x));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(assemble(da, A, b));
  MatType mat_type;
  PetscCall(MatGetType(A, &mat_type));

  StopCtx stop = {rtol, 0.0};
  PetscCall(VecNorm(b, NORM_2, &stop.bnorm));

  KSP ksp;
  PC pc;
  PetscCall(KSPCreate(comm, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, ksp_type));
  if (single_reduction) PetscCall(KSPCGUseSingleReduction(ksp, PETSC_TRUE));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pc_type));
  PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetTolerances(ksp, rtol, 0.0, PETSC_DEFAULT, maxit));
  PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_FALSE));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetConvergenceTest(ksp, stop_test, &stop, NULL));
  PetscCall(KSPSetUp(ksp));
  KSPNormType norm_type;
  PetscCall(KSPGetNormType(ksp, &norm_type));
  PetscCheck(norm_type == KSP_NORM_UNPRECONDITIONED, comm, PETSC_ERR_ARG_WRONG,
             "the comparison needs the unpreconditioned residual norm, not %s", KSPNormTypes[norm_type]);

  for (PetscInt w = 0; w < warmup; ++w) {
    PetscCall(VecSet(x, 0.0));
    PetscCall(KSPSolve(ksp, b, x));
  }
  PetscCall(VecSet(x, 0.0));
  PetscCallMPI(MPI_Barrier(comm));
  double t0 = MPI_Wtime();
  PetscCall(KSPSolve(ksp, b, x));
  double t_local = MPI_Wtime() - t0, t_solve = 0.0;
  PetscCallMPI(MPI_Allreduce(&t_local, &t_solve, 1, MPI_DOUBLE, MPI_MAX, comm));

  PetscInt its;
  KSPConvergedReason reason;
  PetscReal last_norm, rnorm, err;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetResidualNorm(ksp, &last_norm));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b)); /* r = b - A x */
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecShift(x, -1.0)); /* x - exact solution */
  PetscCall(VecNorm(x, NORM_INFINITY, &err));
  const double true_residual = (double)(rnorm / stop.bnorm);

  if (rank == 0) {
    char version[128], q_method[64], q_type[64], q_pc[64], q_reason[96], q_mat[64], q_version[160];
    PetscCall(PetscGetVersion(version, sizeof version));
    json_string(q_method, sizeof q_method, method);
    json_string(q_type, sizeof q_type, ksp_type);
    json_string(q_pc, sizeof q_pc, pc_name);
    json_string(q_reason, sizeof q_reason, KSPConvergedReasons[reason]);
    json_string(q_mat, sizeof q_mat, mat_type);
    json_string(q_version, sizeof q_version, version);
    char line[2048];
    snprintf(line, sizeof line,
             "{\"solver\": \"petsc\", \"method\": %s, \"ksp_type\": %s, \"single_reduction\": %s, \"pc\": %s, \"n\": [%d, %d, %d], "
             "\"unknowns\": %lld, \"ranks\": %d, \"process_grid\": [%d, %d, %d], \"mat_type\": %s, "
             "\"rtol\": %.3e, \"norm_type\": \"unpreconditioned\", \"warmup_solves\": %d, \"rhs_norm\": %.17g, "
             "\"iterations\": %d, \"solve_seconds\": %.9g, \"seconds_per_iteration\": %.9g, "
             "\"relative_residual_norm\": %.17g, \"true_residual\": %.17g, \"max_error\": %.17g, "
             "\"converged\": %s, \"converged_reason\": %s, \"petsc_version\": %s}",
             q_method, q_type, single_reduction ? "true" : "false", q_pc, (int)nx, (int)ny, (int)nz, (long long)nx * ny * nz, (int)size, dims[0],
             dims[1], dims[2], q_mat, (double)rtol, (int)warmup, (double)stop.bnorm, (int)its, t_solve,
             its > 0 ? t_solve / (double)its : 0.0, (double)(last_norm / stop.bnorm), true_residual, (double)err,
             reason > 0 ? "true" : "false", q_reason, q_version);
    petsc_bench_emit("petsc_poisson3d", line, has_json, json_path);
  }

  const int exit_code = reason > 0 ? 0 : 1;
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  free(args);
  return exit_code;
}
