#pragma once
// The run loop every stationary iterative solver of desync shares: a synchronous or asynchronous
// main phase, the convergence votes and their reading, termination, the true residual, --polish,
// the noise hooks, the time split and the residual history. The solver supplies what one rank does
// in one iteration through callbacks (LocalIteration below): Jacobi (Bethune et al., 2011, section 3.1) a
// sweep of its block, an optimized Schwarz method (Yamazaki et al., 2019, section 4) a subdomain solve.
//
// One iteration of rank p, as the driver runs it (Bethune et al., 2011, Figure 1; Yamazaki et al. (2019), section 4):
//   sync   exchange(it) every exchange_period iterations (blocking: every neighbour's values of
//          time level it), refresh() otherwise; the perturbation; update(it, test) -> local
//          residual^2; the slow rank's spin; every check_every iterations (and at max_iters) a
//          blocking allreduce of the votes, read by every rank alike; advance() unless it stops.
//   async  push(it) every exchange_period iterations, pull(it) every iteration (the newest values
//          that have arrived); the perturbation; update(it, fresh) -> local residual^2; advance();
//          a non-blocking reduction of the votes (iallreduce or the binary tree of Bethune et al. (2011),
//          3.1.2) started when none is in flight and check_every iterations have passed since the
//          previous start, tested once per iteration; every rank stops on the same completed sum.
//          A rank at max_iters or time_limit stops updating but keeps pulling and reducing until
//          the test that carries its vote completes.
//          A local residual counts (is tested, voted, judged) only when its update sees a new round
//          of the exchange (comm::ExchangeStats::rounds: every neighbour's data reacts to this
//          rank's current version); one against data the iterate was already made from says how
//          well the rank solved for it, not how far the iterate is from the solution. A stop on
//          the test is confirmed by the true residual of the current iterate (collective); if that
//          is above tol the stop is refuted and the phase goes on with a fresh test, at most
//          max_refuted_stops times (RankStats::refuted_stops).
//          With tree_termination (StopRule::every_rank_local only) the votes go instead to the
//          binary-tree termination detection of Yamazaki et al. (2019, Figure 3,
//          comm::TreeTermination): a rank votes once, when it is locally converged (the minimum-
//          residual rule), at a limit, or failing, keeps iterating, and stops when the decision,
//          which holds every rank's vote, reaches it.
// Without termination detection (DriverOptions::detect_termination false; Yamazaki et al. (2019),
// Table 4: "each process simply terminates after a specified time") the main phase has no
// convergence test and no vote:
//   sync   exchange, update, advance, up to max_iters, or the time limit: exchanges cannot stop
//          one rank at a time (a neighbour would wait for values that never come), so the ranks
//          agree on the last iteration through the interface messages themselves
//          (LocalIteration::exchange_carrying). A rank that expects, at its mean iteration time so
//          far, to pass time_limit within hops + 1 exchanges proposes to stop there; every message
//          carries the smallest proposal its sender knows, which reaches every rank before that
//          iteration, so every rank makes the same number of iterations, the first proposal's.
//   async  push, pull, update, advance until this rank's own max_iters or time_limit; then it
//          enters a non-blocking barrier (one reduction by recursive doubling, no vote) and keeps
//          pulling, so that its neighbours' sends complete, until every rank has entered it.
// Then, as always, the true residual.
// Votes, summed over ranks: (local residual^2, reached max_iters, past time_limit, non-finite
// local residual). Reading, in order: non_finite, diverged (residual > divergence_factor x the
// true residual of the initial guess), converged (residual <= tol), max_iters, time_limit.
// After the main phase: the true residual (true_residual_sq(), synchronous); with polish, if the
// main phase stopped on its test but the true residual is above tol, the synchronous loop again
// (exchange every iteration, a test every min(check_every, 10), no perturbation, its own max_iters
// budget, history numbered on from the main phase), then the true residual again.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/termination.hpp"
#include "desync/core/noise.hpp"
#include "desync/core/timer.hpp"
#include "desync/core/waiting.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"

