#include "desync/linalg/vector.hpp"

#include "desync/core/timer.hpp"
#include "desync/core/waiting.hpp"
#include <cstdint>

#include "desync/communication/reduction.hpp"
#include "desync/communication/request_ledger.hpp"

// Every loop is element-wise (entry i of the outputs depends only on entry i of the inputs), so
// `omp simd` is valid even where an input and an output are the same vector (e.g. u = r); the
// reduction clause lets the dot products vectorise (the summation order is fixed for a build).

namespace desync::linalg {

namespace {
inline double now() { return core::wall_time(); }
inline std::int64_t len(CVec x) { return static_cast<std::int64_t>(x.size()); }
}  // namespace

double dot(CVec x, CVec y) {
  const double* a = x.data();
  const double* b = y.data();
  const std::int64_t n = len(x);
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void copy(CVec x, Vec y) {
  const double* a = x.data();
  double* b = y.data();
  const std::int64_t n = len(x);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) b[i] = a[i];
}

void fill(Vec y, double value) {
  double* b = y.data();
  const std::int64_t n = static_cast<std::int64_t>(y.size());
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) b[i] = value;
}

void scale(double a, Vec y) {
  double* yp = y.data();
  const std::int64_t n = len(y);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) yp[i] *= a;
}

void axpy(double a, CVec x, Vec y) {
  const double* xp = x.data();
  double* yp = y.data();
  const std::int64_t n = len(x);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) yp[i] += a * xp[i];
}

void xpay(CVec x, double b, Vec y) {
  const double* xp = x.data();
  double* yp = y.data();
  const std::int64_t n = len(x);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) yp[i] = xp[i] + b * yp[i];
}

void residual(CVec b, CVec ax, Vec r) {
  const double* bp = b.data();
  const double* ap = ax.data();
  double* rp = r.data();
  const std::int64_t n = len(b);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) rp[i] = bp[i] - ap[i];
}

double residual_norm2(CVec b, CVec ax, Vec r) {
  const double* bp = b.data();
  const double* ap = ax.data();
  double* rp = r.data();
  const std::int64_t n = len(b);
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = bp[i] - ap[i];
    rp[i] = v;
    s += v * v;
  }
  return s;
}

double update_r_norm2(double alpha, CVec q, Vec r) {
  const double* qp = q.data();
  double* rp = r.data();
  const std::int64_t n = len(q);
  double rr = 0;
#pragma omp simd reduction(+ : rr)
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = rp[i] - alpha * qp[i];
    rp[i] = v;
    rr += v * v;
  }
  return rr;
}

Sums update_r_jacobi(double alpha, CVec q, Vec r, CVec d, Vec u) {
  const double* qp = q.data();
  const double* dp = d.data();
  double* rp = r.data();
  double* up = u.data();
  const std::int64_t n = len(q);
  double ru = 0, rr = 0;
#pragma omp simd reduction(+ : ru, rr)
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = rp[i] - alpha * qp[i];
    const double z = dp[i] * v;
    rp[i] = v;
    up[i] = z;
    ru += v * z;
    rr += v * v;
  }
  return {ru, rr, 0.0};
}

void update_x_p(double alpha, CVec u, double beta, Vec p, Vec x) {
  const double* up = u.data();
  double* pp = p.data();
  double* xp = x.data();
  const std::int64_t n = len(u);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const double pi = pp[i];
    xp[i] += alpha * pi;
    pp[i] = up[i] + beta * pi;
  }
}

double update_pqxr(double alpha, double beta, CVec u, CVec w, Vec p, Vec q, Vec x, Vec r) {
  const double* up = u.data();
  const double* wp = w.data();
  double* pp = p.data();
  double* qp = q.data();
  double* xp = x.data();
  double* rp = r.data();
  const std::int64_t n = len(w);
  double rr = 0;
#pragma omp simd reduction(+ : rr)
  for (std::int64_t i = 0; i < n; ++i) {
    const double pi = up[i] + beta * pp[i];
    const double qi = wp[i] + beta * qp[i];
    const double ri = rp[i] - alpha * qi;
    pp[i] = pi;
    qp[i] = qi;
    xp[i] += alpha * pi;
    rp[i] = ri;
    rr += ri * ri;
  }
  return rr;
}

