#pragma once
// Per-rank statistics of a Jacobi run: iterations, where the time went, halo traffic and delays.
#include <cstdint>

#include "desync/communication/halo_exchange.hpp"
#include "desync/decomposition/cart_grid.hpp"

namespace desync::solvers {

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
  comm::HaloStats halo;
};

}  // namespace desync::solvers
