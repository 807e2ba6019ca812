// gmres: restarted GMRES(m) (Saad and Schultz, 1986) with right preconditioning, as Saad's
// "Iterative Methods for Sparse Linear Systems" (Saad, 2003) lists it in Algorithm 9.5 (GMRES with
// right preconditioning; the unpreconditioned GMRES is its Algorithm 6.9, the restarted one 6.11).
// Lines cited beside the code are Algorithm 9.5's:
//
//    1. r_0 = b - A x_0, beta = ||r_0||, v_1 = r_0 / beta
//    2. for j = 1..m:
//    3.   w = A M^-1 v_j
//  4-7.   h_ij = (w, v_i), w = w - h_ij v_i, i = 1..j
//    8.   h_{j+1,j} = ||w||, v_{j+1} = w / h_{j+1,j}
//   11. y_m = argmin ||beta e_1 - H_m y||, x_m = x_0 + M^-1 V_m y_m
//   12. if satisfied stop, else x_0 = x_m and go to 1 (a restart)
//
// Right preconditioning keeps the Arnoldi residual the unpreconditioned one: ||b - A x_j|| =
// ||beta e_1 - H_j y_j||, which the Givens rotations give as |g_{j+1}| without forming x_j (Saad and
// Schultz, 1986, section 3). That estimate is the family's recursive residual: tested against
// tol ||b|| every Arnoldi step (one iteration), recorded in the history; when it meets the tolerance
// x_j is formed and the true residual b - A x_j verified (CgBase::verify); if the true residual is
// above tol ||b|| the iteration restarts from it. A restart also comes every m steps
// (CgOptions::restart) and, with CgOptions::replace_every = K, every K iterations (counted as a
// replacement): both recompute r = b - A x and rebuild the basis from it.
//
// Departures from the listing:
//   - lines 4-7 are classical Gram-Schmidt applied twice (CGS2): all dot products of a pass are
//     summed in one reduction, where the listing's modified Gram-Schmidt needs one reduction per
//     basis vector, j per step. One pass of classical Gram-Schmidt loses orthogonality like the
//     square of the condition number of the vectors it orthogonalises (Giraud, Langou, Rozloznik and
//     van den Eshof, 2005), which would bend the residual estimate away from the true residual; a
//     second pass restores orthogonality to the level of rounding ("twice is enough": Giraud,
//     Langou and Rozloznik, 2005). Three blocking
//     reductions per step: pass 1 {(w, v_i), (w, w), time flag}, pass 2 {(w, v_i)}, and ||w||
//     (line 8). The norm is not derived from pass 2's sums (||w||^2 - sum c_i^2) because that
//     difference cancels exactly when w is nearly in the Krylov space, where the second pass matters.
//   - line 11's least-squares problem is reduced to a triangular one by Givens rotations as the
//     columns of H arrive (Saad and Schultz, 1986, section 3), and x is formed only at a stop, a
//     restart or a candidate for convergence.
//   - happy breakdown (line 8: h_{j+1,j} = 0, to rounding: <= 1e-14 ||A M^-1 v_j||): the Krylov
//     space is invariant and x_j exact on it; h_{j+1,j} is taken as 0, so the rotation makes the
//     estimate 0 and x_j is formed and verified as a candidate. A zero rotated diagonal (H_j
//     singular: A or M^-1 singular) stops the run as a breakdown.
//
//   mpirun -np 4 desync krylov --method gmres --restart 30 --pc jacobi --global 64
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "cg_base.hpp"
#include "desync/core/error.hpp"

namespace desync::solvers::detail {

namespace {

/// Relative size of h_{j+1,j} below which the Arnoldi process has found an invariant subspace.
constexpr double happy_breakdown_tol = 1e-14;

/// The least-squares problem of one cycle (line 11) in its rotated, upper triangular form.
class HessenbergLsq {
 public:
  explicit HessenbergLsq(int m)
      : m_(m), h_(static_cast<std::size_t>((m + 1) * m), 0.0), c_(static_cast<std::size_t>(m)),
        s_(static_cast<std::size_t>(m)), g_(static_cast<std::size_t>(m + 1)) {}

