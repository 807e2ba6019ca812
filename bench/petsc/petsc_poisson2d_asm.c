/* The 2D Poisson system of `desync schwarz`, solved with PETSc's additive Schwarz (PCASM), for the
 * side-by-side comparison in bench/schwarz_compare.py (docs/benchmarks.md, "Optimized Schwarz side by
 * side with PETSc").
 *
 *   mpirun -np 2 petsc_poisson2d_asm -n 128 -method rasrich|cgasm -overlap 1 -rtol 1e-7 [-json FILE]
 *
 * The system is the one desync builds for `desync schwarz --problem poisson2d --global N` (problems/
 * poisson2d.hpp): -Laplace(u) = f on the unit square, 5-point finite differences on the nx*ny interior
 * points, hx = 1/(nx+1), hy = 1/(ny+1), point (i, j) at ((i+1) hx, (j+1) hy); A has 2/hx^2 + 2/hy^2
 * on the diagonal, -1/hx^2 to the x neighbours and -1/hy^2 to the y neighbours; the Dirichlet values
 * g = u on the boundary are moved to the right-hand side. u(x, y) = sin(pi x) sin(2 pi y) + x^2 + y,
 * f = 5 pi^2 sin(pi x) sin(2 pi y) - 2, so the discretisation error can be measured (max_error).
 *
 * The grid is a 2D DMDA (star stencil, width 1) on the process grid MPI_Dims_create chooses, x split
 * first, as desync's: rank r owns the same block of points in both programs (block sizes differing by
 * at most one, the larger blocks first, given to the DMDA explicitly), numbered rank-major, x fastest
 * inside a rank. The matrix is the DMDA's AIJ matrix (MPIAIJ on more than one rank).
 *
 * Methods (one subdomain per rank, exact subdomain solves):
 *   rasrich  KSPRICHARDSON (scale 1) with PCASM, PC_ASM_RESTRICT: restricted additive Schwarz as a
 *            stationary iteration, x <- x + sum_p R~_p^T A_p^{-1} R_p (b - A x), which is desync's
 *            classical parallel Schwarz (`--alpha inf`: Dirichlet data from the neighbours' current
 *            values on the extended subdomain, each rank keeping its own block).
 *   cgasm    KSPCG with PCASM, PC_ASM_BASIC (the symmetric variant: R_p^T on the whole overlap), as
 *            CG needs a symmetric preconditioner.
 * The subdomain of a rank is its block extended by -overlap gamma points toward every neighbour, as
 * desync's. -subdomains box (default) gives PCASM these boxes explicitly (PCASMSetLocalSubdomains with
 * the box as the overlapping set and the block as the non-overlapping one, PCASMSetOverlap 0), the same
 * sets as desync's on any process grid. -subdomains graph leaves PCASM its default (the rank's own
 * rows) and asks for PCASMSetOverlap(gamma), MatIncreaseOverlap's gamma layers of matrix-graph
 * neighbours: the same sets on a process grid of one row or one column (2 ranks: 2x1), but without the
 * corner points of the box on a 2D process grid (5-point graph distance is the Manhattan distance).
 * -pc_asm_print_subdomains prints the sets. The subdomain matrix is A restricted to the set (rows and
 * columns), i.e. the Dirichlet problem on the extended subdomain; its solve is exact: sub KSPPREONLY
 * with -local cholmod (default where PETSc has SuiteSparse: PCCHOLESKY with CHOLMOD and its default
 * settings, desync's subdomain solver; CHOLMOD then chooses its supernodal factorisation here, whose
 * solves call BLAS), cholmod-simplicial (the same with -sub_mat_cholmod_factor SIMPLICIAL), lu (PCLU,
 * PETSc's own, nested dissection ordering) or cholesky (PCCHOLESKY, PETSc's own, nested dissection
 * ordering). -sub_* options given on the command line take precedence.
 *
 * Stop test as desync's: the initial guess is zero and the run stops at the first iteration k with
 * ||r_k||_2 <= rtol * ||b||_2 (-stop global, default), r_k = b - A x_k the unpreconditioned residual
 * (KSP_NORM_UNPRECONDITIONED, for KSPRICHARDSON too, and a convergence test against ||b||_2). With
 * -stop local the run stops instead when every rank's residual on its own points meets
 * ||r_p||_2 < rtol ||b_p||_2, desync schwarz's every-rank-local rule (one more residual per iteration,
 * KSPBuildResidual); then iterations_global_criterion is the first iteration that met the global test.
 *
 * Timing (MPI_Wtime, slowest rank, each after a barrier): setup_seconds = KSPSetUp (PCSetUp of PCASM:
 * subdomain sets, scatters, extraction of the subdomain matrices); factor_seconds = KSPSetUpOnBlocks
 * (the subdomain factorisations); solve_seconds = KSPSolve only. After the solve the true residual
 * ||b - A x||_2 / ||b||_2 is computed with a fresh MatMult. Rank 0 prints one JSON line to stdout (and
 * writes it to -json FILE when given).
 *
 * Options (one or two leading dashes):
 *   -n N | -nx NX -ny NY          interior points per direction (default 128)
 *   -dims PXxPY                   process grid as desync's --dims; 0 entries are chosen by
 *                                 MPI_Dims_create (default 0x0)
 *   -method rasrich|cgasm         see above (default rasrich)
 *   -overlap G                    gamma >= 0 (default 1)
 *   -subdomains box|graph         see above (default box)
 *   -local cholmod|cholmod-simplicial|lu|cholesky
 *                                 subdomain solver (default cholmod, lu without SuiteSparse)
 *   -rtol R                       relative tolerance (default 1e-7, desync schwarz's --tol)
 *   -stop global|local            see above (default global)
 *   -maxit K                      iteration limit (default 100000)
 *   -warmup W                     untimed solves before the timed one (default 0)
 *   -json FILE                    also write the JSON line to FILE
 * Further PETSc options (-log_view, -ksp_monitor, -pc_asm_print_subdomains, -sub_pc_factor_*, ...) are
 * passed on to PETSc.
 */
