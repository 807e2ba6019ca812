#pragma once
// The conjugate gradient family (Horikoshi et al., 2022, section 2; Hoefler et al. (2007)) on a distributed Operator.
//
//   cg       preconditioned CG (Algorithm 1): two global reductions per iteration, {(p, Ap)} and
//            {(r, u), (r, r)}, each blocking.
//   cg-cg    Chronopoulos/Gear CG (Algorithm 2): one reduction per iteration, {(r, u), (w, u), (r, r)}
//            with w = A u, blocking.
//   pipecg   pipelined CG (8 vector recurrences): one reduction per iteration,
//            {(r, u), (w, u), (r, r)}, overlapped with the preconditioner m = M^-1 w and the
//            matrix-vector product n = A m when the reduction is non-blocking (variant 3i).
//   groppcg  Gropp's CG (5 vector recurrences): two reductions per iteration, {(p, s)} overlapped with
//            the preconditioner q = M^-1 s and {(r, u), (r, r)} overlapped with the matrix-vector
//            product w = A u when non-blocking (variant 4i).
// Horikoshi et al. (2022) prints the listings of the last two under each other's names. Its text counts "8
// DAXPY's" for pipelined CG (Alg. 3) and 5 for Gropp's (Alg. 4) and calls Gropp's the one with fewer
// computations; but the listing titled Algorithm 3 has 5 vector updates (lines 6-8, 12-13) and two
// separate reductions, (p, q) and (r, u) (lines 3, 9): Gropp's CG; the one titled Algorithm 4 has 8
// (lines 12-19) and one reduction of (r, u), (w, u) overlapped with m = M^-1 w, n = A m (lines 3-6):
// Ghysels and Vanroose's pipelined CG (the paper's reference [2]; PETSc's KSPPIPECG has the same
// recurrences). The text's line references (section 2.2) follow the printed listings. desync's
// method files cite the lines of the listing each method actually is (src/solvers/cg/). desync
// names the vectors of both as Ghysels and Vanroose do (s = A p, q = M^-1 s), where the listings
// call A p "q". Dot products are fused with the vector updates that produce their operands
// (linalg/vector.hpp).
//
// Stopping: the run converges when the unpreconditioned recursive residual norm ||r_k|| of the
// iteration is <= rtol ||b|| (the same quantity for every method and preconditioner) and the true
// residual ||b - A x_k|| computed then also is; if the recursive residual has drifted from the true
// one, the iteration replaces r (and its dependents) by recomputed values and continues. ||r_0||,
// with r_0 = b - A x_0, is the residual of iteration 0.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "desync/linalg/operator.hpp"
#include "desync/linalg/vector.hpp"
#include "desync/core/history.hpp"
#include "desync/core/stop.hpp"
#include "desync/solvers/cg/preconditioner.hpp"

namespace desync::solvers {

enum class CgMethod { cg, cg_cg, pipecg, groppcg };

/// The methods of the family: the one list of their names (--method, the JSON "method") and their
/// one-line descriptions (`desync --help`, `desync cg --help`).
struct CgMethodInfo {
  CgMethod method;
  const char* name;
  const char* description;
};
inline constexpr std::array<CgMethodInfo, 4> cg_methods{{
    {CgMethod::cg, "cg", "preconditioned CG: two blocking reductions per iteration"},
    {CgMethod::cg_cg, "cg-cg", "Chronopoulos/Gear CG: one blocking reduction per iteration"},
    {CgMethod::pipecg, "pipecg",
     "pipelined CG: one reduction per iteration, overlapped with the preconditioner and the matrix-vector product"},
    {CgMethod::groppcg, "groppcg",
     "Gropp's CG: two reductions per iteration, overlapped with the preconditioner and the matrix-vector product"},
}};

const char* to_string(CgMethod m);
/// A name of cg_methods; throws InputError otherwise.
CgMethod parse_cg_method(const std::string& name);

struct CgOptions {
  CgMethod method = CgMethod::cg;
  PcKind pc = PcKind::none;
  /// pipecg and groppcg: MPI_Iallreduce overlapped with work (true) or MPI_Allreduce (false).
  /// cg and cg-cg have nothing to overlap their reductions with and always block.
  bool nonblocking = true;
  /// With nonblocking: the sums by recursive doubling over point-to-point messages instead of
  /// MPI_Iallreduce (for simulated clusters, whose MPI_Iallreduce is all-to-all).
  bool doubling = false;
  /// Progress control in the preconditioner (--progress test): a poll of the reduction in flight
  /// every this many rows of an application; 0: none.
  std::int64_t pc_poll_interval = 0;
  double rtol = 1e-6;                 ///< on ||r|| / ||b||
  std::int64_t max_iters = 10000;
  double time_limit = 0;              ///< seconds, 0 = none (agreed on through the reductions)
  int replace_every = 0;              ///< recompute r = b - A x and its dependents every k iterations
  double divergence_factor = 1e8;     ///< stop when ||r|| > this times max(||b||, ||r_0||)
  int monitor_every = 0;              ///< rank 0 prints the residual every k iterations (0: never)
  bool record_history = true;         ///< keep (iteration, time, residual) of every iteration
};

/// Why the iteration stopped (core/stop.hpp; every reason can occur). to_string gives e.g.
/// "tolerance_reached" for converged; is_numerical_failure: non_finite, diverged, breakdown, pc_failed.
using CgStop = core::StopReason;
using core::is_numerical_failure;
using core::to_string;

/// Where a rank's solve time went, seconds.
struct CgTimes {
  double spmv = 0;            ///< Operator::apply, halo exchange included
  double halo_wait = 0;       ///< of which starting and finishing the ghost exchange (SpmvStats)
  double pc = 0;              ///< preconditioner applications (and the vector updates fused into them)
  double vector = 0;          ///< vector kernels (updates, local dot products)
  double reduction = 0;       ///< global sums: MPI_Allreduce, or MPI_Iallreduce + MPI_Wait
  double reduction_wait = 0;  ///< of which blocked in MPI_Wait for an MPI_Iallreduce
  double setup = 0;           ///< preconditioner set-up, allocation of the work vectors
  double total = 0;           ///< whole solve, set-up and final true residual included
  double other() const { return total - spmv - pc - vector - reduction - setup; }
};

struct CgRankStats {
  int rank = 0;
  std::int64_t local_rows = 0;
  std::int64_t iterations = 0;
  long reductions = 0;
  long spmvs = 0;
  long pc_applications = 0;
  long pc_polls = 0;  ///< progress polls inside preconditioner applications (--progress test)
  long replacements = 0;
  CgTimes time;
  linalg::SpmvStats spmv;
};

struct CgResult {
  CgStop stop = CgStop::max_iters;
  bool converged = false;            ///< true_residual <= rtol (and no numerical failure)
  std::int64_t iterations = 0;
  double true_residual = 0;          ///< ||b - A x|| / ||b|| of the returned x
  double recursive_residual = 0;     ///< last ||r|| / ||b|| of the iteration
  double b_norm = 0;
  std::string message;               ///< why it stopped, for the failures
  std::vector<core::HistoryPoint> history;  ///< iteration, time, recursive ||r|| / ||b|| (every rank)
  CgRankStats stats;
};

/// Solves A x = b; `x` holds the initial guess on entry. Collective over A.comm(). Numerical failures
/// (including a preconditioner that cannot be set up) are reported in the result, agreed on by
/// every rank. ||b|| = 0 gives x = 0 and converges at iteration 0.
CgResult solve_cg(linalg::Operator& A, std::span<const double> b, std::span<double> x, const CgOptions& options);

}  // namespace desync::solvers
