// Jacobi's method on an assembled matrix (Bethune et al., 2011, sections 2 and 3.1); see
// include/desync/solvers/jacobi/matrix_jacobi.hpp for the method as implemented. One local
// iteration is one pass over this rank's rows (point) or one pass and one solve with the rank's
// diagonal block (block), its ghost columns' values exchanged through comm::PlanExchange.
#include "desync/solvers/jacobi/matrix_jacobi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "desync/communication/halo_plan.hpp"
#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "desync/linalg/ghost_requests.hpp"
#include "desync/linalg/system_io.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "desync/communication/sparse_alltoall.hpp"

namespace desync::solvers {

namespace {

/// Bounds of the spectral radius estimate's verdicts.
constexpr double spectral_margin = 1e-6;

/// A reproducible value in (0, 1] per row key: the power iteration's start vector, the same under
/// any partition (splitmix64 of the key).
double start_value(std::int64_t key) {
  std::uint64_t z = static_cast<std::uint64_t>(key) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;
}

double sum_over(MPI_Comm comm, double v) {
  comm::allreduce_sum(comm, std::span<double>(&v, 1));
  return v;
}

double max_over(MPI_Comm comm, double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
  return v;
}

// Empty when the inputs are usable on this rank, otherwise the reason.
std::string check_inputs(const linalg::DistributedCsr& A, std::size_t b, std::size_t x, std::size_t keys,
                         const MatrixJacobiOptions& o, int rank, int nranks) {
  if (A.block_size != 1)
    return fmt::format("matrix Jacobi: block size {}: only scalar matrices (block size 1)", A.block_size);
  if (A.row_offsets.size() != static_cast<std::size_t>(nranks) + 1 || A.row_offsets.front() != 0 ||
      A.row_ptr.empty() ||
      A.row_offsets[static_cast<std::size_t>(rank) + 1] - A.row_offsets[static_cast<std::size_t>(rank)] !=
          A.local_block_rows())
    return "matrix Jacobi: the matrix's row distribution is inconsistent";
  const auto n = static_cast<std::size_t>(A.local_rows());
  if (b != n) return fmt::format("matrix Jacobi: the right-hand side has {} entries on rank {}, the matrix {} rows", b, rank, n);
  if (x != n) return fmt::format("matrix Jacobi: the solution vector has {} entries on rank {}, the matrix {} rows", x, rank, n);
  if (keys != 0 && keys != n)
    return fmt::format("matrix Jacobi: {} order keys on rank {} for {} rows", keys, rank, n);
  if (o.mode == comm::HaloMode::bounded) return "matrix Jacobi: mode bounded is not available (sync, async, racy)";
  if (o.halo_period < 1) return "matrix Jacobi: the halo period must be >= 1";
  if (o.racy_chunks < 1) return "matrix Jacobi: racy chunks must be >= 1";
  if (o.iteration.check_every < 1) return "matrix Jacobi: check_every must be >= 1";
  if (o.spectral_steps != 0 && o.spectral_steps < 2) return "matrix Jacobi: spectral steps must be 0 or >= 2";
  const std::int64_t global = A.global_block_rows();
  for (std::int64_t c : A.col)
    if (c < 0 || c >= global) return fmt::format("matrix Jacobi: column {} out of range (the matrix has {} rows)", c, global);
  return {};
}

// One rank's run: the driver's loops around a pass over the rank's rows (LocalIteration).
class MatrixJacobiRun : public LocalIteration {
 public:
  MatrixJacobiRun(const linalg::DistributedCsr& A, std::span<const double> b, std::span<double> x,
                  const MatrixJacobiOptions& o, std::span<const std::int64_t> order_key)
      : A_(A), comm_(A.comm), opt_(o), b_(b), x_(x), n_(A.local_rows()), key_(order_key.begin(), order_key.end()),
        cur_(x.begin(), x.end()), next_(static_cast<std::size_t>(n_), 0.0),
        driver_(A.comm, driver_options(o), *this) {
    core::Stopwatch t_setup;
    MPI_Comm_rank(comm_, &rank_);
    build_plan_and_rows();
    if (o.variant == JacobiVariant::block) factor_block();
    setup_seconds_ = max_over(comm_, t_setup.seconds());
    auto& st = driver_.stats();
    st.rank = rank_;
    st.local = {static_cast<int>(n_), 1, 1};
    st.neighbours = plan_.remote_peers();
  }

