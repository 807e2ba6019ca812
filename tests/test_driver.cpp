// The iteration driver (solvers/driver/iteration_driver.hpp) around a non-Jacobi local iteration:
// every rank iterates its own scalar x <- c x + d, whose residual sequence is known in closed
// form, so the stop reason, the iteration count and every history point can be checked by hand.
//
//   c = 1/2, d = 0, x0 = 1:  local residual |x_k - x_{k+1}| = 2^-(k+1) on every rank; with a
//                            local source norm^2 of 1 per rank the global residual is 2^-(k+1).
//   c = 1,   d = 1:          residual 1 at every iteration (never converges: limits).
//   c = 2,   d = 0:          residual 2^k (diverges).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "desync/communication/request_ledger.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "test_util.hpp"

using namespace desync;
using solvers::IterationDriver;
using solvers::DriverOptions;
using solvers::IterationPhase;
using solvers::IterationResult;
using solvers::StopReason;

namespace {

void spin(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// One scalar per rank; records every call the driver makes.
class ScalarIteration : public solvers::LocalIteration {
 public:
  ScalarIteration(double x0, double c, double d) : x(x0), c_(c), d_(d) {}

  double x;
  double optimism = 1;      ///< main phase: the residual handed to the tests is the true one / optimism
  std::int64_t nan_from = -1;  ///< main phase: update returns NaN for a wanted residual from this iteration
  double spin_seconds = 0;  ///< busy time of each update
  IterationPhase phase = IterationPhase::main;
  bool synchronous = true;
  int opens = 0, closes = 0, refreshes = 0, pulls = 0, residuals = 0;
  bool finished = false;
  std::vector<std::int64_t> exchanged, pushed;
  long sent_in_phase = 0;

  double local_source_norm_sq() override { return 1.0; }
  double true_residual_sq() override {
    const double r = x - (c_ * x + d_);
    return r * r;
  }
  void finish() override { finished = true; }

  void open_exchange(IterationPhase p, bool sync) override {
    EXPECT_EQ(opens, closes) << "an exchange opened while another is open";
    ++opens;
    phase = p;
    synchronous = sync;
    sent_in_phase = 0;
  }
  void exchange(std::int64_t it) override {
    EXPECT_TRUE(synchronous);
    exchanged.push_back(it);
    ++sent_in_phase;
  }
  void refresh() override { ++refreshes; }
  void push(std::int64_t it) override {
    EXPECT_FALSE(synchronous);
    pushed.push_back(it);
    ++sent_in_phase;
  }
  void pull(std::int64_t) override { ++pulls; }
  comm::ExchangeStats exchange_stats() const override {
    comm::ExchangeStats s;
    s.messages_sent = sent_in_phase + (phase == IterationPhase::polish ? 1000000 : 0);
    s.rounds = pulls;  // no neighbour sends here: every pull is a round (comm::ExchangeStats::rounds)
    return s;
  }
  void close_exchange() override { ++closes; }

  double update(std::int64_t it, bool want_residual) override {
    candidate_ = c_ * x + d_;  // x_{k+1} = c x_k + d
    spin(spin_seconds);
    if (!want_residual) return 0.0;
    ++residuals;
    const bool main = phase == IterationPhase::main;
    if (main && nan_from >= 0 && it >= nan_from) return std::numeric_limits<double>::quiet_NaN();
    const double r = (x - candidate_) / (main ? optimism : 1.0);
    return r * r;
  }
  void advance() override { x = candidate_; }
  void perturb(double value) override { x = value; }

 private:
  double c_, d_;
  double candidate_ = 0;
};

DriverOptions options(bool asynchronous, double tol, int check_every) {
  DriverOptions o;
  o.asynchronous = asynchronous;
  o.iteration.tol = tol;
  o.iteration.check_every = check_every;
  return o;
}

IterationResult drive(MPI_Comm comm, const DriverOptions& o, ScalarIteration& local) {
  IterationDriver driver(comm, o, local);
  driver.start();
  return driver.run(local);
}

const double tol = 1.5 * std::ldexp(1.0, -10);  // between 2^-10 and 2^-9

// Options of a polished run (tol, a test every iteration) of `local`, whose main phase is handed a
// residual `optimism` times too small.
DriverOptions polish_options(bool asynchronous, ScalarIteration& local, double optimism) {
  local.optimism = optimism;
  DriverOptions o = options(asynchronous, tol, 1);
  o.iteration.polish = true;
  return o;
}

std::vector<std::int64_t> iterations_of(const IterationResult& r) {
  std::vector<std::int64_t> out;
  for (const auto& p : r.history) out.push_back(p.iteration);
  return out;
}

}  // namespace

// Residual 2^-(k+1) at iteration k: the first test at or below 1.5 x 2^-10 is at k = 9.
TEST(SyncDriver, StopsAtTheFirstTestBelowTheTolerance) {
  desync_test::TestComm comm;
  for (int check_every : {1, 4}) {
    ScalarIteration local(1.0, 0.5, 0.0);
    DriverOptions o = options(false, tol, check_every);
    o.exchange_period = 3;
    const IterationResult r = drive(comm, o, local);
    const std::int64_t expected = check_every == 1 ? 9 : 12;
    EXPECT_EQ(r.stop, StopReason::converged);
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(r.stats.iterations, expected);
    EXPECT_EQ(r.stats.polish_iterations, 0);
    ASSERT_EQ(r.history.size(), static_cast<std::size_t>(expected / check_every + 1));
    for (std::size_t i = 0; i < r.history.size(); ++i) {
      const std::int64_t k = static_cast<std::int64_t>(i) * check_every;
      EXPECT_EQ(r.history[i].iteration, k);
      EXPECT_DOUBLE_EQ(r.history[i].residual, std::ldexp(1.0, -static_cast<int>(k + 1)));
    }
    EXPECT_EQ(r.tested_residual, r.history.back().residual);
    EXPECT_EQ(r.stats.reductions, static_cast<long>(r.history.size()));
    EXPECT_EQ(local.residuals, static_cast<int>(r.history.size())) << "a residual only at test iterations";
    // The stopping test judged x_k; the candidate x_{k+1} was dropped.
    EXPECT_EQ(local.x, std::ldexp(1.0, -static_cast<int>(expected)));
    EXPECT_DOUBLE_EQ(r.true_residual, std::ldexp(1.0, -static_cast<int>(expected + 1)));
    // Exchanges at multiples of the period up to the stopping iteration, refreshes in between.
    std::vector<std::int64_t> levels;
    for (std::int64_t it = 0; it <= expected; it += 3) levels.push_back(it);
    EXPECT_EQ(local.exchanged, levels);
    EXPECT_EQ(local.refreshes, static_cast<int>(expected + 1 - static_cast<std::int64_t>(levels.size())));
    EXPECT_TRUE(local.pushed.empty());
    EXPECT_EQ(local.pulls, 0);
    EXPECT_EQ(local.opens, 1);
    EXPECT_EQ(local.closes, 1);
    EXPECT_EQ(r.stats.halo.messages_sent, static_cast<long>(levels.size()));
    EXPECT_TRUE(local.finished);
    EXPECT_GE(r.stats.time.total, r.stats.time.compute);
  }
}

TEST(AsyncDriver, ConvergesOnACompletedTest) {
  desync_test::TestComm comm;
  for (auto kind : {comm::ReductionKind::iallreduce, comm::ReductionKind::tree}) {
    for (int check_every : {1, 3}) {
      ScalarIteration local(1.0, 0.5, 0.0);
      DriverOptions o = options(true, tol, check_every);
      o.reduction = kind;
      o.exchange_period = 2;
      const IterationResult r = drive(comm, o, local);
      EXPECT_EQ(r.stop, StopReason::converged);
      ASSERT_FALSE(r.history.empty());
      EXPECT_LE(r.tested_residual, tol);
      EXPECT_EQ(r.tested_residual, r.history.back().residual);
      for (std::size_t i = 0; i + 1 < r.history.size(); ++i) {
        EXPECT_GT(r.history[i].residual, tol) << "the run went on past a test at the tolerance";
        EXPECT_LE(r.history[i].iteration, r.history[i + 1].iteration);
      }
      EXPECT_EQ(r.stats.reductions, static_cast<long>(r.history.size()));
      EXPECT_TRUE(desync_test::same_on_all_ranks(comm, static_cast<long long>(r.history.size())));
      // x decreases: the final field's residual is at most the one this rank voted with.
      EXPECT_LE(r.true_residual, r.tested_residual);
      EXPECT_TRUE(r.converged);
      EXPECT_GE(r.stats.iterations, 1);
      EXPECT_EQ(local.x, std::ldexp(1.0, -static_cast<int>(r.stats.iterations)));
      // Pushes at every multiple of the period, a pull every iteration (and while waiting).
      std::vector<std::int64_t> levels;
      for (std::int64_t it = 0; it < r.stats.iterations; it += 2) levels.push_back(it);
      EXPECT_EQ(local.pushed, levels);
      EXPECT_GE(local.pulls, r.stats.iterations);
      EXPECT_TRUE(local.exchanged.empty());
      EXPECT_EQ(local.opens, 1);
      EXPECT_EQ(local.closes, 1);
      EXPECT_EQ(r.stats.halo.messages_sent, static_cast<long>(levels.size()));
      EXPECT_EQ(comm::RequestLedger::outstanding(), 0);
    }
  }
}

// The main phase sees a residual 4 times too small (2^-(k+3)): it stops at k = 7 while the true
// residual is 2^-8. Polish tests every min(check_every, 10) = 1 iterations from x_7: 2^-8, 2^-9,
// 2^-10, numbered 7, 8, 9.
TEST(SyncDriver, PolishContinuesFromTheMainPhase) {
  desync_test::TestComm comm;
  ScalarIteration local(1.0, 0.5, 0.0);
  DriverOptions o = polish_options(false, local, 4);
  o.exchange_period = 5;  // polish exchanges every iteration
  const IterationResult r = drive(comm, o, local);
  EXPECT_EQ(r.stop, StopReason::converged);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.stats.iterations, 7);
  EXPECT_EQ(r.stats.polish_iterations, 2);
  EXPECT_DOUBLE_EQ(r.tested_residual, std::ldexp(1.0, -10));
  const std::vector<std::int64_t> its = {0, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9};
  EXPECT_EQ(iterations_of(r), its);
  ASSERT_EQ(r.history.size(), its.size());
  EXPECT_DOUBLE_EQ(r.history[7].residual, std::ldexp(1.0, -10));
  EXPECT_DOUBLE_EQ(r.history[8].residual, std::ldexp(1.0, -8));
  EXPECT_DOUBLE_EQ(r.history[10].residual, std::ldexp(1.0, -10));
  EXPECT_DOUBLE_EQ(r.true_residual, std::ldexp(1.0, -10));
  EXPECT_EQ(local.opens, 2);
  EXPECT_EQ(local.closes, 2);
  EXPECT_EQ(local.exchanged, (std::vector<std::int64_t>{0, 5, 0, 1, 2}));
  EXPECT_EQ(r.stats.halo.messages_sent, 2) << "the statistics are the main phase's";
  EXPECT_EQ(r.stats.reductions, 11);
  EXPECT_GT(r.stats.time.polish, 0.0);
}