#include <petscdmda.h>
#include <petscksp.h>

#include "petsc_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double pi = 3.14159265358979323846;
static double exact(double x, double y) { return sin(pi * x) * sin(2 * pi * y) + x * x + y; }
static double source(double x, double y) { return 5 * pi * pi * sin(pi * x) * sin(2 * pi * y) - 2; }

/* desync's decomposition::block_size / block_start: sizes differ by at most one, larger first. */
static PetscInt block_size(PetscInt n, PetscInt p, PetscInt c) { return n / p + (c < n % p ? 1 : 0); }
static PetscInt block_start(PetscInt n, PetscInt p, PetscInt c) { return c * (n / p) + (c < n % p ? c : n % p); }

typedef struct {
  PetscReal rtol, bnorm, bnorm_local; /* ||b||, this rank's ||b_p|| */
  PetscBool local;                    /* every-rank-local rule */
  Vec work1, work2;                   /* for KSPBuildResidual */
  PetscInt first_global;              /* first iteration meeting ||r|| <= rtol ||b|| (-1: none yet) */
} StopCtx;

static PetscErrorCode stop_test(KSP ksp, PetscInt it, PetscReal rnorm, KSPConvergedReason* reason, void* vctx) {
  StopCtx* ctx = (StopCtx*)vctx;
  *reason = KSP_CONVERGED_ITERATING;
  if (PetscIsInfOrNanReal(rnorm)) {
    *reason = KSP_DIVERGED_NANORINF;
    return 0;
  }
  const PetscBool global_met = rnorm <= ctx->rtol * ctx->bnorm;
  if (global_met && ctx->first_global < 0) ctx->first_global = it;
  if (!ctx->local) {
    if (global_met) *reason = KSP_CONVERGED_RTOL;
    return 0;
  }
  /* desync's rule: ||r_p|| < rtol ||b_p|| on every rank, r the residual of the current iterate */
  Vec r;
  const PetscScalar* ra;
  PetscInt m;
  PetscReal sum = 0;
  PetscCall(KSPBuildResidual(ksp, ctx->work1, ctx->work2, &r));
  PetscCall(VecGetLocalSize(r, &m));
  PetscCall(VecGetArrayRead(r, &ra));
  for (PetscInt i = 0; i < m; ++i) sum += PetscRealPart(ra[i] * PetscConj(ra[i]));
  PetscCall(VecRestoreArrayRead(r, &ra));
  int mine = sqrt((double)sum) < ctx->rtol * ctx->bnorm_local ? 1 : 0, all = 0;
  PetscCallMPI(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, PetscObjectComm((PetscObject)ksp)));
  if (all) *reason = KSP_CONVERGED_RTOL;
  return 0;
}

