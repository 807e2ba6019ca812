#pragma once
// Wall-clock timing for the per-rank time split every run reports.
#include <chrono>

namespace desync::core {

/// Seconds since construction (steady clock).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace desync::core
