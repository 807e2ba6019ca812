// Restricted additive (optionally optimized) Schwarz on an assembled matrix, synchronous and
// asynchronous (Yamazaki et al., 2019, sections 3-4); see include/desync/solvers/schwarz/algebraic.hpp.
#include "desync/solvers/schwarz/algebraic.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "coarse/coarse_level.hpp"
#include "subdomain_iteration.hpp"

namespace desync::solvers {

namespace {

// One rank's run: the driver's loops around a subdomain solve (LocalIteration).
class AlgebraicSchwarzRun : public detail::SubdomainIteration {
 public:
  AlgebraicSchwarzRun(const linalg::DistributedCsr& A, std::span<const double> b, std::span<const double> x0,
                      const AlgebraicSchwarzOptions& o, const DriverOptions& it)
      : opt_(o), sub_(A, o.overlap_options()), own_(static_cast<std::size_t>(sub_.own_begin())),
        owned_(static_cast<std::size_t>(sub_.owned())), rhs_(static_cast<std::size_t>(sub_.size()), 0.0),
        b_ext_(static_cast<std::size_t>(sub_.size()), 0.0), driver_(A.comm, it, *this) {
    setup_s_ = setup_.seconds();
    // Omega_p's values; the plan sends the owned rows, from x_[own_].
    init_subdomain(A.comm, sub_.ghost_plan(), static_cast<std::size_t>(sub_.size()), own_, sub_.ghosts().size(),
                   o.transport, o.wait_all, !it.detect_termination && !it.asynchronous && it.iteration.time_limit > 0);
    // b on Omega_p (its rows not owned from their owners), and the ghosts of the initial guess:
    // one synchronous exchange each, at set-up.
    std::copy(b.begin(), b.end(), b_ext_.begin() + static_cast<std::ptrdiff_t>(own_));
    {
      comm::PlanExchange ex(comm_, sub_.restriction_plan(), exchange_config(comm::HaloMode::sync));
      ex.start(b.data(), 0);
      ex.finish(b_ext_.data(), 0);
      ex.close();
    }
    std::copy(x0.begin(), x0.end(), x_.begin() + static_cast<std::ptrdiff_t>(own_));
    ghost_ = current_ghosts();
    if (o.coarse.two_level()) {
      coarse_ = std::make_unique<detail::CoarseLevel>(A, sub_, o.coarse, o.coarse_reuse, o.coarse_fan_in);
      // async: the halo values carry their sender's coarse version (x_[n_]) and are lifted to
      // this rank's (coarse_level.hpp); raw_ keeps them as received.
      carry_async_ = true;
      raw_ = ghost_;
    }
    auto& st = driver_.stats();
    st.rank = sub_.rank();
    st.local = {static_cast<int>(owned_), 1, 1};
    st.neighbours = plan_.remote_peers();
    driver_.start();
  }

  AlgebraicSchwarzResult run() {
    AlgebraicSchwarzResult r;
    r.run = driver_.run(*this);
    const auto& s = sub_.solver();
    r.local_solver = s.kind();
    r.local_solver_name = s.name();
    r.local_solver_reason = s.reason();
    r.factor_seconds = s.factor_seconds();
    r.factor_nonzeros = s.factor_nonzeros();
    r.extended_rows = sub_.size();
    r.setup_seconds = setup_s_;
    r.spmv_seconds = spmv_s_;
    r.update_seconds = update_s_;
    r.solve_seconds = solve_s_;
    if (coarse_) {
      const auto& c = coarse_->space();
      r.coarse_size = c.size();
      r.coarse_nonzeros = c.matrix_nonzeros();
      r.coarse_factor_nonzeros = c.factor_nonzeros();
      r.coarse_setup_seconds = c.setup_seconds();
      r.coarse_description = c.description();
      r.coarse_solver = c.solver_name();
      const auto& st = coarse_->stats();
      r.coarse = {st.corrections, st.solves, st.contributions, st.held, coarse_->tree().height, st.seconds, st.delay};
    }
    return r;
  }

  /// This rank's rows of the current iterate.
  void copy_out(std::span<double> x) const {
    std::copy(x_.begin() + static_cast<std::ptrdiff_t>(own_), x_.begin() + static_cast<std::ptrdiff_t>(own_ + owned_),
              x.begin());
  }

 private:
  double local_source_norm_sq() override {
    double b2 = 0;
    for (std::size_t k = 0; k < owned_; ++k) b2 += b_ext_[own_ + k] * b_ext_[own_ + k];
    return b2;
  }
  // The global residual of the current iterate: the owners' values at the ghosts, exchanged
  // synchronously, then every rank's own rows.
  double true_residual_sq() override {
    const std::vector<double> ghost = current_ghosts();
    const double r2 = sub_.local_residual_sq(b_ext_.data(), x_.data(), ghost.data());
    core::charge("schwarz.residual", static_cast<double>(owned_));
    return r2;
  }

