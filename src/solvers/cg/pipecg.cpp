// pipecg: pipelined CG (Ghysels and Vanroose), the 8-update listing that Horikoshi et al. (2022) print as
// "Algorithm 4 ... Gropp's" (its names are swapped: see cg_base.hpp). Lines
// cited beside the code are that listing's. One reduction per iteration, {(r, u), (w, u), (r, r),
// time flag}, overlapped with m = M^-1 w and n = A m when non-blocking.
//
// Names: desync keeps Ghysels and Vanroose's (and PETSc KSPPIPECG's) names, in which s = A p and
// q = M^-1 s; the listing calls A p "q" and M^-1 A p "s". So the listing's line 13 (s = m + beta s)
// is desync's q, its line 14 (q = w + beta q) desync's s, line 17 (r -= alpha q) is r -= alpha s
// here and line 18 (u -= alpha s) is u -= alpha q. z = A M^-1 A p and w, m, n are named alike.
//
// Reading of the listing: lines 16-19 use the vectors just updated in lines 12-15 (p^(k+1), ...
// under the listing's superscripts); read literally (p^(k), with p^(0) = 0 from line 1) the first
// iteration would leave x unchanged. Departures: lines 3-4 of iteration k+1 (and (r, r)) are
// accumulated in the fused pass of lines 12-19 of iteration k; the eight updates are one pass.
//
//   mpirun -np 4 desync cg --method pipecg --pc jacobi --global 64
#include "cg_base.hpp"