  MatrixJacobiResult run() {
    MatrixJacobiResult r;
    r.setup_seconds = setup_seconds_;
    if (opt_.variant == JacobiVariant::block) {
      int nranks = 1;
      MPI_Comm_size(comm_, &nranks);
      int mine = static_cast<int>(solver_ ? solver_->kind() : linalg::LocalSolverKind::umfpack);
      std::vector<int> kinds(static_cast<std::size_t>(nranks));
      MPI_Allgather(&mine, 1, MPI_INT, kinds.data(), 1, MPI_INT, comm_);
      for (int k : kinds) r.local_solvers.push_back(static_cast<linalg::LocalSolverKind>(k));
      r.local_solver_reason = solver_ ? solver_->reason() : "no rows";
      r.factor_seconds = max_over(comm_, solver_ ? solver_->factor_seconds() : 0.0);
      r.factor_nonzeros = static_cast<std::int64_t>(sum_over(comm_, solver_ ? static_cast<double>(solver_->factor_nonzeros()) : 0.0));
    }
    r.spectral_steps = opt_.spectral_steps;
    r.spectral_radius = std::numeric_limits<double>::quiet_NaN();
    if (opt_.spectral_steps > 0) {
      core::Stopwatch t;
      r.spectral_bound = weighted_spectral_norm();
      r.spectral_radius = spectral_radius(opt_.spectral_steps, r.spectral_bound);
      r.spectral_seconds = max_over(comm_, t.seconds());
    }
    driver_.start();
    const double rho = r.spectral_radius;
    if (r.spectral_bound && !(rho < 1.0 + spectral_margin) && !std::isnan(rho)) {
      // Synchronous Jacobi diverges (Bethune et al., 2011, section 2): no iteration at all.
      IterationResult& res = driver_.result();
      res.stop = StopReason::diverged;
      res.message = fmt::format(
          "Jacobi diverges on this matrix: the spectral radius of its iteration matrix is about {:.3g} (>= 1)", rho);
      res.true_residual = driver_.true_residual();
      res.tested_residual = res.true_residual;
      res.converged = false;
      res.stats.time.total = driver_.seconds();
      finish();
      r.run = std::move(res);
      return r;
    }
    r.run = driver_.run(*this);
    if (r.spectral_bound && r.run.stop == StopReason::max_iters && std::abs(rho - 1.0) <= spectral_margin) {
      r.run.stop = StopReason::stagnated;
      r.run.message = fmt::format(
          "Jacobi stagnates on this matrix: the spectral radius of its iteration matrix is about 1 ({:.7f}), so "
          "the residual hardly decreases",
          rho);
    }
    return r;
  }

 private:
  static DriverOptions driver_options(const MatrixJacobiOptions& o) {
    DriverOptions d = jacobi_driver_options(o);
    d.stop_rule = StopRule::global_residual;
    return d;
  }

