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
#include "desync/solvers/jacobi/jacobi.hpp"  // JacobiResult: the result of every driven run

namespace desync::run::detail {

/// The noise options every driven solver shares (core/noise.hpp): --noise none|jitter|periodic and
/// their parameters, beside each solver's own --slow-rank / --slow-factor.
struct NoiseCli {
  std::string kind = "none";
  double period_ms = 10, duration_ms = 1;

  void add(CLI::App& app, core::NoiseOptions& n) {
    app.add_option("--noise", kind,
                   "Perturbation on every rank: none | jitter (after each step, with --jitter-probability, a pause of "
                   "--jitter-factor x the step's time) | periodic (every --interrupt-period ms a pause of "
                   "--interrupt-duration ms)")
        ->capture_default_str();
    app.add_option("--jitter-probability", n.jitter_probability, "jitter: chance per step of a pause")
        ->capture_default_str();
    app.add_option("--jitter-factor", n.jitter_factor, "jitter: the pause as a multiple of the step's own time")
        ->capture_default_str();
    app.add_option("--interrupt-period", period_ms, "periodic: milliseconds between interruptions")
        ->capture_default_str();
    app.add_option("--interrupt-duration", duration_ms, "periodic: milliseconds each interruption lasts")
        ->capture_default_str();
    app.add_option("--noise-seed", n.seed, "Seed of the jitter draws (mixed with the rank)")->capture_default_str();
  }
  /// Checks the values and sets the options' switches and periods; InputError on bad input.
  void apply(core::NoiseOptions& n) const {
    if (kind != "none" && kind != "jitter" && kind != "periodic")
      throw InputError("--noise '" + kind + "': unknown noise (expected none, jitter or periodic)");
    n.jitter = kind == "jitter";
    n.periodic = kind == "periodic";
    if (!(n.jitter_probability >= 0 && n.jitter_probability <= 1))
      throw InputError(fmt::format("--jitter-probability {}: must be in [0, 1]", n.jitter_probability));
    if (!(n.jitter_factor >= 0) || !std::isfinite(n.jitter_factor))
      throw InputError(fmt::format("--jitter-factor {}: must be >= 0", n.jitter_factor));
    if (!(period_ms > 0) || !std::isfinite(period_ms))
      throw InputError(fmt::format("--interrupt-period {}: must be > 0 ms", period_ms));
    if (!(duration_ms >= 0) || !std::isfinite(duration_ms))
      throw InputError(fmt::format("--interrupt-duration {}: must be >= 0 ms", duration_ms));
    n.interrupt_period = period_ms * 1e-3;
    n.interrupt_duration = duration_ms * 1e-3;
  }
  /// The options' effective values, for the record.
  void effective(std::vector<std::pair<std::string, std::string>>& out, const core::NoiseOptions& n) const {
    out.push_back({"noise", kind});
    out.push_back({"jitter-probability", fmt::format("{}", n.jitter_probability)});
    out.push_back({"jitter-factor", fmt::format("{}", n.jitter_factor)});
    out.push_back({"interrupt-period", fmt::format("{}", period_ms)});
    out.push_back({"interrupt-duration", fmt::format("{}", duration_ms)});
    out.push_back({"noise-seed", std::to_string(n.seed)});
  }
};

/// --tol, --max-iters, --time-limit, --slow-rank and --slow-factor of a run of `nranks`.
inline void check_driven_options(double tol, std::int64_t max_iters, double time_limit, const core::NoiseOptions& noise,
                                 int nranks) {
  if (!(tol > 0) || !std::isfinite(tol)) throw InputError(fmt::format("--tol {}: must be > 0", tol));
  if (max_iters < 0) throw InputError("--max-iters must be >= 0");
  if (!(time_limit >= 0)) throw InputError("--time-limit must be >= 0 seconds");
  if (noise.slow_rank < -1 || noise.slow_rank >= nranks)
    throw InputError(fmt::format("--slow-rank {}: no such rank in a run of {}", noise.slow_rank, nranks));
  if (!(noise.slow_factor >= 1.0) || !std::isfinite(noise.slow_factor)) throw InputError("--slow-factor must be >= 1");
}

/// The record's keys that the driver's result gives: convergence, stop, residuals, history, the
/// slowest rank's time, the requests left pending. Collective.
inline void fill_from_driver(RunRecord& r, MPI_Comm comm, const solvers::JacobiResult& result) {
  r.converged = result.converged;
  r.stop_reason = result.stop;
  r.message = result.message;
  r.true_residual = result.true_residual;
  r.tested_residual = result.tested_residual;
  r.history = result.history;
  r.wall_time = max_over_ranks(comm, result.stats.time.total);
  r.outstanding_requests = pending_requests(comm);
}

/// The per-rank local residual histories (IterationOptions::rank_history) gathered into the record
/// (rank_histories on rank 0), and for asynchronous runs the record's residual history replaced by
/// the global residual estimated from them (core::estimate_global_history; a synchronous run's
/// history is already the exact global residual of each iteration). Collective.
inline void gather_rank_histories(RunRecord& r, MPI_Comm comm, const solvers::JacobiResult& result,
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
