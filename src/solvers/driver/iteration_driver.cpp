// The shared run loop of desync's stationary solvers (see iteration_driver.hpp): Bethune et al. (2011),
// Figure 1 and section 3.1 for the synchronous and asynchronous loops and the restarted
// non-blocking convergence test; Yamazaki et al. (2019), section 4 for the same structure around a subdomain
// solve (exchange interface values, solve locally, local residual, global agreement to stop).
#include "desync/core/error.hpp"
#include "desync/core/monitor.hpp"
#include "desync/core/simulation.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "desync/core/comm.hpp"

namespace desync::solvers {

namespace {

bool failed(StopReason stop) { return stop == StopReason::non_finite || stop == StopReason::diverged; }

}  // namespace

std::string divergence_message(double initial, double residual, double factor) {
  return fmt::format("residual grew from {:.3e} to {:.3e} (more than {:.0e} times): diverging", initial, residual,
                     factor);
}

std::int64_t LocalIteration::exchange_carrying(std::int64_t, std::int64_t) {
  throw std::logic_error("exchange_carrying: this solver carries no number with its exchanges");
}

IterationDriver::IterationDriver(MPI_Comm comm, const DriverOptions& options, LocalProblem& problem)
    : comm_(comm), rank_(core::rank_of(comm)), opt_(options), problem_(problem), noise_(options.iteration.noise, rank_) {}

void IterationDriver::start() {
  // The solve starts here: what a solver set up before (a factorisation, say) is its own to report,
  // and outside the time split and --time-limit.
  clock_ = core::Stopwatch{};
  double b2 = problem_.local_source_norm_sq();
  local_source_sq_ = b2;
  comm::allreduce_sum(comm_, std::span<double>(&b2, 1));
  source_norm_ = std::sqrt(b2);
  if (source_norm_ == 0.0) source_norm_ = 1.0;  // no source: report the plain residual norm
  // Baseline of the divergence safeguard: the true residual of the initial guess, computed
  // synchronously before the solve (an asynchronous first test may already be perturbed).
  initial_local_sq_ = problem_.true_residual_sq();
  double r2 = initial_local_sq_;
  comm::allreduce_sum(comm_, std::span<double>(&r2, 1));
  initial_residual_ = std::max(std::sqrt(r2) / source_norm_, opt_.iteration.tol);
  // The local criterion's reference (every_rank_local): ||b_p||^2 as Yamazaki et al. (2019, 4.3),
  // unless some rank has no source at all (a subdomain away from the source disc of laplace3d, say),
  // where ||r_p|| < tol ||b_p|| = 0 could never hold. Then every rank uses
  // (||b_p||^2 + ||b||^2 / P) / 2, positive everywhere and summing to ||b||^2 over the ranks, so
  // that every rank meeting it still gives ||r|| < tol ||b||.
  double smallest = local_source_sq_;
  MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_DOUBLE, MPI_MIN, comm_);
  int nranks = 1;
  MPI_Comm_size(comm_, &nranks);
  local_reference_sq_ = smallest > 0 || b2 == 0 ? local_source_sq_ : 0.5 * (local_source_sq_ + b2 / nranks);
  result_.source_share = b2 > 0 ? std::sqrt(local_reference_sq_ / b2) : 0.0;
  // Every rank leaves the allreduce above at about the same moment: the offset puts the per-rank
  // histories on rank 0's clock (to the latency of one broadcast).
  double t0 = clock_.seconds();
  MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, comm_);
  clock_offset_ = t0 - clock_.seconds();
}

IterationResult IterationDriver::run(LocalIteration& local) {
  return run([this, &local](IterationPhase phase, std::int64_t& iterations,
                            TimeSplit& time) { return run_sync(local, phase, iterations, time); },
             [this, &local] { run_async(local); });
}

