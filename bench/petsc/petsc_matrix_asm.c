/* A linear system read from PETSc binary files, solved with PETSc's additive Schwarz (PCASM) or algebraic
 * multigrid (PCGAMG) under Richardson, GMRES or CG: the PETSc side of bench/matrix_compare.py, which runs
 * desync jacobi|schwarz|krylov --matrix on the same files (bench/make_matrices.py writes them).
 *
 *   mpirun -np 2 petsc_matrix_asm -A DIR/A.petsc [-b DIR/b.petsc] [-x DIR/x.petsc] -solver richardson|gmres|cg
 *          -pc asm|gamg|hypre|none [-overlap 1] [-restricted 1|0] [-sub auto|lu|cholesky] [-restart 30]
 *          [-rtol 1e-8] [-json FILE]
 *
 * The matrix is MatLoad'ed as MATAIJ (MPIAIJ on more than one rank) with PETSc's default row layout: rank
 * r owns a contiguous block of n/p rows, the first n%p ranks one more, the layout of desync's
 * linalg::read_matrix. b is VecLoad'ed from -b, else b = A * 1 (desync's default right-hand side). With
 * -x (the known solution) the run also reports max |x - x_exact| / max |x_exact|.
 *
 * Solvers (-solver):
 *   richardson  KSPRICHARDSON, scale 1: x <- x + M^-1 (b - A x), with -pc asm restricted the stationary
 *               restricted additive Schwarz iteration (desync schwarz --mode sync);
 *   gmres       KSPGMRES, restart -restart m (default 30), right preconditioning (so the residual it
 *               tests is the unpreconditioned one, as desync krylov --method gmres);
 *   cg          KSPCG (needs a symmetric preconditioner: -pc asm is then basic unless -restricted 1).
 * Preconditioners (-pc):
 *   asm   PCASM, one subdomain per rank, PCASMSetOverlap(-overlap delta): the rank's rows extended by delta
 *         layers of matrix-graph neighbours (MatIncreaseOverlap: the column pattern of the rows, i.e. the
 *         graph of A, which for a non-symmetric pattern differs from desync's A + A^T), the subdomain matrix
 *         A restricted to them (Dirichlet), solved exactly: sub KSPPREONLY with -sub cholesky (PCCHOLESKY)
 *         or lu (PCLU); -sub auto (default) picks cholesky for a symmetric matrix, else lu, and the factor
 *         package CHOLMOD (Cholesky) or UMFPACK (LU) where PETSc has SuiteSparse, desync's automatic
 *         choice; -sub_package petsc|cholmod|umfpack|mumps|superlu overrides it. -restricted 1
 *         (PC_ASM_RESTRICT, RAS: each rank keeps its own rows of the local solution) is the default for
 *         richardson and gmres, -restricted 0 (PC_ASM_BASIC, symmetric) for cg.
 *   gamg  PCGAMG with PETSc's defaults (the matrix marked symmetric / SPD when it is symmetric and
 *         -solver cg);
 *   hypre PCHYPRE with BoomerAMG and hypre's defaults (needs a PETSc built with hypre; Debian's is);
 *   none  no preconditioner.
 * -sub_* and other PETSc options on the command line are applied after these defaults (KSPSetFromOptions).
 *
 * Stop test: zero initial guess, stop at the first iteration k with ||r_k||_2 <= rtol ||b||_2, r_k = b - A x_k
 * the unpreconditioned residual (KSP_NORM_UNPRECONDITIONED; GMRES: its recurrence's estimate), or at -maxit
 * (-stop global, default, desync krylov's test). -stop local stops instead when every rank's residual on its
 * own rows meets ||r_p||_2 < rtol ||b_p||_2, desync jacobi's and schwarz's every-rank-local rule (Yamazaki et
 * al., 2019, section 4.3); iterations_global_criterion is then the first iteration that met the global test.
 * After the solve the true relative residual ||b - A x||_2 / ||b||_2 comes from a fresh MatMult.
 *
 * Timing (MPI_Wtime, slowest rank, each after a barrier): load_seconds (MatLoad + VecLoad), setup_seconds
 * (KSPSetUp + KSPSetUpOnBlocks, split into pc_setup_seconds and factor_seconds: ASM's subdomain sets,
 * scatters and matrices, then the subdomain factorisations; GAMG's whole hierarchy is in pc_setup_seconds),
 * solve_seconds (KSPSolve only), seconds_per_iteration. Rank 0 prints one JSON line to stdout (and to
 * -json FILE); the exit code is 0 when the run converged, 1 when it did not.
 *
 * Options (one or two leading dashes):
 *   -A FILE (or -matrix FILE)   the matrix (required)
 *   -b FILE (or -rhs FILE)      right-hand side (default A * 1)
 *   -x FILE                     known solution, for the error
 *   -solver richardson|gmres|cg (default gmres)
 *   -pc asm|gamg|hypre|none     (default asm; hypre: BoomerAMG, where PETSc was built with hypre)
 *   -overlap D                  ASM overlap delta >= 0 (default 1)
 *   -restricted 1|0             PC_ASM_RESTRICT or PC_ASM_BASIC (default: 0 for cg, else 1)
 *   -sub auto|lu|cholesky       ASM subdomain factorisation (default auto)
 *   -sub_package NAME           its package (default: cholmod / umfpack with SuiteSparse, else petsc)
 *   -restart M                  GMRES restart (default 30)
 *   -rtol R                     relative tolerance (default 1e-8)
 *   -stop global|local          see above (default global)
 *   -maxit K                    iteration limit (default 100000)
 *   -warmup W                   untimed solves before the timed one (default 0)
 *   -json FILE                  also write the JSON line to FILE
 */