namespace desync::solvers {

/// When a convergence test stops the run.
///   global_residual   sqrt(sum over ranks of the local residual^2) / ||b|| <= tol (Jacobi)
///   every_rank_local  every rank is locally converged, ||r_p||^2 < tol^2 ||b_p||^2 on its own
///                     rows, with the minimum-residual rule: a rank whose smallest local residual so
///                     far met it stays converged (Yamazaki et al., 2019, section 4.3). The global
///                     residual is still recorded, estimated from the local ones (their section 7.2).
enum class StopRule { global_residual, every_rank_local };

using core::IdlePolicy;  // what an asynchronous rank does when nothing new has arrived

/// The settings the driver reads: the solver's iteration settings and how its loops run.
struct DriverOptions {
  IterationOptions iteration;
  bool asynchronous = false;   ///< main phase: the asynchronous loop (async, racy) or the synchronous one
  int exchange_period = 1;     ///< exchange (sync) / push (async) every this many iterations
  comm::ReductionKind reduction = comm::ReductionKind::iallreduce;  ///< async
  StopRule stop_rule = StopRule::global_residual;
  /// async with StopRule::every_rank_local: the binary-tree termination detection instead of
  /// repeated reductions; its messages travel over termination_transport (kind and scheme).
  bool tree_termination = false;
  comm::TransportConfig termination_transport;
  /// false: no convergence test and no termination detection, sync or async: each rank iterates
  /// until max_iters or time_limit (see the top of this file). The caller makes sure one is set.
  bool detect_termination = true;
  /// Record this rank's local residual at each test (IterationResult::rank_history).
  bool rank_history = false;
  /// async: a pass in which nothing new has arrived (see IdlePolicy).
  IdlePolicy idle = IdlePolicy::yield;
};

/// The most points IterationResult::rank_history keeps: beyond, every other point is dropped and
/// only every second test is recorded from then on (and so on).
inline constexpr std::size_t rank_history_cap = 4096;

/// async: how often the true residual may refute a stop on the convergence test before the stop
/// stands (as CG's residual replacements before `stagnated`).
inline constexpr long max_refuted_stops = 20;

enum class IterationPhase { main, polish };

/// What the driver needs of a solver at the start and the end of a run, whatever runs its loops.
class LocalProblem {
 public:
  virtual ~LocalProblem() = default;
  /// This rank's part of ||s||^2, the residual's normaliser (the driver sums it over ranks).
  virtual double local_source_norm_sq() = 0;
  /// Collective: this rank's part of ||b - A u||^2 for the current iterate, after a synchronous
  /// exchange of the external values it reads (the driver sums it over ranks).
  virtual double true_residual_sq() = 0;
  /// The run is over: leave the current iterate where the caller expects it.
  virtual void finish() {}
};

/// What one rank does in one iteration, for the driver's own loops.
class LocalIteration : public LocalProblem {
 public:
  /// Collective between neighbours: opens the exchange of a phase. synchronous: the main phase
  /// of a synchronous run, or any polish phase; otherwise the asynchronous main phase. Channel sets
  /// open at the same time need distinct tags (Jacobi: 0 async main, 8 sync main, 16 polish).
  virtual void open_exchange(IterationPhase phase, bool synchronous) = 0;
  /// sync: sends this rank's interface values tagged `it`, returns when every neighbour's values
  /// of time level `it` are installed (staleness 0).
  virtual void exchange(std::int64_t it) = 0;
  /// sync, at iterations between exchanges: re-install the values of the last exchange.
  virtual void refresh() = 0;
  /// async: sends this rank's interface values tagged `it` where the channel has room.
  virtual void push(std::int64_t it) = 0;
  /// async: installs the newest values that have arrived; `it` is this rank's iteration (ages).
  virtual void pull(std::int64_t it) = 0;
  /// sync without termination detection, with a time limit: exchange(it), carrying one number
  /// each way with the interface values: sends `level` to every neighbour and returns the smallest
  /// of `level` and the numbers the neighbours sent with their values of level `it`
  /// (std::numeric_limits<std::int64_t>::max() stands for none). Only where exchange_hops() >= 0.
  virtual std::int64_t exchange_carrying(std::int64_t it, std::int64_t level);
  /// The most exchanges a number carried by exchange_carrying needs to reach every rank from any
  /// other (a bound on the diameter of the neighbour graph); -1: this solver carries none.
  virtual int exchange_hops() const { return -1; }
  /// Statistics of the open exchange (the driver keeps the main phase's).
  virtual comm::ExchangeStats exchange_stats() const = 0;
  /// Collective between neighbours: drains and closes the open exchange.
  virtual void close_exchange() = 0;
  /// async, collective, before the true residual confirms a stop: brings the iterate to the state
  /// close_exchange() would leave it in (two-level Schwarz: every rank on the newest coarse
  /// correction), so that the residual confirmed is the final iterate's. The exchange stays open.
  virtual void settle() {}
  /// One local iteration (a sweep, a subdomain solve) from the current iterate into a candidate.
  /// want_residual: return this rank's part of the squared residual of the current iterate (the
  /// one the update starts from) with the external values installed now; otherwise return 0.
  virtual double update(std::int64_t it, bool want_residual) = 0;
  /// Seconds of the last update() that went to a collective coarse step inside it (two-level
  /// Schwarz's fixed-point form: its correction after the local solves, a reduction, a coarse
  /// solve and a broadcast). The driver counts them as halo time, as it does the Galerkin form's
  /// correction in exchange(), and leaves them out of the sweep a jitter pause is a multiple of.
  virtual double update_coarse_seconds() const { return 0; }
  /// The candidate becomes the current iterate. Not called after a synchronous test that stops
  /// the phase: the run keeps the iterate that test judged.
  virtual void advance() = 0;
  /// Noise: overwrite one value of the current iterate (Bethune et al. (2011) perturbations, --perturb-*).
  virtual void perturb(double value) = 0;
  /// True if update() computes its candidate from the external values alone, so that an update
  /// with the same external values as the previous one reproduces the current iterate bit for bit
  /// (a subdomain solve; not a Jacobi sweep, which keeps converging its interior). IdlePolicy::skip
  /// needs it.
  virtual bool update_repeats_without_new_data() const { return false; }
  /// async: false holds this pass's update back (the pass counts as idle, not as an iteration),
  /// e.g. while a two-level Schwarz rank waits for a newer coarse solution (--coarse-reuse).
  /// Asked after pull() on every pass that would update.
  virtual bool may_update() { return true; }
};

/// Runs a solver's iterations (see the top of this file). Collective over `comm`: every rank
/// constructs one, calls start() and one run().
class IterationDriver {
 public:
  // Convergence-test payload, summed over ranks.
  enum Vote : int {
    vote_residual_sq = 0, vote_at_max_iters, vote_at_time_limit, vote_non_finite,
    vote_not_converged,  ///< StopRule::every_rank_local: ranks not (yet) locally converged
    vote_count
  };

