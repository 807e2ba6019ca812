#pragma once
// Internal to the Jacobi solvers (jacobi.cpp, omp_jacobi.cpp): what a run of the MPI solver and a
// run of the OpenMP solver share. The set-up (source norm, per-rank statistics, the baseline of the
// divergence safeguard), the convergence test's payload and its reading, the synchronous phase's
// settings, and the end of a run (true residual, the optional --polish phase, the result).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "desync/core/monitor.hpp"
#include "desync/core/timer.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"
#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers::detail {

// Convergence-test payload, summed over ranks.
enum Vote : int { vote_residual_sq = 0, vote_at_max_iters, vote_at_time_limit, vote_non_finite, vote_count };

/// The message of a run stopped by the divergence safeguard.
inline std::string divergence_message(double initial, double residual, double factor) {
  return fmt::format("residual grew from {:.3e} to {:.3e} (more than {:.0e} times): diverging", initial, residual,
                     factor);
}

class JacobiRunBase {
 protected:
  enum class Phase { main, polish };

  /// The settings of a synchronous phase: the main one, or --polish (a halo swap every iteration, a
  /// test every min(check_every, 10) iterations, no perturbation, history numbered on from the main
  /// phase).
  struct SyncPhase {
    bool polishing;
    int period;
    int check_every;
  };

  JacobiRunBase(const decomposition::CartGrid& grid, const JacobiOptions& options, decomposition::Field& u)
      : grid_(grid), opt_(options), noise_(options.noise, grid.rank()), u_(u), v_(u),
        prefetch_(options.prefetch ? *options.prefetch
                                   : sweep_prefetch_for(u, ranks_on_node(grid.comm()), std::max(1, options.threads))) {
    result_.stats.prefetch = prefetch_ == SweepPrefetch::on;
  }

  /// Collective: the global source norm, this rank's statistics and the true residual of the
  /// initial guess. Called once, when the run's own checks have passed.
  void start(const problems::Laplace3D& problem) {
    double b2 = problem.local_source_norm_sq(grid_, u_);
    comm::allreduce_sum(grid_.comm(), std::span<double>(&b2, 1));
    source_norm_ = std::sqrt(b2);
    if (source_norm_ == 0.0) source_norm_ = 1.0;  // no source: report the plain residual norm
    auto& st = result_.stats;
    st.rank = grid_.rank();
    st.coords = grid_.coords();
    st.local = grid_.local();
    st.neighbours = grid_.num_neighbours();
    cur_ = &u_;
    next_ = &v_;
    initial_residual_ = std::max(true_residual(), opt_.tol);
  }

  /// The whole run: the main phase (synchronous or not, by mode), the true residual of the field,
  /// the --polish phase (only when the main phase ended on its convergence test, not on a limit or a
  /// failure), and the result. run_sync(phase, iterations, time) runs the synchronous solver and
  /// returns why it stopped; run_async() runs the asynchronous one and sets result_.stop.
  template <class RunSync, class RunAsync>
  JacobiResult solve(RunSync&& run_sync, RunAsync&& run_async) {
    auto& st = result_.stats;
    if (opt_.mode == comm::HaloMode::sync)
      result_.stop = run_sync(Phase::main, st.iterations, st.time);
    else
      run_async();
    result_.tested_residual = last_tested_;
    const bool failed = result_.stop == StopReason::non_finite || result_.stop == StopReason::diverged;
    core::Stopwatch t_finish;
    result_.true_residual = true_residual();
    st.time.finish += t_finish.seconds();
    if (opt_.polish && result_.stop == StopReason::converged && !(result_.true_residual <= opt_.tol)) {
      core::Stopwatch polish_clock;
      solvers::TimeSplit polish_split;  // reported as a whole in time.polish
      const StopReason polish_stop = run_sync(Phase::polish, st.polish_iterations, polish_split);
      if (polish_stop == StopReason::non_finite || polish_stop == StopReason::diverged) result_.stop = polish_stop;
      core::Stopwatch t_true;
      result_.true_residual = true_residual();
      polish_split.finish += t_true.seconds();
      st.time.polish += polish_clock.seconds() - polish_split.finish;
      st.time.finish += polish_split.finish;
    }
    result_.converged = !failed && result_.true_residual <= opt_.tol;
    if (cur_ != &u_) u_ = *cur_;
    st.time.total = clock_.seconds();
    return std::move(result_);
  }

  /// Starts a synchronous phase: its settings, and the numbering of its history points.
  SyncPhase begin_sync(Phase phase) {
    const bool polishing = phase == Phase::polish;
    iteration_offset_ = polishing ? result_.stats.iterations : 0;
    return {polishing, polishing ? 1 : opt_.halo_period,
            polishing ? std::min(opt_.check_every, 10) : opt_.check_every};
  }

