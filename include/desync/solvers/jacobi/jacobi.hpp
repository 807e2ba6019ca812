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
#include "desync/core/names.hpp"
#include "desync/core/noise.hpp"
#include "desync/core/waiting.hpp"
#include "desync/core/stop.hpp"
#include "desync/core/history.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/solvers/jacobi/jacobi_loop.hpp"
#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

/// The modes of `desync jacobi` (--mode, the JSON "method").
inline constexpr core::Named<comm::HaloMode> jacobi_modes[] = {
    {comm::HaloMode::sync, "sync", "halo swaps and blocking convergence tests every iteration"},
    {comm::HaloMode::async, "async", "halo messages in flight, newest whole message wins; non-blocking convergence tests"},
    {comm::HaloMode::racy, "racy", "as async, but halo elements may mix the sender's iterations"},
};

/// The grid solver's options: its loop's (JacobiLoopOptions) and its threads and prefetch.
struct JacobiOptions : JacobiLoopOptions {
  /// OpenMP threads per rank (Bethune et al., 2011, 3.3; see omp_jacobi.hpp). 0: the plain MPI solver, one
  /// thread per rank; T >= 1: each rank's block is split into T slabs along z, one per thread.
  int threads = 0;
  /// Software prefetch in the sweeps (sweep.hpp); unset: chosen per rank by sweep_prefetch_for(),
  /// on when the rank's two fields exceed its share of the last-level cache.
  std::optional<SweepPrefetch> prefetch;
};

/// Solves for `u`, which holds the initial guess and the Dirichlet halos on entry (see
/// Laplace3D::initialise) and the final iterate on exit; with options.threads >= 1 it runs
/// solve_jacobi_omp (omp_jacobi.hpp). Collective over the grid. A numerical
/// failure (NaN, Inf, divergence) is reported in the result, agreed on by every rank.
IterationResult solve_jacobi(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                             const JacobiOptions& options, decomposition::Field& u);

}  // namespace desync::solvers