  /// A new cycle: g = beta e_1.
  void start(double beta) {
    std::fill(g_.begin(), g_.end(), 0.0);
    g_[0] = beta;
  }
  /// H(i, j), column-major, i = 0..j+1.
  double& h(int i, int j) { return h_[static_cast<std::size_t>(j * (m_ + 1) + i)]; }
  /// Rotates column j (whose entries h(0..j+1, j) are set): the previous rotations, then the one
  /// that zeroes h(j+1, j). Returns |g_{j+1}| = ||beta e_1 - H_j y_j||, the residual estimate, or
  /// NaN when the rotated diagonal is zero (the triangular system is singular).
  double rotate(int j) {
    for (int i = 0; i < j; ++i) {
      // [h_ij; h_{i+1,j}] <- [c_i s_i; -s_i c_i] [h_ij; h_{i+1,j}]
      const double a = h(i, j), b = h(i + 1, j);
      h(i, j) = c_[static_cast<std::size_t>(i)] * a + s_[static_cast<std::size_t>(i)] * b;
      h(i + 1, j) = -s_[static_cast<std::size_t>(i)] * a + c_[static_cast<std::size_t>(i)] * b;
    }
    const double a = h(j, j), b = h(j + 1, j);
    const double d = std::hypot(a, b);
    if (!(d > 0) || !std::isfinite(d)) return std::nan("");
    // c_j = h_jj / d, s_j = h_{j+1,j} / d; h_jj <- d, h_{j+1,j} <- 0
    const double c = a / d, s = b / d;
    c_[static_cast<std::size_t>(j)] = c;
    s_[static_cast<std::size_t>(j)] = s;
    h(j, j) = d;
    h(j + 1, j) = 0;
    // g_{j+1} = -s_j g_j, g_j <- c_j g_j
    const double gj = g_[static_cast<std::size_t>(j)];
    g_[static_cast<std::size_t>(j) + 1] = -s * gj;
    g_[static_cast<std::size_t>(j)] = c * gj;
    return std::fabs(g_[static_cast<std::size_t>(j) + 1]);
  }
  /// y = R^-1 g of the first `cols` columns (back substitution, line 11).
  const std::vector<double>& solve(int cols) {
    y_.assign(static_cast<std::size_t>(cols), 0.0);
    for (int i = cols - 1; i >= 0; --i) {
      double v = g_[static_cast<std::size_t>(i)];
      for (int l = i + 1; l < cols; ++l) v -= h(i, l) * y_[static_cast<std::size_t>(l)];
      y_[static_cast<std::size_t>(i)] = v / h(i, i);
    }
    return y_;
  }