  comm::HaloConfig sync_halo_config(const SyncPhase& phase) const {
    return {comm::HaloMode::sync, 1, 1, phase.polishing ? 16 : 8, opt_.transport, opt_.rma_sync, opt_.shmem_sync};
  }

  comm::HaloConfig async_halo_config() const {
    return {opt_.mode, opt_.inflight, opt_.racy_chunks, 0, opt_.transport, opt_.rma_sync, opt_.shmem_sync};
  }

  /// Ends a synchronous phase's halo exchange (the main phase's statistics are kept).
  void close_sync_halo(comm::HaloExchange& halo, const SyncPhase& phase, solvers::TimeSplit& time) {
    if (!phase.polishing) result_.stats.halo = halo.stats();
    core::Stopwatch t_close;
    halo.close();
    time.finish += t_close.seconds();
  }

  /// A synchronous convergence test of the iterate whose local squared residual is local_sq.
  std::optional<StopReason> sync_test(double local_sq, bool at_limit, std::int64_t it, solvers::TimeSplit& time) {
    core::Stopwatch t_red;
    double votes[vote_count] = {local_sq, at_limit ? 1.0 : 0.0, over_time() ? 1.0 : 0.0,
                                std::isfinite(local_sq) ? 0.0 : 1.0};
    comm::allreduce_sum(grid_.comm(), votes);
    time.reduction += t_red.seconds();
    ++result_.stats.reductions;
    return decide(votes, it);
  }

  /// A completed non-blocking convergence test.
  std::optional<StopReason> completed_test(const comm::NonblockingReduction& reduction, std::int64_t it) {
    ++result_.stats.reductions;
    double votes[vote_count];
    std::copy(reduction.result().begin(), reduction.result().end(), votes);
    return decide(votes, it);
  }

  /// A history point (and --monitor line) at iteration `it`.
  void record_point(std::int64_t it, double residual) {
    result_.history.push_back({clock_.seconds(), it, residual});
    core::Monitor{opt_.monitor ? 1 : 0, grid_.rank() == 0}(it, clock_.seconds(), residual);  // every test
  }

  // A completed convergence test (every rank reads the same votes): why to stop, or nothing to go on.
  std::optional<StopReason> decide(const double* votes, std::int64_t it) {
    const double residual = std::sqrt(votes[vote_residual_sq]) / source_norm_;
    if (iteration_offset_ == 0) last_tested_ = residual;
    it += iteration_offset_;
    record_point(it, residual);
    if (votes[vote_non_finite] > 0 || !std::isfinite(residual)) {
      result_.message = "non-finite value (NaN or Inf) in the solution at iteration " + std::to_string(it) + " on " +
                        std::to_string(static_cast<int>(votes[vote_non_finite])) + " rank(s)";
      return StopReason::non_finite;
    }
    if (residual > opt_.divergence_factor * initial_residual_) {
      result_.message = divergence_message(initial_residual_, residual, opt_.divergence_factor);
      return StopReason::diverged;
    }
    if (residual <= opt_.tol) return StopReason::converged;
    if (votes[vote_at_max_iters] > 0) return StopReason::max_iters;
    if (votes[vote_at_time_limit] > 0) return StopReason::time_limit;
    return std::nullopt;
  }

  bool over_time() const { return opt_.time_limit > 0 && clock_.seconds() > opt_.time_limit; }

  double true_residual() {
    comm::exchange_halos_blocking(grid_, *cur_);
    double r2 = problems::laplace_residual_sq(*cur_);
    comm::allreduce_sum(grid_.comm(), std::span<double>(&r2, 1));
    return std::sqrt(r2) / source_norm_;
  }

  const decomposition::CartGrid& grid_;
  const JacobiOptions& opt_;
  core::Noise noise_;
  decomposition::Field& u_;
  decomposition::Field v_;
  decomposition::Field* cur_ = nullptr;
  decomposition::Field* next_ = nullptr;
  const SweepPrefetch prefetch_;  ///< --prefetch, or the choice for this rank's block (sweep.hpp)
  double source_norm_ = 1;
  // Baseline of the divergence safeguard: the true residual of the initial guess, computed
  // synchronously before the solve (an asynchronous first test may already be perturbed).
  double initial_residual_ = 1;
  double last_tested_ = 0;
  std::int64_t iteration_offset_ = 0;  // polish phase: history continues the main phase's numbering
  core::Stopwatch clock_;
  JacobiResult result_;
};

}  // namespace desync::solvers::detail
