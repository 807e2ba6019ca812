// cg-cg: Chronopoulos/Gear CG, Horikoshi et al. (2022), Algorithm 2 (lines cited beside the code). One blocking
// reduction per iteration, {(r, u), (w, u), (r, r), time flag}; q = A p is kept by the recurrence of
// line 4 instead of a second matrix-vector product.
//
// Reading of the listing: line 1 leaves alpha_0 and beta_0 to the loop; desync takes beta_0 = 0 and
// alpha_0 = gamma_0 / delta_0 with w^(0) = A u^(0), delta_0 = (w^(0), u^(0)) (as the pipelined
// listings' line 1 do), so the first pass of lines 3-4 sets p = u^(0), q = w^(0) from zero vectors.
// Line 1's gamma_0 = "(r^(0))" is read as (r^(0), u^(0)). Lines 11-12 of iteration k are computed
// at the top of iteration k+1, after the reduction. Departures: the four updates of lines 3-6 are
// one fused pass (with jacobi, u = M^-1 r of line 7 too); (r, r) joins the reduction of lines 9-10.
//
//   mpirun -np 4 desync cg --method cg-cg --pc jacobi --global 64
#include "cg_base.hpp"

namespace desync::solvers::detail {

namespace {

/// Algorithm 2's vectors: the residual r^(k), the search direction p^(k), q^(k) = A p^(k) by
/// recurrence (line 4), w^(k) = A u^(k), t the scratch of b - A x, and u^(k) = M^-1 r^(k) (r itself
/// when M = I).
void run_chronopoulos_gear(CgBase& s) {
  const bool id = s.identity();
  auto block = s.allocate(id ? 5 : 6);
  const Vec r = block.next(), p = block.next(), q = block.next(), w = block.next(), t = block.next();
  const Vec u = id ? r : block.next();
  const CVec dinv = s.inverse_diagonal();
  const Vec x = s.x();
  auto& sum = s.sum();

  double g[4];  // {gamma = (r, u), delta = (w, u), (r, r), time flag}, summed
  // From r: u <- M^-1 r (line 7 / line 1), w <- A u (line 8), gamma, delta (lines 9-10), blocking.
  auto rebuild_from_r = [&] {
    if (!id) s.precondition(r, u);
    s.spmv(u, w);
    linalg::Sums d;
    {
      Timed tm(s.times().vector);
      d = linalg::dots_ru_wu_rr(r, u, w);
    }
    g[0] = d[0];
    g[1] = d[1];
    g[2] = d[2];
    g[3] = s.time_flag();
    sum.sum_now(g, 4);
  };
  // r^(0) <- b - A x^(0)  (line 1)
  s.recompute_residual(r, t);
  rebuild_from_r();
  std::int64_t k = 0;
  Verdict verdict = s.check(k, g[2], g[3]);
  if (verdict == Verdict::candidate) {
    if (s.verify(k, r, t)) return;
    rebuild_from_r();
  } else if (verdict == Verdict::stop) {
    return;
  }
  double gamma = g[0], delta = g[1], gamma_old = 0, alpha_old = 0;
  bool first = true;
  for (;;) {
    if (!s.positive_gamma(gamma, k)) return;
    // beta_k <- gamma_k / gamma_{k-1}  (line 11; beta_0 = 0)
    const double beta = first ? 0.0 : gamma / gamma_old;
    // alpha_k <- gamma_k / (delta_k - beta_k gamma_k / alpha_{k-1})  (line 12; alpha_0 = gamma_0 / delta_0);
    // the denominator is (p, A p) in exact arithmetic
    const double curvature = first ? delta : delta - beta * gamma / alpha_old;
    if (!s.positive_curvature(curvature, k)) return;
    const double alpha = gamma / curvature;
    double ru, rr;
    if (id) {
      // p <- u + beta p; q <- w + beta q; x <- x + alpha p; r <- r - alpha q  (lines 3-6, u = r);
      // (r, r) = (r, u)  (line 9)
      Timed tm(s.times().vector);
      rr = ru = linalg::update_pqxr(alpha, beta, r, w, p, q, x, r);
    } else if (!dinv.empty()) {
      // lines 3-6 as above; u <- M^-1 r  (line 7); gamma = (r, u)  (line 9), (r, r)
      Timed tm(s.times().pc);
      s.count_fused_pc();
      const auto d = linalg::update_pqxr_jacobi(alpha, beta, w, p, q, x, r, dinv, u);
      ru = d[0];
      rr = d[1];
    } else {
      {
        // p <- u + beta p; q <- w + beta q; x <- x + alpha p; r <- r - alpha q  (lines 3-6); (r, r)
        Timed tm(s.times().vector);
        rr = linalg::update_pqxr(alpha, beta, u, w, p, q, x, r);
      }
      // u <- M^-1 r  (line 7); gamma = (r, u)  (line 9)
      ru = s.precondition_dot(r, u);
    }
    ++k;
    first = false;
    gamma_old = gamma;
    alpha_old = alpha;
    if (s.replace_due(k)) {
      // Replacement (not in the listing): q <- A p, r <- b - A x, then u, w, gamma, delta from r.
      s.count_replacement();
      s.spmv(p, q);
      s.recompute_residual(r, t);
      rebuild_from_r();
    } else {
      // w <- A u  (line 8)
      s.spmv(u, w);
      {
        // delta = (w, u)  (line 10)
        Timed tm(s.times().vector);
        g[1] = linalg::dot(w, u);
      }
      // gamma, delta  (lines 9-10) and ||r||^2  (line 6, check convergence): one blocking reduction
      g[0] = ru;
      g[2] = rr;
      g[3] = s.time_flag();
      sum.sum_now(g, 4);
    }
    verdict = s.check(k, g[2], g[3]);
    if (verdict == Verdict::stop) return;
    if (verdict == Verdict::candidate) {
      if (s.verify(k, r, t)) return;
      // r is the true residual now: q <- A p, then u, w, gamma, delta from r.
      s.spmv(p, q);
      rebuild_from_r();
    }
    gamma = g[0];
    delta = g[1];
  }
}

}  // namespace

CgMethodInfo chronopoulos_gear_method() {
  return {.name = "cg-cg",
          .description = "Chronopoulos/Gear CG: one blocking reduction per iteration",
          .overlaps_reduction = false,
          .vector_cost = "cg.cg-cg.vector",
          .run = &run_chronopoulos_gear};
}

}  // namespace desync::solvers::detail
