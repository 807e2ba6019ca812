// Jacobi solvers of paper 000, section 3.1 (Figure 1 for the loop structure).
#include "desync/solvers/jacobi/jacobi.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "desync/solvers/jacobi/omp_jacobi.hpp"
#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

using decomposition::Field;

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::converged: return "tolerance_reached";
    case StopReason::max_iters: return "max_iters";
    case StopReason::time_limit: return "time_limit";
    case StopReason::non_finite: return "non_finite";
    case StopReason::diverged: return "diverged";
  }
  return "?";
}

namespace {

// Convergence-test payload, summed over ranks.
enum Vote : int { vote_residual_sq = 0, vote_at_max_iters, vote_at_time_limit, vote_non_finite, vote_count };

class JacobiRun {
 public:
  JacobiRun(const decomposition::CartGrid& grid, const problems::Laplace3D& problem, const JacobiOptions& options,
            Field& u)
      : grid_(grid), opt_(options), noise_(options.noise, grid.rank()), u_(u), v_(u) {
    double b2 = problem.local_source_norm_sq(grid, u);
    comm::allreduce_sum(grid.comm(), std::span<double>(&b2, 1));
    source_norm_ = std::sqrt(b2);
    if (source_norm_ == 0.0) source_norm_ = 1.0;  // no source: report the plain residual norm
    result_.stats.rank = grid.rank();
    result_.stats.coords = grid.coords();
    result_.stats.local = grid.local();
    result_.stats.neighbours = grid.num_neighbours();
    cur_ = &u_;
    initial_residual_ = std::max(true_residual(), opt_.tol);
  }

  JacobiResult run() {
    next_ = &v_;
    auto& st = result_.stats;
    if (opt_.mode == comm::HaloMode::sync) {
      result_.stop = run_sync(Phase::main, st.iterations, st.time);
    } else {
      run_async();
    }
    result_.tested_residual = last_tested_;

    const bool failed = result_.stop == StopReason::non_finite || result_.stop == StopReason::diverged;
    run::Stopwatch finish;
    result_.true_residual = true_residual();
    st.time.finish += finish.seconds();
    // Polish only when the main phase ended on its convergence test (not on a limit or a failure).
    if (opt_.polish && result_.stop == StopReason::converged && !(result_.true_residual <= opt_.tol)) {
      run::Stopwatch polish;
      run::TimeSplit polish_split;  // reported as a whole in time.polish
      const StopReason polish_stop = run_sync(Phase::polish, st.polish_iterations, polish_split);
      if (polish_stop == StopReason::non_finite || polish_stop == StopReason::diverged) {
        result_.stop = polish_stop;
      }
      run::Stopwatch t_true;
      result_.true_residual = true_residual();
      polish_split.finish += t_true.seconds();
      st.time.polish += polish.seconds() - polish_split.finish;
      st.time.finish += polish_split.finish;
    }
    result_.converged = !failed && result_.true_residual <= opt_.tol;
    if (cur_ != &u_) u_ = *cur_;
    result_.stats.time.total = clock_.seconds();
    return std::move(result_);
  }

 private:
  enum class Phase { main, polish };

  // Figure 1 with the paper's sync halo swap (3.1.1). The --polish phase uses it too, with a halo
  // swap every iteration, a test every min(check_every, 10) iterations, no perturbation, and its
  // own --max-iters budget; its history points continue the main phase's iteration numbers.
  StopReason run_sync(Phase phase, std::int64_t& iterations, run::TimeSplit& time) {
    const bool polishing = phase == Phase::polish;
    const int period = polishing ? 1 : opt_.halo_period;
    const int check_every = polishing ? std::min(opt_.check_every, 10) : opt_.check_every;
    iteration_offset_ = polishing ? result_.stats.iterations : 0;
    comm::HaloExchange halo(grid_, {comm::HaloMode::sync, 1, 1, polishing ? 16 : 8, opt_.transport, opt_.rma_sync,
                                     opt_.shmem_sync});
    for (std::int64_t it = 0;; ++it) {
      run::Stopwatch t_halo;
      if (it % period == 0)
        halo.exchange(*cur_, it);
      else
        halo.refresh(*cur_);  // keep the last swapped values (the buffers alternate)
      time.halo += t_halo.seconds();
      if (!polishing) perturb(it);

      const bool at_limit = it >= opt_.max_iters;
      const bool check = it % check_every == 0 || at_limit;
      run::Stopwatch t_sweep;
      double local_sq = check ? jacobi_sweep_residual(*cur_, *next_) : (jacobi_sweep(*cur_, *next_), 0.0);
      const double sweep_s = t_sweep.seconds();
      time.compute += sweep_s;
      time.noise += noise_.after_sweep(sweep_s);
      if (check) {
        run::Stopwatch t_red;
        double votes[vote_count] = {local_sq, at_limit ? 1.0 : 0.0, over_time() ? 1.0 : 0.0,
                                    std::isfinite(local_sq) ? 0.0 : 1.0};
        comm::allreduce_sum(grid_.comm(), votes);
        time.reduction += t_red.seconds();
        ++result_.stats.reductions;
        // The test judged *cur_; stopping keeps it and drops the sweep just made.
        if (const auto stop = decide(votes, it)) {
          iterations = it;
          if (!polishing) result_.stats.halo = halo.stats();
          run::Stopwatch t_close;
          halo.close();
          time.finish += t_close.seconds();
          return *stop;
        }
      }
      std::swap(cur_, next_);
    }
  }