  // The ghost columns and their plan (as linalg::CsrOperator builds them), the keys of the ghost
  // columns from their owners, and each row's off-diagonal terms in the fixed summation order.
  void build_plan_and_rows() {
    int nranks = 1;
    MPI_Comm_size(comm_, &nranks);
    const std::int64_t first = A_.row_offsets[static_cast<std::size_t>(rank_)];
    const std::int64_t last = first + n_;
    std::vector<std::int64_t> own_key(static_cast<std::size_t>(n_));
    for (std::int64_t i = 0; i < n_; ++i) own_key[static_cast<std::size_t>(i)] = key_of(i, first);

    // Ghost columns, ascending (hence grouped by owner, ascending).
    std::vector<std::int64_t> ghosts;
    for (std::int64_t c : A_.col)
      if (c < first || c >= last) ghosts.push_back(c);
    std::sort(ghosts.begin(), ghosts.end());
    ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
    const bool fits = n_ + static_cast<std::int64_t>(ghosts.size()) <= std::numeric_limits<std::int32_t>::max();
    agree_or_throw(comm_, fits, "matrix Jacobi: too many owned plus ghost columns on one rank for 32-bit indices");

    const linalg::GhostRequests requests = linalg::request_entries(comm_, A_.row_offsets, ghosts);
    // The owners answer with the keys of the rows asked for (the one exchange of keys at set-up).
    std::vector<std::int64_t> answered(requests.asked.size());
    for (std::size_t m = 0; m < requests.asked.size(); ++m)
      answered[m] = own_key[static_cast<std::size_t>(requests.asked[m] - first)];
    std::vector<std::int64_t> ghost_key(ghosts.size());
    comm::sparse_alltoallv(answered.data(), requests.give.data(), requests.give_displs.data(), MPI_INT64_T, ghost_key.data(),
                  requests.need.data(), requests.need_displs.data(), MPI_INT64_T, comm_);
    bool requests_ok = true;
    const comm::GhostPlanSpec spec = requests.plan_spec(first, last, 1, requests_ok);
    agree_or_throw(comm_, requests_ok, "matrix Jacobi: a rank asked for entries another rank does not own");
    plan_ = comm::make_ghost_plan(comm_, spec);
    ghost_.assign(ghosts.size(), 0.0);

    // Each row: its diagonal entry and its off-diagonal terms (-a_ij, column) sorted by
    // (|key_j - key_i|, key_j); a column < n_ is owned, n_ + g is ghost g.
    diag_.assign(static_cast<std::size_t>(n_), 0.0);
    inv_diag_.assign(static_cast<std::size_t>(n_), 0.0);
    row_ptr_.assign(1, 0);
    std::int64_t zero_diagonal = std::numeric_limits<std::int64_t>::max();  // smallest key of such a row
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int32_t, double>> terms;
    for (std::int64_t i = 0; i < n_; ++i) {
      const std::int64_t ki = own_key[static_cast<std::size_t>(i)];
      terms.clear();
      for (auto p = A_.row_ptr[static_cast<std::size_t>(i)]; p < A_.row_ptr[static_cast<std::size_t>(i) + 1]; ++p) {
        const std::int64_t c = A_.col[static_cast<std::size_t>(p)];
        const double a = A_.val[static_cast<std::size_t>(p)];
        if (c == first + i) {
          diag_[static_cast<std::size_t>(i)] = a;
          continue;
        }
        std::int32_t local;
        std::int64_t kj;
        if (c >= first && c < last) {
          local = static_cast<std::int32_t>(c - first);
          kj = own_key[static_cast<std::size_t>(local)];
        } else {
          const auto g = std::lower_bound(ghosts.begin(), ghosts.end(), c) - ghosts.begin();
          local = static_cast<std::int32_t>(n_ + g);
          kj = ghost_key[static_cast<std::size_t>(g)];
        }
        terms.emplace_back(kj > ki ? kj - ki : ki - kj, kj, local, -a);
      }
      std::sort(terms.begin(), terms.end());
      for (const auto& [distance, key, column, coef] : terms) {
        col_.push_back(column);
        coef_.push_back(coef);
      }
      row_ptr_.push_back(static_cast<std::int64_t>(col_.size()));
      const double d = diag_[static_cast<std::size_t>(i)];
      if (d == 0.0)
        zero_diagonal = std::min(zero_diagonal, ki);
      else
        inv_diag_[static_cast<std::size_t>(i)] = 1.0 / d;
    }
    if (opt_.variant == JacobiVariant::point) {
      MPI_Allreduce(MPI_IN_PLACE, &zero_diagonal, 1, MPI_INT64_T, MPI_MIN, comm_);
      if (zero_diagonal != std::numeric_limits<std::int64_t>::max())
        throw InputError(fmt::format("row {} (0-based) has a zero diagonal entry: point Jacobi needs a non-zero diagonal",
                                     zero_diagonal));
    }
  }

