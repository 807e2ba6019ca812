#include "desync/core/noise.hpp"

#include <chrono>

namespace desync::core {

double Noise::after_sweep(double sweep_seconds) const {
  if (!slow()) return 0.0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto until = start + std::chrono::duration<double>((options_.slow_factor - 1.0) * sweep_seconds);
  while (clock::now() < until) {
  }
  return std::chrono::duration<double>(clock::now() - start).count();
}

}  // namespace desync::core
