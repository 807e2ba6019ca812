#pragma once
// One point of a solver's residual history, as every run records it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace desync::core {

struct HistoryPoint {
  double time;             ///< seconds since the solve started (rank 0's clock)
  std::int64_t iteration;  ///< rank 0's iteration when the value became known
  double residual;         ///< normalised residual the convergence test saw
};

/// The global residual estimated from every rank's local residual history (Yamazaki et al., 2019,
/// section 7.2): at each point of the merged histories, in time order, sqrt(sum_p (share_p r_p)^2)
/// with each rank's newest local residual r_p = ||r_p|| / ||b_p|| and share_p = ||b_p|| / ||b||, so
/// that the estimate is exact when every rank's value is current. Points start once every rank has
/// one; each carries the iteration of the rank whose new value it reflects. At most `cap` points
/// (evenly thinned, the last kept). `per_rank` histories must be sorted by time.
std::vector<HistoryPoint> estimate_global_history(const std::vector<std::vector<HistoryPoint>>& per_rank,
                                                  const std::vector<double>& shares, std::size_t cap = 4096);

}  // namespace desync::core
