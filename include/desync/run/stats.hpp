#pragma once
// Honest per-rank statistics of a run, gathered to rank 0 for the summary and the JSON output.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "desync/communication/halo_exchange.hpp"
#include "desync/decomposition/cart_grid.hpp"

namespace desync::run {

/// Seconds since construction (steady clock).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

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
  /// OpenMP threads sweeping this rank's block (0: the plain MPI solver). With threads,
  /// `iterations` is the fewest sweeps any thread made and these are the thread extremes.
  int threads = 0;
  std::int64_t thread_iterations_min = 0;
  std::int64_t thread_iterations_max = 0;
  TimeSplit time;
  comm::HaloStats halo;
};

struct HistoryPoint {
  double time;             ///< seconds since the solve started (rank 0's clock)
  std::int64_t iteration;  ///< rank 0's iteration when the value became known
  double residual;         ///< normalised residual the convergence test saw
};

/// All ranks' RankStats on rank 0 (empty elsewhere). Collective.
std::vector<RankStats> gather_rank_stats(MPI_Comm comm, const RankStats& mine);

}  // namespace desync::run