IterationResult IterationDriver::run(const SyncLoop& sync_loop, const AsyncLoop& async_loop) {
  auto& st = result_.stats;
  if (!opt_.asynchronous)
    result_.stop = sync_loop(IterationPhase::main, st.iterations, st.time);
  else
    async_loop();
  result_.tested_residual = last_tested_;
  const bool main_failed = failed(result_.stop);
  core::Stopwatch t_finish;
  result_.true_residual = true_residual();
  st.time.finish += t_finish.seconds();
  // --polish (Bethune et al., 2011, the extension proposed at the end of 3.1.2): only after a stop on the
  // convergence test whose field does not meet the tolerance.
  if (opt_.iteration.polish && result_.stop == StopReason::converged && !(result_.true_residual <= opt_.iteration.tol)) {
    core::Stopwatch polish_clock;
    TimeSplit polish_split;  // reported as a whole in time.polish
    const StopReason polish_stop = sync_loop(IterationPhase::polish, st.polish_iterations, polish_split);
    if (failed(polish_stop)) result_.stop = polish_stop;
    core::Stopwatch t_true;
    result_.true_residual = true_residual();
    polish_split.finish += t_true.seconds();
    st.time.polish += polish_clock.seconds() - polish_split.finish;
    st.time.finish += polish_split.finish;
  }
  if (!std::isfinite(result_.true_residual) && !failed(result_.stop)) {
    // A run no test watched (--termination none) or one stopped by a limit while it diverged: the
    // final iterate overflowed, which is a numerical failure whatever stopped the run.
    result_.message = fmt::format("the final iterate is not finite (NaN or Inf; the run stopped on {}): diverging",
                                  core::to_string(result_.stop));
    result_.stop = StopReason::non_finite;
  }
  result_.converged = !failed(result_.stop) && !main_failed && result_.true_residual <= opt_.iteration.tol;
  problem_.finish();
  st.time.total = clock_.seconds();
  return std::move(result_);
}

IterationDriver::SyncPhase IterationDriver::begin_sync(IterationPhase phase) {
  const bool polishing = phase == IterationPhase::polish;
  iteration_offset_ = polishing ? result_.stats.iterations : 0;
  return {polishing, polishing ? 1 : opt_.exchange_period, polishing ? std::min(opt_.iteration.check_every, 10) : opt_.iteration.check_every};
}

// Bethune et al. (2011), Figure 1 with the synchronous halo swap (3.1.1); Yamazaki et al. (2019), 4.1 (two-sided exchange,
// wait for every neighbour) and 4.3 (MPI_Allreduce of the votes).
StopReason IterationDriver::run_sync(LocalIteration& local, IterationPhase which, std::int64_t& iterations,
                                     TimeSplit& time) {
  if (which == IterationPhase::main && !opt_.detect_termination) return run_sync_untested(local, iterations, time);
  const SyncPhase phase = begin_sync(which);
  local.open_exchange(which, /*synchronous=*/true);
  for (std::int64_t it = 0;; ++it) {
    core::Stopwatch t_halo;
    if (it % phase.period == 0)
      local.exchange(it);  // neighbours' values of time level it (staleness 0)
    else
      local.refresh();  // keep the last exchanged values
    time.halo += t_halo.seconds();
    if (!phase.polishing) perturb(local, it);

    const bool at_limit = it >= opt_.iteration.max_iters;
    const bool check = it % phase.check_every == 0 || at_limit;
    core::Stopwatch t_update;
    const double local_sq = local.update(it, check);  // candidate <- one local iteration
    const double coarse_s = local.update_coarse_seconds();
    const double update_s = t_update.seconds() - coarse_s;
    time.compute += update_s;
    time.halo += coarse_s;
    time.noise += noise_.after_sweep(update_s);
    if (check) {
      // The test judged the current iterate; stopping keeps it and drops the candidate.
      if (const auto stop = sync_test(local_sq, at_limit, it, time)) {
        iterations = it;
        if (!phase.polishing) result_.stats.halo = local.exchange_stats();
        core::Stopwatch t_close;
        local.close_exchange();
        time.finish += t_close.seconds();
        return *stop;
      }
    }
    local.advance();
  }
}

