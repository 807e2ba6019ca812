#pragma once
// What a run of the iteration driver returns, whichever solver ran (Jacobi, Schwarz): why it
// stopped, the true residual of the final iterate, the convergence history, and this rank's
// statistics (iterations, where the time went, exchange traffic and delays).
#include <cstdint>
#include <string>
#include <vector>

#include "desync/communication/plan_exchange.hpp"
#include "desync/core/history.hpp"
#include "desync/core/stop.hpp"
#include "desync/decomposition/cart_grid.hpp"

namespace desync::solvers {

using StopReason = core::StopReason;
using core::to_string;

/// Where a rank's wall time went. other = total - the rest (loop overhead, packing, checks).
struct TimeSplit {
  double compute = 0;    ///< sweeps (residual fused in)
  double halo = 0;       ///< halo exchange: pack, send, receive, wait, unpack
  double reduction = 0;  ///< convergence reductions: start, test, wait
  double noise = 0;      ///< injected slowness (--slow-rank)
  double polish = 0;     ///< synchronous sweeps of the --polish phase
  double finish = 0;     ///< draining channels, true residual
  double total = 0;
  double other() const { return total - compute - halo - reduction - noise - polish - finish; }
};

struct RankStats {
  int rank = 0;
  decomposition::Index3 coords{}, local{};
  int neighbours = 0;
  std::int64_t iterations = 0;         ///< sweeps done by the main (sync or async) phase
  std::int64_t polish_iterations = 0;  ///< synchronous sweeps added by --polish
  long reductions = 0;                 ///< convergence tests completed
  /// async: stops on the convergence test that the true residual refuted (the phase went on)
  long refuted_stops = 0;
  /// async: passes in which nothing new had arrived since the rank's last update (IdlePolicy);
  /// with --idle skip these made no update and are not in `iterations`.
  std::int64_t idle_passes = 0;
  /// OpenMP threads sweeping this rank's block (0: the plain MPI solver). With threads,
  /// `iterations` is the fewest sweeps any thread made and these are the thread extremes.
  int threads = 0;
  std::int64_t thread_iterations_min = 0;
  std::int64_t thread_iterations_max = 0;
  bool prefetch = false;  ///< the sweeps used software prefetch (solvers/jacobi/sweep.hpp)
  TimeSplit time;
  comm::ExchangeStats halo;  ///< the exchange of the main phase
};

/// What a run of the iteration driver returns (Jacobi and Schwarz).
struct IterationResult {
  StopReason stop = StopReason::max_iters;
  bool converged = false;      ///< true_residual <= tol
  double true_residual = 0;    ///< ||b - A u|| / ||s|| of the final field, computed synchronously
  double tested_residual = 0;  ///< last value the convergence test saw
  std::string message;         ///< why a numerical failure stopped the run
  std::vector<core::HistoryPoint> history;
  solvers::RankStats stats;
  /// DriverOptions::rank_history: this rank's local residual ||r_p|| / ||b_p|| at each of its
  /// tests (thinned to at most rank_history_cap points), times on rank 0's clock. (||b_p||: the
  /// local criterion's reference, see IterationDriver::start.)
  std::vector<core::HistoryPoint> rank_history;
  double source_share = 0;  ///< ||b_p|| / ||b||: sqrt(sum_p (share_p r_p)^2) estimates the global residual
};

}  // namespace desync::solvers
