// The pieces the CG methods share (cg_base.hpp).
#include "cg_base.hpp"

#include <algorithm>
#include <cstdio>

#include "desync/communication/reduction.hpp"
#include "desync/core/error.hpp"
#include "desync/core/monitor.hpp"

namespace desync::solvers::detail {

CgBase::CgBase(linalg::Operator& A, CVec b, Vec x, const CgMethodInfo& method, const CgOptions& o, CgResult& res)
    : A_(A), b_(b), x_(x), vector_cost_(method.vector_cost.name), o_(o), res_(res),
      n_(static_cast<std::size_t>(A.local_size())), nonblocking_(o.nonblocking && method.overlaps_reduction),
      positive_definite_(method.positive_definite), sum_(A.comm(), nonblocking_, o.doubling) {
  MPI_Comm_rank(A.comm(), &rank_);
}

void CgBase::collect() {
  res_.stats.reductions = sum_.stats().count;
  res_.stats.time.reduction = sum_.stats().seconds;
  res_.stats.time.reduction_wait = sum_.stats().wait_seconds;
  if (const solvers::CoarseSpace* c = pc_ ? pc_->coarse() : nullptr) {
    res_.coarse = c->summary();
    res_.coarse_apply_seconds = c->apply_seconds();
  }
}

CgBase::VectorBlock CgBase::allocate(int count) {
  Timed t(times().setup);
  storage_.assign(static_cast<std::size_t>(count) * stride_, 0.0);
  return VectorBlock(storage_.data(), stride_, n_);
}

bool CgBase::positive(double value, std::int64_t k, const char* what, const char* which) {
  if (value > 0 && std::isfinite(value)) return true;
  if (!std::isfinite(value))
    fail(core::StopReason::non_finite, fmt::format("non-finite value (NaN or Inf) in {} at iteration {}", what, k));
  else
    fail(core::StopReason::breakdown,
         fmt::format("breakdown at iteration {}: {} = {:.6e} <= 0: the {} is not positive definite", k, what,
                     value, which));
  return false;
}

Verdict CgBase::check(std::int64_t k, double rr, double flag) {
  // Simulated cluster: the iteration's vector updates and dot products, per local row, with each
  // method's own count of them.
  core::charge(vector_cost_.c_str(), static_cast<double>(x_.size()));
  const double rel = std::sqrt(std::fabs(rr)) / bnorm_;
  res_.recursive_residual = rel;
  res_.iterations = k;
  if (o_.record_history) res_.history.push_back({now() - t_start_, k, rel});
  if (k == 0 && std::isfinite(rr)) div2_ = std::max(div2_, o_.iteration.divergence_factor * o_.iteration.divergence_factor * rr);
  core::Monitor{o_.monitor_every, rank_ == 0}(k, now() - t_start_, rel);
  if (!std::isfinite(rr)) {
    fail(core::StopReason::non_finite, fmt::format("non-finite value (NaN or Inf) in the residual norm at iteration {}", k));
    return Verdict::stop;
  }
  if (rr <= tol2_) return Verdict::candidate;
  if (rr > div2_) {
    fail(core::StopReason::diverged, fmt::format("diverged at iteration {}: residual {:.3e} grew beyond {:.0e} times its "
                                       "initial value",
                                       k, rel, o_.iteration.divergence_factor));
    return Verdict::stop;
  }
  if (k >= o_.iteration.max_iters) {
    res_.stop = core::StopReason::max_iters;
    return Verdict::stop;
  }
  if (flag > 0) {
    res_.stop = core::StopReason::time_limit;
    return Verdict::stop;
  }
  return Verdict::go;
}

bool CgBase::verify(std::int64_t k, Vec r, Vec t) {
  double rr = recompute_residual(r, t);
  last_local_rr_ = rr;
  sum_.sum_now(&rr, 1);
  res_.true_residual = std::sqrt(rr) / bnorm_;
  have_true_residual_ = true;
  if (!std::isfinite(rr)) {
    fail(core::StopReason::non_finite, fmt::format("non-finite value (NaN or Inf) in the true residual at iteration {}", k));
    return true;
  }
  if (rr <= tol2_) {
    res_.stop = core::StopReason::converged;
    return true;
  }
  ++res_.stats.replacements;
  if (++failed_verifications_ > max_failed_verifications) {
    res_.stop = core::StopReason::stagnated;
    res_.message = fmt::format("stagnated at iteration {}: the recursive residual met the tolerance {} times but the "
                               "true residual ({:.3e}) did not",
                               k, failed_verifications_, res_.true_residual);
    return true;
  }
  if (k >= o_.iteration.max_iters) {
    res_.stop = core::StopReason::max_iters;
    return true;
  }
  return false;
}

bool CgBase::start() {
  t_start_ = now();
  A_.reset_stats();
  res_.stats.local_rows = A_.local_size();
  res_.stats.rank = rank_;
  if (o_.record_history) res_.history.reserve(static_cast<std::size_t>(std::min<std::int64_t>(o_.iteration.max_iters, 100000)) + 2);
  double bb = linalg::dot(b_, b_);
  sum_.sum_now(&bb, 1);
  bnorm_ = std::sqrt(bb);
  res_.b_norm = bnorm_;

  // Preconditioner set-up; a failure on any rank stops every rank with that rank's message.
  std::string pc_error;
  {
    Timed tm(times().setup);
    try {
      const PcInfo& pc = find_pc(o_.pc);
      pc_ = pc.make(A_, {o_.pc_matrix, o_.pc_subdomains, o_.pc_transport},
                    positive_definite_);  // the preconditioner's own file (solvers/pc/)
      pc_cost_ = pc.cost.name;
      pc_identity_ = pc.identity;
      res_.pc_description = pc_->description();
      // Progress control: each poll inside an application charges its rows (simulated cluster)
      // and advances the reduction in flight (a no-op when none is).
      if (o_.pc_poll_interval > 0)
        pc_->set_polls({o_.pc_poll_interval, [this](double rows) {
                          core::charge(pc_cost_.c_str(), rows);
                          pc_polled_rows_ += rows;
                          ++res_.stats.pc_polls;
                          comm::progress_reduction();
                        }});
    } catch (const PcSetupError& e) {
      pc_error = e.what();
    }
  }
  try {
    agree_or_throw(A_.comm(), pc_error.empty(), pc_error);
  } catch (const InputError& e) {
    fail(core::StopReason::pc_failed, e.what());
    res_.true_residual = std::nan("");
    return false;
  }

  if (!std::isfinite(bnorm_)) {
    fail(core::StopReason::non_finite, "non-finite value (NaN or Inf) in the right-hand side");
    return false;
  }
  if (bnorm_ == 0) {  // A x = 0: x = 0 exactly
    linalg::fill(x_, 0.0);
    res_.stop = core::StopReason::converged;
    res_.converged = true;
    res_.true_residual = 0;
    have_true_residual_ = true;
    res_.history.push_back({0.0, 0, 0.0});
    return false;
  }
  tol2_ = (o_.iteration.tol * bnorm_) * (o_.iteration.tol * bnorm_);
  div2_ = (o_.iteration.divergence_factor * bnorm_) * (o_.iteration.divergence_factor * bnorm_);
  return true;
}

void CgBase::finish() {
  // The true residual of the returned x (already known when the stop verified it).
  if (!have_true_residual_ || res_.stop != core::StopReason::converged) {
    // The methods' work vectors are free now: the first two serve as r and scratch.
    if (storage_.size() < 2 * stride_) allocate(2);
    VectorBlock v(storage_.data(), stride_, n_);
    const Vec r = v.next(), t = v.next();
    double rr = recompute_residual(r, t);
    MPI_Allreduce(MPI_IN_PLACE, &rr, 1, MPI_DOUBLE, MPI_SUM, A_.comm());
    res_.true_residual = std::sqrt(rr) / bnorm_;
  }
  res_.converged = !is_numerical_failure(res_.stop) && res_.true_residual <= o_.iteration.tol;
}

}  // namespace desync::solvers::detail
