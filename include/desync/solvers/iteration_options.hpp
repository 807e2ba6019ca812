#pragma once
// The settings of an iterative solve that every solver shares: when to stop, how often to test,
// what to print, and the slowness injected on purpose. Each solver's options embed one
// IterationOptions (with the solver's own defaults) and one comm::TransportConfig; the command
// line fills them with one group of options each (src/run/option_parsing.hpp), so an option means
// the same in every solver.
#include <cstdint>

#include "desync/core/noise.hpp"

namespace desync::solvers {

struct IterationOptions {
  double tol = 1e-4;                 ///< on the solver's relative residual (see the solver's options)
  std::int64_t max_iters = 1000000;  ///< iterations (async: a rank's own updates)
  double time_limit = 0;             ///< seconds, 0 = none
  /// sync: iterations between blocking convergence tests; async: the least between the starts of
  /// two non-blocking tests (1: as soon as the previous one completed).
  int check_every = 100;
  /// If the final true residual is above tol, continue with synchronous iterations until it is not.
  bool polish = false;
  double divergence_factor = 1e6;  ///< stop when the residual grows beyond this times its first value
  bool monitor = false;            ///< rank 0 prints each convergence test
  /// Slowness and perturbation injected on purpose: a slow rank, jitter, periodic interruptions,
  /// one overwritten value (core/noise.hpp).
  core::NoiseOptions noise;
};

/// IterationOptions with a solver's own defaults for the tolerance, the iteration limit, the test
/// cadence and the divergence factor (the rest as above).
inline IterationOptions iteration_defaults(double tol, std::int64_t max_iters, int check_every,
                                           double divergence_factor) {
  IterationOptions it;
  it.tol = tol;
  it.max_iters = max_iters;
  it.check_every = check_every;
  it.divergence_factor = divergence_factor;
  return it;
}

}  // namespace desync::solvers