TEST(AsyncDriver, PolishMeetsTheToleranceAfterAnOptimisticTest) {
  desync_test::TestComm comm;
  ScalarIteration local(1.0, 0.5, 0.0);
  DriverOptions o = polish_options(true, local, 64);
  const IterationResult r = drive(comm, o, local);
  EXPECT_EQ(r.stop, StopReason::converged);
  EXPECT_TRUE(r.converged);
  EXPECT_LE(r.true_residual, tol);
  if (local.opens == 2) {  // the true residual was above the tolerance: polished
    EXPECT_TRUE(local.synchronous);
    // The polish points continue the numbering from the main phase's count.
    std::size_t main_points = r.history.size() - static_cast<std::size_t>(r.stats.polish_iterations) - 1;
    EXPECT_EQ(r.history[main_points].iteration, r.stats.iterations);
    EXPECT_EQ(r.history.back().iteration, r.stats.iterations + r.stats.polish_iterations);
  }
  EXPECT_EQ(comm::RequestLedger::outstanding(), 0);
}

TEST(SyncDriver, MaxItersStopsAtTheLimitTest) {
  desync_test::TestComm comm;
  for (std::int64_t max_iters : {0, 5}) {
    ScalarIteration local(0.0, 1.0, 1.0);  // residual 1 forever
    DriverOptions o = options(false, 1e-3, 3);
    o.iteration.max_iters = max_iters;
    o.iteration.polish = true;  // never after a limit
    const IterationResult r = drive(comm, o, local);
    EXPECT_EQ(r.stop, StopReason::max_iters);
    EXPECT_FALSE(r.converged);
    EXPECT_EQ(r.stats.iterations, max_iters);
    EXPECT_EQ(r.stats.polish_iterations, 0);
    const std::vector<std::int64_t> tests = max_iters == 0 ? std::vector<std::int64_t>{0} : std::vector<std::int64_t>{0, 3, 5};
    EXPECT_EQ(iterations_of(r), tests);
    EXPECT_DOUBLE_EQ(r.history.back().residual, 1.0);
    EXPECT_EQ(local.x, static_cast<double>(max_iters));
  }
}

