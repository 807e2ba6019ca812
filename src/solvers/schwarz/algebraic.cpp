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
    return r2;
  }
  // advance(): u_i <- y_p,i on the own rows (the rest of y_p is read by nobody: restricted Schwarz).
  void perturb(double value) override { x_[own_] = value; }
  // The candidate is A_p^-1 rhs, rhs from b and the ghosts alone, except where the Robin data reads
  // an owned u_i (overlap 0 with robin > 0).
  bool update_repeats_without_new_data() const override { return opt_.robin == 0 || opt_.overlap > 0; }

  const AlgebraicSchwarzOptions& opt_;
  core::Stopwatch setup_;
  linalg::OverlappingSubdomain sub_;
  double setup_s_ = 0;
  std::size_t own_, owned_;  // where the owned rows start in Omega_p, how many
  std::vector<double> rhs_, b_ext_;
  double spmv_s_ = 0, update_s_ = 0, solve_s_ = 0;
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