  // Without structure, ranks - 1 exchanges bound the distance between any two ranks of a
  // connected neighbour graph.
  int exchange_hops() const override {
    int n = 1;
    MPI_Comm_size(comm_, &n);
    return n - 1;
  }
  double update(std::int64_t, bool want_residual) override {
    double r2 = 0;
    if (want_residual) {
      core::Stopwatch t;
      r2 = sub_.local_residual_sq(b_ext_.data(), x_.data(), ghost_.data());  // r_p = b_p - (A u)_p, own rows
      core::charge("schwarz.residual", static_cast<double>(owned_));
      spmv_s_ += t.seconds();
    }
    core::Stopwatch t_update;
    sub_.local_rhs(b_ext_.data(), x_.data(), ghost_.data(), rhs_.data());  // rhs_i = b_i - a_ie (u_e - beta u_i)
    update_s_ += t_update.seconds();
    core::Stopwatch t_solve;
    sub_.solver().solve(rhs_.data(), next_.data());  // y_p = A_p^-1 rhs
    core::charge("schwarz.solve", static_cast<double>(n_));
    solve_s_ += t_solve.seconds();
    if (async_coarse_) coarse_->after_solve();
    return r2;
  }
  // Two-level, synchronous: the coarse correction after the exchange, before the local solves
  // (coarse_level.hpp): u <- u + Phi A0^-1 Phi^T (b - A u), its ghosts corrected alike.
  void exchange(std::int64_t it) override {
    SubdomainIteration::exchange(it);
    if (coarse_) coarse_->correct_sync(b_ext_.data(), x_.data(), ghost_.data());
  }
  std::int64_t exchange_carrying(std::int64_t it, std::int64_t level) override {
    level = SubdomainIteration::exchange_carrying(it, level);
    if (coarse_) coarse_->correct_sync(b_ext_.data(), x_.data(), ghost_.data());
    return level;
  }
  // Two-level, asynchronous: the halo values as received go to raw_, the coarse level takes its
  // newest correction, and the ghosts are the received values lifted to this rank's version.
  void open_exchange(IterationPhase phase, bool synchronous) override {
    SubdomainIteration::open_exchange(phase, synchronous);
    async_coarse_ = coarse_ && !synchronous;
    if (async_coarse_) coarse_->open_async(transport());
  }
  void push(std::int64_t it) override {
    if (async_coarse_) x_[n_] = static_cast<double>(coarse_->version());
    SubdomainIteration::push(it);
  }
  void pull(std::int64_t it) override {
    if (!async_coarse_) return SubdomainIteration::pull(it);
    last_it_ = it;
    open_plan_exchange().finish(raw_.data(), it);
    coarse_->pull(it, x_.data());
    coarse_->lift(plan_, ghosts_, raw_.data(), ghost_.data());
    coarse_->contribute_and_solve(it, b_ext_.data(), x_.data());
  }
  void close_exchange() override {
    SubdomainIteration::close_exchange();
    if (async_coarse_) coarse_->close_async(last_it_, x_.data());
    async_coarse_ = false;
  }
  void settle() override {
    if (async_coarse_) coarse_->settle(last_it_, x_.data());
  }
  bool may_update() override { return !async_coarse_ || coarse_->may_update(); }
  // advance(): u_i <- y_p,i on the own rows (the rest of y_p is read by nobody: restricted Schwarz).
  void perturb(double value) override { x_[own_] = value; }
  // The candidate is A_p^-1 rhs, rhs from b and the ghosts alone, except where the Robin data reads
  // an owned u_i (overlap 0 with robin > 0).
  // Not with a coarse level: a coarse correction changes the iterate without a halo message.
  bool update_repeats_without_new_data() const override {
    return !coarse_ && (opt_.robin == 0 || opt_.overlap > 0);
  }

  const AlgebraicSchwarzOptions& opt_;
  core::Stopwatch setup_;
  solvers::OverlappingSubdomain sub_;
  double setup_s_ = 0;
  std::size_t own_, owned_;  // where the owned rows start in Omega_p, how many
  std::vector<double> rhs_, b_ext_;
  double spmv_s_ = 0, update_s_ = 0, solve_s_ = 0;
  std::unique_ptr<detail::CoarseLevel> coarse_;
  bool async_coarse_ = false;  // the asynchronous phase is open with a coarse level
  std::int64_t last_it_ = 0;   // the iteration of the last pull (the final corrections' delays)
  std::vector<double> raw_;    // async two-level: the ghosts as received, the senders' versions after them
  IterationDriver driver_;
};

}  // namespace

AlgebraicSchwarzResult solve_algebraic_schwarz(const linalg::DistributedCsr& A, std::span<const double> b,
                                               std::span<double> x, const AlgebraicSchwarzOptions& o) {
  const auto rows = static_cast<std::size_t>(A.local_rows());
  agree_or_throw(A.comm, b.size() == rows && x.size() == rows,
                 fmt::format("schwarz: right-hand side and iterate must have this rank's {} rows (got {} and {})", rows,
                             b.size(), x.size()));
  agree_or_throw(A.comm, o.mode == comm::HaloMode::sync || o.mode == comm::HaloMode::async,
                 fmt::format("--mode {}: schwarz runs sync or async", comm::to_string(o.mode)));
  agree_or_throw(A.comm, o.transport.max_in_flight >= 1,
                 fmt::format("--inflight {}: R must be >= 1", o.transport.max_in_flight));
  const DriverOptions it = detail::schwarz_driver_options(o);
  AlgebraicSchwarzRun run(A, b, x, o, it);
  AlgebraicSchwarzResult r = run.run();
  run.copy_out(x);
  return r;
}

}  // namespace desync::solvers