  // Block Jacobi: A_pp, the owned rows' owned columns, factored once.
  void factor_block() {
    std::string failure;
    if (n_ > 0) {
      const linalg::LocalCsr D = linalg::owned_block(A_, rank_);
      block_ = D;  // kept for the spectral estimate's norm
      try {
        solver_ = linalg::make_local_solver(D, linalg::LocalSolverKind::automatic);
      } catch (const linalg::FactorisationError& e) {
        failure = fmt::format(
            "block Jacobi: the diagonal block of rank {} ({} rows) cannot be factored: {}; block Jacobi needs a "
            "non-singular diagonal block on every rank",
            rank_, n_, e.what());
      }
    }
    agree_or_throw(comm_, failure.empty(), failure);
    residual_.assign(static_cast<std::size_t>(n_), 0.0);
    correction_.assign(static_cast<std::size_t>(n_), 0.0);
  }

  // s_i = b_i + sum_{j != i} (-a_ij) x_j, the terms in the row's fixed order (b null: b = 0).
  [[gnu::always_inline]] inline double row_sum(std::int64_t i, const double* b, const double* x, const double* g) const {
    double s = b ? b[i] : 0.0;
    const std::int32_t n = static_cast<std::int32_t>(n_);
    for (std::int64_t p = row_ptr_[static_cast<std::size_t>(i)]; p < row_ptr_[static_cast<std::size_t>(i) + 1]; ++p) {
      const std::int32_t c = col_[static_cast<std::size_t>(p)];
      s += coef_[static_cast<std::size_t>(p)] * (c < n ? x[c] : g[c - n]);
    }
    return s;
  }

  // out <- one Jacobi iteration from x (ghost values g), b null for G x; returns the local
  // ||b - A x||^2 when want_residual (block: always computed, it is the correction's input).
  double sweep(const double* b, const double* x, const double* g, double* out, bool want_residual) {
    double r2 = 0;
    if (opt_.variant == JacobiVariant::point) {
      for (std::int64_t i = 0; i < n_; ++i) {
        const double s = row_sum(i, b, x, g);
        if (want_residual) {
          const double r = s - diag_[static_cast<std::size_t>(i)] * x[i];  // r_i = b_i - (A x)_i
          r2 += r * r;
        }
        out[i] = s * inv_diag_[static_cast<std::size_t>(i)];  // x_i <- s_i * (1 / a_ii)
      }
      core::charge("csr.entry", static_cast<double>(col_.size() + static_cast<std::size_t>(n_)));
      return r2;
    }
    for (std::int64_t i = 0; i < n_; ++i) {
      const double r = row_sum(i, b, x, g) - diag_[static_cast<std::size_t>(i)] * x[i];  // r_p = b_p - (A x)_p
      residual_[static_cast<std::size_t>(i)] = r;
      r2 += r * r;
    }
    if (n_ > 0) solver_->solve(residual_.data(), correction_.data());  // d_p = A_pp^-1 r_p
    for (std::int64_t i = 0; i < n_; ++i) out[i] = x[i] + correction_[static_cast<std::size_t>(i)];  // x_p + d_p
    core::charge("csr.entry", static_cast<double>(col_.size() + static_cast<std::size_t>(n_)) +
                                  2.0 * static_cast<double>(solver_ ? solver_->factor_nonzeros() : 0));
    return want_residual ? r2 : 0.0;
  }

  double residual_sq(const double* x, const double* g) const {
    double r2 = 0;
    for (std::int64_t i = 0; i < n_; ++i) {
      const double r = row_sum(i, b_.data(), x, g) - diag_[static_cast<std::size_t>(i)] * x[i];
      r2 += r * r;
    }
    return r2;
  }