// A rank that reaches max_iters stops updating, keeps pulling, and votes; max_iters 0 still makes
// one iteration (the limit is checked after each update).
TEST(AsyncDriver, MaxItersStopsEveryRank) {
  desync_test::TestComm comm;
  for (std::int64_t max_iters : {0, 5}) {
    ScalarIteration local(0.0, 1.0, 1.0);
    DriverOptions o = options(true, 1e-3, 1);
    o.iteration.max_iters = max_iters;
    const IterationResult r = drive(comm, o, local);
    EXPECT_EQ(r.stop, StopReason::max_iters);
    EXPECT_FALSE(r.converged);
    const std::int64_t expected = std::max<std::int64_t>(max_iters, 1);
    EXPECT_GE(r.stats.iterations, 1);
    EXPECT_LE(r.stats.iterations, expected);
    long long most = r.stats.iterations;
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_LONG_LONG, MPI_MAX, comm);
    EXPECT_EQ(most, expected) << "the stop was voted by a rank that reached max_iters";
    EXPECT_EQ(local.x, static_cast<double>(r.stats.iterations));
    EXPECT_EQ(comm::RequestLedger::outstanding(), 0);
  }
}

namespace {

/// A run of updates that each take at least 1 ms under a time limit of 50 ms.
IterationResult run_past_time_limit(MPI_Comm comm, bool async, int check_every) {
  ScalarIteration local(0.0, 1.0, 1.0);
  local.spin_seconds = 1e-3;
  DriverOptions o = options(async, 1e-3, check_every);
  o.iteration.time_limit = 0.05;
  return drive(comm, o, local);
}

}  // namespace

