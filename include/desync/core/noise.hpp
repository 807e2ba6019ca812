#pragma once
// Deliberate perturbations, so tolerance to slow or faulty processes is measured, not claimed.
//
//   slow rank      rank `slow_rank` makes each sweep take `slow_factor` times as long by spinning
//                  (slow_factor - 1) x the sweep's own duration after it (paper 000, section 6.1:
//                  a core running at half speed is slow_factor 2). Spinning, not sleeping: a slow
//                  core does not service communication either.
//   perturbation   rank `perturb_rank` overwrites its first interior cell with `perturb_value`
//                  before iteration `perturb_iteration` (e.g. nan, to exercise the safeguards).
#include <cstdint>
#include <limits>

namespace desync::core {

struct NoiseOptions {
  int slow_rank = -1;
  double slow_factor = 1.0;
  int perturb_rank = -1;
  std::int64_t perturb_iteration = -1;
  double perturb_value = std::numeric_limits<double>::quiet_NaN();
};

class Noise {
 public:
  Noise(const NoiseOptions& options, int rank) : options_(options), rank_(rank) {}
  bool slow() const { return rank_ == options_.slow_rank && options_.slow_factor > 1.0; }
  /// Spins (slow_factor - 1) * sweep_seconds on the slow rank; returns the seconds spent.
  double after_sweep(double sweep_seconds) const;
  /// True on the perturbed rank at the perturbed iteration.
  bool perturb_now(std::int64_t iteration) const {
    return rank_ == options_.perturb_rank && iteration == options_.perturb_iteration;
  }
  double perturb_value() const { return options_.perturb_value; }

 private:
  NoiseOptions options_;
  int rank_;
};

}  // namespace desync::core
