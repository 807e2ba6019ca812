// cg: preconditioned conjugate gradients, Horikoshi et al. (2022), Algorithm 1 (lines cited beside the code).
// Two blocking reductions per iteration: {(p, q)}, then {(r, u), (r, r), time flag}.
//
// Departures from the listing: x^(k+1) = x^(k) + alpha_k p^(k) (line 5) is deferred and fused with
// p^(k+1) = u^(k+1) + beta_{k+1} p^(k) (line 10), unless a stop or a replacement needs x first; with
// jacobi, u = M^-1 r (line 7) is fused with r's update (line 6); (r, r) for the convergence check
// joins the reduction of rho (line 8).
//
//   mpirun -np 4 desync cg --method cg --pc jacobi --global 64
#include "cg_base.hpp"

namespace desync::solvers::detail {

namespace {

/// Algorithm 1's vectors: the residual r^(k), the search direction p^(k), q^(k) = A p^(k), t the
/// scratch of b - A x, and u^(k) = M^-1 r^(k) (r itself when M = I).
void run_cg(CgBase& s) {
  const bool id = s.identity();
  auto block = s.allocate(id ? 4 : 5);
  const Vec r = block.next(), p = block.next(), q = block.next(), t = block.next();
  const Vec u = id ? r : block.next();
  const CVec dinv = s.inverse_diagonal();
  const Vec x = s.x();
  auto& sum = s.sum();

  double g[3];  // {(r, u), (r, r), time flag}, summed
  auto precondition_r = [&](double rr) {
    // u <- M^-1 r  (line 7, or line 1);  rho = (r, u)  (line 8, or line 1)
    g[0] = id ? rr : s.precondition_dot(r, u);
    g[1] = rr;
    g[2] = s.time_flag();
    sum.sum_now(g, 3);
  };
  // r^(0) <- b - A x^(0)  (line 1)
  precondition_r(s.recompute_residual(r, t));
  double rho = g[0];
  std::int64_t k = 0;
  Verdict verdict = s.check(k, g[1], g[2]);
  if (verdict == Verdict::candidate) {
    if (s.verify(k, r, t)) return;
    precondition_r(s.last_local_rr());
    rho = g[0];
  } else if (verdict == Verdict::stop) {
    return;
  }
  if (!s.positive_gamma(rho, k)) return;
  {
    // p^(0) <- u^(0)  (line 1)
    Timed tm(s.times().vector);
    linalg::copy(u, p);
  }
  for (;;) {
    // q <- A p  (line 3)
    s.spmv(p, q);
    double pq;
    {
      // (p, q)  (line 4), blocking
      Timed tm(s.times().vector);
      pq = linalg::dot(p, q);
    }
    sum.sum_now(&pq, 1);
    if (!s.positive_curvature(pq, k)) return;
    // alpha <- rho / (p, q)  (line 4)
    const double alpha = rho / pq;
    double ru, rr;
    if (id) {
      // r <- r - alpha q  (line 6); (r, r) = (r, u)  (line 8, u = r)
      Timed tm(s.times().vector);
      rr = ru = linalg::update_r_norm2(alpha, q, r);
    } else if (!dinv.empty()) {
      // r <- r - alpha q  (line 6); u <- M^-1 r  (line 7); (r, u)  (line 8), (r, r)
      Timed tm(s.times().pc);
      s.count_fused_pc();
      const auto d = linalg::update_r_jacobi(alpha, q, r, dinv, u);
      ru = d[0];
      rr = d[1];
    } else {
      {
        // r <- r - alpha q  (line 6); (r, r)
        Timed tm(s.times().vector);
        rr = linalg::update_r_norm2(alpha, q, r);
      }
      // u <- M^-1 r  (line 7); (r, u)  (line 8)
      ru = s.precondition_dot(r, u);
    }
    ++k;
    bool x_pending = true;  // x += alpha p (line 5) not done yet: fused into the update of p below
    auto flush_x = [&] {
      if (!x_pending) return;
      // x <- x + alpha p  (line 5), on its own
      Timed tm(s.times().vector);
      linalg::axpy(alpha, p, x);
      x_pending = false;
    };
    if (s.replace_due(k)) {
      // Replacement (not in the listing): r <- b - A x, u <- M^-1 r, rho <- (r, u).
      flush_x();
      s.count_replacement();
      precondition_r(s.recompute_residual(r, t));
    } else {
      // rho_{k+1} = (r, u)  (line 8) and ||r||^2  (line 6, check convergence): one blocking reduction
      g[0] = ru;
      g[1] = rr;
      g[2] = s.time_flag();
      sum.sum_now(g, 3);
    }
    verdict = s.check(k, g[1], g[2]);
    if (verdict != Verdict::go) {
      flush_x();
      if (verdict == Verdict::stop || s.verify(k, r, t)) return;
      precondition_r(s.last_local_rr());  // r is the true residual now
    }
    const double rho_new = g[0];
    if (!s.positive_gamma(rho_new, k)) {
      flush_x();
      return;
    }
    // beta <- rho_{k+1} / rho_k  (line 9)
    const double beta = rho_new / rho;
    rho = rho_new;
    Timed tm(s.times().vector);
    if (x_pending)
      // x <- x + alpha p  (line 5); p <- u + beta p  (line 10)
      linalg::update_x_p(alpha, u, beta, p, x);
    else
      // p <- u + beta p  (line 10)
      linalg::xpay(u, beta, p);
  }
}

}  // namespace

CgMethodInfo cg_method() {
  return {.name = "cg",
          .description = "preconditioned CG: two blocking reductions per iteration",
          .overlaps_reduction = false,
          .vector_cost = "cg.cg.vector",
          .run = &run_cg};
}

}  // namespace desync::solvers::detail
