// Jacobi solvers of paper 000, section 3.1 (Figure 1 for the loop structure).
#include "desync/core/timer.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"

#include <cmath>
#include <cstdint>
#include <utility>

#include "desync/solvers/jacobi/omp_jacobi.hpp"
#include "desync/solvers/jacobi/sweep.hpp"
#include "jacobi_run_base.hpp"

namespace desync::solvers {

using decomposition::Field;

namespace {

using detail::vote_count;

class JacobiRun : private detail::JacobiRunBase {
 public:
  JacobiRun(const decomposition::CartGrid& grid, const problems::Laplace3D& problem, const JacobiOptions& options,
            Field& u)
      : JacobiRunBase(grid, options, u) {
    start(problem);
  }

  JacobiResult run() {
    return solve([this](Phase phase, std::int64_t& iterations, solvers::TimeSplit& time) {
      return run_sync(phase, iterations, time);
    }, [this] { run_async(); });
  }

 private:
  // Figure 1 with the paper's sync halo swap (3.1.1). The --polish phase uses it too, with its own
  // --max-iters budget (see JacobiRunBase::SyncPhase).
  StopReason run_sync(Phase which, std::int64_t& iterations, solvers::TimeSplit& time) {
    const SyncPhase phase = begin_sync(which);
    comm::HaloExchange halo(grid_, sync_halo_config(phase));
    for (std::int64_t it = 0;; ++it) {
      core::Stopwatch t_halo;
      if (it % phase.period == 0)
        halo.exchange(*cur_, it);
      else
        halo.refresh(*cur_);  // keep the last swapped values (the buffers alternate)
      time.halo += t_halo.seconds();
      if (!phase.polishing) perturb(it);

      const bool at_limit = it >= opt_.max_iters;
      const bool check = it % phase.check_every == 0 || at_limit;
      core::Stopwatch t_sweep;
      double local_sq = check ? jacobi_sweep_residual(*cur_, *next_, prefetch_) : (jacobi_sweep(*cur_, *next_, prefetch_), 0.0);
      const double sweep_s = t_sweep.seconds();
      time.compute += sweep_s;
      time.noise += noise_.after_sweep(sweep_s);
      if (check) {
        // The test judged *cur_; stopping keeps it and drops the sweep just made.
        if (const auto stop = sync_test(local_sq, at_limit, it, time)) {
          iterations = it;
          close_sync_halo(halo, phase, time);
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
    comm::HaloExchange halo(grid_, async_halo_config());
    auto reduction = comm::make_reduction(opt_.reduction, grid_.comm(), vote_count);
    std::int64_t it = 0;
    bool local_done = false;  // reached --max-iters or --time-limit: wait for the global decision
    bool non_finite = false;
    bool fresh_residual = false;  // this iteration's sweep computed the local residual
    double last_local_sq = 0;
    for (;;) {
      if (!local_done) {
        core::Stopwatch t_halo;
        if (it % opt_.halo_period == 0) halo.push(*cur_, it);
        halo.pull(*cur_, it);
        st.time.halo += t_halo.seconds();
        perturb(it);

        fresh_residual = !reduction->active() && it >= next_test_;
        core::Stopwatch t_sweep;
        if (fresh_residual) {
          last_local_sq = jacobi_sweep_residual(*cur_, *next_, prefetch_);
          next_test_ = it + opt_.check_every;
        }
        else
          jacobi_sweep(*cur_, *next_, prefetch_);
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
        core::Stopwatch t_halo;
        halo.pull(*cur_, it);
        st.time.halo += t_halo.seconds();
      }

      core::Stopwatch t_red;
      if (!reduction->active() && (fresh_residual || local_done)) {
        double votes[vote_count] = {last_local_sq, it >= opt_.max_iters ? 1.0 : 0.0, over_time() ? 1.0 : 0.0,
                                    non_finite ? 1.0 : 0.0};
        reduction->start(votes);
      }
      const bool done = reduction->test();
      st.time.reduction += t_red.seconds();
      if (done) {
        if (const auto stop = completed_test(*reduction, it)) {
          result_.stop = *stop;
          break;
        }
      }
    }
    core::Stopwatch t_finish;
    reduction->finish();
    halo.close();
    st.time.finish += t_finish.seconds();
    st.iterations = it;
    st.halo = halo.stats();
  }

  void perturb(std::int64_t it) {
    if (noise_.perturb_now(it)) (*cur_)(0, 0, 0) = noise_.perturb_value();
  }

  std::int64_t next_test_ = 0;  // async: earliest iteration at which the next test may start
};

}  // namespace

JacobiResult solve_jacobi(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                          const JacobiOptions& options, Field& u) {
  if (options.threads > 0) return solve_jacobi_omp(grid, problem, options, u);
  JacobiRun run(grid, problem, options, u);
  return run.run();
}

}  // namespace desync::solvers
