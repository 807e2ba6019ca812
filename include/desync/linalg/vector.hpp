#pragma once
// Kernels on distributed vectors, as the Krylov solvers use them.
//
// A vector is this rank's owned entries (csr.hpp describes the distribution). The kernels here are
// local: they touch only owned entries and return this rank's partial sums; GlobalSum turns partial
// sums into global ones, with a blocking MPI_Allreduce or an MPI_Iallreduce that the caller overlaps
// with other work. The fused kernels update several vectors and accumulate the dot products of the
// results in one pass over memory (the names list what they compute). No kernel allocates.
#include <mpi.h>

#include <array>
#include <cstddef>
#include <memory>
#include <span>

#include "desync/communication/reduction.hpp"

namespace desync::linalg {

using Vec = std::span<double>;
using CVec = std::span<const double>;

// ---- plain kernels (local) -------------------------------------------------------------------
double dot(CVec x, CVec y);                    ///< sum x_i y_i
void copy(CVec x, Vec y);                      ///< y = x
void fill(Vec y, double value);                ///< y = value
void axpy(double a, CVec x, Vec y);            ///< y += a x
void xpay(CVec x, double b, Vec y);            ///< y = x + b y
void scale(double a, Vec y);                   ///< y = a y
void residual(CVec b, CVec ax, Vec r);         ///< r = b - ax
/// r = b - ax; returns sum r_i^2.
double residual_norm2(CVec b, CVec ax, Vec r);

// ---- fused kernels of the CG family (local; every vector has the same length) -----------------
/// Partial sums of up to three dot products.
using Sums = std::array<double, 3>;

/// r -= alpha q; returns {(r, r)}.
double update_r_norm2(double alpha, CVec q, Vec r);
/// r -= alpha q; u = d .* r; returns {(r, u), (r, r)}.
Sums update_r_jacobi(double alpha, CVec q, Vec r, CVec d, Vec u);
/// x += alpha p; p = u + beta p.
void update_x_p(double alpha, CVec u, double beta, Vec p, Vec x);
/// p = u + beta p; q = w + beta q; x += alpha p; r -= alpha q; returns {(r, r)}.
double update_pqxr(double alpha, double beta, CVec u, CVec w, Vec p, Vec q, Vec x, Vec r);
/// As update_pqxr, then u = d .* r; returns {(r, u), (r, r)}.
Sums update_pqxr_jacobi(double alpha, double beta, CVec w, Vec p, Vec q, Vec x, Vec r, CVec d, Vec u);
/// Pipelined CG, preconditioned: z = n + beta z; q = m + beta q; s = w + beta s; p = u + beta p;
/// x += alpha p; r -= alpha s; u -= alpha q; w -= alpha z; returns {(r, u), (w, u), (r, r)}.
Sums update_pipelined_cg(double alpha, double beta, CVec n, CVec m, Vec z, Vec q, Vec s, Vec p, Vec x, Vec r,
                         Vec u, Vec w);
/// Pipelined CG without preconditioner (u = r, m = w, q = s): z = n + beta z; s = w + beta s;
/// p = r + beta p; x += alpha p; r -= alpha s; w -= alpha z; returns {(r, r), (w, r), (r, r)}.
Sums update_pipelined_cg_plain(double alpha, double beta, CVec n, Vec z, Vec s, Vec p, Vec x, Vec r, Vec w);
/// Gropp's CG: x += alpha p; r -= alpha s; u -= alpha q; returns {(r, u), (r, r)}.
Sums update_xru(double alpha, CVec p, CVec s, CVec q, Vec x, Vec r, Vec u);
/// x += alpha p; r -= alpha s; returns {(r, r)}.
double update_xr(double alpha, CVec p, CVec s, Vec x, Vec r);
/// p = u + beta p; s = w + beta s; returns {(p, s)}.
double update_ps(double beta, CVec u, CVec w, Vec p, Vec s);
/// returns {(r, u), (w, u), (r, r)}.
Sums dots_ru_wu_rr(CVec r, CVec u, CVec w);

/// Time and count of global sums on this rank.
struct ReductionStats {
  long count = 0;            ///< reductions completed
  double seconds = 0;        ///< in MPI_Allreduce, or in MPI_Iallreduce + MPI_Wait
  double wait_seconds = 0;   ///< of which blocked in MPI_Wait for an MPI_Iallreduce
};

/// Global sums of a few doubles over a private duplicate of a communicator: start() then wait().
/// Blocking: start() performs MPI_Allreduce. Non-blocking: start() posts MPI_Iallreduce (counted in
/// comm::RequestLedger) and the caller computes until wait(); with `doubling`, a recursive doubling
/// over point-to-point messages instead (comm::ReductionKind::doubling: its first round leaves in
/// start(), later ones advance in the ghost exchanges' start and finish, see
/// comm::set_progressed_reduction, and the rest in wait()), for simulated clusters whose
/// MPI_Iallreduce is all-to-all. Every rank must start the same sequence of sums. The destructor
/// completes a sum still in flight.
class GlobalSum {
 public:
  static constexpr int max_values = 4;
  GlobalSum(MPI_Comm comm, bool nonblocking, bool doubling = false);  ///< collective (duplicates comm)
  ~GlobalSum();
  GlobalSum(const GlobalSum&) = delete;
  GlobalSum& operator=(const GlobalSum&) = delete;

  /// Starts the sum of values[0..n), n <= max_values.
  void start(const double* values, int n);
  /// Completes the sum started last; returns the n global sums (valid until the next start()).
  const double* wait();
  /// Blocking sum in place, regardless of the mode.
  void sum_now(double* values, int n);
  bool nonblocking() const { return nonblocking_; }
  const ReductionStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool nonblocking_ = true;
  std::unique_ptr<comm::NonblockingReduction> doubling_;  ///< set: the non-blocking sums go through it
  bool active_ = false;
  int n_ = 0;
  std::array<double, max_values> send_{}, recv_{};
  ReductionStats stats_;
};

}  // namespace desync::linalg
