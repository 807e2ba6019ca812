#include "desync/solvers/cg/cg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "desync/core/error.hpp"
#include "desync/core/monitor.hpp"

namespace desync::solvers {

using linalg::CVec;
using linalg::Vec;

const char* to_string(CgMethod m) {
  for (const auto& info : cg_methods)
    if (info.method == m) return info.name;
  return "?";
}

CgMethod parse_cg_method(const std::string& name) {
  std::string names;
  for (std::size_t i = 0; i < cg_methods.size(); ++i) {
    if (name == cg_methods[i].name) return cg_methods[i].method;
    names += (i == 0 ? "" : i + 1 == cg_methods.size() ? " or " : ", ") + std::string(cg_methods[i].name);
  }
  throw InputError("--method '" + name + "': unknown method (expected " + names + ")");
}

namespace {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Adds the time of a scope to an accumulator.
class Timed {
 public:
  explicit Timed(double& acc) : acc_(acc), t0_(now()) {}
  ~Timed() { acc_ += now() - t0_; }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& acc_;
  double t0_;
};

/// What the convergence check decided.
enum class Verdict { go, candidate, stop };

/// Failed true-residual verifications before the run gives up as stagnated.
constexpr int max_failed_verifications = 20;

class Solver {
 public:
  Solver(linalg::Operator& A, CVec b, Vec x, const CgOptions& o, CgResult& res)
      : A_(A), b_(b), x_(x), o_(o), res_(res), n_(static_cast<std::size_t>(A.local_size())),
        nonblocking_(o.nonblocking && (o.method == CgMethod::pipecg || o.method == CgMethod::groppcg)),
        sum_(A.comm(), nonblocking_) {
    MPI_Comm_rank(A.comm(), &rank_);
  }

  void run();
  /// Copies the reduction statistics into the result.
  void collect() {
    res_.stats.reductions = sum_.stats().count;
    res_.stats.time.reduction = sum_.stats().seconds;
    res_.stats.time.reduction_wait = sum_.stats().wait_seconds;
  }

 private:
  // ---- shared pieces ----
  /// Work vector i of the method. Vectors are `stride_` apart, a stride that is not a multiple of
  /// 4 KiB, so that the streams of a fused kernel do not alias in the cache.
  Vec vec(int i) { return Vec(storage_.data() + static_cast<std::size_t>(i) * stride_, n_); }
  void allocate(int count) {
    Timed t(times().setup);
    storage_.assign(static_cast<std::size_t>(count) * stride_, 0.0);
  }
  void spmv(CVec in, Vec out) {
    Timed t(times().spmv);
    A_.apply(in, out);
    ++res_.stats.spmvs;
  }
  /// u = M^-1 r, returns the local (r, u).
  double precondition_dot(CVec r, Vec u) {
    Timed t(times().pc);
    ++res_.stats.pc_applications;
    return pc_->apply_dot(r, u);
  }
  void precondition(CVec r, Vec u) {
    Timed t(times().pc);
    ++res_.stats.pc_applications;
    pc_->apply(r, u);
  }
  /// r = b - A x; returns the local (r, r). Uses scratch vector t.
  double recompute_residual(Vec r, Vec t) {
    spmv(x_, t);
    Timed tm(times().vector);
    return linalg::residual_norm2(b_, t, r);
  }
  double time_flag() const { return o_.time_limit > 0 && now() - t_start_ > o_.time_limit ? 1.0 : 0.0; }
  CgTimes& times() { return res_.stats.time; }
  bool identity() const { return pc_->kind() == PcKind::none; }
  bool replace_due(std::int64_t k) const { return o_.replace_every > 0 && k % o_.replace_every == 0; }

