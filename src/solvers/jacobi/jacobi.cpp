// Jacobi solvers of Bethune et al. (2011), section 3.1 (Figure 1 for the loop structure).
#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"

#include <cstdint>
#include <optional>
#include <utility>

#include "desync/solvers/jacobi/omp_jacobi.hpp"
#include "desync/solvers/jacobi/sweep.hpp"
#include "jacobi_run_base.hpp"

namespace desync::solvers {

using decomposition::Field;

namespace {

// The MPI solver: the iteration driver's loops around a sweep of the rank's block. One local
// iteration is one Jacobi sweep (Bethune et al., 2011, Figure 1) of *cur_ into *next_, its halo exchanged
// through comm::HaloExchange.
class JacobiRun : public LocalIteration, private detail::JacobiRunBase {
 public:
  JacobiRun(const decomposition::CartGrid& grid, const problems::Laplace3D& problem, const JacobiOptions& options,
            Field& u)
      : JacobiRunBase(grid, problem, options, u, *this) {
    start();
  }

  IterationResult run() { return driver_.run(*this); }

 private:
  double local_source_norm_sq() override { return source_norm_sq(); }
  double true_residual_sq() override { return residual_sq(); }
  void finish() override { final_field(); }

  void open_exchange(IterationPhase, bool synchronous) override {
    halo_.emplace(grid_, synchronous ? detail::sync_halo_config(opt_) : detail::async_halo_config(opt_));
  }
  void exchange(std::int64_t it) override { halo_->exchange(*cur_, it); }
  void refresh() override { halo_->refresh(*cur_); }  // the buffers alternate: both need the values
  void push(std::int64_t it) override { halo_->push(*cur_, it); }
  void pull(std::int64_t it) override { halo_->pull(*cur_, it); }
  comm::ExchangeStats exchange_stats() const override { return halo_->stats(); }
  void close_exchange() override { halo_->close(); }  // kept for its statistics until the next open

  // next <- Jacobi update of cur, with the local part of ||b - A cur||^2 fused in when asked.
  double update(std::int64_t, bool want_residual) override {
    const auto& n = cur_->extent();
    const double points = static_cast<double>(n[0]) * n[1] * n[2];
    if (want_residual) {
      const double r2 = jacobi_sweep_residual(*cur_, *next_, prefetch_);
      core::charge("jacobi.update_residual", points);  // simulated cluster: the sweep's cost
      return r2;
    }
    jacobi_sweep(*cur_, *next_, prefetch_);
    core::charge("jacobi.update", points);
    return 0.0;
  }
  void advance() override { std::swap(cur_, next_); }
  void perturb(double value) override { (*cur_)(0, 0, 0) = value; }

  std::optional<comm::HaloExchange> halo_;  // the open phase's exchange
};

}  // namespace

IterationResult solve_jacobi(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                          const JacobiOptions& options, Field& u) {
  if (options.threads > 0) {
    if (core::simulated_build)  // the threaded sweeps charge no cost: their time would be zero
      throw InputError("--threads is not available on a simulated cluster (run one rank per simulated core)");
    return solve_jacobi_omp(grid, problem, options, u);
  }
  JacobiRun run(grid, problem, options, u);
  return run.run();
}

}  // namespace desync::solvers