#include <petscksp.h>

#include "petsc_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  PetscReal rtol, bnorm, bnorm_local; /* ||b||, this rank's ||b_p|| */
  PetscBool local;                    /* desync's every-rank-local rule */
  Vec work1, work2;                   /* for KSPBuildResidual */
  PetscInt first_global;              /* first iteration meeting ||r|| <= rtol ||b|| (-1: none yet) */
} StopCtx;

/* -stop global: ||r_k|| <= rtol ||b|| (r_k unpreconditioned); -stop local: ||r_p|| < rtol ||b_p|| on every
 * rank p's own rows, desync jacobi's and schwarz's rule (one more residual per iteration,
 * KSPBuildResidual). NaN/Inf ends the run. */
static PetscErrorCode stop_test(KSP ksp, PetscInt it, PetscReal rnorm, KSPConvergedReason* reason, void* vctx) {
  StopCtx* ctx = (StopCtx*)vctx;
  *reason = KSP_CONVERGED_ITERATING;
  if (PetscIsInfOrNanReal(rnorm)) {
    *reason = KSP_DIVERGED_NANORINF;
    return 0;
  }
  const PetscBool global_met = rnorm <= ctx->rtol * ctx->bnorm ? PETSC_TRUE : PETSC_FALSE;
  if (global_met && ctx->first_global < 0) ctx->first_global = it;
  if (!ctx->local) {
    if (global_met) *reason = KSP_CONVERGED_RTOL;
    return 0;
  }
  Vec r;
  const PetscScalar* ra;
  PetscInt m;
  PetscReal sum = 0;
  PetscCall(KSPBuildResidual(ksp, ctx->work1, ctx->work2, &r));
  PetscCall(VecGetLocalSize(r, &m));
  PetscCall(VecGetArrayRead(r, &ra));
  for (PetscInt i = 0; i < m; ++i) sum += PetscRealPart(ra[i] * PetscConj(ra[i]));
  PetscCall(VecRestoreArrayRead(r, &ra));
  int mine = PetscSqrtReal(sum) < ctx->rtol * ctx->bnorm_local ? 1 : 0, all = 0;
  PetscCallMPI(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, PetscObjectComm((PetscObject)ksp)));
  if (all) *reason = KSP_CONVERGED_RTOL;
  return 0;
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

static PetscErrorCode load_vector(MPI_Comm comm, const char* path, Mat A, Vec* v) {
  PetscViewer viewer;
  PetscInt n, m;
  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, NULL, v)); /* the matrix's row layout, so VecLoad distributes alike */
  PetscCall(PetscViewerBinaryOpen(comm, path, FILE_MODE_READ, &viewer));
  PetscCall(VecLoad(*v, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecGetSize(*v, &n));
  PetscCall(MatGetSize(A, &m, NULL));
  PetscCheck(n == m, comm, PETSC_ERR_ARG_SIZ, "%s has %d entries, the matrix %d rows", path, (int)n, (int)m);
  PetscFunctionReturn(0);
}

