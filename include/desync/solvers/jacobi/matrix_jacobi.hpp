#pragma once
// Jacobi's method on an assembled sparse matrix (linalg::DistributedCsr, block size 1), synchronous,
// asynchronous and racy (Bethune et al., 2011, sections 2 and 3.1, with an explicit A; block Jacobi
// is the block splitting their section 6.4 proposes, each block solved by a direct method), run by
// the iteration driver (solvers/driver/iteration_driver.hpp) with the ghost columns' values moved by
// comm::PlanExchange over the plan of the matrix's ghost columns.
//
//   point  x_i <- (b_i + sum_{j != i} (-a_ij) x_j) * (1 / a_ii)       (Bethune et al., 2011, eq. (1))
//          The off-diagonal terms are summed in a fixed order: ascending (|key_j - key_i|, key_j),
//          key = order_key (the row's index in the user's numbering before any partitioning) or the
//          matrix's own global index. A row's operations then do not depend on the partition, so
//          sync iterates are bitwise the same under any partition, and on the 7-point grid matrix
//          (problems::laplace3d_matrix_system) they are the grid sweep's own operations:
//          x-1, x+1, y-1, y+1, z-1, z+1, then * (1/6).
//   block  x_p <- x_p + A_pp^-1 (b_p - (A x)_p)                          (block Jacobi)
//          each rank's diagonal block A_pp factored once (linalg::make_local_solver, auto: CHOLMOD
//          for symmetric positive definite blocks, UMFPACK otherwise).
//
//   mode   sync   the ghost values of iteration it exchanged before every update (halo_period 1);
//          async  the newest whole message per neighbour, non-blocking convergence tests;
//          racy   element-wise newest values (the plan exchange's racy mode, racy_chunks pieces).
//
// Convergence test: ||b - A x|| / ||b|| <= tol (StopRule::global_residual), the residual of the
// iterate an update starts from fused into the update; the driver adds the true residual, polish,
// noise, statistics and its divergence safeguard.
//
// Before iterating, the spectral radius of the iteration matrix G = I - M^-1 A (M = D, or the block
// diagonal) is estimated by a synchronous power iteration (spectral_steps steps of v <- G v / ||G v||
// from a fixed pseudo-random vector drawn per row key, so the same under any partition; estimate:
// the geometric mean of ||G v|| / ||v|| over the last quarter of the steps). The norm is M's,
// ||v||_M^2 = v^T M v, where A is symmetric and M positive definite (G is then self-adjoint in it:
// the estimate never exceeds rho(G)), else the 2-norm (a non-normal G can read above rho(G): that
// estimate is reported and stops nothing). G v is one update with
// b = 0. If M's estimate is >= 1 + 1e-6 synchronous Jacobi diverges (Bethune et al., 2011, section 2:
// it converges iff rho(G) < 1), and the run does not iterate: the result is StopReason::diverged
// with the message "Jacobi diverges on this matrix: the spectral radius of its iteration matrix is
// about 1.37 (>= 1)". If the estimate is within 1e-6 of 1 and the run reaches max_iters, the stop is
// StopReason::stagnated with a message saying so.
// Caveats: the power iteration approaches rho(G) from below when the dominant eigenvalues are
// close together, so a matrix with rho(G) barely above 1 may pass the check; the driver's
// divergence safeguard then stops the run. Asynchronous Jacobi needs rho(|G|) < 1 (Bethune et al.,
// 2011, section 2), which for a matrix that is not an M-matrix can exceed rho(G): not checked.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/names.hpp"
#include "desync/core/waiting.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/solvers/jacobi/jacobi_loop.hpp"

namespace desync::solvers {

enum class JacobiVariant { point, block };
inline constexpr core::Named<JacobiVariant> jacobi_variant_names[] = {
    {JacobiVariant::point, "point", "one row at a time: x_i <- (b_i - sum_{j != i} a_ij x_j) / a_ii"},
    {JacobiVariant::block, "block", "each rank's diagonal block solved exactly (CHOLMOD or UMFPACK)"},
};
inline const char* to_string(JacobiVariant v) { return core::name_of(jacobi_variant_names, v); }
/// The command-line spelling (--variant); InputError naming the choices otherwise.
inline JacobiVariant parse_jacobi_variant(const std::string& name) {
  return core::parse_named(jacobi_variant_names, name, "--variant", "Jacobi variant");
}

/// The matrix solver's options: its loop's (JacobiLoopOptions, as the grid solver's; mode bounded
/// is refused) and the variant and the spectral estimate.
struct MatrixJacobiOptions : JacobiLoopOptions {
  JacobiVariant variant = JacobiVariant::point;
  /// Steps of the power iteration that estimates rho(G) before the run (>= 2; 0: no estimate, no
  /// divergence check before the run).
  int spectral_steps = 30;
};

struct MatrixJacobiResult {
  IterationResult run;
  /// Estimate of the spectral radius of G = I - M^-1 A (the same on every rank); NaN when
  /// spectral_steps is 0.
  double spectral_radius = 0;
  /// True where the estimate is a lower bound of rho(G) (A symmetric, M positive definite: M's
  /// norm), so an estimate >= 1 proves divergence; false for the 2-norm estimate of any other
  /// matrix, which can read above rho(G) and stops nothing (the driver's safeguard does).
  bool spectral_bound = false;
  int spectral_steps = 0;
  double spectral_seconds = 0;  ///< the estimate's wall time (max over ranks)
  /// block: every rank's local factorisation, indexed by rank (the same on every rank); empty for point.
  std::vector<linalg::LocalSolverKind> local_solvers;
  std::string local_solver_reason;  ///< block: this rank's LocalSolver::reason()
  double factor_seconds = 0;        ///< block: the slowest rank's factorisation
  std::int64_t factor_nonzeros = 0; ///< block: the factors' entries summed over ranks
  double setup_seconds = 0;         ///< plan, ordering, factorisation (max over ranks), before the estimate
};

/// Solves A x = b; `x` holds this rank's rows of the initial guess on entry and of the final
/// iterate on exit. `order_key`: empty, or one key per local row (the row's index in the user's
/// original numbering; keys should be distinct) that fixes the order in which a row's terms are
/// summed (see the top of this file). Collective over A.comm. InputError (every rank alike) for a
/// block size other than 1, vectors of the wrong length, a zero diagonal entry (point: "row 17
/// (0-based) has a zero diagonal entry: point Jacobi needs a non-zero diagonal", the row in the
/// user's numbering), a singular diagonal block (block: naming the rank and the block's rows), or
/// a mode other than sync, async, racy. A numerical failure, divergence included, is reported in
/// the result (MatrixJacobiResult::run.stop and .message).
MatrixJacobiResult solve_matrix_jacobi(const linalg::DistributedCsr& A, std::span<const double> b, std::span<double> x,
                                       const MatrixJacobiOptions& options,
                                       std::span<const std::int64_t> order_key = {});

/// The plain synchronous reference (no MPI): `iterations` Jacobi iterations of the whole matrix
/// `A` (all rows, global columns) from x. point: the same fixed summation order as
/// solve_matrix_jacobi (key = order_key, or the row index when empty), so its iterates are
/// bitwise those of a sync run; block: blocks [block_offsets[p], block_offsets[p + 1]) solved by
/// dense Gaussian elimination with partial pivoting (agrees with a sync run to rounding).
void matrix_jacobi_ref(const linalg::LocalCsr& A, std::span<const double> b, std::span<double> x, JacobiVariant variant,
                       int iterations, std::span<const std::int64_t> order_key = {},
                       std::span<const std::int64_t> block_offsets = {});

}  // namespace desync::solvers
