#pragma once
// Internal to the run layer: what the command files of the solvers run by the iteration driver
// (solvers/driver/iteration_driver.hpp: jacobi, schwarz) share, their option checks and the keys of
// the record that the driver's result fills.
#include <mpi.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "desync/core/error.hpp"
#include "desync/core/noise.hpp"
#include "desync/run/record.hpp"
#include "desync/run/run_end.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"  // JacobiResult: the result of every driven run

namespace desync::run::detail {

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

}  // namespace desync::run::detail
