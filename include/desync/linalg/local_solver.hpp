#pragma once
// Direct solvers for rank-local sparse matrices, factored once and solved every iteration: the
// subdomain solves of Schwarz methods and of block Jacobi. Three factorisations from SuiteSparse:
//
//   cholmod-simplicial   CHOLMOD's up-looking LDL^T, column by column (symmetric positive definite)
//   cholmod-supernodal   CHOLMOD's supernodal LL^T, dense blocks through BLAS (symmetric positive definite)
//   cholmod              either, as CHOLMOD's own analysis chooses with its default switch (40 flops
//                        per entry of L; the optimized Schwarz method's subdomain solves on the grid,
//                        Yamazaki et al., 2019, section 4: "a sparse direct method")
//   umfpack              UMFPACK's unsymmetric-pattern multifrontal LU (any non-singular matrix)
//   ilu0                 incomplete LU with the block's own pattern, ILU(0) (Saad, 2003, Algorithm
//                        10.4): not a direct solve but an approximate one, M = L U ~ A, set up in one
//                        pass over the pattern and applied by two triangular sweeps of the block's
//                        nonzeros; on a symmetric block M is symmetric (IC(0) up to the diagonal
//                        scaling). In a preconditioner (--pc asm, ras) it replaces the solve; in
//                        the Schwarz iteration it takes one correction step per iteration from the
//                        previous local values (schwarz/subdomain.hpp), keeping the exact fixed point.
//   ilu1, ilu2, ilu3     ILU(k), k = 1, 2, 3 levels of fill (Saad, 2003, Algorithm 10.5; PETSc's
//                        -pc_factor_levels k): the pattern of A plus the fill of level <= k, where
//                        A's entries have level 0 and l_ik u_kj fills (i, j) at level lev_ik + lev_kj + 1;
//                        set up by a symbolic pass, then ILU(0)'s loop on that pattern. Nearer the
//                        exact solve as k grows, with more fill; approximate as ilu0 is.
//                        With a relaxation omega in (0, 1] (ilu_relax, --ilu-relax; Trilinos
//                        Ifpack's "fact: relax value") the fill ILU(k) drops from row i is not lost
//                        but subtracted from u_ii times omega: relaxed modified ILU (Gustafsson,
//                        1978; Saad, 2003, section 10.3.5). omega = 1, MILU, keeps A's row sums
//                        (L U e = A e), which on a discrete Laplacian moves the preconditioned
//                        spectrum's bottom from O(h^2) to O(h); a little below 1 keeps the pivots
//                        away from zero (2D Poisson n = 512 at 2 ranks, CG + ASM with ILU(1):
//                        334 iterations plain, 120 with omega 0.99, docs/results/petsc.md).
//   auto                 chosen per subdomain, with the reason kept (LocalSolver::reason):
//                        a matrix that is not symmetric, or has a diagonal entry <= 0, goes to UMFPACK;
//                        otherwise CHOLMOD: simplicial on blocks of fewer than auto_trial_rows rows
//                        (the subdomains of a Schwarz run, where the supernodal mode measured 2-2.4x
//                        slower per solve, docs/benchmarks.md). On larger ones CHOLMOD's analysis
//                        counts the factorisation's flops per entry of L: below
//                        supernodal_flops_per_entry (2D blocks, ~80-170) simplicial, whose solves
//                        measured 1.6x faster than supernodal ones on a 131,000-row 2D block with
//                        the reference BLAS and OpenBLAS alike; above it (3D blocks) whichever of the
//                        two modes solves faster in a measured trial (both factored, three solves
//                        each timed). A block factored for a few solves only (LocalSolverUse::few_solves,
//                        GDSW's interior block) gets the analysis's choice without a trial, the mode
//                        that factors faster: supernodal measured 1.8x and 2.5x faster on 3D blocks of
//                        32,000 and 64,000 rows, simplicial 2x on the 2D one (reference BLAS). A
//                        symmetric matrix that CHOLMOD finds not positive definite falls back to UMFPACK.
//
// Every error is a FactorisationError without rank or size: callers add them.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "desync/core/names.hpp"
#include "desync/linalg/csr.hpp"