  /// The settings of a synchronous phase: the main one, or polish.
  struct SyncPhase {
    bool polishing;
    int period;       ///< iterations between exchanges
    int check_every;  ///< iterations between tests
  };

  /// The run's clock (time_limit, history times) starts here.
  IterationDriver(MPI_Comm comm, const DriverOptions& options, LocalProblem& problem);

  /// Collective: the global source norm and the true residual of the initial guess (the baseline
  /// of the divergence safeguard). Call once, after the solver's own checks have passed.
  void start();

  /// The whole run with the driver's loops.
  IterationResult run(LocalIteration& local);

  /// A synchronous phase run by the solver: returns why it stopped and sets `iterations` (the
  /// iterate kept is that of the stopping test) and the phase's time split.
  using SyncLoop = std::function<StopReason(IterationPhase, std::int64_t& iterations, TimeSplit& time)>;
  /// The asynchronous main phase run by the solver: sets result().stop and the statistics.
  using AsyncLoop = std::function<void()>;
  /// The whole run with loops of the solver's own (OpenMP threads): the driver decides what runs
  /// when and does the rest (true residual, polish, result).
  IterationResult run(const SyncLoop& sync_loop, const AsyncLoop& async_loop);

  // Pieces for solvers that run their own loops.

  /// Starts a synchronous phase: its settings, and the numbering of its history points.
  SyncPhase begin_sync(IterationPhase phase);
  /// A blocking convergence test of the iterate whose local squared residual is local_sq.
  std::optional<StopReason> sync_test(double local_sq, bool at_limit, std::int64_t it, TimeSplit& time);
  /// The votes of a test (see Vote).
  static void fill_votes(double* votes, double local_sq, bool at_max_iters, bool over_time, bool non_finite,
                         bool locally_converged = false);
  /// StopRule::every_rank_local: whether this rank is locally converged after a residual^2 of
  /// local_sq; minimum: the minimum-residual rule (the smallest seen so far decides).
  bool locally_converged(double local_sq, bool minimum);
  /// A completed non-blocking convergence test.
  std::optional<StopReason> completed_test(const comm::NonblockingReduction& reduction, std::int64_t it);
  /// A completed test (every rank reads the same votes): records the history point and returns
  /// why to stop, or nothing to go on.
  std::optional<StopReason> decide(const double* votes, std::int64_t it);
  /// A history point (and --monitor line) at iteration `it`.
  void record_point(std::int64_t it, double residual);
  /// With rank_history: this rank's local residual^2 local_sq at iteration `it` (main-phase numbering
  /// continued by polish).
  void record_local(std::int64_t it, double local_sq);
  bool over_time() const { return opt_.iteration.time_limit > 0 && clock_.seconds() > opt_.iteration.time_limit; }
  /// The perturbation, if one is due at main-phase iteration `it` on this rank.
  void perturb(LocalIteration& local, std::int64_t it) const {
    if (noise_.perturb_now(it)) local.perturb(noise_.perturb_value());
  }
  /// sqrt(sum over ranks of true_residual_sq()) / source norm. Collective.
  double true_residual();

