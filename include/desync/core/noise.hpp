#pragma once
// Deliberate perturbations, so tolerance to slow or faulty processes is measured, not claimed.
//
//   slow rank      rank `slow_rank` makes each sweep take `slow_factor` times as long by spinning
//                  (slow_factor - 1) x the sweep's own duration after it (Bethune et al., 2011, section 6.1:
//                  a core running at half speed is slow_factor 2). Spinning, not sleeping: a slow
//                  core does not service communication either.
//   jitter         every rank, after each sweep or step, with probability `jitter_probability`
//                  spins `jitter_factor` x that sweep's duration (the noise of the performance
//                  study of Aditya et al., 2019: a 10 % chance per step of a pause twice the step
//                  time); the draws come from a generator seeded by `seed` and the rank, so a run
//                  is reproducible pause for pause. `jitter_basis` step: the pause is a multiple
//                  of a step time the solver gives instead (the PDE stepper: the rank's median
//                  whole step, communication included, over its warm-up), and no jitter is paid
//                  while the solver gives none.
//   periodic       every rank, every `interrupt_period` seconds of its own clock (from the Noise
//                  object's creation), spins `interrupt_duration` seconds at the end of the sweep
//                  in which the period elapsed (one pause per elapsed period): an operating-system
//                  daemon's interruptions.
//   perturbation   rank `perturb_rank` overwrites its first interior cell with `perturb_value`
//                  before iteration `perturb_iteration` (e.g. nan, to exercise the safeguards).
#include <cstdint>
#include <limits>
#include <memory>

#include "desync/core/names.hpp"

namespace desync::core {

/// --noise: the perturbation every rank suffers (the header comment has the details).
enum class NoiseKind { none, jitter, periodic };
inline constexpr Named<NoiseKind> noise_names[] = {
    {NoiseKind::none, "none", "no perturbation"},
    {NoiseKind::jitter, "jitter",
     "after each step, with --jitter-probability, a pause of --jitter-factor x the step's time"},
    {NoiseKind::periodic, "periodic", "every --interrupt-period ms a pause of --interrupt-duration ms"}};

/// What a jitter pause is a multiple of: the sweep (the computation just done) or a step time the
/// solver measures and passes to Noise::after_sweep (see the header comment).
enum class JitterBasis { sweep, step };

struct NoiseOptions {
  int slow_rank = -1;
  double slow_factor = 1.0;
  bool jitter = false;
  double jitter_probability = 0.1;
  double jitter_factor = 2.0;
  JitterBasis jitter_basis = JitterBasis::sweep;
  bool periodic = false;
  double interrupt_period = 0.010;    ///< seconds
  double interrupt_duration = 0.001;  ///< seconds
  std::uint64_t seed = 1;
  int perturb_rank = -1;
  std::int64_t perturb_iteration = -1;
  double perturb_value = std::numeric_limits<double>::quiet_NaN();
};

class Noise {
 public:
  Noise(const NoiseOptions& options, int rank);
  ~Noise();
  Noise(Noise&&) noexcept;
  bool slow() const { return rank_ == options_.slow_rank && options_.slow_factor > 1.0; }
  /// After a sweep of `sweep_seconds`: spins for every perturbation due on this rank (slow rank,
  /// jitter, periodic interruptions) and returns the seconds spent. With JitterBasis::step the
  /// jitter pause is a multiple of `step_seconds` instead, and none is paid while it is <= 0. Safe
  /// to call from several threads (each call draws and pays its own pauses).
  double after_sweep(double sweep_seconds, double step_seconds = 0) const;
  /// Jitter pauses and periodic interruptions taken so far.
  long pauses() const;
  /// True on the perturbed rank at the perturbed iteration.
  bool perturb_now(std::int64_t iteration) const {
    return rank_ == options_.perturb_rank && iteration == options_.perturb_iteration;
  }
  double perturb_value() const { return options_.perturb_value; }

 private:
  struct State;
  NoiseOptions options_;
  int rank_;
  std::unique_ptr<State> state_;
};

/// The seconds of pause the jitter and periodic perturbations owe after a sweep whose jitter basis
/// (the sweep's seconds, or the step time with JitterBasis::step) is `jitter_seconds`, ending at
/// `now` seconds of the rank's clock, with `next_interrupt` (in/out) the next periodic interruption
/// and `uniform` a draw in [0, 1): the rule Noise::after_sweep applies, separate so that tests can
/// check it without spinning. A negative basis pays no jitter (the draw is still made).
double noise_pause(const NoiseOptions& o, double jitter_seconds, double now, double& next_interrupt, double uniform,
                   long& pauses);

}  // namespace desync::core
