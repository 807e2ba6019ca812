#pragma once
// The conjugate gradient family (Horikoshi et al., 2022, section 2; Hoefler et al., 2007) on a
// distributed Operator. Each method lives in its own file, src/solvers/cg/<method>.cpp, which cites
// the listing it follows and registers the method once: its name, its description, whether it
// overlaps its reductions with work, its simulation cost kind and its run function (CgMethodInfo;
// the list of registrations is register_all_cg_methods, src/solvers/cg/family.cpp, like PETSc's
// KSPRegisterAll). `desync cg --method`, its help and its checks, the run record's method name and
// the simulation's cost kinds come from that registry. Dot products are fused with the vector
// updates that produce their operands (linalg/vector.hpp).
//
// Stopping: the run converges when the unpreconditioned recursive residual norm ||r_k|| of the
// iteration is <= tol ||b|| (--rtol) (the same quantity for every method and preconditioner) and the true
// residual ||b - A x_k|| computed then also is; if the recursive residual has drifted from the true
// one, the iteration replaces r (and its dependents) by recomputed values and continues. ||r_0||,
// with r_0 = b - A x_0, is the residual of iteration 0.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "desync/linalg/operator.hpp"
#include "desync/linalg/vector.hpp"
#include "desync/core/history.hpp"
#include "desync/core/registry.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/stop.hpp"
#include "desync/solvers/pc/preconditioner.hpp"
#include "desync/solvers/schwarz/coarse/coarse_summary.hpp"
#include "desync/solvers/iteration_options.hpp"

