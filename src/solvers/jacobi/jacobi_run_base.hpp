#pragma once
// Internal to the Jacobi solvers (jacobi.cpp, omp_jacobi.cpp): what a run of the MPI solver and a
// run of the OpenMP solver share on top of the iteration driver (solvers/driver/iteration_driver.hpp):
// the two fields, the sweep's prefetch choice, the halo configurations of the phases, and the
// driver's start and end callbacks (source norm, true residual, the final field back into u).
#include <algorithm>
#include <span>

#include "desync/core/timer.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"
#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers::detail {

/// The halo exchange of a synchronous phase (main or polish).
inline comm::PlanExchangeConfig sync_halo_config(const JacobiOptions& o) {
  comm::PlanExchangeConfig c;
  c.transport = o.transport;
  c.racy_chunks = 1;
  return c;
}

/// The halo exchange of the asynchronous main phase.
inline comm::PlanExchangeConfig async_halo_config(const JacobiOptions& o) {
  comm::PlanExchangeConfig c;
  c.mode = o.mode;
  c.transport = o.transport;
  c.racy_chunks = o.racy_chunks;
  return c;
}

class JacobiRunBase {
 protected:
  /// `self` is the derived run, which the driver calls back (its LocalProblem part).
  JacobiRunBase(const decomposition::CartGrid& grid, const problems::Laplace3D& problem, const JacobiOptions& options,
                decomposition::Field& u, LocalProblem& self)
      : grid_(grid), problem_(problem), opt_(options), u_(u), v_(u),
        prefetch_(options.prefetch ? *options.prefetch
                                   : sweep_prefetch_for(u, ranks_on_node(grid.comm()), std::max(1, options.threads))),
        driver_(grid.comm(), jacobi_driver_options(options), self) {
    driver_.stats().prefetch = prefetch_ == SweepPrefetch::on;
  }

  /// Collective: this rank's statistics, then the driver's start (source norm, true residual of
  /// the initial guess). Called once, when the run's own checks have passed.
  void start() {
    auto& st = driver_.stats();
    st.rank = grid_.rank();
    st.coords = grid_.coords();
    st.local = grid_.local();
    st.neighbours = grid_.num_neighbours();
    cur_ = &u_;
    next_ = &v_;
    driver_.start();
  }

  // The LocalProblem callbacks, for the derived runs to forward to.
  double source_norm_sq() const { return problem_.local_source_norm_sq(grid_, u_); }
  double residual_sq() {
    comm::exchange_halos_blocking(grid_, *cur_);
    return problems::laplace_residual_sq(*cur_);
  }
  void final_field() {
    if (cur_ != &u_) u_ = *cur_;
  }

  /// Ends a synchronous phase's halo exchange (the main phase's statistics are kept).
  void close_sync_halo(comm::HaloExchange& halo, const IterationDriver::SyncPhase& phase, TimeSplit& time) {
    if (!phase.polishing) driver_.stats().halo = halo.stats();
    core::Stopwatch t_close;
    halo.close();
    time.finish += t_close.seconds();
  }

  const decomposition::CartGrid& grid_;
  const problems::Laplace3D& problem_;
  const JacobiOptions& opt_;
  decomposition::Field& u_;
  decomposition::Field v_;
  decomposition::Field* cur_ = nullptr;
  decomposition::Field* next_ = nullptr;
  const SweepPrefetch prefetch_;  ///< --prefetch, or the choice for this rank's block (sweep.hpp)
  IterationDriver driver_;        ///< last: its clock starts when the fields are ready
};

}  // namespace desync::solvers::detail