// Yamazaki et al. (2019), Table 4: no convergence test, no vote; the exchanges alone. With a time
// limit the ranks agree on the last iteration through the exchanges (see the top of the header).
StopReason IterationDriver::run_sync_untested(LocalIteration& local, std::int64_t& iterations, TimeSplit& time) {
  const SyncPhase phase = begin_sync(IterationPhase::main);
  constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
  const double limit = opt_.iteration.time_limit;
  const bool timed = limit > 0;
  const int hops = timed ? local.exchange_hops() : 0;
  if (hops < 0) throw InputError("a time limit without termination detection needs a solver whose synchronous "
                                 "exchanges can carry the last iteration (this one's cannot)");
  // A proposal made after the update of iteration k goes out with the next exchange (at most
  // `period` iterations on) and has reached every rank `hops` exchanges later: before k + margin.
  const std::int64_t margin = static_cast<std::int64_t>(hops + 1) * phase.period + 1;
  std::int64_t own = none;      // this rank's proposal: the iteration to stop at
  std::int64_t stop_at = none;  // the smallest proposal known here
  local.open_exchange(IterationPhase::main, /*synchronous=*/true);
  const double loop_start = clock_.seconds();  // the mean iteration time leaves the set-up out
  std::int64_t it = 0;
  for (; it < opt_.iteration.max_iters && it < stop_at; ++it) {
    core::Stopwatch t_halo;
    if (it % phase.period != 0)
      local.refresh();
    else if (timed)
      stop_at = std::min(stop_at, local.exchange_carrying(it, std::min(own, stop_at)));
    else
      local.exchange(it);
    time.halo += t_halo.seconds();
    perturb(local, it);
    core::Stopwatch t_update;
    local.update(it, /*want_residual=*/false);
    const double coarse_s = local.update_coarse_seconds();
    const double update_s = t_update.seconds() - coarse_s;
    time.compute += update_s;
    time.halo += coarse_s;
    time.noise += noise_.after_sweep(update_s);
    local.advance();
    if (timed && own == none) {
      // At this rank's mean iteration time so far, would the iteration the proposal names end
      // past the limit? Then propose it.
      const double now = clock_.seconds();
      const double mean = (now - loop_start) / static_cast<double>(it + 1);
      if (now + static_cast<double>(margin) * mean >= limit) {
        own = it + 1 + margin;
        stop_at = std::min(stop_at, own);
      }
    }
  }
  iterations = it;
  result_.stats.halo = local.exchange_stats();
  core::Stopwatch t_close;
  local.close_exchange();
  time.finish += t_close.seconds();
  return it >= opt_.iteration.max_iters ? StopReason::max_iters : StopReason::time_limit;
}

/// run_async's state between passes.
struct IterationDriver::AsyncState {
  // The votes travel either in repeated non-blocking reductions or, once per rank, up the
  // termination tree. Without termination detection (untested) there are no votes: one reduction,
  // a non-blocking barrier that a rank enters at its own limit, ends the phase (recursive doubling
  // over point-to-point messages, log2 P rounds advanced by this rank's tests: a simulated
  // cluster's MPI_Iallreduce is all-to-all).
  bool untested = false;
  bool entered_end = false;  // untested: this rank is in the barrier
  std::unique_ptr<comm::NonblockingReduction> reduction;
  std::unique_ptr<comm::TreeTermination> tree;
  bool may_skip = false;  // IdlePolicy::skip, and the update depends on the external values alone
  std::int64_t it = 0;
  bool local_done = false;  // reached max_iters or time_limit: wait for the global decision
  core::PollBackoff waiting, held_wait;
  bool non_finite = false;
  bool fresh_residual = false;  // this iteration's update computed a local residual that counts
  double last_local_sq = 0;     // the last local residual^2 (first: this rank's part of the initial guess's)
  // Which local residuals count. The residual an update computes is that of the current iterate
  // with the external values installed now. If some neighbour has sent nothing new since the
  // iterate was computed, that residual measures how well this rank solved for values it already
  // had, not the distance to the solution: zero by construction for an exact subdomain solve
  // without overlap (a rank that rests reads 0 and, by the minimum-residual rule, would stay
  // converged for good), and driven to zero by a fast rank's sweeps against a slow neighbour's
  // old values. So a residual counts (is tested, voted, judged by the minimum-residual rule) only
  // on an update that sees a new round: something new from every neighbour since the previous
  // update (ExchangeStats::rounds). It then includes the effect of every neighbour's latest change.
  long round_at_update = -1;
  // IdlePolicy::skip. The update's candidate depends on the external values alone
  // (update_repeats_without_new_data), so after any update the iterate is the fixed point of the
  // values it was computed from: until something new arrives, another update would reproduce it,
  // and its residual would not count: such a pass is skipped.
  long received_at_update = -1;  // external messages received when the last update ran (-1: none yet)
  bool repeated = false;         // the last update was a repeat: the iterate went out unchanged before it
  std::int64_t rest_passes = 0;  // skipped passes since the last update
  bool skipping = false;         // the last pass made no update
  bool resend = false;           // the last push left a neighbour without the current iterate (no free slot)
  std::optional<core::WaitScope> awaiting_decision;  // at a limit: the watchdog names what this rank waits for
  // Passes held back by the solver (may_update) count neither as iterations nor as rest, so no limit
  // ends them: the watchdog does, if they never end (a coarse correction that never comes).
  std::optional<core::WaitScope> held_back;