namespace desync::solvers::detail {

namespace {

/// The pipelined listing's vectors, in desync's names: the residual r^(k), w = A u, z = A q
/// (= A M^-1 A p) by recurrence (line 12), s = A p by recurrence (the listing's q, line 14), the
/// search direction p, n = A m (line 6), t the scratch of b - A x; and the preconditioned ones,
/// each the vector itself when M = I: u = M^-1 r, m = M^-1 w (line 5), q = M^-1 s by recurrence
/// (the listing's s, line 13).
void run_pipecg(CgBase& cg) {
  const bool id = cg.identity();
  auto block = cg.allocate(id ? 7 : 10);
  const Vec r = block.next(), w = block.next(), z = block.next(), s = block.next(), p = block.next(), n = block.next(), t = block.next();
  const Vec u = id ? r : block.next(), m = id ? w : block.next(), q = id ? s : block.next();
  const Vec x = cg.x();
  auto& sum = cg.sum();

  double loc[4];  // local {gamma = (r, u), delta = (w, u), (r, r), time flag}
  // From r (and p): u <- M^-1 r, w <- A u (line 1); with p: s <- A p, q <- M^-1 s, z <- A q (the
  // recurrences' vectors from their definitions); local gamma, delta (lines 3-4) and (r, r).
  auto rebuild_from_r = [&](bool with_p) {
    if (!id) cg.precondition(r, u);
    cg.spmv(u, w);
    if (with_p) {
      cg.spmv(p, s);
      if (!id) cg.precondition(s, q);
      cg.spmv(q, z);
    }
    Timed tm(cg.times().vector);
    const auto d = linalg::dots_ru_wu_rr(r, u, w);
    loc[0] = d[0];
    loc[1] = d[1];
    loc[2] = d[2];
  };
  // r^(0) <- b - A x^(0); u^(0), w^(0)  (line 1); z = q = s = p = 0 (the allocation's zeros)
  cg.recompute_residual(r, t);
  rebuild_from_r(false);
  std::int64_t k = 0;
  double gamma_old = 0, alpha_old = 0;
  bool first = true;
  // Restarts (not in the listing): gamma and (p, Ap) = delta - beta gamma / alpha_{k-1} come from
  // recurrences whose rounding errors grow with the iteration (Cools, Yetkin, Agullo, Giraud and
  // Vanroose, 2018); near the attainable accuracy they can read <= 0 on a symmetric positive
  // definite system (the soak: (p, Ap) = -4.5e-08 at iteration 624 where CG converged). Such a
  // reading restarts the iteration from the true residual, p = u (beta 0), where (p, Ap) = (w, u)
  // is computed from its vectors; a breakdown is reported when that reading is <= 0 too, or after
  // max_restarts restarts.
  constexpr int max_restarts = 10;
  int restarts = 0;
  const auto restart = [&] {
    ++restarts;
    cg.count_replacement();
    cg.recompute_residual(r, t);
    rebuild_from_r(false);
    first = true;
  };
  for (;;) {
    // gamma_k = (r, u), delta_k = (w, u)  (lines 3-4) and ||r_k||^2: start the reduction
    loc[3] = cg.time_flag();
    sum.start(loc, 4);
    // Overlapped with the reduction: m <- M^-1 w  (line 5); n <- A m  (line 6)
    if (!id) cg.precondition(w, m);
    cg.spmv(m, n);
    const double* g = sum.wait();
    const double gamma = g[0], delta = g[1], rr = g[2], flag = g[3];
    // check convergence: ||r_k||  (line 17 of the previous iteration)
    const Verdict verdict = cg.check(k, rr, flag);
    if (verdict == Verdict::stop) return;
    if (verdict == Verdict::candidate) {
      if (cg.verify(k, r, t)) return;
      // r is the true residual now: rebuild u, w (and s, q, z) and start iteration k again.
      rebuild_from_r(!first);
      continue;
    }
    // beta_k <- gamma_k / gamma_{k-1} (line 8; beta_0 = 0, line 10);
    // alpha_k <- gamma_k / (delta_k - beta_k gamma_k / alpha_{k-1})  (line 8; alpha_0 = gamma_0 / delta_0, line 10)
    const double beta = first ? 0.0 : gamma / gamma_old;
    const double curvature = first ? delta : delta - beta * gamma / alpha_old;
    if (!first && restarts < max_restarts && std::isfinite(gamma) && std::isfinite(curvature) &&
        !(gamma > 0 && curvature > 0)) {
      restart();  // read from the recurrences: start again from the true residual (above)
      continue;
    }
    if (!cg.positive_gamma(gamma, k)) return;
    if (!cg.positive_curvature(curvature, k)) return;
    const double alpha = gamma / curvature;
    linalg::Sums d;
    {
      // z <- n + beta z  (line 12); q <- m + beta q  (line 13, its s); s <- w + beta s  (line 14, its q);
      // p <- u + beta p  (line 15); x <- x + alpha p  (line 16); r <- r - alpha s  (line 17);
      // u <- u - alpha q  (line 18); w <- w - alpha z  (line 19);
      // and the local gamma_{k+1}, delta_{k+1}  (lines 3-4) and (r, r) of the next iteration.
      // M = I: u = r, m = w, q = s, so lines 13 and 18 are lines 14 and 17.
      Timed tm(cg.times().vector);
      d = id ? linalg::update_pipelined_cg_plain(alpha, beta, n, z, s, p, x, r, w)
             : linalg::update_pipelined_cg(alpha, beta, n, m, z, q, s, p, x, r, u, w);
    }
    loc[0] = d[0];
    loc[1] = d[1];
    loc[2] = d[2];
    ++k;
    first = false;
    gamma_old = gamma;
    alpha_old = alpha;
    if (cg.replace_due(k)) {
      // Replacement (not in the listing): r <- b - A x, then u, w, s, q, z and the dots from r and p.
      cg.count_replacement();
      cg.recompute_residual(r, t);
      rebuild_from_r(true);
    }
  }
}

}  // namespace

CgMethodInfo pipecg_method() {
  return {.name = "pipecg",
          .description = "pipelined CG: one reduction per iteration, overlapped with the preconditioner and the "
                         "matrix-vector product",
          .overlaps_reduction = true,
          .vector_cost = "cg.pipecg.vector",
          .run = &run_pipecg};
}

}  // namespace desync::solvers::detail
