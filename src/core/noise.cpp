#include "desync/core/noise.hpp"

#include <mutex>
#include <random>

#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"

namespace desync::core {

struct Noise::State {
  std::mutex mutex;  // the generator, the interruption schedule, the count
  std::mt19937_64 rng;
  double start = wall_time();
  double next_interrupt = 0;
  long pauses = 0;
};

double noise_pause(const NoiseOptions& o, double jitter_seconds, double now, double& next_interrupt, double uniform,
                   long& pauses) {
  double pause = 0;
  if (o.jitter && uniform < o.jitter_probability && jitter_seconds >= 0) {
    pause += o.jitter_factor * jitter_seconds;
    ++pauses;
  }
  if (o.periodic && o.interrupt_period > 0) {
    while (now >= next_interrupt) {  // one pause per elapsed period
      pause += o.interrupt_duration;
      next_interrupt += o.interrupt_period;
      ++pauses;
    }
  }
  return pause;
}

Noise::Noise(const NoiseOptions& options, int rank) : options_(options), rank_(rank), state_(std::make_unique<State>()) {
  // One stream per rank: the seed and the rank mixed (splitmix64 constants), so neighbouring seeds
  // and ranks give unrelated sequences.
  state_->rng.seed(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) * 0xBF58476D1CE4E5B9ULL + 1);
  state_->next_interrupt = options.interrupt_period;
}

Noise::~Noise() = default;
Noise::Noise(Noise&&) noexcept = default;

double Noise::after_sweep(double sweep_seconds, double step_seconds) const {
  double pause = slow() ? (options_.slow_factor - 1.0) * sweep_seconds : 0.0;
  if (options_.jitter || options_.periodic) {
    std::lock_guard lock(state_->mutex);
    const double now = wall_time() - state_->start;
    const double uniform = static_cast<double>(state_->rng() >> 11) * 0x1.0p-53;  // [0, 1), portable
    // JitterBasis::step without a step time yet (the PDE stepper's warm-up): -1, no jitter.
    const double step_basis = step_seconds > 0 ? step_seconds : -1;
    const double basis = options_.jitter_basis == JitterBasis::sweep ? sweep_seconds : step_basis;
    pause += noise_pause(options_, basis, now, state_->next_interrupt, uniform, state_->pauses);
  }
  return pause > 0 ? core::pause(pause) : 0.0;
}

long Noise::pauses() const {
  std::lock_guard lock(state_->mutex);
  return state_->pauses;
}

}  // namespace desync::core
