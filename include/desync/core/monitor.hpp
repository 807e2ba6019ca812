#pragma once
// The progress lines of a solve (--monitor): rank 0 prints, in one format for every solver,
//
//   "  iteration %10lld  time %9.3f s  residual %.6e"
//
// for the residuals it learns, at a cadence. docs/output.md shows them.
#include <cstdint>
#include <cstdio>

namespace desync::core {

struct Monitor {
  int every = 0;       ///< print iterations that are multiples of `every`; 0: print nothing
  bool root = false;   ///< this rank prints (rank 0 of the solve)

  /// Prints the line of `iteration` (seconds since the solve started, normalised residual) when this
  /// rank prints and the iteration is due, and flushes standard output.
  void operator()(std::int64_t iteration, double time, double residual) const {
    if (!root || every <= 0 || iteration % every != 0) return;
    std::printf("  iteration %10lld  time %9.3f s  residual %.6e\n", static_cast<long long>(iteration), time, residual);
    std::fflush(stdout);
  }
};

}  // namespace desync::core