namespace desync::linalg {

/// The factorisation failed (the matrix is singular or not positive definite, or the library ran
/// out of memory): the message says which.
class FactorisationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class LocalSolverKind { automatic, cholmod_simplicial, cholmod_supernodal, cholmod, umfpack, ilu0, ilu1, ilu2, ilu3 };
inline constexpr core::Named<LocalSolverKind> local_solver_names[] = {
    {LocalSolverKind::automatic, "auto", "chosen per subdomain: CHOLMOD for symmetric positive definite blocks "
                                         "(simplicial, or supernodal where a measured trial finds it faster), "
                                         "UMFPACK otherwise"},
    {LocalSolverKind::cholmod_simplicial, "cholmod-simplicial", "CHOLMOD simplicial LDL^T (SPD blocks)"},
    {LocalSolverKind::cholmod_supernodal, "cholmod-supernodal", "CHOLMOD supernodal LL^T (SPD blocks)"},
    {LocalSolverKind::cholmod, "cholmod", "CHOLMOD, simplicial or supernodal as its own analysis chooses (SPD blocks)"},
    {LocalSolverKind::umfpack, "umfpack", "UMFPACK LU (any non-singular block)"},
    {LocalSolverKind::ilu0, "ilu0", "incomplete LU on the block's own pattern, an approximate solve (the Schwarz iteration: one correction step)"},
    {LocalSolverKind::ilu1, "ilu1", "ILU(1): incomplete LU with one level of fill, approximate as ilu0"},
    {LocalSolverKind::ilu2, "ilu2", "ILU(2): two levels of fill"},
    {LocalSolverKind::ilu3, "ilu3", "ILU(3): three levels of fill"},
};
/// ILU(k)'s kind, k = 0..3.
inline LocalSolverKind ilu_kind(int levels) {
  constexpr LocalSolverKind kinds[] = {LocalSolverKind::ilu0, LocalSolverKind::ilu1, LocalSolverKind::ilu2,
                                       LocalSolverKind::ilu3};
  return kinds[levels];
}
/// Whether the kind solves exactly (a factorisation) rather than approximately (ILU(k)).
inline bool exact(LocalSolverKind kind) {
  return kind != LocalSolverKind::ilu0 && kind != LocalSolverKind::ilu1 && kind != LocalSolverKind::ilu2 &&
         kind != LocalSolverKind::ilu3;
}
inline const char* to_string(LocalSolverKind kind) { return core::name_of(local_solver_names, kind); }
/// The command-line spelling (--local-solver); InputError naming the choices otherwise.
inline LocalSolverKind parse_local_solver(const std::string& name) {
  return core::parse_named(local_solver_names, name, "--local-solver", "local solver");
}

/// auto: blocks of at least this many rows get the measured trial between CHOLMOD's two modes.
inline constexpr std::int64_t auto_trial_rows = 20000;
/// auto: CHOLMOD's supernodal mode where its analysis counts at least this many factorisation flops
/// per entry of L (CHOLMOD's supernodal_switch; its own default, 40, assumes a tuned BLAS).
inline constexpr double supernodal_flops_per_entry = 400;

/// What a factorisation is for: solved every iteration (the trial between CHOLMOD's modes pays),
/// or a few times at set-up (one factorisation, the mode CHOLMOD's analysis chooses).
enum class LocalSolverUse { many_solves, few_solves };

class LocalSolver {
 public:
  virtual ~LocalSolver() = default;
  /// x <- A^{-1} b (length rows(); b and x must not overlap).
  virtual void solve(const double* b, double* x) = 0;
  /// The factorisation used (never automatic or cholmod: the mode CHOLMOD chose).
  LocalSolverKind kind() const { return kind_; }
  const char* name() const { return to_string(kind_); }
  std::int64_t rows() const { return rows_; }
  /// Entries of the factors (L, or L and U), in doubles.
  std::int64_t factor_nonzeros() const { return factor_nonzeros_; }
  /// Analysis and numerical factorisation, the trial's too.
  double factor_seconds() const { return factor_seconds_; }
  /// Why this factorisation: "requested", or auto's reason ("symmetric, positive diagonal, 812 rows").
  const std::string& reason() const { return reason_; }
  /// Whether solve() applies A^{-1} (a factorisation of the whole matrix) rather than an
  /// approximation M^{-1} (ilu0, or several subdomains in one block: make_block_solver).
  bool exact() const { return !approximate_ && linalg::exact(kind_); }

