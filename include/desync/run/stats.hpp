#pragma once
// Honest per-rank statistics of a run, gathered to rank 0 for the summary and the JSON output.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <span>
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
  bool prefetch = false;  ///< the sweeps used software prefetch (solvers/jacobi/sweep.hpp)
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

/// One record per rank, gathered on rank 0 of `comm` in rank order (empty elsewhere): every rank
/// packs its record into mine.size() doubles (the same count on every rank), and unpack(const
/// double*) rebuilds a record from them. Collective.
template <class Unpack>
auto gather_packed(MPI_Comm comm, std::span<const double> mine, Unpack&& unpack) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int width = static_cast<int>(mine.size());
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(width) * static_cast<std::size_t>(size) : 0);
  MPI_Gather(mine.data(), width, MPI_DOUBLE, all.data(), width, MPI_DOUBLE, 0, comm);
  std::vector<decltype(unpack(all.data()))> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r) out.push_back(unpack(all.data() + static_cast<std::size_t>(r) * width));
  return out;
}

}  // namespace desync::run
