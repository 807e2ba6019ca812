#pragma once
// Internal to the CG family (family.cpp and the method files): what the methods share. Timing of
// the kernels, the matrix-vector product and preconditioner wrappers that count and time them, the
// global sums, the work vectors, the convergence check with its true-residual verification (and the
// replacement that follows a failed one), and the divergence and breakdown tests.
//
// The methods, one file each, follow the listings of Horikoshi et al. (2022), section 2, whose lines
// each file cites beside the code. The paper prints the listings of Gropp's CG and of Ghysels and
// Vanroose's pipelined CG under each other's names. Its text counts "8 DAXPY's" for pipelined CG
// (Alg. 3) and 5 for Gropp's (Alg. 4) and calls Gropp's the one with fewer computations; but the
// listing titled Algorithm 3 has 5 vector updates (lines 6-8, 12-13) and two separate reductions,
// (p, q) and (r, u) (lines 3, 9): Gropp's CG; the one titled Algorithm 4 has 8 (lines 12-19) and one
// reduction of (r, u), (w, u) overlapped with m = M^-1 w, n = A m (lines 3-6): Ghysels and
// Vanroose's pipelined CG (the paper's reference [2]; PETSc's KSPPIPECG has the same recurrences).
// The text's line references (section 2.2) follow the printed listings; desync's files cite the
// lines of the listing each method actually is. desync names the vectors of both as Ghysels and
// Vanroose do (s = A p, q = M^-1 s), where the listings call A p "q".
//
// What every method does beyond its listing:
//   - ||r_k||^2 of the unpreconditioned recursive residual joins the reduction of the iteration's
//     dot products (with a time-limit flag), and check() tests it: the paper's "check convergence".
//   - when ||r_k|| meets the tolerance, verify() recomputes r = b - A x_k and reduces its norm: the run
//     stops only if that true residual meets the tolerance too; otherwise r is replaced by it and the
//     method rebuilds the vectors derived from r before it goes on (residual replacement).
//   - with CgOptions::replace_every = K, the same replacement every K iterations.
//   - a denominator that is not > 0 (or not finite) stops the run as a breakdown (non_finite).
#include <fmt/format.h>

#include "desync/core/timer.hpp"
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "desync/core/simulation.hpp"
#include "desync/solvers/cg/cg.hpp"

namespace desync::solvers::detail {

using linalg::CVec;
using linalg::Vec;

inline double now() { return core::wall_time(); }

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
enum class Verdict {
  go,         ///< not converged, no stop: iterate on
  candidate,  ///< the recursive residual meets the tolerance: verify() it
  stop        ///< stop (max_iters, time_limit, non_finite, diverged; res.stop says which)
};

/// Failed true-residual verifications before the run gives up as stagnated.
constexpr int max_failed_verifications = 20;

/// The state of one solve that all methods share; a method is a function of it (CgMethodInfo::run).
class CgBase {
 public:
  CgBase(linalg::Operator& A, CVec b, Vec x, const CgMethodInfo& method, const CgOptions& o, CgResult& res);

  /// ||b||, the preconditioner's set-up (failures agreed on by every rank), the trivial cases.
  /// Returns false when the run is already over (pc_failed, non-finite b, b = 0).
  bool start();
  /// The true residual of the returned x (unless the last verify() gave it) and res.converged.
  void finish();
  /// Copies the reduction statistics into the result.
  void collect();

  // ---- work vectors ----
  /// Hands out the work vectors of one method, in order, from one block. Vectors are `stride`
  /// apart, a stride that is not a multiple of 4 KiB, so that the streams of a fused kernel do not
  /// alias in the cache. The block lives until the next allocate().
  class VectorBlock {
   public:
    Vec next() { return Vec(base_ + stride_ * next_++, n_); }

   private:
    friend class CgBase;
    VectorBlock(double* base, std::size_t stride, std::size_t n) : base_(base), stride_(stride), n_(n) {}
    double* base_;
    std::size_t stride_, n_;
    std::size_t next_ = 0;
  };
  /// `count` zeroed work vectors (timed as set-up).
  VectorBlock allocate(int count);

