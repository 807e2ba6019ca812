// groppcg: Gropp's CG, the 5-update listing that Horikoshi et al. (2022) print as "Algorithm 3 ... Pipelined"
// (its names are swapped: see cg_base.hpp). Lines cited beside the code are
// that listing's. Two reductions per iteration: {(p, s)} overlapped with q = M^-1 s, and
// {(r, u), (r, r), time flag} overlapped with w = A u, when non-blocking.
//
// Names: desync keeps Ghysels and Vanroose's (and PETSc KSPGROPPCG's) names, in which s = A p and
// q = M^-1 s; the listing calls A p "q" and M^-1 A p "z". So line 3's (p, q) is (p, s) here, line 4
// (z = M^-1 q) is q = M^-1 s, line 7 (r -= alpha q) r -= alpha s, line 8 (u -= alpha z) u -= alpha q,
// line 13 (q = w + beta q) s = w + beta s.
//
// Reading of the listing: line 1's "q^(k) = A p^(k)" is q^(0) = A p^(0); its w^(0) and alpha_0 are
// not needed (line 5 computes alpha_0, line 10 w) and desync does not compute them. Departures:
// lines 6-8 are one fused pass that also accumulates line 9's (r, u) and (r, r); lines 12-13 are one
// pass that accumulates line 3's (p, s) of the next iteration.
//
//   mpirun -np 4 desync cg --method groppcg --pc jacobi --reduction doubling --global 64
#include "cg_base.hpp"

namespace desync::solvers::detail {

namespace {

/// Gropp's CG's vectors, in desync's names: the residual r^(k), the search direction p, s = A p by
/// recurrence (the listing's q, line 13), w = A u (line 10), t the scratch of b - A x; and the
/// preconditioned ones, each the vector itself when M = I: u = M^-1 r by recurrence (line 8) and
/// q = M^-1 s (the listing's z, line 4).
void run_groppcg(CgBase& cg) {
  const bool id = cg.identity();
  auto block = cg.allocate(id ? 5 : 7);
  const Vec r = block.next(), p = block.next(), s = block.next(), w = block.next(), t = block.next();
  const Vec u = id ? r : block.next(), q = id ? s : block.next();
  const Vec x = cg.x();
  auto& sum = cg.sum();

  double loc[3];  // local {gamma = (r, u), (r, r), time flag}
  // u <- M^-1 r (line 1); local gamma = (r, u)  (line 1 / line 9), given the local (r, r).
  auto residual_sums = [&](double rr) {
    loc[0] = id ? rr : cg.precondition_dot(r, u);
    loc[1] = rr;
    loc[2] = cg.time_flag();
  };
  // r^(0) <- b - A x^(0); u^(0) <- M^-1 r^(0); gamma_0 = (r^(0), u^(0))  (line 1), blocking
  residual_sums(cg.recompute_residual(r, t));
  sum.sum_now(loc, 3);
  std::int64_t k = 0;
  Verdict verdict = cg.check(k, loc[1], loc[2]);
  if (verdict == Verdict::candidate) {
    if (cg.verify(k, r, t)) return;
    residual_sums(cg.last_local_rr());
    sum.sum_now(loc, 3);
  } else if (verdict == Verdict::stop) {
    return;
  }
  double gamma = loc[0];
  if (!cg.positive_gamma(gamma, k)) return;
  double ps;
  {
    // p^(0) <- u^(0)  (line 1)
    Timed tm(cg.times().vector);
    linalg::copy(u, p);
  }
  // s^(0) <- A p^(0)  (line 1, its q^(0))
  cg.spmv(p, s);
  {
    // local delta_0 = (p, s)  (line 3)
    Timed tm(cg.times().vector);
    ps = linalg::dot(p, s);
  }
  for (;;) {
    // delta_k = (p, s)  (line 3): start the reduction
    sum.start(&ps, 1);
    // Overlapped with it: q <- M^-1 s  (line 4, its z <- M^-1 q)
    if (!id) cg.precondition(s, q);
    const double delta = *sum.wait();
    if (!cg.positive_curvature(delta, k)) return;
    // alpha_k <- gamma_k / delta_k  (line 5)
    const double alpha = gamma / delta;
    {
      // x <- x + alpha p  (line 6); r <- r - alpha s  (line 7); u <- u - alpha q  (line 8);
      // local gamma_{k+1} = (r, u)  (line 9) and (r, r). M = I: u = r, q = s, line 8 is line 7.
      Timed tm(cg.times().vector);
      if (id) {
        loc[1] = loc[0] = linalg::update_xr(alpha, p, s, x, r);
      } else {
        const auto d = linalg::update_xru(alpha, p, s, q, x, r, u);
        loc[0] = d[0];
        loc[1] = d[1];
      }
    }
    ++k;
    bool replace_s = false;
    if (cg.replace_due(k)) {
      // Replacement (not in the listing): r <- b - A x, u <- M^-1 r, and s <- A p below.
      cg.count_replacement();
      residual_sums(cg.recompute_residual(r, t));
      replace_s = true;
    }
    // gamma_{k+1} = (r, u)  (line 9) and ||r||^2  (line 7, check convergence): start the reduction
    loc[2] = cg.time_flag();
    sum.start(loc, 3);
    // Overlapped with it: w <- A u  (line 10)
    cg.spmv(u, w);
    const double* g = sum.wait();
    double gamma_new = g[0];
    verdict = cg.check(k, g[1], g[2]);
    if (verdict == Verdict::stop) return;
    if (verdict == Verdict::candidate) {
      if (cg.verify(k, r, t)) return;
      // r is the true residual now: u <- M^-1 r, gamma (blocking), w <- A u, and s <- A p below.
      residual_sums(cg.last_local_rr());
      sum.sum_now(loc, 3);
      gamma_new = loc[0];
      cg.spmv(u, w);
      replace_s = true;
    }
    if (!cg.positive_gamma(gamma_new, k)) return;
    // beta_{k+1} <- gamma_{k+1} / gamma_k  (line 11)
    const double beta = gamma_new / gamma;
    gamma = gamma_new;
    {
      // p <- u + beta p  (line 12); s <- w + beta s  (line 13, its q); local delta_{k+1} = (p, s)  (line 3)
      Timed tm(cg.times().vector);
      ps = linalg::update_ps(beta, u, w, p, s);
    }
    if (replace_s) {
      // After a replacement: s <- A p from its definition, and (p, s) again.
      cg.spmv(p, s);
      Timed tm(cg.times().vector);
      ps = linalg::dot(p, s);
    }
  }
}

}  // namespace

CgMethodInfo groppcg_method() {
  return {.name = "groppcg",
          .description = "Gropp's CG: two reductions per iteration, overlapped with the preconditioner and the "
                         "matrix-vector product",
          .overlaps_reduction = true,
          .vector_cost = "cg.groppcg.vector",
          .run = &run_groppcg};
}

}  // namespace desync::solvers::detail