  IterationResult& result() { return result_; }
  RankStats& stats() { return result_.stats; }
  const DriverOptions& options() const { return opt_; }
  const core::Noise& noise() const { return noise_; }
  double seconds() const { return clock_.seconds(); }
  double source_norm() const { return source_norm_; }
  double initial_residual() const { return initial_residual_; }
  /// The last residual the main phase's test saw (IterationResult::tested_residual).
  void set_last_tested(double residual) { last_tested_ = residual; }

 private:
  StopReason run_sync(LocalIteration& local, IterationPhase which, std::int64_t& iterations, TimeSplit& time);
  void run_async(LocalIteration& local);
  struct AsyncState;  // run_async's state between passes (iteration_driver.cpp)
  /// One pass of the asynchronous loop before its limit: push, pull, then update or rest.
  void async_pass(LocalIteration& local, AsyncState& loop);
  /// A pass at a limit: keep receiving, so that the neighbours' sends complete, until the decision.
  void async_await_decision(LocalIteration& local, AsyncState& loop);
  /// The termination's part of a pass (the end barrier, the tree's vote or a reduction of votes):
  /// true when the phase ends, with result_.stop set.
  bool async_terminate(LocalIteration& local, AsyncState& loop);
  /// Whether a stop on the test stands: the true residual of the current iterate (collective)
  /// confirms it, or the refuted stops are used up.
  bool confirmed(LocalIteration& local, StopReason stop);
  /// The synchronous main phase without termination detection (see the top of this file).
  StopReason run_sync_untested(LocalIteration& local, std::int64_t& iterations, TimeSplit& time);
  /// One update of the asynchronous loop, timed, with the slow rank's pause; want_residual: into
  /// local_sq, recorded, and the next test no earlier than check_every iterations on.
  void async_update(LocalIteration& local, std::int64_t it, bool want_residual, double& local_sq);

  MPI_Comm comm_;
  int rank_ = 0;
  DriverOptions opt_;
  LocalProblem& problem_;
  core::Noise noise_;
  double source_norm_ = 1;
  double local_source_sq_ = 0;                 // this rank's ||b_p||^2
  double local_reference_sq_ = 0;              // every_rank_local: the local criterion's ||b_p||^2 (start())
  double min_local_sq_ = HUGE_VAL;             // every_rank_local: the smallest local residual^2 so far
  double initial_residual_ = 1;
  double initial_local_sq_ = 0;                // this rank's part of the initial guess's true residual^2
  double last_tested_ = 0;
  double clock_offset_ = 0;            // rank 0's clock minus this rank's, taken at the end of start()
  std::int64_t local_stride_ = 1, local_tests_ = 0;  // rank_history thinning
  std::int64_t iteration_offset_ = 0;  // polish phase: history continues the main phase's numbering
  std::int64_t next_test_ = 0;         // async: earliest iteration at which the next test may start
  core::Stopwatch clock_;
  IterationResult result_;
};

/// The message of a run stopped by the divergence safeguard.
std::string divergence_message(double initial, double residual, double factor);

}  // namespace desync::solvers