 protected:
  bool approximate_ = false;
  LocalSolverKind kind_ = LocalSolverKind::umfpack;
  std::int64_t rows_ = 0, factor_nonzeros_ = 0;
  double factor_seconds_ = 0;
  std::string reason_ = "requested";
  friend std::unique_ptr<LocalSolver> make_local_solver(const LocalCsr&, LocalSolverKind, LocalSolverUse, double);
};

/// Factors `a` (square scalar CSR, columns ascending in each row) with `kind` (auto: chosen for
/// `use`, see above). Throws
/// FactorisationError: "singular matrix (UMFPACK: ...)", "not positive definite (...)" (a CHOLMOD
/// kind asked for explicitly), "out of memory", "zero pivot in ILU(k) at row i" (iluK; also a
/// missing diagonal entry), "ILU(k) relaxed by omega: pivot ... <= 0 at row i" (a_ii > 0 made
/// non-positive by the fill moved onto it: a matrix far from diagonally dominant). `ilu_relax`:
/// ILU(k)'s relaxation omega in [0, 1] (0: plain ILU(k)); std::invalid_argument outside [0, 1], or
/// non-zero with a kind that is not ilu0-ilu3.
std::unique_ptr<LocalSolver> make_local_solver(const LocalCsr& a, LocalSolverKind kind,
                                               LocalSolverUse use = LocalSolverUse::many_solves,
                                               double ilu_relax = 0.0);

/// Several subdomains in one rank's block (--subdomains-per-rank K, as PETSc's -pc_asm_local_blocks):
/// the rows [first, first + rows) of the block are split into `blocks` pieces by recursive graph
/// bisection (the graph of a + a^T, each half grown breadth-first from a pseudo-peripheral row, so
/// a grid's pieces come out compact); piece k's rows Omega_k are its own rows and every row within
/// `overlap` steps of them, and A_k = a(Omega_k, Omega_k) is factored by the local solver `kind`.
/// The solve applies
///     additive:    M^-1 = sum_k R_k^T A_k^-1 R_k           (symmetric: ASM's, for CG)
///     restricted:  M^-1 = sum_k Rt_k^T A_k^-1 R_k          (RAS's: piece k keeps its own rows)
/// where in the restricted form the block's rows outside [first, first + rows) belong to the first
/// piece that reaches them, so that every row of the block is kept by one piece and M^-1 b = x
/// at a fixed point of x <- x + M^-1 (b - a x). Within a Schwarz method whose rank blocks are the
/// extended subdomains, this makes the method the one-level Schwarz method on K pieces per rank
/// (each piece's extension reaches into the neighbouring ranks' rows through the block's overlap).
struct LocalBlocks {
  int blocks = 1;               ///< K >= 1
  int overlap = 0;              ///< layers of graph distance each piece extends by (>= 0)
  std::int64_t first = 0;       ///< the rows split into the pieces: [first, first + rows)
  std::int64_t rows = -1;       ///< -1: every row of the block
  bool restricted = false;
};

/// The block solver above (blocks == 1 and every row split: make_local_solver(a, kind)), every piece
/// factored with `kind` and `ilu_relax`. Throws FactorisationError as make_local_solver does, naming
/// the piece ("piece 3 of 4 (812 rows): ..."), and std::invalid_argument if `blocks` exceeds the rows
/// split or is < 1, or on a bad `ilu_relax` (make_local_solver).
std::unique_ptr<LocalSolver> make_block_solver(const LocalCsr& a, const LocalBlocks& blocks, LocalSolverKind kind,
                                               double ilu_relax = 0.0);

/// A_pp: the owned rows' couplings among themselves, columns renumbered from 0 (block size 1): the
/// block block Jacobi factors, and the graph block_pieces splits a rank's own rows by. Local.
LocalCsr owned_block(const DistributedCsr& A, int rank);

/// The pieces make_block_solver builds its pieces from: label[i] in [0, blocks) for the rows i in
/// [first, first + rows), -1 for the block's other rows (before the extension by the overlap).
std::vector<int> block_pieces(const LocalCsr& a, std::int64_t first, std::int64_t rows, int blocks);

/// Whether a equals its transpose exactly (pattern and values) and every diagonal entry is > 0:
/// what auto needs to try CHOLMOD.
bool symmetric_positive_diagonal(const LocalCsr& a);

}  // namespace desync::linalg
