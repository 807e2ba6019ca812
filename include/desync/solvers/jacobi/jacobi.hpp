#pragma once
// Jacobi's method for the 3D Laplace problem, synchronous, asynchronous and racy (Bethune et al., 2011,
// sections 2 and 3.1), on the halo layer and the reductions of desync::comm.
//
//   sync   halo swap every `halo_period` iterations (staleness 0 at swap iterations), blocking
//          allreduce for the convergence test every `check_every` iterations (3.1.1).
//   async  up to `inflight` halo messages in flight per neighbour, newest whole message wins; the
//          convergence test is a non-blocking reduction restarted as soon as the previous one
//          completes (3.1.2). Every rank stops on the same reduction result.
//   racy   as async, but halo elements may mix sender iterations (3.1.3).
// After every run the true residual is computed synchronously; if the convergence test met the
// tolerance but the true residual does not (asynchronous runs, or sync with halo_period > 1),
// `polish` continues with synchronous sweeps until it does (the extension proposed in 3.1.2).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "desync/communication/halo_exchange.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/core/noise.hpp"
#include "desync/core/waiting.hpp"
#include "desync/core/stop.hpp"
#include "desync/core/history.hpp"
#include "desync/solvers/jacobi/jacobi_stats.hpp"
#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

struct JacobiOptions {
  comm::HaloMode mode = comm::HaloMode::sync;
  /// async, racy: a pass in which no new halo value has arrived (core::IdlePolicy; skip does not
  /// apply: a sweep keeps converging the block's interior).
  core::IdlePolicy idle = core::IdlePolicy::yield;
  int halo_period = 1;        ///< N: swap halos every N iterations
  /// R: halo messages in flight per neighbour (async, racy). Bethune et al. (2011) started with 100 and found
  /// one buffer fastest (section 6.3); docs/benchmarks.md has the measurements behind the default.
  int inflight = 1;
  int racy_chunks = 2;        ///< racy: pieces each halo message travels in
  comm::Transport transport = comm::Transport::p2p;  ///< how halo channels move data (channel.hpp)
  comm::RmaSync rma_sync = comm::RmaSync::flush;     ///< rma completion scheme
  comm::ShmemSync shmem_sync = comm::ShmemSync::put; ///< shmem completion scheme
  comm::ReductionKind reduction = comm::ReductionKind::iallreduce;  ///< async, racy
  double tol = 1e-4;          ///< on ||b - A u|| / ||s||, s the source part of b
  /// sync: iterations between blocking convergence tests. async/racy: minimum iterations between
  /// the starts of two non-blocking tests; 1 restarts as soon as the previous test completes
  /// (Bethune et al., 2011, 3.1.2). With threads, async/racy: sweeps between a thread's residual updates
  /// (omp_jacobi.hpp). The command line's default is 100 in every mode.
  int check_every = 100;
  std::int64_t max_iters = 1000000;
  double time_limit = 0;      ///< seconds, 0 = none
  bool polish = false;
  double divergence_factor = 1e6;  ///< stop if the residual grows beyond this times its first value
  bool monitor = false;       ///< rank 0 prints each convergence test
  /// OpenMP threads per rank (Bethune et al., 2011, 3.3; see omp_jacobi.hpp). 0: the plain MPI solver, one
  /// thread per rank; T >= 1: each rank's block is split into T slabs along z, one per thread.
  int threads = 0;
  /// Software prefetch in the sweeps (sweep.hpp); unset: chosen per rank by sweep_prefetch_for(),
  /// on when the rank's two fields exceed its share of the last-level cache.
  std::optional<SweepPrefetch> prefetch;
  core::NoiseOptions noise;
};

/// Why the main phase stopped (core/stop.hpp; Jacobi stops with converged, max_iters, time_limit,
/// non_finite or diverged). `converged` means the convergence test met the tolerance (printed as
/// "tolerance_reached"); whether the final field really meets it is JacobiResult::converged.
using StopReason = core::StopReason;
using core::to_string;

struct JacobiResult {
  StopReason stop = StopReason::max_iters;
  bool converged = false;      ///< true_residual <= tol
  double true_residual = 0;    ///< ||b - A u|| / ||s|| of the final field, computed synchronously
  double tested_residual = 0;  ///< last value the convergence test saw
  std::string message;         ///< why a numerical failure stopped the run
  std::vector<core::HistoryPoint> history;
  solvers::RankStats stats;
  /// IterationOptions::rank_history: this rank's local residual ||r_p|| / ||b_p|| at each of its
  /// tests (thinned to at most rank_history_cap points), times on rank 0's clock. (||b_p||: the
  /// local criterion's reference, see IterationDriver::start.)
  std::vector<core::HistoryPoint> rank_history;
  double source_share = 0;  ///< ||b_p|| / ||b||: sqrt(sum_p (share_p r_p)^2) estimates the global residual
};

/// Solves for `u`, which holds the initial guess and the Dirichlet halos on entry (see
/// Laplace3D::initialise) and the final iterate on exit; with options.threads >= 1 it runs
/// solve_jacobi_omp (omp_jacobi.hpp). Collective over the grid. A numerical
/// failure (NaN, Inf, divergence) is reported in the result, agreed on by every rank.
JacobiResult solve_jacobi(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                          const JacobiOptions& options, decomposition::Field& u);

}  // namespace desync::solvers