  // ---- counted and timed operations ----
  /// out = A in.
  void spmv(CVec in, Vec out) {
    Timed t(times().spmv);
    A_.apply(in, out);
    ++res_.stats.spmvs;
  }
  /// u = M^-1 r, returns the local (r, u).
  double precondition_dot(CVec r, Vec u) {
    Timed t(times().pc);
    ++res_.stats.pc_applications;
    const double d = pc_->apply_dot(r, u);
    charge_pc(r.size());
    return d;
  }
  /// u = M^-1 r.
  void precondition(CVec r, Vec u) {
    Timed t(times().pc);
    ++res_.stats.pc_applications;
    pc_->apply(r, u);
    charge_pc(r.size());
  }
  /// Simulated cluster: an application's rows, less those its polls charged.
  void charge_pc(std::size_t rows) {
    core::charge(pc_cost_.c_str(), static_cast<double>(rows) - pc_polled_rows_);
    pc_polled_rows_ = 0;
  }
  /// Counts one preconditioner application that a fused kernel performs (update_*_jacobi).
  void count_fused_pc() { ++res_.stats.pc_applications; }
  /// r = b - A x; returns the local (r, r). Uses scratch vector t.
  double recompute_residual(Vec r, Vec t) {
    spmv(x_, t);
    Timed tm(times().vector);
    return linalg::residual_norm2(b_, t, r);
  }
  /// 1 when the time limit has passed on this rank (summed with the dot products, so agreed on).
  double time_flag() const { return o_.iteration.time_limit > 0 && now() - t_start_ > o_.iteration.time_limit ? 1.0 : 0.0; }
  CgTimes& times() { return res_.stats.time; }
  /// M = I: u aliases r (and the other M^-1 vectors their operands).
  bool identity() const { return pc_identity_; }
  /// jacobi: 1 / diag(A), for the kernels that fuse u = M^-1 r; empty otherwise.
  CVec inverse_diagonal() const { return pc_->inverse_diagonal(); }
  /// A periodic residual replacement (CgOptions::replace_every) is due after iteration k.
  bool replace_due(std::int64_t k) const { return o_.replace_every > 0 && k % o_.replace_every == 0; }
  /// Counts a replacement of r by b - A x.
  void count_replacement() { ++res_.stats.replacements; }
  Vec x() { return x_; }
  /// The global sums; the iteration's own reductions go through it.
  linalg::GlobalSum& sum() { return sum_; }

  // ---- convergence and failures ----
  /// Records and tests the recursive residual norm^2 `rr` of iteration k; `flag` is the summed
  /// time-limit flag.
  Verdict check(std::int64_t k, double rr, double flag);
  /// Called on a candidate: r = b - A x (true residual, into r; t is scratch). Returns true when
  /// the run stops (converged, stagnated, max_iters, non_finite); false: r now holds the true
  /// residual (its local (r, r) is last_local_rr()), the method rebuilds the rest.
  bool verify(std::int64_t k, Vec r, Vec t);
  /// This rank's (r, r) of the residual verify() recomputed last.
  double last_local_rr() const { return last_local_rr_; }
  /// Tests a denominator (p, A p) > 0; false (and a stop) if not.
  bool positive_curvature(double d, std::int64_t k) { return positive(d, k, "(p, Ap)", "operator"); }
  /// Tests (r, M^-1 r) > 0; false (and a stop) if not.
  bool positive_gamma(double g, std::int64_t k) { return positive(g, k, "(r, M^-1 r)", "preconditioner"); }

  /// Stops with a numerical failure (core::is_numerical_failure) that a method detects itself, e.g.
  /// GMRES's singular least-squares problem.
  void stop_failed(core::StopReason s, std::string message) { fail(s, std::move(message)); }

  const CgOptions& options() const { return o_; }

 private:
  /// Stops with a numerical failure.
  void fail(core::StopReason s, std::string message) {
    res_.stop = s;
    res_.message = std::move(message);
  }
  /// Tests that a denominator `value` (named `what`) of iteration k is > 0; false (and a stop) if not:
  /// a non-finite value, or a breakdown that says `which` operator is not positive definite.
  bool positive(double value, std::int64_t k, const char* what, const char* which);

  linalg::Operator& A_;
  CVec b_;
  Vec x_;
  // Simulated cluster: the cost model's entries for the vector work of an iteration of this
  // method (CgMethodInfo::vector_cost) and for a preconditioner application (PcInfo::cost), per row.
  std::string vector_cost_, pc_cost_;
  bool pc_identity_ = false;  // PcInfo::identity
  double pc_polled_rows_ = 0;  ///< rows of the current preconditioner application charged at its polls
  const CgOptions& o_;
  CgResult& res_;
  std::size_t n_;
  std::size_t stride_ = (n_ + 7) / 8 * 8 + 72;
  bool nonblocking_;
  bool positive_definite_;  ///< CgMethodInfo::positive_definite (the preconditioner's requirement)
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

// The registrations of the methods, one in each method's file; register_all_cg_methods (family.cpp)
// calls them.
CgMethodInfo cg_method();                 ///< cg.cpp: preconditioned CG, Algorithm 1
CgMethodInfo chronopoulos_gear_method();  ///< chronopoulos_gear.cpp: Chronopoulos/Gear CG, Algorithm 2
CgMethodInfo pipecg_method();             ///< pipecg.cpp: pipelined CG, the listing printed as Algorithm 4
CgMethodInfo groppcg_method();            ///< groppcg.cpp: Gropp's CG, the listing printed as Algorithm 3
CgMethodInfo gmres_method();              ///< gmres.cpp: restarted GMRES(m), right preconditioned (Saad, 2003, Alg. 6.9)

}  // namespace desync::solvers::detail