int main(int argc, char** argv) {
  char** args = petsc_bench_one_dash(argc, argv);
  char** pargs = args;
  PetscCall(PetscInitialize(&argc, &pargs, NULL,
                            "petsc_matrix_asm: a PETSc binary system solved with PCASM or PCGAMG\n"));
  MPI_Comm comm = PETSC_COMM_WORLD;
  PetscMPIInt rank, size;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));

  char a_path[PETSC_MAX_PATH_LEN] = "", b_path[PETSC_MAX_PATH_LEN] = "", x_path[PETSC_MAX_PATH_LEN] = "";
  char json_path[PETSC_MAX_PATH_LEN] = "";
  char solver[32] = "gmres", pc_name[32] = "asm", sub[32] = "auto", sub_package[32] = "auto", stop_rule[32] = "global";
  PetscBool has_a = PETSC_FALSE, has_b = PETSC_FALSE, has_x = PETSC_FALSE, has_json = PETSC_FALSE,
            restricted_set = PETSC_FALSE, restricted = PETSC_TRUE, flag;
  PetscInt overlap = 1, restart = 30, maxit = 100000, warmup = 0;
  PetscReal rtol = 1e-8;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-A", a_path, sizeof a_path, &has_a));
  if (!has_a) PetscCall(PetscOptionsGetString(NULL, NULL, "-matrix", a_path, sizeof a_path, &has_a));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-b", b_path, sizeof b_path, &has_b));
  if (!has_b) PetscCall(PetscOptionsGetString(NULL, NULL, "-rhs", b_path, sizeof b_path, &has_b));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-x", x_path, sizeof x_path, &has_x));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-solver", solver, sizeof solver, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-pc", pc_name, sizeof pc_name, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-sub", sub, sizeof sub, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-sub_package", sub_package, sizeof sub_package, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-restricted", &restricted, &restricted_set));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-overlap", &overlap, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-restart", &restart, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-maxit", &maxit, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-warmup", &warmup, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-stop", stop_rule, sizeof stop_rule, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-json", json_path, sizeof json_path, &has_json));

  PetscCheck(has_a && a_path[0], comm, PETSC_ERR_ARG_WRONG, "give the matrix: -A FILE (PETSc binary)");
  const PetscBool is_richardson = !strcmp(solver, "richardson") ? PETSC_TRUE : PETSC_FALSE;
  const PetscBool is_gmres = !strcmp(solver, "gmres") ? PETSC_TRUE : PETSC_FALSE;
  const PetscBool is_cg = !strcmp(solver, "cg") ? PETSC_TRUE : PETSC_FALSE;
  const KSPType ksp_type = is_richardson ? KSPRICHARDSON : is_gmres ? KSPGMRES : KSPCG;
  if (!is_richardson && !is_gmres && !is_cg)
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "-solver must be richardson, gmres or cg, not '%s'", solver);
  const PetscBool is_asm = !strcmp(pc_name, "asm") ? PETSC_TRUE : PETSC_FALSE;
  const PetscBool is_gamg = !strcmp(pc_name, "gamg") ? PETSC_TRUE : PETSC_FALSE;
  const PetscBool is_hypre = !strcmp(pc_name, "hypre") ? PETSC_TRUE : PETSC_FALSE;
  PetscCheck(is_asm || is_gamg || is_hypre || !strcmp(pc_name, "none"), comm, PETSC_ERR_ARG_WRONG,
             "-pc must be asm, gamg, hypre or none, not '%s'", pc_name);
#if !defined(PETSC_HAVE_HYPRE)
  PetscCheck(!is_hypre, comm, PETSC_ERR_SUP, "-pc hypre: this PETSc was built without hypre");
