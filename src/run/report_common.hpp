#pragma once
// Internal to the run layer: the pieces that the summaries and JSON documents of desync's commands
// share (record.cpp, the solvers' command files).
#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "desync/communication/plan_exchange.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/core/history.hpp"
#include "desync/run/json_file.hpp"
#include "desync/run/record.hpp"

namespace desync::run::detail {

/// The per-rank set-up figures of the halo exchanges: how many plan exchanges this process opened
/// (one per phase and per true-residual check) and the seconds opening them took, inside the solve's
/// time (in "other" or "finish" of its split).
inline RankFields& exchange_open_fields(RankFields& f) {
  const auto s = comm::exchange_open_stats();
  return f.integer("exchange_opens", s.opens).number("exchange_open_seconds", s.seconds);
}

/// The "residual_history" object: the history's times, iterations and residuals as three arrays.
inline nlohmann::json history_json(const std::vector<core::HistoryPoint>& history) {
  std::vector<double> ht, hr;
  std::vector<std::int64_t> hi;
  for (const auto& h : history) {
    ht.push_back(h.time);
    hi.push_back(h.iteration);
    hr.push_back(h.residual);
  }
  return {{"time", ht}, {"iteration", hi}, {"residual", hr}};
}

/// Runs `write` (which saves an output file); what it throws becomes rank 0's I/O error message,
/// which finish_run reports after the record (empty: written, or not rank 0).
template <class Write>
std::string output_error(int rank, Write&& write) {
  try {
    write();
  } catch (const std::exception& e) {
    if (rank == 0) return e.what();
  }
  return {};
}

/// The sizes of the blocks of `global` split over the process grid `dims`: "AxBxC", or
/// "AxBxC to DxExF" when the split is uneven.
inline std::string local_sizes(const decomposition::Index3& global, const decomposition::Index3& dims) {
  int lmin[3], lmax[3];
  for (int a = 0; a < 3; ++a) {
    lmin[a] = global[a] / dims[a];
    lmax[a] = (global[a] + dims[a] - 1) / dims[a];
  }
  std::string s = fmt::format("{}x{}x{}", lmin[0], lmin[1], lmin[2]);
  if (lmin[0] != lmax[0] || lmin[1] != lmax[1] || lmin[2] != lmax[2])
    s += fmt::format(" to {}x{}x{}", lmax[0], lmax[1], lmax[2]);
  return s;
}

}  // namespace desync::run::detail