TEST(SyncDriver, TimeLimitStopsAtATest) {
  desync_test::TestComm comm;
  const IterationResult r = run_past_time_limit(comm, false, 5);
  EXPECT_EQ(r.stop, StopReason::time_limit);
  EXPECT_EQ(r.stats.iterations % 5, 0);
  EXPECT_LE(r.stats.iterations, 55);  // past 50 ms by the test at 55 at the latest
  EXPECT_GE(r.stats.time.total, 0.05);
  EXPECT_TRUE(desync_test::same_on_all_ranks(comm, r.stats.iterations));
}

TEST(AsyncDriver, TimeLimitStopsEveryRank) {
  desync_test::TestComm comm;
  const IterationResult r = run_past_time_limit(comm, true, 1);
  EXPECT_EQ(r.stop, StopReason::time_limit);
  EXPECT_LE(r.stats.iterations, 51);  // no update starts after 50 ms have passed
  // The run stops when the first rank's clock passes the limit (the vote is any rank's): a rank
  // that started later (oversubscribed, MPICH: 49.0 ms on rank 3 of 4) may stop just short of it.
  double longest = r.stats.time.total;
  MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_DOUBLE, MPI_MAX, comm);
  EXPECT_GE(longest, 0.05);
  EXPECT_EQ(comm::RequestLedger::outstanding(), 0);
}