  /// The iteration limit: max_iters updates, or (skip) max_iters passes in a row without one.
  bool at_iteration_limit(std::int64_t max_iters) const { return it >= max_iters || rest_passes >= max_iters; }
};

// A stop on the test is confirmed by the true residual of the current iterate (synchronous,
// collective: every rank reads the same decision). The test reads local residuals against values
// their neighbours may have changed since; when the true residual refutes it, the phase goes on
// with the test started afresh (the minimum-residual rule forgets its minima), at most
// max_refuted_stops times; then the stop stands and the record says the true residual is above
// the tolerance (run::finish_run).
bool IterationDriver::confirmed(LocalIteration& local, StopReason stop) {
  auto& st = result_.stats;
  if (stop != StopReason::converged || st.refuted_stops >= max_refuted_stops) return true;
  core::Stopwatch t_true;
  local.settle();  // the iterate the phase would end with (close_exchange() changes it no more)
  const double r = true_residual();
  st.time.reduction += t_true.seconds();
  if (r <= opt_.iteration.tol) return true;
  ++st.refuted_stops;
  min_local_sq_ = HUGE_VAL;
  return false;
}

// Bethune et al. (2011), 3.1.2 and 3.1.3: never waits for a neighbour; the convergence test is a non-blocking
// reduction restarted as soon as the previous one completes (and check_every iterations after the
// previous start). Yamazaki et al. (2019), 4.2 (one-sided push of the newest interface values) and 4.3
// (asynchronous binary-tree termination: --reduction tree).
void IterationDriver::run_async(LocalIteration& local) {
  auto& st = result_.stats;
  local.open_exchange(IterationPhase::main, /*synchronous=*/false);
  AsyncState loop;
  loop.untested = !opt_.detect_termination;
  if (loop.untested)
    loop.reduction = comm::make_reduction(comm::ReductionKind::doubling, comm_, 1);
  else if (opt_.tree_termination)
    loop.tree = std::make_unique<comm::TreeTermination>(comm_, vote_count, opt_.termination_transport);
  else
    loop.reduction = comm::make_reduction(opt_.reduction, comm_, vote_count);
  loop.may_skip = opt_.idle == IdlePolicy::skip && local.update_repeats_without_new_data();
  loop.last_local_sq = initial_local_sq_;
  for (;;) {
    if (!loop.local_done)
      async_pass(local, loop);
    else
      async_await_decision(local, loop);
    if (async_terminate(local, loop)) break;
  }
  core::Stopwatch t_finish;
  if (loop.tree)
    loop.tree->close();
  else
    loop.reduction->finish();
  local.close_exchange();
  st.time.finish += t_finish.seconds();
  st.iterations = loop.it;
  st.halo = local.exchange_stats();
}

