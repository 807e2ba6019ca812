#pragma once
// One point of a solver's residual history, as every run records it.
#include <cstdint>

namespace desync::core {

struct HistoryPoint {
  double time;             ///< seconds since the solve started (rank 0's clock)
  std::int64_t iteration;  ///< rank 0's iteration when the value became known
  double residual;         ///< normalised residual the convergence test saw
};

}  // namespace desync::core