  /// Records and tests the recursive residual norm^2 `rr` of iteration k.
  Verdict check(std::int64_t k, double rr, double flag);
  /// Stops with a numerical failure.
  void fail(CgStop s, std::string message) {
    res_.stop = s;
    res_.message = std::move(message);
  }
  /// Tests that a denominator `value` (named `what`) of iteration k is > 0; false (and a stop) if not:
  /// a non-finite value, or a breakdown that says `which` operator is not positive definite.
  bool positive(double value, std::int64_t k, const char* what, const char* which) {
    if (value > 0 && std::isfinite(value)) return true;
    if (!std::isfinite(value))
      fail(CgStop::non_finite, fmt::format("non-finite value (NaN or Inf) in {} at iteration {}", what, k));
    else
      fail(CgStop::breakdown,
           fmt::format("breakdown at iteration {}: {} = {:.6e} <= 0: the {} is not positive definite", k, what,
                       value, which));
    return false;
  }
  /// Tests a denominator (p, A p) > 0; false (and a stop) if not.
  bool positive_curvature(double d, std::int64_t k) { return positive(d, k, "(p, Ap)", "operator"); }
  /// Tests (r, M^-1 r) > 0; false (and a stop) if not.
  bool positive_gamma(double g, std::int64_t k) { return positive(g, k, "(r, M^-1 r)", "preconditioner"); }
  /// Called on a candidate: r = b - A x (true residual, into r). Returns true when it meets the
  /// tolerance (stop converged); false: r now holds the true residual, the method rebuilds the rest.
  bool verify(std::int64_t k, Vec r, Vec t);

  void run_cg();
  void run_cg_cg();
  void run_pipecg();
  void run_groppcg();