  // Asynchronous Jacobi (3.1.2, 3.1.3): never waits for a neighbour; the convergence test is a
  // non-blocking reduction restarted as soon as the previous one completes.
  void run_async() {
    auto& st = result_.stats;
    comm::HaloExchange halo(grid_, {opt_.mode, opt_.inflight, opt_.racy_chunks, 0, opt_.transport, opt_.rma_sync,
                                     opt_.shmem_sync});
    auto reduction = comm::make_reduction(opt_.reduction, grid_.comm(), vote_count);
    std::int64_t it = 0;
    bool local_done = false;  // reached --max-iters or --time-limit: wait for the global decision
    bool non_finite = false;
    bool fresh_residual = false;  // this iteration's sweep computed the local residual
    double last_local_sq = 0;
    for (;;) {
      if (!local_done) {
        run::Stopwatch t_halo;
        if (it % opt_.halo_period == 0) halo.push(*cur_, it);
        halo.pull(*cur_, it);
        st.time.halo += t_halo.seconds();
        perturb(it);

        fresh_residual = !reduction->active() && it >= next_test_;
        run::Stopwatch t_sweep;
        if (fresh_residual) {
          last_local_sq = jacobi_sweep_residual(*cur_, *next_);
          next_test_ = it + opt_.check_every;
        }
        else
          jacobi_sweep(*cur_, *next_);
        const double sweep_s = t_sweep.seconds();
        st.time.compute += sweep_s;
        st.time.noise += noise_.after_sweep(sweep_s);
        non_finite = non_finite || !std::isfinite(last_local_sq);
        std::swap(cur_, next_);
        ++it;
        if (it >= opt_.max_iters || over_time()) local_done = true;
      } else {
        fresh_residual = false;
        // Keep receiving so that neighbours' sends complete; no new sweeps.
        run::Stopwatch t_halo;
        halo.pull(*cur_, it);
        st.time.halo += t_halo.seconds();
      }

      run::Stopwatch t_red;
      if (!reduction->active() && (fresh_residual || local_done)) {
        double votes[vote_count] = {last_local_sq, it >= opt_.max_iters ? 1.0 : 0.0, over_time() ? 1.0 : 0.0,
                                    non_finite ? 1.0 : 0.0};
        reduction->start(votes);
      }
      const bool done = reduction->test();
      st.time.reduction += t_red.seconds();
      if (done) {
        ++st.reductions;
        double votes[vote_count];
        std::copy(reduction->result().begin(), reduction->result().end(), votes);
        if (const auto stop = decide(votes, it)) {
          result_.stop = *stop;
          break;
        }
      }
    }
    run::Stopwatch t_finish;
    reduction->finish();
    halo.close();
    st.time.finish += t_finish.seconds();
    st.iterations = it;
    st.halo = halo.stats();
  }

  // Common reading of a completed convergence test: why to stop, or nothing to go on.
  std::optional<StopReason> decide(const double* votes, std::int64_t it) {
    const double residual = std::sqrt(votes[vote_residual_sq]) / source_norm_;
    if (iteration_offset_ == 0) last_tested_ = residual;
    it += iteration_offset_;
    result_.history.push_back({clock_.seconds(), it, residual});
    if (opt_.monitor && grid_.rank() == 0) {
      std::printf("  iteration %10lld  time %9.3f s  residual %.6e\n", static_cast<long long>(it), clock_.seconds(),
                  residual);
      std::fflush(stdout);
    }
    if (votes[vote_non_finite] > 0 || !std::isfinite(residual)) {
      result_.message = "non-finite value (NaN or Inf) in the solution at iteration " + std::to_string(it) + " on " +
                        std::to_string(static_cast<int>(votes[vote_non_finite])) + " rank(s)";
      return StopReason::non_finite;
    }
    if (residual > opt_.divergence_factor * initial_residual_) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "residual grew from %.3e to %.3e (more than %.0e times): diverging",
                    initial_residual_, residual, opt_.divergence_factor);
      result_.message = buf;
      return StopReason::diverged;
    }
    if (residual <= opt_.tol) return StopReason::converged;
    if (votes[vote_at_max_iters] > 0) return StopReason::max_iters;
    if (votes[vote_at_time_limit] > 0) return StopReason::time_limit;
    return std::nullopt;
  }

  bool over_time() const { return opt_.time_limit > 0 && clock_.seconds() > opt_.time_limit; }

  void perturb(std::int64_t it) {
    if (noise_.perturb_now(it)) (*cur_)(0, 0, 0) = noise_.perturb_value();
  }

  double true_residual() {
    comm::exchange_halos_blocking(grid_, *cur_);
    double r2 = problems::laplace_residual_sq(*cur_);
    comm::allreduce_sum(grid_.comm(), std::span<double>(&r2, 1));
    return std::sqrt(r2) / source_norm_;
  }

  const decomposition::CartGrid& grid_;
  const JacobiOptions& opt_;
  run::Noise noise_;
  Field& u_;
  Field v_;
  Field* cur_ = nullptr;
  Field* next_ = nullptr;
  double source_norm_ = 1;
  // Baseline of the divergence safeguard: the true residual of the initial guess, computed
  // synchronously before the solve (an asynchronous first test may already be perturbed).
  double initial_residual_ = 1;
  double last_tested_ = 0;
  std::int64_t next_test_ = 0;  // async: earliest iteration at which the next test may start
  std::int64_t iteration_offset_ = 0;  // polish phase: history continues the main phase's numbering
  run::Stopwatch clock_;
  JacobiResult result_;
};

}  // namespace

JacobiResult solve_jacobi(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                          const JacobiOptions& options, Field& u) {
  if (options.threads > 0) return solve_jacobi_omp(grid, problem, options, u);
  JacobiRun run(grid, problem, options, u);
  return run.run();
}

}  // namespace desync::solvers