void IterationDriver::async_pass(LocalIteration& local, AsyncState& loop) {
  auto& st = result_.stats;
  const std::int64_t max_iters = opt_.iteration.max_iters;
  core::Stopwatch t_halo;
  // Skip: an iterate that a repeat reproduced, or a skipped pass kept, went out already (sending
  // it again would only make the neighbours repeat their updates), unless a send found no slot.
  if (loop.skipping || (loop.may_skip && loop.repeated) ? loop.resend : loop.it % opt_.exchange_period == 0) {
    const long skipped_sends = local.exchange_stats().sends_skipped;
    local.push(loop.it);
    loop.resend = local.exchange_stats().sends_skipped != skipped_sends;
  }
  local.pull(loop.it);  // the newest external values that have arrived
  st.time.halo += t_halo.seconds();
  const long received = local.exchange_stats().messages_received;
  const bool idle = loop.received_at_update >= 0 && received == loop.received_at_update;
  const bool perturbing = noise_.perturb_now(loop.it);
  const long round = local.exchange_stats().rounds;
  const bool new_round = round > loop.round_at_update;  // news from every neighbour since the last update
  const bool test_open =
      !loop.untested && (loop.tree ? !loop.tree->voted() : !loop.reduction->active());  // a vote can go out
  // At rest: an update would reproduce the iterate and its residual would not count, so it is
  // skipped; unless a round came without a message (no neighbour sends here) while a test is
  // open: then one update computes the residual that counts.
  const bool at_rest = loop.may_skip && idle && !perturbing && !(new_round && test_open);
  const bool held = !local.may_update();  // the solver holds this update back
  if (!held)
    loop.held_back.reset();
  else if (!loop.held_back)
    loop.held_back.emplace("the solver to let it update again (a two-level Schwarz rank holding its local solves "
                           "for a newer coarse correction, --coarse-reuse)");
  loop.skipping = held || at_rest;
  if (idle) {
    ++st.idle_passes;
    // Nothing new: give the core up once, so that a rank sharing it (more ranks than cores)
    // runs; where every rank has its own core this returns at once.
    if (opt_.idle != IdlePolicy::spin) std::this_thread::yield();
  }
  if (loop.skipping) {
    // A rank that rests max_iters passes in a row stops as at max_iters: --max-iters bounds a
    // run whose ranks all rest.
    loop.fresh_residual = false;
    if (!held) ++loop.rest_passes;  // a held pass waits for the solver, not for news: it does not count
    if (held) {
      // Only polls until the solver lets it update: give the core up (a rank sharing it may be
      // the one awaited) and, on a simulated cluster, let the clock move on (core::PollBackoff).
      if (!idle && opt_.idle != IdlePolicy::spin) std::this_thread::yield();
      loop.held_wait.idle();
    }
  } else {
    loop.rest_passes = 0;
    loop.held_wait = core::PollBackoff();  // the next hold starts its backoff afresh
    loop.received_at_update = received;
    loop.round_at_update = round;
    perturb(local, loop.it);
    loop.fresh_residual =
        new_round && !loop.untested && (loop.tree || !loop.reduction->active()) && loop.it >= next_test_;
    async_update(local, loop.it, loop.fresh_residual, loop.last_local_sq);
    loop.non_finite = loop.non_finite || !std::isfinite(loop.last_local_sq);
    loop.repeated = idle;
    local.advance();
    ++loop.it;
  }
  if (loop.at_iteration_limit(max_iters) || over_time()) loop.local_done = true;
}

void IterationDriver::async_await_decision(LocalIteration& local, AsyncState& loop) {
  loop.fresh_residual = false;
  loop.held_back.reset();  // scopes close in the reverse order of opening
  // Keep receiving so that neighbours' sends complete; no new updates. Nothing else to do
  // until the decision comes: on a simulated cluster the clock moves on (core::PollBackoff).
  if (!loop.awaiting_decision)
    loop.awaiting_decision.emplace(loop.untested
                                       ? "the other ranks to reach their --max-iters or --time-limit"
                                       : "the other ranks' votes to stop (it is at --max-iters or --time-limit)");
  core::Stopwatch t_halo;
  local.pull(loop.it);
  loop.waiting.idle();
  if (opt_.idle != IdlePolicy::spin) std::this_thread::yield();
  result_.stats.time.halo += t_halo.seconds();
}

