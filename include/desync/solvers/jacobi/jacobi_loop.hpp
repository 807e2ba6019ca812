#pragma once
// The loop settings of Jacobi's method, the same on the grid (jacobi.hpp) and on an assembled
// matrix (matrix_jacobi.hpp): defined once and embedded (as base) in each solver's options.
#include "desync/communication/channel.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/waiting.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "desync/solvers/iteration_options.hpp"

namespace desync::solvers {

/// How a Jacobi iteration exchanges, tests and stops (Bethune et al., 2011, section 3).
struct JacobiLoopOptions {
  comm::HaloMode mode = comm::HaloMode::sync;  ///< sync, async or racy
  /// tol is on ||b - A u|| / ||s|| (the grid: s the source part of b; a matrix: b). check_every,
  /// async/racy with threads: sweeps between a thread's residual updates (omp_jacobi.hpp). The
  /// command line's default check_every is 100 in every mode (Bethune et al., 2011, Figure 1).
  IterationOptions iteration;
  /// How halo (ghost) values travel (channel.hpp). max_in_flight is R, messages in flight per
  /// neighbour (async, racy): Bethune et al. (2011) started with 100 and found one buffer fastest
  /// (section 6.3); docs/results/bethune2011.md measures R = 1 against R = 100.
  comm::TransportConfig transport;
  /// async, racy: a pass in which no new halo value has arrived (core::IdlePolicy; skip does not
  /// apply: a sweep keeps converging the block's interior).
  core::IdlePolicy idle = core::IdlePolicy::yield;
  int halo_period = 1;  ///< N: swap halos every N iterations
  int racy_chunks = 2;  ///< racy: pieces each halo message travels in
  comm::ReductionKind reduction = comm::ReductionKind::iallreduce;  ///< async, racy
};

/// The driver's settings of a Jacobi run, on the grid or a matrix.
inline DriverOptions jacobi_driver_options(const JacobiLoopOptions& o) {
  DriverOptions d;
  d.iteration = o.iteration;
  d.asynchronous = o.mode != comm::HaloMode::sync;
  d.exchange_period = o.halo_period;
  d.reduction = o.reduction;
  d.idle = o.idle;
  return d;
}

}  // namespace desync::solvers