/* A and b of desync's poisson2d; `u` receives the exact solution at the points. */
static PetscErrorCode assemble(DM da, Mat A, Vec b, Vec u) {
  PetscInt xs, ys, xm, ym, mx, my;
  PetscScalar **bb, **uu;
  PetscFunctionBeginUser;
  PetscCall(DMDAGetInfo(da, NULL, &mx, &my, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  const double hx = 1.0 / (double)(mx + 1), hy = 1.0 / (double)(my + 1);
  const double ihx2 = 1.0 / (hx * hx), ihy2 = 1.0 / (hy * hy);
  PetscCall(DMDAVecGetArray(da, b, &bb));
  PetscCall(DMDAVecGetArray(da, u, &uu));
  for (PetscInt j = ys; j < ys + ym; ++j)
    for (PetscInt i = xs; i < xs + xm; ++i) {
      MatStencil row = {0}, col[5];
      PetscScalar val[5];
      PetscInt nc = 0;
      row.i = i;
      row.j = j;
      double rhs = source((i + 1) * hx, (j + 1) * hy);
      /* neighbours y-, x-, then the diagonal, then x+, y+; those outside the grid are boundary
       * points, whose value g goes to the right-hand side */
      const PetscInt di[4] = {0, -1, 1, 0}, dj[4] = {-1, 0, 0, 1};
      for (int s = 0; s < 4; ++s) {
        if (s == 2) {
          col[nc] = row;
          val[nc++] = 2 * ihx2 + 2 * ihy2;
        }
        const PetscInt ni = i + di[s], nj = j + dj[s];
        const double w = di[s] ? ihx2 : ihy2;
        if (ni < 0 || ni >= mx || nj < 0 || nj >= my) {
          rhs += exact((ni + 1) * hx, (nj + 1) * hy) * w;
          continue;
        }
        col[nc].i = ni;
        col[nc].j = nj;
        col[nc].k = 0;
        col[nc].c = 0;
        val[nc++] = -w;
      }
      PetscCall(MatSetValuesStencil(A, 1, &row, nc, col, val, INSERT_VALUES));
      bb[j][i] = (PetscScalar)rhs;
      uu[j][i] = (PetscScalar)exact((i + 1) * hx, (j + 1) * hy);
    }
  PetscCall(DMDAVecRestoreArray(da, b, &bb));
  PetscCall(DMDAVecRestoreArray(da, u, &uu));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* desync's subdomain of this rank: its block extended by gamma points toward every neighbour, as a
 * set of PETSc (global) indices, and the block itself. */
static PetscErrorCode box_subdomain(DM da, PetscInt gamma, IS* is, IS* is_local, PetscInt* size) {
  PetscInt xs, ys, xm, ym, mx, my;
  AO ao;
  PetscFunctionBeginUser;
  PetscCall(DMDAGetInfo(da, NULL, &mx, &my, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  const PetscInt x0 = xs > 0 ? PetscMax(xs - gamma, 0) : 0, x1 = xs + xm < mx ? PetscMin(xs + xm + gamma, mx) : mx;
  const PetscInt y0 = ys > 0 ? PetscMax(ys - gamma, 0) : 0, y1 = ys + ym < my ? PetscMin(ys + ym + gamma, my) : my;
  const PetscInt n = (x1 - x0) * (y1 - y0);
  PetscInt *idx, *own;
  PetscCall(PetscMalloc1(n, &idx));
  PetscCall(PetscMalloc1(xm * ym, &own));
  PetscInt k = 0, o = 0;
  for (PetscInt j = y0; j < y1; ++j)
    for (PetscInt i = x0; i < x1; ++i) {
      idx[k++] = j * mx + i; /* natural (application) numbering */
      if (i >= xs && i < xs + xm && j >= ys && j < ys + ym) own[o++] = j * mx + i;
    }
  PetscCall(DMDAGetAO(da, &ao));
  PetscCall(AOApplicationToPetsc(ao, n, idx));
  PetscCall(AOApplicationToPetsc(ao, o, own));
  PetscCall(PetscSortInt(n, idx));
  PetscCall(PetscSortInt(o, own));
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, n, idx, PETSC_OWN_POINTER, is));
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, o, own, PETSC_OWN_POINTER, is_local));
  *size = n;
  PetscFunctionReturn(0);
}

static PetscErrorCode set_default_option(const char* name, const char* value) {
  PetscBool set;
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsHasName(NULL, NULL, name, &set));
  if (!set) PetscCall(PetscOptionsSetValue(NULL, name, value));
  PetscFunctionReturn(0);
}