  comm::PlanExchangeConfig exchange_config(bool synchronous) const {
    comm::PlanExchangeConfig c;
    c.mode = synchronous ? comm::HaloMode::sync : opt_.mode;
    c.transport = opt_.transport;  // sync: one message in flight (the plan exchange's rule)
    c.racy_chunks = synchronous ? 1 : opt_.racy_chunks;
    return c;
  }

  // The norm of the power iteration: ||v||_M = sqrt(v^T M v) where A is symmetric and M (the
  // diagonal, or the diagonal blocks) is positive definite; otherwise the 2-norm. G = I - M^-1 A is
  // then self-adjoint in M's inner product (M G = M - A is symmetric), so ||G v||_M / ||v||_M never
  // exceeds rho(G) and the estimate reads >= 1 only where Jacobi diverges. In the 2-norm a
  // non-normal G (D^-1 A on a badly scaled matrix) can grow a vector for many steps with rho(G) < 1:
  // 30 steps read 1.0012 for a scaled SPD matrix with rho(G) = 0.9886 (found by the soak).
  bool weighted_spectral_norm() {
    bool local = true;
    if (opt_.variant == JacobiVariant::point) {
      for (double d : diag_) local = local && d > 0;
    } else if (n_ > 0) {
      local = solver_ && solver_->kind() != linalg::LocalSolverKind::umfpack;  // CHOLMOD: A_pp SPD
    }
    int all = local ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, comm_);
    return all != 0 && linalg::is_symmetric(A_);
  }
  // This rank's part of ||v||_M^2 (weighted) or ||v||^2.
  double norm_sq_part(const std::vector<double>& v, bool weighted) const {
    double s = 0;
    if (!weighted) {
      for (double e : v) s += e * e;
    } else if (opt_.variant == JacobiVariant::point) {
      for (std::size_t i = 0; i < v.size(); ++i) s += diag_[i] * v[i] * v[i];
    } else {
      for (std::int64_t i = 0; i < block_.rows; ++i) {  // v_p^T A_pp v_p
        double row = 0;
        for (auto p = block_.row_ptr[static_cast<std::size_t>(i)]; p < block_.row_ptr[static_cast<std::size_t>(i) + 1]; ++p)
          row += block_.val[static_cast<std::size_t>(p)] * v[static_cast<std::size_t>(block_.col[static_cast<std::size_t>(p)])];
        s += v[static_cast<std::size_t>(i)] * row;
      }
    }
    return s;
  }

  // The power iteration v <- G v / ||G v||_M (G v: one sweep with b = 0), synchronous.
  double spectral_radius(int steps, bool weighted) {
    std::vector<double> v(static_cast<std::size_t>(n_)), w(v.size()), g(ghost_.size(), 0.0);
    const std::int64_t first = A_.row_offsets[static_cast<std::size_t>(rank_)];
    for (std::int64_t i = 0; i < n_; ++i) v[static_cast<std::size_t>(i)] = start_value(key_of(i, first));
    const double norm = std::sqrt(sum_over(comm_, norm_sq_part(v, weighted)));
    for (double& e : v) e /= norm;
    comm::PlanExchange ex(comm_, plan_, exchange_config(true));
    const int tail = std::max(1, steps / 4);
    double log_sum = 0;
    double estimate = 0;
    for (int k = 0; k < steps; ++k) {
      ex.start(v.data(), k);
      ex.finish(g.data(), k);
      sweep(nullptr, v.data(), g.data(), w.data(), false);  // w = G v
      const double ratio = std::sqrt(sum_over(comm_, norm_sq_part(w, weighted)));  // ||G v||_M / ||v||_M, ||v||_M = 1
      if (!(ratio > 0) || !std::isfinite(ratio)) {  // G v = 0 (G nilpotent on v), or overflow
        estimate = ratio;
        log_sum = std::nan("");
        break;
      }
      if (k >= steps - tail) log_sum += std::log(ratio);
      for (std::size_t i = 0; i < w.size(); ++i) v[i] = w[i] / ratio;
    }
    ex.close();
    if (!std::isnan(log_sum)) estimate = std::exp(log_sum / tail);
    if (std::isnan(estimate)) estimate = HUGE_VAL;
    return estimate;
  }
  std::int64_t key_of(std::int64_t i, std::int64_t first) const {
    return key_.empty() ? first + i : key_[static_cast<std::size_t>(i)];
  }

