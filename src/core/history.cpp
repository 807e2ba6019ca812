// The global residual estimated from per-rank local residual histories (core/history.hpp).
#include "desync/core/history.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace desync::core {

std::vector<HistoryPoint> estimate_global_history(const std::vector<std::vector<HistoryPoint>>& per_rank,
                                                  const std::vector<double>& shares, std::size_t cap) {
  if (per_rank.size() != shares.size())
    throw std::invalid_argument("estimate_global_history: one share per rank history is needed");
  // Every point of every rank, in time order (ties: rank order).
  std::vector<std::tuple<double, std::size_t, std::size_t>> events;
  for (std::size_t p = 0; p < per_rank.size(); ++p)
    for (std::size_t i = 0; i < per_rank[p].size(); ++i) events.emplace_back(per_rank[p][i].time, p, i);
  std::sort(events.begin(), events.end());
  // (share_p r_p)^2 of each rank's newest value at the leaves of a binary sum tree: an update
  // recomputes its path from the children, so no cancellation accumulates as the residuals fall by
  // orders of magnitude (a running sum would), at log(P) per point.
  std::size_t leaves = 1;
  while (leaves < per_rank.size()) leaves *= 2;
  std::vector<double> tree(2 * leaves, 0.0);
  std::vector<bool> seen(per_rank.size(), false);
  std::size_t missing = per_rank.size();
  std::vector<HistoryPoint> out;
  for (const auto& [t, p, i] : events) {
    const HistoryPoint& h = per_rank[p][i];
    const double v = shares[p] * h.residual;
    if (!seen[p]) {
      seen[p] = true;
      --missing;
    }
    std::size_t node = leaves + p;
    tree[node] = v * v;
    for (node /= 2; node >= 1; node /= 2) tree[node] = tree[2 * node] + tree[2 * node + 1];
    if (missing == 0) out.push_back({t, h.iteration, std::sqrt(tree[1])});
  }
  if (cap >= 2 && out.size() > cap) {
    std::vector<HistoryPoint> thin;
    const double step = static_cast<double>(out.size() - 1) / static_cast<double>(cap - 1);
    for (std::size_t k = 0; k < cap; ++k) thin.push_back(out[static_cast<std::size_t>(std::llround(k * step))]);
    out = std::move(thin);
  }
  return out;
}

}  // namespace desync::core