/* The slowest rank's time of what happened since t0. */
static double slowest(MPI_Comm comm, double t0) {
  double t = MPI_Wtime() - t0, m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

int main(int argc, char** argv) {
  /* Accept --option as well as -option. */
  char** args = petsc_bench_one_dash(argc, argv);
  char** pargs = args;

  PetscCall(PetscInitialize(&argc, &pargs, NULL,
                            "petsc_poisson2d_asm: desync schwarz's poisson2d system with PETSc's PCASM\n"));
  MPI_Comm comm = PETSC_COMM_WORLD;
  PetscMPIInt rank, size;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));

  PetscInt n = 128, nx, ny, maxit = 100000, warmup = 0, overlap = 1;
  PetscReal rtol = 1e-7;
#if defined(PETSC_HAVE_SUITESPARSE)
  char local[32] = "cholmod";
#else
  char local[32] = "lu";
#endif
  char method[32] = "rasrich", dims_text[64] = "0x0", subdomains[32] = "box", stop_rule[32] = "global";
  char json_path[PETSC_MAX_PATH_LEN] = "";
  PetscBool has_json = PETSC_FALSE;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  nx = ny = n;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nx", &nx, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ny", &ny, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-dims", dims_text, sizeof dims_text, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-maxit", &maxit, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-warmup", &warmup, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-overlap", &overlap, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-method", method, sizeof method, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-subdomains", subdomains, sizeof subdomains, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-local", local, sizeof local, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-stop", stop_rule, sizeof stop_rule, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-json", json_path, sizeof json_path, &has_json));

  KSPType ksp_type;
  PCASMType asm_type;
  if (!strcmp(method, "rasrich")) {
    ksp_type = KSPRICHARDSON;
    asm_type = PC_ASM_RESTRICT;
  } else if (!strcmp(method, "cgasm")) {
    ksp_type = KSPCG;
    asm_type = PC_ASM_BASIC;
  } else
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "-method must be rasrich or cgasm, not '%s'", method);
  const PetscBool box = !strcmp(subdomains, "box") ? PETSC_TRUE : PETSC_FALSE;
  PetscCheck(box || !strcmp(subdomains, "graph"), comm, PETSC_ERR_ARG_WRONG,
             "-subdomains must be box or graph, not '%s'", subdomains);
  const PetscBool local_stop = !strcmp(stop_rule, "local") ? PETSC_TRUE : PETSC_FALSE;
  PetscCheck(local_stop || !strcmp(stop_rule, "global"), comm, PETSC_ERR_ARG_WRONG,
             "-stop must be global or local, not '%s'", stop_rule);
  const char *sub_pc, *sub_solver;
  if (!strcmp(local, "cholmod") || !strcmp(local, "cholmod-simplicial")) {
    sub_pc = PCCHOLESKY;
    sub_solver = MATSOLVERCHOLMOD;
  } else if (!strcmp(local, "lu")) {
    sub_pc = PCLU;
    sub_solver = MATSOLVERPETSC;
  } else if (!strcmp(local, "cholesky")) {
    sub_pc = PCCHOLESKY;
    sub_solver = MATSOLVERPETSC;
  } else
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "-local must be cholmod, cholmod-simplicial, lu or cholesky, not '%s'", local);
  PetscCheck(nx > 0 && ny > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "grid sizes must be positive");
  PetscCheck(overlap >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-overlap must be >= 0");

  /* desync's process grid: MPI_Dims_create over (x, y) with the hint, larger counts first, so x is
   * split first; DMDA numbers ranks x fastest, as desync's Cartesian communicator does. */
  int dims[2] = {0, 0};
  {
    char tail = 0;
    PetscCheck(sscanf(dims_text, "%dx%d%c", &dims[0], &dims[1], &tail) == 2 && dims[0] >= 0 && dims[1] >= 0, comm,
               PETSC_ERR_ARG_WRONG, "-dims '%s': expected PXxPY, e.g. 2x1 or 0x0", dims_text);
    const int fixed = (dims[0] ? dims[0] : 1) * (dims[1] ? dims[1] : 1);
    PetscCheck(dims[0] && dims[1] ? fixed == size : size % fixed == 0, comm, PETSC_ERR_ARG_WRONG,
               "-dims %s does not fit %d ranks", dims_text, (int)size);
  }
  PetscCallMPI(MPI_Dims_create(size, 2, dims));
  PetscCheck(dims[0] <= nx && dims[1] <= ny, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "process grid %dx%d has more ranks than points along an axis", dims[0], dims[1]);
  PetscInt *lx, *ly;
  PetscCall(PetscMalloc1(dims[0], &lx));
  PetscCall(PetscMalloc1(dims[1], &ly));
  for (int c = 0; c < dims[0]; ++c) lx[c] = block_size(nx, dims[0], c);
  for (int c = 0; c < dims[1]; ++c) ly[c] = block_size(ny, dims[1], c);

  DM da;
  PetscCall(DMDACreate2d(comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, nx, ny, dims[0], dims[1], 1, 1,
                         lx, ly, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  {
    /* the DMDA's blocks are desync's (DMDA's own split would agree; given explicitly to be sure) */
    PetscInt xs, ys, xm, ym;
    PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
    const int cx = (int)(rank % dims[0]), cy = (int)(rank / dims[0]);
    PetscCheck(xs == block_start(nx, dims[0], cx) && xm == lx[cx] && ys == block_start(ny, dims[1], cy) && ym == ly[cy],
               PETSC_COMM_SELF, PETSC_ERR_PLIB, "rank %d: DMDA block differs from desync's", (int)rank);
  }
  Mat A;
  Vec x, b, r, u_exact;
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(DMCreateGlobalVector(da, &b));
  PetscCall(VecDuplicate(b, &x));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(VecDuplicate(b, &u_exact));
  PetscCall(assemble(da, A, b, u_exact));
  MatType mat_type;
  PetscCall(MatGetType(A, &mat_type));

  StopCtx stop = {rtol, 0.0, 0.0, local_stop, NULL, NULL, -1};
  PetscCall(VecNorm(b, NORM_2, &stop.bnorm));
  {
    const PetscScalar* ba;
    PetscInt m;
    PetscReal s = 0;
    PetscCall(VecGetLocalSize(b, &m));
    PetscCall(VecGetArrayRead(b, &ba));
    for (PetscInt i = 0; i < m; ++i) s += PetscRealPart(ba[i] * PetscConj(ba[i]));
    PetscCall(VecRestoreArrayRead(b, &ba));
    stop.bnorm_local = PetscSqrtReal(s);
  }
  PetscCall(VecDuplicate(b, &stop.work1));
  PetscCall(VecDuplicate(b, &stop.work2));

  /* exact subdomain solves unless the command line says otherwise */
  PetscCall(set_default_option("-sub_ksp_type", KSPPREONLY));
  PetscCall(set_default_option("-sub_pc_type", sub_pc));
  PetscCall(set_default_option("-sub_pc_factor_mat_solver_type", sub_solver));
  if (!strcmp(local, "cholmod-simplicial")) PetscCall(set_default_option("-sub_mat_cholmod_factor", "SIMPLICIAL"));

  KSP ksp;
  PC pc;
  PetscCall(KSPCreate(comm, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, ksp_type));
  if (asm_type == PC_ASM_RESTRICT) PetscCall(KSPRichardsonSetScale(ksp, 1.0)); /* rasrich */
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCASM));
  PetscCall(PCASMSetType(pc, asm_type));
  PetscInt subdomain_size = 0;
  if (box) {
    IS is, is_local;
    PetscCall(box_subdomain(da, overlap, &is, &is_local, &subdomain_size));
    PetscCall(PCASMSetLocalSubdomains(pc, 1, &is, &is_local));
    PetscCall(PCASMSetOverlap(pc, 0)); /* the boxes already overlap */
    PetscCall(ISDestroy(&is));
    PetscCall(ISDestroy(&is_local));
  } else {
    PetscCall(PCASMSetOverlap(pc, overlap));
  }
  PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetTolerances(ksp, rtol, 0.0, PETSC_DEFAULT, maxit));
  PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_FALSE));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetConvergenceTest(ksp, stop_test, &stop, NULL));

  PetscCallMPI(MPI_Barrier(comm));
  double t0 = MPI_Wtime();
  PetscCall(KSPSetUp(ksp)); /* PCSetUp: subdomain sets, scatters, subdomain matrices */
  const double t_setup = slowest(comm, t0);
  t0 = MPI_Wtime();
  PetscCall(KSPSetUpOnBlocks(ksp)); /* the subdomain factorisations */
  const double t_factor = slowest(comm, t0);

  KSPNormType norm_type;
  PetscCall(KSPGetNormType(ksp, &norm_type));
  PetscCheck(norm_type == KSP_NORM_UNPRECONDITIONED, comm, PETSC_ERR_ARG_WRONG,
             "the comparison needs the unpreconditioned residual norm, not %s", KSPNormTypes[norm_type]);
  /* what PCASM set up: the subdomain's size (graph: after MatIncreaseOverlap), its solver */
  char sub_description[160] = "";
  PetscInt sub_min = 0, sub_max = 0;
  {
    KSP* subksp;
    PetscInt nlocal, first;
    PC subpc;
    Mat sub;
    PCType subpc_type;
    MatSolverType solver_type = NULL;
    KSPType subksp_type;
    PetscCall(PCASMGetSubKSP(pc, &nlocal, &first, &subksp));
    PetscCheck(nlocal == 1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "expected one subdomain per rank, got %d", (int)nlocal);
    PetscCall(KSPGetType(subksp[0], &subksp_type));
    PetscCall(KSPGetPC(subksp[0], &subpc));
    PetscCall(PCGetType(subpc, &subpc_type));
    PetscCall(PCFactorGetMatSolverType(subpc, &solver_type));
    PetscCall(KSPGetOperators(subksp[0], NULL, &sub));
    PetscCall(MatGetSize(sub, &subdomain_size, NULL));
    snprintf(sub_description, sizeof sub_description, "%s + %s (%s)", subksp_type, subpc_type,
             solver_type ? solver_type : "-");
    PetscCallMPI(MPI_Allreduce(&subdomain_size, &sub_min, 1, MPIU_INT, MPI_MIN, comm));
    PetscCallMPI(MPI_Allreduce(&subdomain_size, &sub_max, 1, MPIU_INT, MPI_MAX, comm));
  }

  for (PetscInt w = 0; w < warmup; ++w) {
    PetscCall(VecSet(x, 0.0));
    PetscCall(KSPSolve(ksp, b, x));
  }
  stop.first_global = -1;
  PetscCall(VecSet(x, 0.0));
  PetscCallMPI(MPI_Barrier(comm));
  t0 = MPI_Wtime();
  PetscCall(KSPSolve(ksp, b, x));
  const double t_solve = slowest(comm, t0);

  PetscInt its;
  KSPConvergedReason reason;
  PetscReal last_norm, rnorm, err;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetResidualNorm(ksp, &last_norm));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b)); /* r = b - A x */
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecAXPY(x, -1.0, u_exact)); /* x - u at the points: discretisation and algebraic error */
  PetscCall(VecNorm(x, NORM_INFINITY, &err));
  const double true_residual = (double)(rnorm / stop.bnorm);

  if (rank == 0) {
    char version[128], q_method[64], q_type[64], q_reason[96], q_mat[64], q_version[160], q_sub[200], q_local[64];
    PetscCall(PetscGetVersion(version, sizeof version));
    json_string(q_method, sizeof q_method, method);
    json_string(q_type, sizeof q_type, ksp_type);
    json_string(q_reason, sizeof q_reason, KSPConvergedReasons[reason]);
    json_string(q_mat, sizeof q_mat, mat_type);
    json_string(q_version, sizeof q_version, version);
    json_string(q_sub, sizeof q_sub, sub_description);
    json_string(q_local, sizeof q_local, local);
    char first_global[32] = "null";
    if (stop.first_global >= 0) snprintf(first_global, sizeof first_global, "%d", (int)stop.first_global);
    char line[3072];
    snprintf(line, sizeof line,
             "{\"solver\": \"petsc\", \"method\": %s, \"ksp_type\": %s, \"pc\": \"asm\", \"asm_type\": \"%s\", "
             "\"overlap\": %d, \"subdomains\": \"%s\", \"subdomain_unknowns\": [%d, %d], \"local\": %s, "
             "\"local_solver\": %s, \"n\": [%d, %d], \"unknowns\": %lld, \"ranks\": %d, \"process_grid\": [%d, %d], "
             "\"mat_type\": %s, \"rtol\": %.3e, \"norm_type\": \"unpreconditioned\", \"stop\": \"%s\", "
             "\"warmup_solves\": %d, \"rhs_norm\": %.17g, \"iterations\": %d, \"iterations_global_criterion\": %s, "
             "\"setup_seconds\": %.9g, \"factor_seconds\": %.9g, \"solve_seconds\": %.9g, "
             "\"seconds_per_iteration\": %.9g, \"relative_residual_norm\": %.17g, \"true_residual\": %.17g, "
             "\"max_error\": %.17g, \"converged\": %s, \"converged_reason\": %s, \"petsc_version\": %s}",
             q_method, q_type, asm_type == PC_ASM_RESTRICT ? "restrict" : "basic", (int)overlap, subdomains,
             (int)sub_min, (int)sub_max, q_local, q_sub, (int)nx, (int)ny, (long long)nx * ny, (int)size, dims[0],
             dims[1], q_mat, (double)rtol, stop_rule, (int)warmup, (double)stop.bnorm, (int)its, first_global,
             t_setup, t_factor, t_solve, its > 0 ? t_solve / (double)its : 0.0, (double)(last_norm / stop.bnorm),
             true_residual, (double)err, reason > 0 ? "true" : "false", q_reason, q_version);
    petsc_bench_emit("petsc_poisson2d_asm", line, has_json, json_path);
  }

  const int exit_code = reason > 0 ? 0 : 1;
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&stop.work1));
  PetscCall(VecDestroy(&stop.work2));
  PetscCall(VecDestroy(&u_exact));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFree(lx));
  PetscCall(PetscFree(ly));
  PetscCall(PetscFinalize());
  free(args);
  return exit_code;
}