  // LocalProblem
  double local_source_norm_sq() override {
    double s = 0;
    for (double e : b_) s += e * e;
    return s;
  }
  double true_residual_sq() override {
    comm::PlanExchange ex(comm_, plan_, exchange_config(true));
    std::vector<double> g(ghost_.size(), 0.0);
    ex.start(cur_.data(), 0);
    ex.finish(g.data(), 0);
    ex.close();
    const double r2 = residual_sq(cur_.data(), g.data());
    core::charge("csr.entry", static_cast<double>(col_.size() + static_cast<std::size_t>(n_)));
    return r2;
  }
  void finish() override { std::copy(cur_.begin(), cur_.end(), x_.begin()); }

  // LocalIteration
  void open_exchange(IterationPhase, bool synchronous) override {
    exchange_.reset();
    exchange_.emplace(comm_, plan_, exchange_config(synchronous));
  }
  void exchange(std::int64_t it) override {  // the ghost values of time level it (staleness 0)
    exchange_->start(cur_.data(), it);
    exchange_->finish(ghost_.data(), it);
  }
  void refresh() override { exchange_->install(ghost_.data()); }
  void push(std::int64_t it) override { exchange_->start(cur_.data(), it); }
  void pull(std::int64_t it) override { exchange_->finish(ghost_.data(), it); }  // newest arrived
  comm::ExchangeStats exchange_stats() const override { return exchange_->stats(); }
  void close_exchange() override { exchange_->close(); }  // kept for its statistics until the next open
  double update(std::int64_t, bool want_residual) override {
    return sweep(b_.data(), cur_.data(), ghost_.data(), next_.data(), want_residual);
  }
  void advance() override { std::swap(cur_, next_); }
  void perturb(double value) override {
    if (n_ > 0) cur_[0] = value;
  }

  const linalg::DistributedCsr& A_;
  MPI_Comm comm_;
  int rank_ = 0;
  const MatrixJacobiOptions& opt_;
  std::span<const double> b_;
  std::span<double> x_;
  std::int64_t n_;
  std::vector<std::int64_t> key_;   // order keys of the owned rows (empty: global indices)
  comm::HaloPlan plan_;
  // The rows: diagonal, its inverse, and the off-diagonal terms (-a_ij, column) in summation order.
  std::vector<double> diag_, inv_diag_;
  std::vector<std::int64_t> row_ptr_;
  std::vector<std::int32_t> col_;
  std::vector<double> coef_;
  std::unique_ptr<linalg::LocalSolver> solver_;  // block
  linalg::LocalCsr block_;                       // block: A_pp
  std::vector<double> residual_, correction_;    // block: r_p, d_p
  std::vector<double> cur_, next_, ghost_;
  std::optional<comm::PlanExchange> exchange_;
  double setup_seconds_ = 0;
  IterationDriver driver_;
};

}  // namespace

MatrixJacobiResult solve_matrix_jacobi(const linalg::DistributedCsr& A, std::span<const double> b, std::span<double> x,
                                       const MatrixJacobiOptions& options, std::span<const std::int64_t> order_key) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(A.comm, &rank);
  MPI_Comm_size(A.comm, &nranks);
  const std::string problem = check_inputs(A, b.size(), x.size(), order_key.size(), options, rank, nranks);
  agree_or_throw(A.comm, problem.empty(), problem);
  MatrixJacobiRun run(A, b, x, options, order_key);
  return run.run();
}

}  // namespace desync::solvers