#endif
  PetscCheck(!strcmp(sub, "auto") || !strcmp(sub, "lu") || !strcmp(sub, "cholesky"), comm, PETSC_ERR_ARG_WRONG,
             "-sub must be auto, lu or cholesky, not '%s'", sub);
  const PetscBool local_stop = !strcmp(stop_rule, "local") ? PETSC_TRUE : PETSC_FALSE;
  PetscCheck(local_stop || !strcmp(stop_rule, "global"), comm, PETSC_ERR_ARG_WRONG,
             "-stop must be global or local, not '%s'", stop_rule);
  PetscCheck(overlap >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-overlap must be >= 0");
  PetscCheck(restart >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-restart must be >= 1");
  PetscCheck(rtol > 0 && rtol < 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-rtol must be in (0, 1)");
  if (!restricted_set) restricted = is_cg ? PETSC_FALSE : PETSC_TRUE;

  /* the system */
  Mat A;
  Vec x, b, r, x_exact = NULL;
  PetscViewer viewer;
  PetscCallMPI(MPI_Barrier(comm));
  double t0 = MPI_Wtime();
  PetscCall(MatCreate(comm, &A));
  PetscCall(MatSetType(A, MATAIJ));
  PetscCall(PetscViewerBinaryOpen(comm, a_path, FILE_MODE_READ, &viewer));
  PetscCall(MatLoad(A, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscInt rows, cols, first_row, last_row;
  PetscCall(MatGetSize(A, &rows, &cols));
  PetscCheck(rows == cols, comm, PETSC_ERR_ARG_SIZ, "%s: the matrix is %d x %d, not square", a_path, (int)rows,
             (int)cols);
  PetscCall(MatGetOwnershipRange(A, &first_row, &last_row));
  if (has_b) {
    PetscCall(load_vector(comm, b_path, A, &b));
  } else {
    Vec ones;
    PetscCall(MatCreateVecs(A, &ones, &b));
    PetscCall(VecSet(ones, 1.0));
    PetscCall(MatMult(A, ones, b)); /* desync's default right-hand side: A * 1 */
    PetscCall(VecDestroy(&ones));
  }
  if (has_x) PetscCall(load_vector(comm, x_path, A, &x_exact));
  const double t_load = slowest(comm, t0);
  PetscCall(VecDuplicate(b, &x));
  PetscCall(VecDuplicate(b, &r));

  MatInfo info;
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &info));
  const long long nnz = (long long)info.nz_used;
  PetscBool symmetric = PETSC_FALSE;
  PetscCall(MatIsSymmetric(A, 0.0, &symmetric)); /* exact (pattern and values) */
  if (symmetric) PetscCall(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE));
  if (symmetric && is_cg) PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));

  StopCtx stop = {rtol, 0.0, 0.0, local_stop, NULL, NULL, -1};
  PetscCall(VecNorm(b, NORM_2, &stop.bnorm));
  {
    const PetscScalar* ba;
    PetscInt m;
    PetscReal s2 = 0;
    PetscCall(VecGetLocalSize(b, &m));
    PetscCall(VecGetArrayRead(b, &ba));
    for (PetscInt i = 0; i < m; ++i) s2 += PetscRealPart(ba[i] * PetscConj(ba[i]));
    PetscCall(VecRestoreArrayRead(b, &ba));
    stop.bnorm_local = PetscSqrtReal(s2);
  }
  PetscCall(VecDuplicate(b, &stop.work1));
  PetscCall(VecDuplicate(b, &stop.work2));

  /* exact subdomain solves unless the command line says otherwise */
  const char* sub_pc = !strcmp(sub, "lu") ? PCLU : !strcmp(sub, "cholesky") ? PCCHOLESKY : symmetric ? PCCHOLESKY : PCLU;
  const char* package = sub_package;
  if (!strcmp(sub_package, "auto")) {
#if defined(PETSC_HAVE_SUITESPARSE)
    package = !strcmp(sub_pc, PCCHOLESKY) ? MATSOLVERCHOLMOD : MATSOLVERUMFPACK;
#else
    package = MATSOLVERPETSC;
#endif
  }
  if (is_asm) {
    PetscCall(set_default_option("-sub_ksp_type", KSPPREONLY));
    PetscCall(set_default_option("-sub_pc_type", sub_pc));
    PetscCall(set_default_option("-sub_pc_factor_mat_solver_type", package));
  }

  KSP ksp;
  PC pc;
  PetscCall(KSPCreate(comm, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, ksp_type));
  if (is_richardson) PetscCall(KSPRichardsonSetScale(ksp, 1.0));
  if (is_gmres) {
    PetscCall(KSPGMRESSetRestart(ksp, restart));
    PetscCall(KSPSetPCSide(ksp, PC_RIGHT)); /* the residual GMRES minimises is then the unpreconditioned one */
  }
  PetscCall(KSPGetPC(ksp, &pc));
  if (is_asm) {
    PetscCall(PCSetType(pc, PCASM));
    PetscCall(PCASMSetType(pc, restricted ? PC_ASM_RESTRICT : PC_ASM_BASIC));
    PetscCall(PCASMSetOverlap(pc, overlap));
  } else if (is_gamg) {
    PetscCall(PCSetType(pc, PCGAMG));
  } else if (is_hypre) {
#if defined(PETSC_HAVE_HYPRE)
    PetscCall(PCSetType(pc, PCHYPRE));
    PetscCall(PCHYPRESetType(pc, "boomeramg"));
#endif
  } else {
    PetscCall(PCSetType(pc, PCNONE));
  }
  PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetTolerances(ksp, rtol, 0.0, PETSC_DEFAULT, maxit));
  PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_FALSE));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetConvergenceTest(ksp, stop_test, &stop, NULL));

  PetscCallMPI(MPI_Barrier(comm));
  t0 = MPI_Wtime();
  PetscCall(KSPSetUp(ksp)); /* PCSetUp: ASM's subdomain sets, scatters, matrices; GAMG's hierarchy */
  const double t_pc_setup = slowest(comm, t0);
  t0 = MPI_Wtime();
  PetscCall(KSPSetUpOnBlocks(ksp)); /* ASM: the subdomain factorisations */
  const double t_factor = slowest(comm, t0);

  KSPNormType norm_type;
  PetscCall(KSPGetNormType(ksp, &norm_type));
  PetscCheck(norm_type == KSP_NORM_UNPRECONDITIONED, comm, PETSC_ERR_ARG_WRONG,
             "the comparison needs the unpreconditioned residual norm, not %s", KSPNormTypes[norm_type]);

  /* what the preconditioner set up: ASM's subdomain sizes and solver, GAMG's levels */
  char pc_description[200] = "";
  PetscInt sub_min = 0, sub_max = 0, levels = 0;
  PCType pc_type;
  PetscCall(PCGetType(pc, &pc_type));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCASM, &flag));
  if (flag) {
    KSP* subksp;
    PetscInt nlocal, first, sub_size = 0;
    PC subpc;
    Mat submat;
    PCType subpc_type;
    MatSolverType solver_type = NULL;
    KSPType subksp_type;
    PetscCall(PCASMGetSubKSP(pc, &nlocal, &first, &subksp));
    PetscCheck(nlocal == 1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "expected one subdomain per rank, got %d", (int)nlocal);
    PetscCall(KSPGetType(subksp[0], &subksp_type));
    PetscCall(KSPGetPC(subksp[0], &subpc));
    PetscCall(PCGetType(subpc, &subpc_type));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)subpc, &flag, PCLU, PCCHOLESKY, PCILU, PCICC, ""));
    if (flag) PetscCall(PCFactorGetMatSolverType(subpc, &solver_type));
    PetscCall(KSPGetOperators(subksp[0], NULL, &submat));
    PetscCall(MatGetSize(submat, &sub_size, NULL));
    snprintf(pc_description, sizeof pc_description, "%s + %s (%s)", subksp_type, subpc_type,
             solver_type ? solver_type : "-");
    PetscCallMPI(MPI_Allreduce(&sub_size, &sub_min, 1, MPIU_INT, MPI_MIN, comm));
    PetscCallMPI(MPI_Allreduce(&sub_size, &sub_max, 1, MPIU_INT, MPI_MAX, comm));
  }
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCGAMG, &flag));
  if (flag) {
    PetscCall(PCMGGetLevels(pc, &levels));
    snprintf(pc_description, sizeof pc_description, "gamg, %d levels", (int)levels);
  }
  if (is_hypre) snprintf(pc_description, sizeof pc_description, "hypre boomeramg");

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
  PetscReal last_norm, rnorm, err = -1, xnorm = 0;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetResidualNorm(ksp, &last_norm));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b)); /* r = b - A x */
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  if (x_exact) {
    PetscCall(VecNorm(x_exact, NORM_INFINITY, &xnorm));
    PetscCall(VecAXPY(x, -1.0, x_exact));
    PetscCall(VecNorm(x, NORM_INFINITY, &err));
  }
  const double bnorm = (double)stop.bnorm;
  const double true_residual = bnorm > 0 ? (double)rnorm / bnorm : (double)rnorm;
  PetscInt local_rows = last_row - first_row, rows_min = 0, rows_max = 0;
  PetscCallMPI(MPI_Allreduce(&local_rows, &rows_min, 1, MPIU_INT, MPI_MIN, comm));
  PetscCallMPI(MPI_Allreduce(&local_rows, &rows_max, 1, MPIU_INT, MPI_MAX, comm));

  if (rank == 0) {
    char version[128], q_a[PETSC_MAX_PATH_LEN + 8], q_b[PETSC_MAX_PATH_LEN + 8], q_solver[64], q_type[64], q_pc[64],
        q_pctype[64], q_reason[96], q_version[160], q_desc[260], q_sub[64], q_pkg[64], error_text[64] = "null",
        asm_type[32] = "null", sub_range[64] = "null", levels_text[32] = "null",
         restart_text[32] = "null", first_global[32] = "null";
    PetscCall(PetscGetVersion(version, sizeof version));
    json_string(q_a, sizeof q_a, a_path);
    json_string(q_b, sizeof q_b, has_b ? b_path : "A*1");
    json_string(q_solver, sizeof q_solver, solver);
    json_string(q_type, sizeof q_type, ksp_type);
    json_string(q_pc, sizeof q_pc, pc_name);
    json_string(q_pctype, sizeof q_pctype, pc_type);
    json_string(q_reason, sizeof q_reason, KSPConvergedReasons[reason]);
    json_string(q_version, sizeof q_version, version);
    json_string(q_desc, sizeof q_desc, pc_description);
    json_string(q_sub, sizeof q_sub, is_asm ? sub_pc : "-");
    json_string(q_pkg, sizeof q_pkg, is_asm ? package : "-");
    if (x_exact) snprintf(error_text, sizeof error_text, "%.17g", xnorm > 0 ? (double)(err / xnorm) : (double)err);
    if (is_asm) {
      snprintf(asm_type, sizeof asm_type, "\"%s\"", restricted ? "restrict" : "basic");
      snprintf(sub_range, sizeof sub_range, "[%d, %d]", (int)sub_min, (int)sub_max);
    }
    if (is_gamg) snprintf(levels_text, sizeof levels_text, "%d", (int)levels);
    if (stop.first_global >= 0) snprintf(first_global, sizeof first_global, "%d", (int)stop.first_global);
    if (is_gmres) snprintf(restart_text, sizeof restart_text, "%d", (int)restart);
    char line[12288];
    snprintf(line, sizeof line,
             "{\"solver\": \"petsc\", \"method\": %s, \"ksp_type\": %s, \"pc\": %s, \"pc_type\": %s, "
             "\"asm_type\": %s, \"overlap\": %d, \"sub_solver\": %s, \"sub_package\": %s, \"pc_description\": %s, "
             "\"subdomain_unknowns\": %s, \"gamg_levels\": %s, \"restart\": %s, \"matrix\": %s, \"rhs\": %s, "
             "\"rows\": %lld, \"nonzeros\": %lld, \"symmetric\": %s, \"ranks\": %d, \"rows_per_rank\": [%d, %d], "
             "\"rtol\": %.3e, \"norm_type\": \"unpreconditioned\", \"stop\": \"%s\", \"warmup_solves\": %d, "
             "\"rhs_norm\": %.17g, \"iterations\": %d, \"iterations_global_criterion\": %s, \"load_seconds\": %.9g, \"setup_seconds\": %.9g, \"pc_setup_seconds\": %.9g, "
             "\"factor_seconds\": %.9g, \"solve_seconds\": %.9g, \"seconds_per_iteration\": %.9g, "
             "\"relative_residual_norm\": %.17g, \"true_residual\": %.17g, \"error_max_relative\": %s, "
             "\"converged\": %s, \"converged_reason\": %s, \"petsc_version\": %s}",
             q_solver, q_type, q_pc, q_pctype, asm_type, (int)overlap, q_sub, q_pkg, q_desc, sub_range, levels_text,
             restart_text, q_a, q_b, (long long)rows, nnz, symmetric ? "true" : "false", (int)size, (int)rows_min, (int)rows_max,
             (double)rtol, stop_rule, (int)warmup, bnorm, (int)its, first_global, t_load, t_pc_setup + t_factor, t_pc_setup, t_factor, t_solve,
             its > 0 ? t_solve / (double)its : 0.0, bnorm > 0 ? (double)last_norm / bnorm : (double)last_norm,
             true_residual, error_text, reason > 0 ? "true" : "false", q_reason, q_version);
    petsc_bench_emit("petsc_matrix_asm", line, has_json, json_path);
  }

  const int exit_code = reason > 0 ? 0 : 1;
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&stop.work1));
  PetscCall(VecDestroy(&stop.work2));
  PetscCall(VecDestroy(&x_exact));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  free(args);
  return exit_code;
}