  linalg::Operator& A_;
  CVec b_;
  Vec x_;
  const CgOptions& o_;
  CgResult& res_;
  std::size_t n_;
  std::size_t stride_ = (n_ + 7) / 8 * 8 + 72;
  bool nonblocking_;
  linalg::GlobalSum sum_;
  int rank_ = 0;
  std::unique_ptr<Preconditioner> pc_;
  std::vector<double> storage_;
  double t_start_ = 0;
  double bnorm_ = 0, tol2_ = 0, div2_ = 0;
  int failed_verifications_ = 0;
  bool have_true_residual_ = false;  ///< res_.true_residual is that of the returned x
  double last_local_rr_ = 0;         ///< this rank's (r, r) of the residual verify() recomputed
};

Verdict Solver::check(std::int64_t k, double rr, double flag) {
  const double rel = std::sqrt(std::fabs(rr)) / bnorm_;
  res_.recursive_residual = rel;
  res_.iterations = k;
  if (o_.record_history) res_.history.push_back({now() - t_start_, k, rel});
  if (k == 0 && std::isfinite(rr)) div2_ = std::max(div2_, o_.divergence_factor * o_.divergence_factor * rr);
  core::Monitor{o_.monitor_every, rank_ == 0}(k, now() - t_start_, rel);
  if (!std::isfinite(rr)) {
    fail(CgStop::non_finite, fmt::format("non-finite value (NaN or Inf) in the residual norm at iteration {}", k));
    return Verdict::stop;
  }
  if (rr <= tol2_) return Verdict::candidate;
  if (rr > div2_) {
    fail(CgStop::diverged, fmt::format("diverged at iteration {}: residual {:.3e} grew beyond {:.0e} times its "
                                       "initial value",
                                       k, rel, o_.divergence_factor));
    return Verdict::stop;
  }
  if (k >= o_.max_iters) {
    res_.stop = CgStop::max_iters;
    return Verdict::stop;
  }
  if (flag > 0) {
    res_.stop = CgStop::time_limit;
    return Verdict::stop;
  }
  return Verdict::go;
}

bool Solver::verify(std::int64_t k, Vec r, Vec t) {
  double rr = recompute_residual(r, t);
  last_local_rr_ = rr;
  sum_.sum_now(&rr, 1);
  res_.true_residual = std::sqrt(rr) / bnorm_;
  have_true_residual_ = true;
  if (!std::isfinite(rr)) {
    fail(CgStop::non_finite, fmt::format("non-finite value (NaN or Inf) in the true residual at iteration {}", k));
    return true;
  }
  if (rr <= tol2_) {
    res_.stop = CgStop::converged;
    return true;
  }
  ++res_.stats.replacements;
  if (++failed_verifications_ > max_failed_verifications) {
    res_.stop = CgStop::stagnated;
    res_.message = fmt::format("stagnated at iteration {}: the recursive residual met the tolerance {} times but the "
                               "true residual ({:.3e}) did not",
                               k, failed_verifications_, res_.true_residual);
    return true;
  }
  if (k >= o_.max_iters) {
    res_.stop = CgStop::max_iters;
    return true;
  }
  return false;
}

// ---- Algorithm 1: preconditioned CG -----------------------------------------------------------
void Solver::run_cg() {
  const bool id = identity();
  allocate(id ? 4 : 5);
  Vec r = vec(0), p = vec(1), q = vec(2), t = vec(3);
  Vec u = id ? r : vec(4);
  const CVec dinv = pc_->inverse_diagonal();

  double s[3];
  auto precondition_r = [&](double rr) {  // u = M^-1 r; s = {ru, rr, flag}
    s[0] = id ? rr : precondition_dot(r, u);
    s[1] = rr;
    s[2] = time_flag();
    sum_.sum_now(s, 3);
  };
  precondition_r(recompute_residual(r, t));
  double rho = s[0];
  std::int64_t k = 0;
  Verdict v = check(k, s[1], s[2]);
  if (v == Verdict::candidate) {
    if (verify(k, r, t)) return;
    precondition_r(last_local_rr_);
    rho = s[0];
  } else if (v == Verdict::stop) {
    return;
  }
  if (!positive_gamma(rho, k)) return;
  {
    Timed tm(times().vector);
    linalg::copy(u, p);
  }
  for (;;) {
    spmv(p, q);
    double pq;
    {
      Timed tm(times().vector);
      pq = linalg::dot(p, q);
    }
    sum_.sum_now(&pq, 1);
    if (!positive_curvature(pq, k)) return;
    const double alpha = rho / pq;
    double ru, rr;
    if (id) {
      Timed tm(times().vector);
      rr = ru = linalg::update_r_norm2(alpha, q, r);
    } else if (!dinv.empty()) {
      Timed tm(times().pc);
      ++res_.stats.pc_applications;
      const auto d = linalg::update_r_jacobi(alpha, q, r, dinv, u);
      ru = d[0];
      rr = d[1];
    } else {
      {
        Timed tm(times().vector);
        rr = linalg::update_r_norm2(alpha, q, r);
      }
      ru = precondition_dot(r, u);
    }
    ++k;
    bool x_pending = true;  // x += alpha p not done yet: fused into the update of p below
    auto flush_x = [&] {
      if (!x_pending) return;
      Timed tm(times().vector);
      linalg::axpy(alpha, p, x_);
      x_pending = false;
    };
    if (replace_due(k)) {
      flush_x();
      ++res_.stats.replacements;
      precondition_r(recompute_residual(r, t));
    } else {
      s[0] = ru;
      s[1] = rr;
      s[2] = time_flag();
      sum_.sum_now(s, 3);
    }
    v = check(k, s[1], s[2]);
    if (v != Verdict::go) {
      flush_x();
      if (v == Verdict::stop || verify(k, r, t)) return;
      precondition_r(last_local_rr_);  // r is the true residual now
    }
    const double rho_new = s[0];
    if (!positive_gamma(rho_new, k)) {
      flush_x();
      return;
    }
    const double beta = rho_new / rho;
    rho = rho_new;
    Timed tm(times().vector);
    if (x_pending)
      linalg::update_x_p(alpha, u, beta, p, x_);
    else
      linalg::xpay(u, beta, p);
  }
}

// ---- Algorithm 2: Chronopoulos/Gear CG --------------------------------------------------------
void Solver::run_cg_cg() {
  const bool id = identity();
  allocate(id ? 5 : 6);
  Vec r = vec(0), p = vec(1), q = vec(2), w = vec(3), t = vec(4);
  Vec u = id ? r : vec(5);
  const CVec dinv = pc_->inverse_diagonal();

  double s[4];
  // From r: u = M^-1 r, w = A u, s = {(r,u), (w,u), (r,r), flag}.
  auto rebuild_from_r = [&] {
    if (!id) precondition(r, u);
    spmv(u, w);
    linalg::Sums d;
    {
      Timed tm(times().vector);
      d = linalg::dots_ru_wu_rr(r, u, w);
    }
    s[0] = d[0];
    s[1] = d[1];
    s[2] = d[2];
    s[3] = time_flag();
    sum_.sum_now(s, 4);
  };
  recompute_residual(r, t);
  rebuild_from_r();
  std::int64_t k = 0;
  Verdict v = check(k, s[2], s[3]);
  if (v == Verdict::candidate) {
    if (verify(k, r, t)) return;
    rebuild_from_r();
  } else if (v == Verdict::stop) {
    return;
  }
  double gamma = s[0], delta = s[1], gamma_old = 0, alpha_old = 0;
  bool first = true;
  for (;;) {
    if (!positive_gamma(gamma, k)) return;
    const double beta = first ? 0.0 : gamma / gamma_old;
    const double curvature = first ? delta : delta - beta * gamma / alpha_old;
    if (!positive_curvature(curvature, k)) return;
    const double alpha = gamma / curvature;
    double ru, rr;
    if (id) {
      Timed tm(times().vector);
      rr = ru = linalg::update_pqxr(alpha, beta, r, w, p, q, x_, r);
    } else if (!dinv.empty()) {
      Timed tm(times().pc);
      ++res_.stats.pc_applications;
      const auto d = linalg::update_pqxr_jacobi(alpha, beta, w, p, q, x_, r, dinv, u);
      ru = d[0];
      rr = d[1];
    } else {
      {
        Timed tm(times().vector);
        rr = linalg::update_pqxr(alpha, beta, u, w, p, q, x_, r);
      }
      ru = precondition_dot(r, u);
    }
    ++k;
    first = false;
    gamma_old = gamma;
    alpha_old = alpha;
    if (replace_due(k)) {
      ++res_.stats.replacements;
      spmv(p, q);
      recompute_residual(r, t);
      rebuild_from_r();
    } else {
      spmv(u, w);
      {
        Timed tm(times().vector);
        s[1] = linalg::dot(w, u);
      }
      s[0] = ru;
      s[2] = rr;
      s[3] = time_flag();
      sum_.sum_now(s, 4);
    }
    v = check(k, s[2], s[3]);
    if (v == Verdict::stop) return;
    if (v == Verdict::candidate) {
      if (verify(k, r, t)) return;
      spmv(p, q);
      rebuild_from_r();
    }
    gamma = s[0];
    delta = s[1];
  }
}

// ---- Pipelined CG (one overlapped reduction per iteration) ------------------------------------
void Solver::run_pipecg() {
  const bool id = identity();
  // r w z s p n t [u m q]
  allocate(id ? 7 : 10);
  Vec r = vec(0), w = vec(1), z = vec(2), s = vec(3), p = vec(4), nv = vec(5), t = vec(6);
  Vec u = id ? r : vec(7);
  Vec m = id ? w : vec(8);
  Vec q = id ? s : vec(9);

  double loc[4];
  // From r (and p): u = M^-1 r, w = A u, s = A p, q = M^-1 s, z = A q; local dots.
  auto rebuild_from_r = [&](bool with_p) {
    if (!id) precondition(r, u);
    spmv(u, w);
    if (with_p) {
      spmv(p, s);
      if (!id) precondition(s, q);
      spmv(q, z);
    }
    Timed tm(times().vector);
    const auto d = linalg::dots_ru_wu_rr(r, u, w);
    loc[0] = d[0];
    loc[1] = d[1];
    loc[2] = d[2];
  };
  recompute_residual(r, t);
  rebuild_from_r(false);
  std::int64_t k = 0;
  double gamma_old = 0, alpha_old = 0;
  bool first = true;
  for (;;) {
    loc[3] = time_flag();
    sum_.start(loc, 4);
    // Overlapped with the reduction: m = M^-1 w, n = A m.
    if (!id) precondition(w, m);
    spmv(m, nv);
    const double* g = sum_.wait();
    const double gamma = g[0], delta = g[1], rr = g[2], flag = g[3];
    const Verdict v = check(k, rr, flag);
    if (v == Verdict::stop) return;
    if (v == Verdict::candidate) {
      if (verify(k, r, t)) return;
      rebuild_from_r(!first);
      continue;
    }
    if (!positive_gamma(gamma, k)) return;
    const double beta = first ? 0.0 : gamma / gamma_old;
    const double curvature = first ? delta : delta - beta * gamma / alpha_old;
    if (!positive_curvature(curvature, k)) return;
    const double alpha = gamma / curvature;
    linalg::Sums d;
    {
      Timed tm(times().vector);
      d = id ? linalg::update_pipecg_plain(alpha, beta, nv, z, s, p, x_, r, w)
             : linalg::update_pipecg(alpha, beta, nv, m, z, q, s, p, x_, r, u, w);
    }
    loc[0] = d[0];
    loc[1] = d[1];
    loc[2] = d[2];
    ++k;
    first = false;
    gamma_old = gamma;
    alpha_old = alpha;
    if (replace_due(k)) {
      ++res_.stats.replacements;
      recompute_residual(r, t);
      rebuild_from_r(true);
    }
  }
}

// ---- Gropp's CG (two overlapped reductions per iteration) -------------------------------------
void Solver::run_groppcg() {
  const bool id = identity();
  // r p s w t [u q]
  allocate(id ? 5 : 7);
  Vec r = vec(0), p = vec(1), s = vec(2), w = vec(3), t = vec(4);
  Vec u = id ? r : vec(5);
  Vec q = id ? s : vec(6);

  double loc[3];
  auto residual_sums = [&](double rr) {  // u = M^-1 r; loc = {(r,u), (r,r), flag}
    loc[0] = id ? rr : precondition_dot(r, u);
    loc[1] = rr;
    loc[2] = time_flag();
  };
  residual_sums(recompute_residual(r, t));
  sum_.sum_now(loc, 3);
  std::int64_t k = 0;
  Verdict v = check(k, loc[1], loc[2]);
  if (v == Verdict::candidate) {
    if (verify(k, r, t)) return;
    residual_sums(last_local_rr_);
    sum_.sum_now(loc, 3);
  } else if (v == Verdict::stop) {
    return;
  }
  double gamma = loc[0];
  if (!positive_gamma(gamma, k)) return;
  double ps;
  {
    Timed tm(times().vector);
    linalg::copy(u, p);
  }
  spmv(p, s);
  {
    Timed tm(times().vector);
    ps = linalg::dot(p, s);
  }
  for (;;) {
    sum_.start(&ps, 1);
    if (!id) precondition(s, q);  // overlapped with the reduction of (p, s)
    const double delta = *sum_.wait();
    if (!positive_curvature(delta, k)) return;
    const double alpha = gamma / delta;
    {
      Timed tm(times().vector);
      if (id) {
        loc[1] = loc[0] = linalg::update_xr(alpha, p, s, x_, r);
      } else {
        const auto d = linalg::update_xru(alpha, p, s, q, x_, r, u);
        loc[0] = d[0];
        loc[1] = d[1];
      }
    }
    ++k;
    bool replace_s = false;
    if (replace_due(k)) {
      ++res_.stats.replacements;
      residual_sums(recompute_residual(r, t));
      replace_s = true;
    }
    loc[2] = time_flag();
    sum_.start(loc, 3);
    spmv(u, w);  // overlapped with the reduction of (r, u), (r, r)
    const double* g = sum_.wait();
    double gamma_new = g[0];
    v = check(k, g[1], g[2]);
    if (v == Verdict::stop) return;
    if (v == Verdict::candidate) {
      if (verify(k, r, t)) return;
      residual_sums(last_local_rr_);
      sum_.sum_now(loc, 3);
      gamma_new = loc[0];
      spmv(u, w);
      replace_s = true;
    }
    if (!positive_gamma(gamma_new, k)) return;
    const double beta = gamma_new / gamma;
    gamma = gamma_new;
    {
      Timed tm(times().vector);
      ps = linalg::update_ps(beta, u, w, p, s);
    }
    if (replace_s) {
      spmv(p, s);
      Timed tm(times().vector);
      ps = linalg::dot(p, s);
    }
  }
}

void Solver::run() {
  t_start_ = now();
  A_.reset_stats();
  res_.stats.local_rows = A_.local_size();
  res_.stats.rank = rank_;
  if (o_.record_history) res_.history.reserve(static_cast<std::size_t>(std::min<std::int64_t>(o_.max_iters, 100000)) + 2);
  double bb = linalg::dot(b_, b_);
  sum_.sum_now(&bb, 1);
  bnorm_ = std::sqrt(bb);
  res_.b_norm = bnorm_;

  // Preconditioner set-up; a failure on any rank stops every rank with that rank's message.
  std::string pc_error;
  {
    Timed tm(times().setup);
    try {
      pc_ = make_preconditioner(o_.pc, A_);
    } catch (const PcSetupError& e) {
      pc_error = e.what();
    }
  }
  try {
    agree_or_throw(A_.comm(), pc_error.empty(), pc_error);
  } catch (const InputError& e) {
    fail(CgStop::pc_failed, e.what());
    res_.true_residual = std::nan("");
    return;
  }

  if (!std::isfinite(bnorm_)) {
    fail(CgStop::non_finite, "non-finite value (NaN or Inf) in the right-hand side");
    return;
  }
  if (bnorm_ == 0) {  // A x = 0: x = 0 exactly
    linalg::fill(x_, 0.0);
    res_.stop = CgStop::converged;
    res_.converged = true;
    res_.true_residual = 0;
    have_true_residual_ = true;
    res_.history.push_back({0.0, 0, 0.0});
    return;
  }
  tol2_ = (o_.rtol * bnorm_) * (o_.rtol * bnorm_);
  div2_ = (o_.divergence_factor * bnorm_) * (o_.divergence_factor * bnorm_);

  switch (o_.method) {
    case CgMethod::cg: run_cg(); break;
    case CgMethod::cg_cg: run_cg_cg(); break;
    case CgMethod::pipecg: run_pipecg(); break;
    case CgMethod::groppcg: run_groppcg(); break;
  }
  // The true residual of the returned x (already known when the stop verified it).
  if (!have_true_residual_ || res_.stop != CgStop::converged) {
    if (storage_.size() < 2 * stride_) allocate(2);  // the methods' work vectors are free now
    double rr = recompute_residual(vec(0), vec(1));
    MPI_Allreduce(MPI_IN_PLACE, &rr, 1, MPI_DOUBLE, MPI_SUM, A_.comm());
    res_.true_residual = std::sqrt(rr) / bnorm_;
  }
  res_.converged = !is_numerical_failure(res_.stop) && res_.true_residual <= o_.rtol;
}

}  // namespace

CgResult solve_cg(linalg::Operator& A, std::span<const double> b, std::span<double> x, const CgOptions& options) {
  CgResult res;
  {
    Solver s(A, b, x, options, res);
    const double t0 = now();
    s.run();
    res.stats.time.total = now() - t0;
    s.collect();
  }
  auto& st = res.stats;
  st.iterations = res.iterations;
  st.spmv = A.stats();
  st.time.halo_wait = st.spmv.wait_seconds;
  return res;
}

}  // namespace desync::solvers