Sums update_pqxr_jacobi(double alpha, double beta, CVec w, Vec p, Vec q, Vec x, Vec r, CVec d, Vec u) {
  const double* wp = w.data();
  const double* dp = d.data();
  double* pp = p.data();
  double* qp = q.data();
  double* xp = x.data();
  double* rp = r.data();
  double* up = u.data();
  const std::int64_t n = len(w);
  double ru = 0, rr = 0;
#pragma omp simd reduction(+ : ru, rr)
  for (std::int64_t i = 0; i < n; ++i) {
    const double pi = up[i] + beta * pp[i];
    const double qi = wp[i] + beta * qp[i];
    const double ri = rp[i] - alpha * qi;
    const double ui = dp[i] * ri;
    pp[i] = pi;
    qp[i] = qi;
    xp[i] += alpha * pi;
    rp[i] = ri;
    up[i] = ui;
    ru += ri * ui;
    rr += ri * ri;
  }
  return {ru, rr, 0.0};
}

Sums update_pipelined_cg(double alpha, double beta, CVec nv, CVec m, Vec z, Vec q, Vec s, Vec p, Vec x, Vec r,
                         Vec u, Vec w) {
  const double* np = nv.data();
  const double* mp = m.data();
  double* zp = z.data();
  double* qp = q.data();
  double* sp = s.data();
  double* pp = p.data();
  double* xp = x.data();
  double* rp = r.data();
  double* up = u.data();
  double* wp = w.data();
  const std::int64_t n = len(nv);
  double ru = 0, wu = 0, rr = 0;
#pragma omp simd reduction(+ : ru, wu, rr)
  for (std::int64_t i = 0; i < n; ++i) {
    const double zi = np[i] + beta * zp[i];
    const double qi = mp[i] + beta * qp[i];
    const double si = wp[i] + beta * sp[i];
    const double pi = up[i] + beta * pp[i];
    xp[i] += alpha * pi;
    const double ri = rp[i] - alpha * si;
    const double ui = up[i] - alpha * qi;
    const double wi = wp[i] - alpha * zi;
    zp[i] = zi;
    qp[i] = qi;
    sp[i] = si;
    pp[i] = pi;
    rp[i] = ri;
    up[i] = ui;
    wp[i] = wi;
    ru += ri * ui;
    wu += wi * ui;
    rr += ri * ri;
  }
  return {ru, wu, rr};
}

Sums update_pipelined_cg_plain(double alpha, double beta, CVec nv, Vec z, Vec s, Vec p, Vec x, Vec r, Vec w) {
  const double* np = nv.data();
  double* zp = z.data();
  double* sp = s.data();
  double* pp = p.data();
  double* xp = x.data();
  double* rp = r.data();
  double* wp = w.data();
  const std::int64_t n = len(nv);
  double wr = 0, rr = 0;
#pragma omp simd reduction(+ : wr, rr)
  for (std::int64_t i = 0; i < n; ++i) {
    const double zi = np[i] + beta * zp[i];
    const double si = wp[i] + beta * sp[i];
    const double pi = rp[i] + beta * pp[i];
    xp[i] += alpha * pi;
    const double ri = rp[i] - alpha * si;
    const double wi = wp[i] - alpha * zi;
    zp[i] = zi;
    sp[i] = si;
    pp[i] = pi;
    rp[i] = ri;
    wp[i] = wi;
    wr += wi * ri;
    rr += ri * ri;
  }
  return {rr, wr, rr};
}

Sums update_xru(double alpha, CVec p, CVec s, CVec q, Vec x, Vec r, Vec u) {
  const double* pp = p.data();
  const double* sp = s.data();
  const double* qp = q.data();
  double* xp = x.data();
  double* rp = r.data();
  double* up = u.data();
  const std::int64_t n = len(p);
  double ru = 0, rr = 0;
#pragma omp simd reduction(+ : ru, rr)
  for (std::int64_t i = 0; i < n; ++i) {
    xp[i] += alpha * pp[i];
    const double ri = rp[i] - alpha * sp[i];
    const double ui = up[i] - alpha * qp[i];
    rp[i] = ri;
    up[i] = ui;
    ru += ri * ui;
    rr += ri * ri;
  }
  return {ru, rr, 0.0};
}