 private:
  int m_;
  std::vector<double> h_, c_, s_, g_, y_;
};

/// Lines 4-8 of step j: w = v_{j+1} orthogonalised against v_0..v_j by classical Gram-Schmidt
/// applied twice, column j of H filled (h(0..j, j)); ||w|| and ||A M^-1 v_j|| (the breakdown
/// test's scale) and the summed time flag returned.
struct Orthogonalised {
  double h_next, w_norm0, time_flag;
};

Orthogonalised orthogonalise(CgBase& s, const std::vector<Vec>& v, int j, HessenbergLsq& lsq, std::vector<double>& dots) {
  auto& sum = s.sum();
  const Vec w = v[static_cast<std::size_t>(j) + 1];
  const int nb = j + 1;  // basis vectors v_0..v_j
  {
    // CGS pass 1: h_ij = (w, v_i), i = 0..j  (line 5, all at once), and (w, w) for the
    // breakdown test
    Timed tm(s.times().vector);
    for (int i = 0; i < nb; ++i) dots[static_cast<std::size_t>(i)] = linalg::dot(w, v[static_cast<std::size_t>(i)]);
    dots[static_cast<std::size_t>(nb)] = linalg::dot(w, w);
  }
  dots[static_cast<std::size_t>(nb) + 1] = s.time_flag();
  sum.sum_now(dots.data(), nb + 2);
  const double w_norm0 = std::sqrt(dots[static_cast<std::size_t>(nb)]);  // ||A M^-1 v_j||
  const double flag = dots[static_cast<std::size_t>(nb) + 1];
  {
    // w <- w - sum_i h_ij v_i  (line 6)
    Timed tm(s.times().vector);
    for (int i = 0; i < nb; ++i) {
      lsq.h(i, j) = dots[static_cast<std::size_t>(i)];
      linalg::axpy(-dots[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(i)], w);
    }
    // CGS pass 2 (reorthogonalisation): c_i = (w, v_i)
    for (int i = 0; i < nb; ++i) dots[static_cast<std::size_t>(i)] = linalg::dot(w, v[static_cast<std::size_t>(i)]);
  }
  sum.sum_now(dots.data(), nb);
  double ww;
  {
    // w <- w - sum_i c_i v_i;  h_ij <- h_ij + c_i
    Timed tm(s.times().vector);
    for (int i = 0; i < nb; ++i) {
      lsq.h(i, j) += dots[static_cast<std::size_t>(i)];
      linalg::axpy(-dots[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(i)], w);
    }
    ww = linalg::dot(w, w);
  }
  sum.sum_now(&ww, 1);
  return {std::sqrt(ww), w_norm0, flag};  // h_{j+1,j} = ||w||  (line 8)
}

void run_gmres(CgBase& s) {
  const CgOptions& o = s.options();
  if (o.restart < 1) throw InputError(fmt::format("--restart {}: must be >= 1", o.restart));
  // A cycle never needs more steps than the run may take.
  const int m = static_cast<int>(std::min<std::int64_t>(o.restart, std::max<std::int64_t>(o.iteration.max_iters, 1)));
  const bool id = s.identity();
  // The basis v_0..v_m (v_{j+1} holds w while it is orthogonalised), z = M^-1 v_j (aliases v_j
  // when M = I), t: scratch of b - A x and of V y.
  auto block = s.allocate(m + 1 + (id ? 1 : 2));
  std::vector<Vec> v(static_cast<std::size_t>(m) + 1);
  for (auto& vi : v) vi = block.next();
  const Vec t = block.next();
  const Vec z = id ? Vec{} : block.next();
  const Vec x = s.x();
  auto& sum = s.sum();
  HessenbergLsq lsq(m);
  std::vector<double> dots(static_cast<std::size_t>(m) + 3);

  // x <- x + M^-1 V_j y  (line 11, the first `cols` basis vectors)
  auto update_x = [&](int cols) {
    const auto& y = lsq.solve(cols);
    if (id) {
      Timed tm(s.times().vector);
      for (int i = 0; i < cols; ++i) linalg::axpy(y[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(i)], x);
      return;
    }
    {
      // t <- V_j y
      Timed tm(s.times().vector);
      linalg::fill(t, 0.0);
      for (int i = 0; i < cols; ++i) linalg::axpy(y[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(i)], t);
    }
    // z <- M^-1 t
    s.precondition(t, z);
    Timed tm(s.times().vector);
    // x <- x + z
    linalg::axpy(1.0, z, x);
  };

  std::int64_t k = 0;
  // r_0 <- b - A x_0  (line 1), into v_0; ||r_0||^2 with the time flag
  double g0[2] = {s.recompute_residual(v[0], t), s.time_flag()};
  sum.sum_now(g0, 2);
  double beta2 = g0[0];  // ||r||^2 at the start of the cycle
  Verdict verdict = s.check(k, beta2, g0[1]);
  if (verdict == Verdict::stop) return;
  if (verdict == Verdict::candidate) {
    if (s.verify(k, v[0], t)) return;
    beta2 = s.last_local_rr();
    sum.sum_now(&beta2, 1);
  }

  for (;;) {  // one cycle per pass: lines 1-12
    const double beta = std::sqrt(beta2);
    // r = 0 (the estimate was above the tolerance, the true residual is zero) or non-finite:
    // verify() stops the run as converged or non_finite.
    if (!(beta > 0) || !std::isfinite(beta)) {
      s.verify(k, v[0], t);
      return;
    }
    {
      // v_1 <- r_0 / beta  (line 1)
      Timed tm(s.times().vector);
      linalg::scale(1.0 / beta, v[0]);
    }
    lsq.start(beta);  // g <- beta e_1
    int j = 0;
    for (;; ++j) {  // line 2; j is 0-based here, the listing's j - 1
      const Vec vj = v[static_cast<std::size_t>(j)], w = v[static_cast<std::size_t>(j) + 1];
      // w <- A M^-1 v_j  (line 3)
      Vec zj = vj;
      if (!id) {
        s.precondition(vj, z);
        zj = z;
      }
      s.spmv(zj, w);
      const Orthogonalised o = orthogonalise(s, v, j, lsq, dots);  // lines 4-8
      const double h_next = o.h_next, w_norm0 = o.w_norm0, flag = o.time_flag;
      const bool happy = h_next <= happy_breakdown_tol * w_norm0;
      lsq.h(j + 1, j) = happy ? 0.0 : h_next;  // happy breakdown: the Krylov space is invariant
      // Givens rotations: the residual estimate |g_{j+1}| = ||beta e_1 - H_j y_j|| (0 after a happy
      // breakdown, h_{j+1,j} = 0)
      const double estimate = lsq.rotate(j);
      if (std::isnan(estimate) && std::isfinite(h_next) && std::isfinite(w_norm0)) {
        // A zero rotated diagonal with finite entries: H_j is singular (A M^-1 maps the Krylov
        // space into a smaller one: A or M^-1 is singular). x keeps the first j steps' correction.
        if (j > 0) update_x(j);
        s.stop_failed(core::StopReason::breakdown,
                      fmt::format("breakdown at iteration {}: the Hessenberg matrix of GMRES is singular (the operator or "
                                  "the preconditioner is singular)",
                                  k + 1));
        return;
      }
      ++k;
      verdict = s.check(k, estimate * estimate, flag);
      const bool restart_due = j + 1 == m || s.replace_due(k);  // line 12: the cycle ends
      if (verdict == Verdict::go && !happy && !restart_due) {
        // v_{j+1} <- w / h_{j+1,j}  (line 8)
        Timed tm(s.times().vector);
        linalg::scale(1.0 / h_next, w);
        continue;
      }
      break;
    }
    // x_j <- x_0 + M^-1 V_j y_j  (line 11)
    update_x(j + 1);
    if (verdict == Verdict::stop) return;
    if (verdict == Verdict::candidate) {
      // line 12, "if satisfied": the true residual decides; otherwise it restarts the iteration
      if (s.verify(k, v[0], t)) return;
      beta2 = s.last_local_rr();
      sum.sum_now(&beta2, 1);
      continue;
    }
    // A restart (line 12): r_0 <- b - A x_0  (line 1)
    if (s.replace_due(k)) s.count_replacement();
    beta2 = s.recompute_residual(v[0], t);
    sum.sum_now(&beta2, 1);
  }
}

}  // namespace

CgMethodInfo gmres_method() {
  return {.name = "gmres",
          .description = "restarted GMRES(m), right preconditioned, CGS2: any nonsingular matrix",
          .overlaps_reduction = false,
          // optional: gmres came after cost models that runs still use were recorded (docs/data)
          .vector_cost = {"cg.gmres.vector", true},
          .positive_definite = false,
          .restarts = true,
          .run = &run_gmres};
}

}  // namespace desync::solvers::detail
