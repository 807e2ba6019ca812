// Noise injection (core/noise.hpp): the jitter and periodic-interruption rule, reproducibility of
// the per-rank draws, and that the pauses are paid.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "desync/core/noise.hpp"

using desync::core::Noise;
using desync::core::NoiseOptions;
using desync::core::noise_pause;

// The rule: jitter pays factor x the step when the draw is below the probability; periodic pays one
// interruption per elapsed period, however long the step.
TEST(Noise, PauseRuleByHand) {
  NoiseOptions o;
  o.jitter = true;
  o.jitter_probability = 0.25;
  o.jitter_factor = 3.0;
  double next = 0;
  long pauses = 0;
  EXPECT_DOUBLE_EQ(noise_pause(o, 0.01, 0.0, next, 0.2, pauses), 0.03);
  EXPECT_DOUBLE_EQ(noise_pause(o, 0.01, 0.0, next, 0.25, pauses), 0.0);
  EXPECT_EQ(pauses, 1);
  o.jitter = false;
  o.periodic = true;
  o.interrupt_period = 0.010;
  o.interrupt_duration = 0.002;
  next = 0.010;
  pauses = 0;
  EXPECT_DOUBLE_EQ(noise_pause(o, 0.001, 0.005, next, 0.0, pauses), 0.0);    // before the first period
  EXPECT_DOUBLE_EQ(noise_pause(o, 0.001, 0.0105, next, 0.0, pauses), 0.002); // one elapsed
  EXPECT_DOUBLE_EQ(noise_pause(o, 0.03, 0.0405, next, 0.0, pauses), 0.006);  // three elapsed in one step
  EXPECT_EQ(pauses, 4);
  EXPECT_DOUBLE_EQ(next, 0.050);
}

// Over many steps the jitter fraction is the probability (binomial: 2000 draws, p = 0.1, sd 0.0067),
// the same seed and rank give the same pauses, another rank other ones.
TEST(Noise, JitterIsReproducibleAndHasTheRequestedRate) {
  NoiseOptions o;
  o.jitter = true;
  o.jitter_probability = 0.1;
  o.jitter_factor = 1.0;
  auto pattern = [&](int rank, std::uint64_t seed) {
    NoiseOptions p = o;
    p.seed = seed;
    Noise n(p, rank);
    std::vector<bool> paused;
    for (int i = 0; i < 2000; ++i) {
      const long before = n.pauses();
      n.after_sweep(0.0);  // a zero-length step: the pause costs nothing, the draw still happens
      paused.push_back(n.pauses() > before);
    }
    return paused;
  };
  const auto a = pattern(0, 1), b = pattern(0, 1), c = pattern(1, 1), d = pattern(0, 2);
  long count = 0;
  for (bool x : a) count += x;
  EXPECT_NEAR(count / 2000.0, 0.1, 0.03);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

// The slow rank and a jitter pause are spun for, and the spin is what after_sweep returns.
TEST(Noise, PausesArePaid) {
  NoiseOptions o;
  o.slow_rank = 0;
  o.slow_factor = 3.0;
  Noise slow(o, 0), other(o, 1);
  const auto t0 = std::chrono::steady_clock::now();
  const double spent = slow.after_sweep(0.005);  // (3 - 1) x 5 ms
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(spent, 0.010);
  EXPECT_GE(wall, spent);
  EXPECT_EQ(other.after_sweep(0.005), 0.0);
  NoiseOptions j;
  j.jitter = true;
  j.jitter_probability = 1.0;
  j.jitter_factor = 2.0;
  Noise always(j, 3);
  EXPECT_GE(always.after_sweep(0.002), 0.004);
  EXPECT_EQ(always.pauses(), 1);
  // JitterBasis::step: the pause multiplies the step time the solver gives, and none is paid
  // without one (the PDE stepper's warm-up).
  j.jitter_basis = desync::core::JitterBasis::step;
  Noise stepped(j, 3);
  EXPECT_EQ(stepped.after_sweep(0.002), 0.0);
  EXPECT_EQ(stepped.pauses(), 0);
  const double paid = stepped.after_sweep(0.001, 0.003);
  EXPECT_GE(paid, 0.006);
  EXPECT_LT(paid, 0.5);
  EXPECT_EQ(stepped.pauses(), 1);
  double next = 1.0;
  long pauses = 0;
  EXPECT_EQ(desync::core::noise_pause(j, -1.0, 0.0, next, 0.0, pauses), 0.0);
  EXPECT_EQ(pauses, 0);
}
