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

/// The pipelined listing's vectors, in desync's names.
struct PipecgVectors {
  Vec r;  ///< residual r^(k)
  Vec w;  ///< w = A u
  Vec z;  ///< z = A q (= A M^-1 A p), by recurrence (line 12)
  Vec s;  ///< s = A p, by recurrence (the listing's q, line 14)
  Vec p;  ///< search direction
  Vec n;  ///< n = A m  (line 6)
  Vec t;  ///< scratch of b - A x
  Vec u;  ///< u = M^-1 r (aliases r when M = I)
  Vec m;  ///< m = M^-1 w  (line 5; aliases w when M = I)
  Vec q;  ///< q = M^-1 s, by recurrence (the listing's s, line 13; aliases s when M = I)
};

void run_pipecg(CgBase& s) {
  const bool id = s.identity();
  auto block = s.allocate(id ? 7 : 10);
  PipecgVectors v;
  v.r = block.next();
  v.w = block.next();
  v.z = block.next();
  v.s = block.next();
  v.p = block.next();
  v.n = block.next();
  v.t = block.next();
  v.u = id ? v.r : block.next();
  v.m = id ? v.w : block.next();
  v.q = id ? v.s : block.next();
  const Vec x = s.x();
  auto& sum = s.sum();

  double loc[4];  // local {gamma = (r, u), delta = (w, u), (r, r), time flag}
  // From r (and p): u <- M^-1 r, w <- A u (line 1); with p: s <- A p, q <- M^-1 s, z <- A q (the
  // recurrences' vectors from their definitions); local gamma, delta (lines 3-4) and (r, r).
  auto rebuild_from_r = [&](bool with_p) {
    if (!id) s.precondition(v.r, v.u);
    s.spmv(v.u, v.w);
    if (with_p) {
      s.spmv(v.p, v.s);
      if (!id) s.precondition(v.s, v.q);
      s.spmv(v.q, v.z);
    }
    Timed tm(s.times().vector);
    const auto d = linalg::dots_ru_wu_rr(v.r, v.u, v.w);
    loc[0] = d[0];
    loc[1] = d[1];
    loc[2] = d[2];
  };
  // r^(0) <- b - A x^(0); u^(0), w^(0)  (line 1); z = q = s = p = 0 (the allocation's zeros)
  s.recompute_residual(v.r, v.t);
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
    s.count_replacement();
    s.recompute_residual(v.r, v.t);
    rebuild_from_r(false);
    first = true;
  };
  for (;;) {
    // gamma_k = (r, u), delta_k = (w, u)  (lines 3-4) and ||r_k||^2: start the reduction
    loc[3] = s.time_flag();
    sum.start(loc, 4);
    // Overlapped with the reduction: m <- M^-1 w  (line 5); n <- A m  (line 6)
    if (!id) s.precondition(v.w, v.m);
    s.spmv(v.m, v.n);
    const double* g = sum.wait();
    const double gamma = g[0], delta = g[1], rr = g[2], flag = g[3];
    // check convergence: ||r_k||  (line 17 of the previous iteration)
    const Verdict verdict = s.check(k, rr, flag);
    if (verdict == Verdict::stop) return;
    if (verdict == Verdict::candidate) {
      if (s.verify(k, v.r, v.t)) return;
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
    if (!s.positive_gamma(gamma, k)) return;
    if (!s.positive_curvature(curvature, k)) return;
    const double alpha = gamma / curvature;
    linalg::Sums d;
    {
      // z <- n + beta z  (line 12); q <- m + beta q  (line 13, its s); s <- w + beta s  (line 14, its q);
      // p <- u + beta p  (line 15); x <- x + alpha p  (line 16); r <- r - alpha s  (line 17);
      // u <- u - alpha q  (line 18); w <- w - alpha z  (line 19);
      // and the local gamma_{k+1}, delta_{k+1}  (lines 3-4) and (r, r) of the next iteration.
      // M = I: u = r, m = w, q = s, so lines 13 and 18 are lines 14 and 17.
      Timed tm(s.times().vector);
      d = id ? linalg::update_pipelined_cg_plain(alpha, beta, v.n, v.z, v.s, v.p, x, v.r, v.w)
             : linalg::update_pipelined_cg(alpha, beta, v.n, v.m, v.z, v.q, v.s, v.p, x, v.r, v.u, v.w);
    }
    loc[0] = d[0];
    loc[1] = d[1];
    loc[2] = d[2];
    ++k;
    first = false;
    gamma_old = gamma;
    alpha_old = alpha;
    if (s.replace_due(k)) {
      // Replacement (not in the listing): r <- b - A x, then u, w, s, q, z and the dots from r and p.
      s.count_replacement();
      s.recompute_residual(v.r, v.t);
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