TEST(SyncDriver, NonFiniteResidualFromTheCallback) {
  desync_test::TestComm comm;
  ScalarIteration local(0.0, 1.0, 1.0);
  if (desync_test::world_rank() == desync_test::world_size() - 1) local.nan_from = 3;
  DriverOptions o = options(false, 1e-3, 1);
  o.iteration.polish = true;  // never after a failure
  const IterationResult r = drive(comm, o, local);
  EXPECT_EQ(r.stop, StopReason::non_finite);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.stats.iterations, 3);
  EXPECT_EQ(r.stats.polish_iterations, 0);
  EXPECT_EQ(r.message, "non-finite value (NaN or Inf) in the solution at iteration 3 on 1 rank(s)");
}

// The perturbation hook writes NaN into x before the update of iteration 3 on the last rank; the
// next test (iteration 4) sees it.
TEST(SyncDriver, PerturbationIsCaughtAtTheNextTest) {
  desync_test::TestComm comm;
  ScalarIteration local(0.0, 1.0, 1.0);
  DriverOptions o = options(false, 1e-3, 2);
  o.iteration.noise.perturb_rank = desync_test::world_size() - 1;
  o.iteration.noise.perturb_iteration = 3;
  const IterationResult r = drive(comm, o, local);
  EXPECT_EQ(r.stop, StopReason::non_finite);
  EXPECT_EQ(r.stats.iterations, 4);
  EXPECT_EQ(r.message, "non-finite value (NaN or Inf) in the solution at iteration 4 on 1 rank(s)");
  EXPECT_TRUE(std::isnan(r.true_residual));
}

TEST(AsyncDriver, NonFiniteStopsEveryRank) {
  desync_test::TestComm comm;
  for (bool through_perturbation : {false, true}) {
    ScalarIteration local(0.0, 1.0, 1.0);
    DriverOptions o = options(true, 1e-3, 1);
    if (through_perturbation) {
      o.iteration.noise.perturb_rank = desync_test::world_size() - 1;
      o.iteration.noise.perturb_iteration = 3;
    } else if (desync_test::world_rank() == desync_test::world_size() - 1) {
      local.nan_from = 3;
    }
    const IterationResult r = drive(comm, o, local);
    EXPECT_EQ(r.stop, StopReason::non_finite);
    EXPECT_FALSE(r.converged);
    EXPECT_NE(r.message.find("non-finite value"), std::string::npos) << r.message;
    EXPECT_EQ(comm::RequestLedger::outstanding(), 0);
  }
}

// Residual 2^k against an initial 1: the first test above 10^6 is at k = 20.
TEST(SyncDriver, DivergenceSafeguard) {
  desync_test::TestComm comm;
  ScalarIteration local(1.0, 2.0, 0.0);
  const IterationResult r = drive(comm, options(false, 1e-3, 1), local);
  EXPECT_EQ(r.stop, StopReason::diverged);
  EXPECT_EQ(r.stats.iterations, 20);
  EXPECT_EQ(r.message, solvers::divergence_message(1.0, std::ldexp(1.0, 20), 1e6));
}

// The slow rank spins after each update; the iteration itself is unchanged.
TEST(SyncDriver, SlowRankSpinsWithoutChangingTheIteration) {
  desync_test::TestComm comm;
  ScalarIteration local(1.0, 0.5, 0.0);
  local.spin_seconds = 2e-4;
  DriverOptions o = options(false, tol, 1);
  o.iteration.noise.slow_rank = 0;
  o.iteration.noise.slow_factor = 3;
  const IterationResult r = drive(comm, o, local);
  EXPECT_EQ(r.stop, StopReason::converged);
  EXPECT_EQ(r.stats.iterations, 9);
  if (desync_test::world_rank() == 0)
    EXPECT_GE(r.stats.time.noise, 9 * 2 * 2e-4 * 0.9);
  else
    EXPECT_EQ(r.stats.time.noise, 0.0);
}
