#pragma once
// What every Schwarz iteration shares, on the grid (schwarz.hpp) and on an assembled matrix
// (algebraic.hpp), one level or two: the loop's settings, defined once and embedded (as base) in
// each solver's options, and the per-rank figures each run reports beside the driver's result.
#include <cstdint>

#include "desync/communication/channel.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/names.hpp"
#include "desync/core/waiting.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"

namespace desync::solvers {

/// The modes of `desync schwarz` (--mode, the JSON "method").
inline constexpr core::Named<comm::HaloMode> schwarz_modes[] = {
    {comm::HaloMode::sync, "sync",
     "two-sided exchange of the interface values and an allreduce of the local flags every iteration"},
    {comm::HaloMode::async, "async",
     "interface values pushed over the channel transport, newest whole message used; non-blocking votes"},
};

/// The loop of a Schwarz iteration (Yamazaki et al., 2019, section 4): how it exchanges, tests and
/// stops, the same for the grid and the matrix solver.
struct SchwarzLoopOptions {
  comm::HaloMode mode = comm::HaloMode::sync;  ///< sync or async (schwarz_modes)
  /// tol: the local criterion ||r_p|| < tol ||b_p|| on every rank; check_every: sync every
  /// iteration (as the paper), async the least between votes.
  IterationOptions iteration = iteration_defaults(1e-7, 100000, 1, 1e6);
  /// How interface values travel in async mode (sync: two-sided). max_in_flight is R, interface
  /// messages in flight per neighbour: with R = 1 a rank whose neighbour has not yet taken its
  /// previous message skips sending its newest values; a neighbour twice as slow then gets values
  /// one iteration older than it could (see docs/benchmarks.md).
  comm::TransportConfig transport = [] {
    comm::TransportConfig t;
    t.max_in_flight = 2;
    return t;
  }();
  comm::ReductionKind reduction = comm::ReductionKind::iallreduce;
  /// async: the binary-tree termination detection of section 4.3 (Figure 3) instead of repeated
  /// non-blocking reductions (`reduction`); its flags travel over `transport`.
  bool tree_termination = true;
  /// false: no convergence test and no termination detection (their Table 4, "each process simply
  /// terminates after a specified time"): every rank iterates until iteration.max_iters or
  /// iteration.time_limit (sync: the ranks agree on the last iteration through the interface
  /// messages, see driver/iteration_driver.hpp), then the true residual.
  bool detect_termination = true;
  /// sync: wait for every neighbour together (MPI_Waitall) instead of one MPI_Wait per neighbour.
  bool wait_all = false;
  /// async: a pass in which no new interface value has arrived (core::IdlePolicy). skip: the
  /// subdomain solve would repeat its result, so none is made until something arrives or a
  /// convergence test needs the residual.
  core::IdlePolicy idle = core::IdlePolicy::skip;
  bool asynchronous() const { return mode != comm::HaloMode::sync; }
};

/// What a Schwarz run reports on each rank beside the driver's result: its factorisation and the
/// seconds of its three kinds of work.
struct SchwarzRunResult {
  IterationResult run;  ///< iterations, stop, residuals, time split, history
  std::int64_t factor_nonzeros = 0;
  double factor_seconds = 0;  ///< this rank's factorisation (auto's trial included)
  double spmv_seconds = 0, update_seconds = 0, solve_seconds = 0;
};

}  // namespace desync::solvers