double update_xr(double alpha, CVec p, CVec s, Vec x, Vec r) {
  const double* pp = p.data();
  const double* sp = s.data();
  double* xp = x.data();
  double* rp = r.data();
  const std::int64_t n = len(p);
  double rr = 0;
#pragma omp simd reduction(+ : rr)
  for (std::int64_t i = 0; i < n; ++i) {
    xp[i] += alpha * pp[i];
    const double ri = rp[i] - alpha * sp[i];
    rp[i] = ri;
    rr += ri * ri;
  }
  return rr;
}

double update_ps(double beta, CVec u, CVec w, Vec p, Vec s) {
  const double* up = u.data();
  const double* wp = w.data();
  double* pp = p.data();
  double* sp = s.data();
  const std::int64_t n = len(u);
  double ps = 0;
#pragma omp simd reduction(+ : ps)
  for (std::int64_t i = 0; i < n; ++i) {
    const double pi = up[i] + beta * pp[i];
    const double si = wp[i] + beta * sp[i];
    pp[i] = pi;
    sp[i] = si;
    ps += pi * si;
  }
  return ps;
}

Sums dots_ru_wu_rr(CVec r, CVec u, CVec w) {
  const double* rp = r.data();
  const double* up = u.data();
  const double* wp = w.data();
  const std::int64_t n = len(r);
  double ru = 0, wu = 0, rr = 0;
#pragma omp simd reduction(+ : ru, wu, rr)
  for (std::int64_t i = 0; i < n; ++i) {
    ru += rp[i] * up[i];
    wu += wp[i] * up[i];
    rr += rp[i] * rp[i];
  }
  return {ru, wu, rr};
}

// ---- GlobalSum --------------------------------------------------------------------------------

GlobalSum::GlobalSum(MPI_Comm comm, bool nonblocking, bool doubling) : nonblocking_(nonblocking) {
  MPI_Comm_dup(comm, &comm_);
  if (nonblocking && doubling) doubling_ = comm::make_reduction(comm::ReductionKind::doubling, comm_, max_values);
}

GlobalSum::~GlobalSum() {
  if (active_ && nonblocking_ && !doubling_) comm::wait_request(request_);
  if (doubling_) comm::set_progressed_reduction(nullptr);
  doubling_.reset();  // completes its traffic
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void GlobalSum::start(const double* values, int n) {
  if (active_) wait();
  n_ = n < 0 ? 0 : (n > max_values ? max_values : n);
  for (int i = 0; i < n_; ++i) send_[static_cast<std::size_t>(i)] = values[i];
  const double t0 = now();
  if (doubling_) {
    std::array<double, max_values> padded{};  // fixed size: unused entries sum zeros
    for (int i = 0; i < n_; ++i) padded[static_cast<std::size_t>(i)] = send_[static_cast<std::size_t>(i)];
    doubling_->start(padded);
    doubling_->test();  // the first round's messages leave now
    comm::set_progressed_reduction(doubling_.get());  // later rounds also advance in the halo exchanges
  } else if (nonblocking_) {
    MPI_Iallreduce(send_.data(), recv_.data(), n_, MPI_DOUBLE, MPI_SUM, comm_, &request_);
    comm::RequestLedger::posted();
  } else {
    core::WaitScope waiting("an allreduce (every rank's part of the Krylov scalars)");
    MPI_Allreduce(send_.data(), recv_.data(), n_, MPI_DOUBLE, MPI_SUM, comm_);
  }
  stats_.seconds += now() - t0;
  active_ = true;
}

const double* GlobalSum::wait() {
  if (active_) {
    if (nonblocking_) {
      const double t0 = now();
      if (doubling_) {
        doubling_->wait();  // may have completed earlier
        comm::set_progressed_reduction(nullptr);
        for (int i = 0; i < n_; ++i) recv_[static_cast<std::size_t>(i)] = doubling_->result()[static_cast<std::size_t>(i)];
      } else {
        comm::wait_request(request_);
      }
      const double dt = now() - t0;
      stats_.seconds += dt;
      stats_.wait_seconds += dt;
    }
    ++stats_.count;
    active_ = false;
  }
  return recv_.data();
}

void GlobalSum::sum_now(double* values, int n) {
  if (active_) wait();
  const double t0 = now();
  core::WaitScope waiting("an allreduce (every rank's part of the Krylov scalars)");
  MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, comm_);
  stats_.seconds += now() - t0;
  ++stats_.count;
}

}  // namespace desync::linalg