namespace desync::solvers {

namespace detail {
class CgBase;  // the state of one solve that the methods share (src/solvers/cg/cg_base.hpp)
}

/// A method of the family as it registers itself, in its own file.
struct CgMethodInfo {
  std::string name;         ///< --method, the JSON "method"
  std::string description;  ///< one line for `desync --help` and `desync cg --help`
  /// Its reductions overlap work when CgOptions::nonblocking (MPI_Iallreduce or recursive
  /// doubling); false: it has nothing to overlap them with and always blocks (MPI_Allreduce).
  bool overlaps_reduction = false;
  /// The simulation cost kind of its vector updates and dot products, per row and iteration
  /// ("cg.<name>.vector"; core/simulation.hpp), optional where the method came after cost models
  /// that runs still use were recorded (docs/data). Its other work is charged to the kinds of the
  /// operator and of the preconditioner.
  core::CostKind vector_cost = "";
  /// It needs a symmetric positive definite operator and preconditioner (the CG methods); false:
  /// any non-singular one (then --pc jacobi needs a non-zero diagonal, not a positive one).
  bool positive_definite = true;
  /// It runs in cycles of CgOptions::restart steps: `--restart` applies to it and its record and
  /// report name the restart length.
  bool restarts = false;
  /// Allocates its work vectors, iterates until a stop and leaves the outcome in the solve's result.
  void (*run)(detail::CgBase& solve) = nullptr;
};

/// The methods by name, in registration order.
class CgMethodRegistry : public core::Registry<CgMethodInfo> {
 public:
  CgMethodRegistry() : Registry("CG method") {}
  const std::vector<CgMethodInfo>& methods() const { return items(); }
};

/// Registers every method of the family, one line each. An explicit function, not static
/// self-registration, which a static library would drop at link time.
void register_all_cg_methods(CgMethodRegistry& registry);

/// The registry with register_all_cg_methods() applied, built on first use.
const CgMethodRegistry& cg_method_registry();
/// The registered method called `name`; throws InputError naming the registered ones otherwise.
const CgMethodInfo& find_cg_method(std::string_view name);
/// The simulation cost kinds a run of the family may charge: every method's vector work and every
/// preconditioner's application (the operator's and the exchange's are not the family's).
std::vector<core::CostKind> cg_cost_kinds();
/// The registered methods that take any nonsingular matrix (positive_definite false), for the
/// messages that refuse a matrix the CG methods cannot solve ("a or b").
std::string general_cg_methods();

struct CgOptions {
  std::string method = "cg";  ///< a registered method's name (find_cg_method)
  std::string pc = "none";  ///< a registered preconditioner's name (find_pc, solvers/pc/preconditioner.hpp)
  /// The methods that overlap their reductions (CgMethodInfo::overlaps_reduction): MPI_Iallreduce
  /// overlapped with work (true) or MPI_Allreduce (false). The others always block.
  bool nonblocking = true;
  /// With nonblocking: the sums by recursive doubling over point-to-point messages instead of
  /// MPI_Iallreduce (for simulated clusters, whose MPI_Iallreduce is all-to-all).
  bool doubling = false;
  /// Progress control in the preconditioner (--progress test): a poll of the reduction in flight
  /// every this many rows of an application; 0: none.
  std::int64_t pc_poll_interval = 0;
  /// asm and ras: the assembled matrix (distributed like the operator; not owned).
  const linalg::DistributedCsr* pc_matrix = nullptr;
  /// asm and ras: the subdomains' group (solvers/schwarz/schwarz_options.hpp): the overlap in
  /// layers of graph distance, robin, the local factorisation, the coarse level (none: one level).
  SubdomainOptions pc_subdomains;
  /// asm and ras: how the preconditioner's exchanges move data (the ghost exchange's --transport).
  comm::TransportConfig pc_transport;
  /// tol on ||r|| / ||b||; max_iters; time_limit (agreed on through the reductions);
  /// divergence_factor: stop when ||r|| > this times max(||b||, ||r_0||). CG tests every
  /// iteration and has no polish phase or injected noise: check_every, polish and noise do not
  /// apply (monitor_every below is its --monitor).
  IterationOptions iteration = iteration_defaults(1e-6, 10000, 1, 1e8);
  int replace_every = 0;              ///< recompute r = b - A x and its dependents every k iterations
  /// The restarting methods (CgMethodInfo::restarts): the restart length m, Arnoldi steps (iterations) per cycle, >= 1 (--restart).
  int restart = 30;
  int monitor_every = 0;              ///< rank 0 prints the residual every k iterations (0: never)
  bool record_history = true;         ///< keep (iteration, time, residual) of every iteration
};

/// Why the iteration stopped: core::StopReason (core/stop.hpp), every reason can occur. to_string
/// gives e.g. "tolerance_reached" for converged; is_numerical_failure: non_finite, diverged,
/// breakdown, pc_failed.
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
  core::StopReason stop = core::StopReason::max_iters;
  bool converged = false;            ///< true_residual <= tol (and no numerical failure)
  std::int64_t iterations = 0;
  double true_residual = 0;          ///< ||b - A x|| / ||b|| of the returned x
  double recursive_residual = 0;     ///< last ||r|| / ||b|| of the iteration
  double b_norm = 0;
  std::string message;               ///< why it stopped, for the failures
  std::vector<core::HistoryPoint> history;  ///< iteration, time, recursive ||r|| / ||b|| (every rank)
  CgRankStats stats;
  std::string pc_description;        ///< Preconditioner::description() (asm/ras: overlap, local solvers)
  /// asm/ras with a coarse level (functions > 0): what it is (CoarseSpace::summary, this rank's
  /// set-up) and this rank's seconds in its corrections.
  CoarseSummary coarse;
  double coarse_apply_seconds = 0;
};

/// Solves A x = b; `x` holds the initial guess on entry. Collective over A.comm(). Numerical failures
/// (including a preconditioner that cannot be set up) are reported in the result, agreed on by
/// every rank. ||b|| = 0 gives x = 0 and converges at iteration 0.
CgResult solve_cg(linalg::Operator& A, std::span<const double> b, std::span<double> x, const CgOptions& options);

}  // namespace desync::solvers