bool IterationDriver::async_terminate(LocalIteration& local, AsyncState& loop) {
  auto& st = result_.stats;
  const std::int64_t max_iters = opt_.iteration.max_iters;
  core::Stopwatch t_red;
  if (loop.untested) {
    if (loop.local_done && !loop.entered_end) {
      const double here = 1;
      loop.reduction->start(std::span<const double>(&here, 1));
      loop.entered_end = true;
    }
    const bool ended = loop.entered_end && loop.reduction->test();
    st.time.reduction += t_red.seconds();
    if (ended)
      result_.stop = loop.at_iteration_limit(max_iters) ? StopReason::max_iters : StopReason::time_limit;  // its own
    return ended;
  }
  if (loop.tree) {
    // Yamazaki et al. (2019), section 4.3: vote once, when locally converged by the minimum-
    // residual rule; a rank at a limit or failing (non-finite, or its own residual alone beyond
    // the divergence safeguard) votes too, so that the decision comes and names why.
    if (!loop.tree->voted()) {
      const bool converged = loop.fresh_residual && locally_converged(loop.last_local_sq, true);
      const bool diverging = loop.fresh_residual && std::sqrt(loop.last_local_sq) / source_norm_ >
                                                        opt_.iteration.divergence_factor * initial_residual_;
      if (converged || diverging || loop.non_finite || loop.local_done) {
        double votes[vote_count];
        fill_votes(votes, loop.last_local_sq, loop.at_iteration_limit(max_iters), over_time(), loop.non_finite,
                   converged);
        loop.tree->vote(votes);
      }
    }
    const bool decided = loop.tree->test();
    st.time.reduction += t_red.seconds();
    if (!decided) return false;
    ++st.reductions;
    double votes[vote_count];
    std::copy(loop.tree->result().begin(), loop.tree->result().end(), votes);
    // Every rank voted, each for a reason decide() reads: it always names one.
    result_.stop = decide(votes, loop.it).value_or(StopReason::max_iters);
    // Closed before the collective true residual: closing completes the decision's way down the
    // tree (under the overlap schemes its puts wait for the next call on their channels).
    loop.tree->close();
    if (confirmed(local, result_.stop)) return true;
    loop.tree = std::make_unique<comm::TreeTermination>(comm_, vote_count, opt_.termination_transport);  // afresh
    return false;
  }
  if (!loop.reduction->active() && (loop.fresh_residual || loop.local_done)) {
    double votes[vote_count];
    // (A vote without a fresh residual, at a limit, reads the local state as it stands.)
    fill_votes(votes, loop.last_local_sq, loop.at_iteration_limit(max_iters), over_time(), loop.non_finite,
               locally_converged(loop.fresh_residual ? loop.last_local_sq : HUGE_VAL, true));
    loop.reduction->start(votes);
  }
  const bool done = loop.reduction->test();
  st.time.reduction += t_red.seconds();
  if (done)
    if (const auto stop = completed_test(*loop.reduction, loop.it)) {
      result_.stop = *stop;
      if (confirmed(local, *stop)) return true;
    }
  return false;
}

void IterationDriver::async_update(LocalIteration& local, std::int64_t it, bool want_residual, double& local_sq) {
  auto& st = result_.stats;
  core::Stopwatch t_update;
  if (want_residual) {
    local_sq = local.update(it, true);
    next_test_ = it + opt_.iteration.check_every;
  } else {
    local.update(it, false);
  }
  const double coarse_s = local.update_coarse_seconds();
  const double update_s = t_update.seconds() - coarse_s;
  st.time.compute += update_s;
  st.time.halo += coarse_s;
  st.time.noise += noise_.after_sweep(update_s);
  if (want_residual) record_local(it, local_sq);
}

void IterationDriver::fill_votes(double* votes, double local_sq, bool at_max_iters, bool over_time, bool non_finite,
                                 bool locally_converged) {
  votes[vote_residual_sq] = local_sq;
  votes[vote_at_max_iters] = at_max_iters ? 1.0 : 0.0;
  votes[vote_at_time_limit] = over_time ? 1.0 : 0.0;
  votes[vote_non_finite] = non_finite ? 1.0 : 0.0;
  votes[vote_not_converged] = locally_converged ? 0.0 : 1.0;
}

