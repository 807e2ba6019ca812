#pragma once
// Internal to the run layer: what the command files of the solvers run by the iteration driver
// (solvers/driver/iteration_driver.hpp: jacobi, schwarz) share, their option checks and the keys of
// the record that the driver's result fills.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/core/gather.hpp"
#include "desync/core/history.hpp"
#include "desync/core/noise.hpp"
#include "desync/run/record.hpp"
#include "desync/run/run_end.hpp"
#include "desync/solvers/driver/iteration_result.hpp"

namespace desync::run::detail {

/// The per-rank keys of every driven run (docs/output.md): the rank, its neighbours, iterations,
/// tests, idle passes, the exchange's traffic and the ages of the values each update used.
inline RankFields& driven_rank_fields(RankFields& f, const solvers::RankStats& s) {
  const auto& d = s.halo.delay;
  return f.integer("rank", s.rank)
      .integers("local_size", {s.local[0], s.local[1], s.local[2]})
      .integer("neighbours", s.neighbours)
      .integer("iterations", s.iterations)
      .integer("polish_iterations", s.polish_iterations)
      .integer("reductions", s.reductions)
      .integer("refuted_stops", s.refuted_stops)
      .integer("idle_passes", s.idle_passes)
      .integer("messages_sent", s.halo.messages_sent)
      .integer("messages_received", s.halo.messages_received)
      .integer("messages_discarded", s.halo.messages_discarded)
      .integer("sends_skipped", s.halo.sends_skipped)
      .integer("delay_count", d.count)
      .number("delay_mean", d.mean())
      .integer("delay_min", d.min)
      .integer("delay_max", d.max)
      .integers("delay_histogram", std::vector<std::int64_t>(d.histogram.begin(), d.histogram.end()));
}

/// The record's keys that the driver's result gives: convergence, stop, residuals, history, the
/// slowest rank's time, the requests left pending. Collective.
inline void fill_from_driver(RunRecord& r, MPI_Comm comm, const solvers::IterationResult& result) {
  r.converged = result.converged;
  r.stop_reason = result.stop;
  r.message = result.message;
  r.true_residual = result.true_residual;
  r.tested_residual = result.tested_residual;
  r.history = result.history;
  r.wall_time = max_over_ranks(comm, result.stats.time.total);
  r.outstanding_requests = pending_requests(comm);
}

/// The per-rank local residual histories (DriverOptions::rank_history) gathered into the record
/// (rank_histories on rank 0), and for asynchronous runs the record's residual history replaced by
/// the global residual estimated from them (core::estimate_global_history; a synchronous run's
/// history is already the exact global residual of each iteration). Collective.
inline void gather_rank_histories(RunRecord& r, MPI_Comm comm, const solvers::IterationResult& result,
                                  bool asynchronous) {
  std::vector<double> packed;
  packed.reserve(3 * result.rank_history.size() + 1);
  packed.push_back(result.source_share);
  for (const auto& h : result.rank_history) {
    packed.push_back(h.time);
    packed.push_back(static_cast<double>(h.iteration));
    packed.push_back(h.residual);
  }
  const auto all = core::gather_varying(comm, packed);
  if (all.empty()) return;  // not rank 0
  std::vector<double> shares;
  r.rank_histories.clear();
  for (const auto& v : all) {
    shares.push_back(v[0]);
    auto& h = r.rank_histories.emplace_back();
    for (std::size_t i = 1; i + 2 < v.size(); i += 3)
      h.push_back({v[i], static_cast<std::int64_t>(v[i + 1]), v[i + 2]});
  }
  if (asynchronous) r.history = core::estimate_global_history(r.rank_histories, shares);
}

}  // namespace desync::run::detail