// Yamazaki et al., 2019, section 4.3: ||r_p||^2 < tau^2 ||b_p||^2 on the rank's own rows. The
// asynchronous phase judges the minimum residual seen so far, so that a rank does not drop out of
// the converged state when newer (and worse) interface values arrive; a synchronous test judges the
// iterate it tests (every rank's residual of the same global iterate: if all meet the criterion, so
// does the global residual; a minimum could mix iterations, and the local residuals of parallel
// Schwarz alternate between iterations).
bool IterationDriver::locally_converged(double local_sq, bool minimum) {
  if (std::isfinite(local_sq)) min_local_sq_ = std::min(min_local_sq_, local_sq);
  const double judged = minimum ? min_local_sq_ : local_sq;
  return judged < opt_.iteration.tol * opt_.iteration.tol * local_reference_sq_ || (local_reference_sq_ == 0.0 && judged == 0.0);
}

std::optional<StopReason> IterationDriver::sync_test(double local_sq, bool at_limit, std::int64_t it,
                                                     TimeSplit& time) {
  core::Stopwatch t_red;
  double votes[vote_count];
  fill_votes(votes, local_sq, at_limit, over_time(), !std::isfinite(local_sq), locally_converged(local_sq, false));
  record_local(it, local_sq);
  comm::allreduce_sum(comm_, votes);
  time.reduction += t_red.seconds();
  ++result_.stats.reductions;
  return decide(votes, it);
}

std::optional<StopReason> IterationDriver::completed_test(const comm::NonblockingReduction& reduction,
                                                          std::int64_t it) {
  ++result_.stats.reductions;
  double votes[vote_count];
  std::copy(reduction.result().begin(), reduction.result().end(), votes);
  return decide(votes, it);
}

void IterationDriver::record_point(std::int64_t it, double residual) {
  result_.history.push_back({clock_.seconds(), it, residual});
  core::Monitor{opt_.iteration.monitor ? 1 : 0, rank_ == 0}(it, clock_.seconds(), residual);  // every test
}

void IterationDriver::record_local(std::int64_t it, double local_sq) {
  if (!opt_.rank_history) return;
  if (local_tests_++ % local_stride_ != 0) return;
  auto& h = result_.rank_history;
  if (h.size() >= rank_history_cap) {  // keep every other point, record every other test from now on
    std::size_t k = 0;
    for (std::size_t i = 0; i < h.size(); i += 2) h[k++] = h[i];
    h.resize(k);
    local_stride_ *= 2;
  }
  const double local = local_reference_sq_ > 0 ? std::sqrt(local_sq / local_reference_sq_) : std::sqrt(local_sq);
  h.push_back({clock_.seconds() + clock_offset_, it + iteration_offset_, local});
}

std::optional<StopReason> IterationDriver::decide(const double* votes, std::int64_t it) {
  const double residual = std::sqrt(votes[vote_residual_sq]) / source_norm_;
  if (iteration_offset_ == 0) last_tested_ = residual;
  it += iteration_offset_;
  record_point(it, residual);
  if (votes[vote_non_finite] > 0 || !std::isfinite(residual)) {
    result_.message = "non-finite value (NaN or Inf) in the solution at iteration " + std::to_string(it) + " on " +
                      std::to_string(static_cast<int>(votes[vote_non_finite])) + " rank(s)";
    return StopReason::non_finite;
  }
  if (residual > opt_.iteration.divergence_factor * initial_residual_) {
    result_.message = divergence_message(initial_residual_, residual, opt_.iteration.divergence_factor);
    return StopReason::diverged;
  }
  if (opt_.stop_rule == StopRule::every_rank_local ? votes[vote_not_converged] == 0 : residual <= opt_.iteration.tol)
    return StopReason::converged;
  if (votes[vote_at_max_iters] > 0) return StopReason::max_iters;
  if (votes[vote_at_time_limit] > 0) return StopReason::time_limit;
  return std::nullopt;
}

double IterationDriver::true_residual() {
  double r2 = problem_.true_residual_sq();
  comm::allreduce_sum(comm_, std::span<double>(&r2, 1));
  return std::sqrt(r2) / source_norm_;
}

}  // namespace desync::solvers
