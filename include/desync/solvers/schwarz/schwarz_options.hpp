#pragma once
// The one options type and the one result type of every Schwarz iteration, on the grid
// (schwarz.hpp: solve_schwarz) and on an assembled matrix (algebraic.hpp: solve_algebraic_schwarz),
// one level or two: the loop's group (SchwarzLoopOptions, what the CLI's loop options fill) embedded
// in SchwarzOptions beside the subdomains' and the coarse level's settings.
#include <cstdint>
#include <string>

#include "desync/communication/channel.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/rank_tree.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/names.hpp"
#include "desync/core/waiting.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"

namespace desync::solvers {

/// The built-in problems of the grid solver: -Δu = f with Dirichlet values on the boundary, finite
/// differences scaled by 1/h^2 (the relative residual is that of the unscaled system).
///   poisson2d  the unit square, f and g from a known solution (problems/poisson2d.hpp)
///   laplace3d  the unit cube, f = 0, the source disc on the bottom face (problems/laplace3d.hpp,
///              offset 0): Jacobi's problem, for comparing the two on one system; no known solution
enum class SchwarzProblem { poisson2d, laplace3d };
inline constexpr core::Named<SchwarzProblem> schwarz_problems[] = {
    {SchwarzProblem::poisson2d, "poisson2d", "the unit square, a known smooth solution"},
    {SchwarzProblem::laplace3d, "laplace3d",
     "Jacobi's 3D problem of Bethune et al., 2011: 7-point, overlap in 3D"},
};

/// The modes of `desync schwarz` (--mode, the JSON "method").
inline constexpr core::Named<comm::HaloMode> schwarz_modes[] = {
    {comm::HaloMode::sync, "sync",
     "two-sided exchange of the interface values and an allreduce of the local flags every iteration"},
    {comm::HaloMode::async, "async",
     "interface values pushed over the channel transport, newest whole message used; non-blocking votes"},
};

/// The loop of a Schwarz iteration (Yamazaki et al., 2019, section 4): how it exchanges, tests and
/// stops, the same for the grid and the matrix solver.
struct SchwarzLoopOptions {
  comm::HaloMode mode = comm::HaloMode::sync;  ///< sync or async (schwarz_modes)
  /// tol: the local criterion ||r_p|| < tol ||b_p|| on every rank; check_every: sync every
  /// iteration (as the paper), async the least between votes.
  IterationOptions iteration = iteration_defaults(1e-7, 100000, 1, 1e6);
  /// How interface values travel in async mode (sync: two-sided). max_in_flight is R, interface
  /// messages in flight per neighbour: with R = 1 a rank whose neighbour has not yet taken its
  /// previous message skips sending its newest values; a neighbour twice as slow then gets values
  /// one iteration older than it could (see docs/benchmarks.md).
  comm::TransportConfig transport = [] {
    comm::TransportConfig t;
    t.max_in_flight = 2;
    return t;
  }();
  comm::ReductionKind reduction = comm::ReductionKind::iallreduce;
  /// async: the binary-tree termination detection of section 4.3 (Figure 3) instead of repeated
  /// non-blocking reductions (`reduction`); its flags travel over `transport`.
  bool tree_termination = true;
  /// false: no convergence test and no termination detection (their Table 4, "each process simply
  /// terminates after a specified time"): every rank iterates until iteration.max_iters or
  /// iteration.time_limit (sync: the ranks agree on the last iteration through the interface
  /// messages, see driver/iteration_driver.hpp), then the true residual.
  bool detect_termination = true;
  /// sync: wait for every neighbour together (MPI_Waitall) instead of one MPI_Wait per neighbour.
  bool wait_all = false;
  /// async: a pass in which no new interface value has arrived (core::IdlePolicy). skip: the
  /// subdomain solve would repeat its result, so none is made until something arrives or a
  /// convergence test needs the residual.
  core::IdlePolicy idle = core::IdlePolicy::skip;
  bool asynchronous() const { return mode != comm::HaloMode::sync; }
};

/// The subdomains' group of every Schwarz method, stationary (SchwarzOptions) or as a
/// preconditioner (SchwarzPcSetup, krylov --pc asm|ras): how far a subdomain extends, its Robin
/// condition, its factorisation and the coarse level. The command line fills it with one group,
/// SubdomainCli (src/run/option_parsing.hpp).
struct SubdomainOptions {
  /// The grid: gamma >= 1 points each box extends into its neighbours. A matrix: delta >= 0 layers
  /// of graph distance in A + A^T (0: block Jacobi with exact block solves).
  int overlap = 1;
  /// A matrix's beta in [0, 1): 0 classical (restricted) additive Schwarz, else the dropped
  /// couplings moved onto the diagonal times beta (the grid takes alpha, SchwarzOptions).
  double robin = 0.0;
  /// A matrix's local solver. The grid's subdomains are factored by CHOLMOD with its own choice
  /// of mode (LocalSolverKind::cholmod) whatever this says.
  linalg::LocalSolverKind local_solver = linalg::LocalSolverKind::automatic;
  /// ilu0-ilu3: the relaxation omega in [0, 1] of the fill they drop (0 plain ILU(k), 1 modified
  /// ILU: linalg/local_solver.hpp).
  double ilu_relax = 0.0;
  /// A matrix's subdomains per rank, K >= 1 (PETSc's -pc_asm_local_blocks): each rank's owned rows
  /// split into K pieces, each extended by `overlap` layers and factored alone (linalg::LocalBlocks);
  /// the method is then Schwarz on K pieces per rank, the pieces combined as the method combines
  /// its subdomains (additive or restricted). K > 1 makes the rank's solve approximate, so the
  /// stationary iteration takes correction steps (as with ilu0).
  int subdomains_per_rank = 1;
  /// A matrix's coarse level (two-level Schwarz; kind none: one level). The stationary iteration,
  /// sync: the hybrid iteration, the coarse correction multiplicative before each round of local
  /// solves; async: the coarse problem solved on rank 0 from the ranks' residuals summed up a tree
  /// (coarse_level.hpp). The preconditioner: additive (overlap.hpp).
  solvers::CoarseOptions coarse;
};

/// The two-level iteration's coarse problem (--coarse-form).
///   galerkin     before each round of local solves, u <- u + Phi A0^-1 Phi^T (b - A u), A0 = Phi^T A Phi
///                (the hybrid form; Toselli and Widlund, 2005, section 2.5.2).
///   fixed-point  the coarse problem of the iteration's own fixed-point equation M^-1 A u = M^-1 b,
///                with M^-1 the round of local solves (restricted, with their Robin condition):
///                u <- u + Phi c, c = B0^-1 Phi^T M^-1 (b - A u), B0 = Phi^T M^-1 A Phi, so that the
///                coarse space is built consistently with the optimized local operators (the aim of
///                Dubois, Gander, Loisel, St-Cyr and Szyld, 2012). With W = M^-1 A Phi (set up
///                once: one subdomain solve per coarse function) the hybrid step needs no second
///                round of local solves: with d = M^-1 (b - A u) from this round,
///                u <- u + d + (Phi - W) c, c = B0^-1 Phi^T d (coarse_level.hpp).
///                Asynchronously (A symmetric, exact local solves, --coarse-reuse 1) the tree sums
///                Phi^T M^-1 (b - A u) = sum over owned rows j of (Phi_j v_j - Wt_j u_j), v = M^-1 b,
///                Wt = A^T M^-T Phi, from each rank's own values, rank 0 solves B0 c = that sum and
///                the correction is Phi c (FixedPointCoarseCorrection::prepare_async).
enum class CoarseForm { galerkin, fixed_point };
inline constexpr core::Named<CoarseForm> coarse_form_names[] = {
    {CoarseForm::galerkin, "galerkin", "A0 = Phi^T A Phi, from the residual before the local solves"},
    {CoarseForm::fixed_point, "fixed-point",
     "B0 = Phi^T M^-1 A Phi, the coarse problem of the iteration's fixed-point equation, from the local solves' "
     "correction (M^-1 A Phi set up with a subdomain solve per coarse function reaching it; B0 factored where "
     "--coarse-ranks puts A0; async: symmetric matrices, "
     "exact local solves, --coarse-reuse 1, the coarse right-hand side Phi^T M^-1 (b - A u) summed from each "
     "rank's own values)"},
};
inline const char* to_string(CoarseForm f) { return core::name_of(coarse_form_names, f); }

/// Every Schwarz solver's options: the loop's group and the subdomains' group, and what belongs to
/// the grid (its problem, alpha) or to the asynchronous coarse level.
struct SchwarzOptions : SchwarzLoopOptions {
  SubdomainOptions subdomains;
  /// The grid's problem.
  SchwarzProblem problem = SchwarzProblem::poisson2d;
  /// The grid's Robin parameter alpha > 0 of the OO0 condition du/dn + alpha u, or schwarz_classical
  /// (resolved by the caller): beta = 1/(1 + alpha h) per axis (subdomain.hpp).
  double alpha = 0;
  /// async with a coarse level: a rank runs at most this many local solves on one coarse solution
  /// before it waits for the next; its residual sum is taken after the last of them, so each
  /// correction lands on the iterate it was computed from (the hybrid's multiplicative coarse step).
  /// 0: never waits: the corrections land on iterates the local solves have moved since (an
  /// additive two-level iteration, which may diverge; coarse_level.cpp).
  int coarse_reuse = 1;
  /// async with a coarse level: the fan-in of the tree the residual sums go up and the corrections
  /// come down (comm::rank_tree; >= 1, at least P - 1: rank 0 exchanges with every rank). 0: chosen
  /// from the model, comm::model_fan_in on the costs comm::measure_tree_costs measures at set-up.
  int coarse_fan_in = 8;
  /// sync with a coarse level: the coarse problem (CoarseForm above).
  CoarseForm coarse_form = CoarseForm::galerkin;
};

/// What a Schwarz run reports on each rank beside the driver's result: its subdomain, its
/// factorisation, the seconds of its three kinds of work and, with a coarse level, the coarse
/// level's figures.
struct SchwarzResult {
  IterationResult run;  ///< iterations, stop, residuals, time split, history
  std::int64_t factor_nonzeros = 0;
  double factor_seconds = 0;  ///< this rank's factorisation (auto's trial included)
  double spmv_seconds = 0, update_seconds = 0, solve_seconds = 0;
  linalg::LocalSolverKind local_solver = linalg::LocalSolverKind::cholmod;  ///< this rank's choice
  std::string local_solver_name, local_solver_reason;
  std::int64_t extended_rows = 0;     ///< the extended subdomain's points
  double setup_seconds = 0;           ///< subdomain construction, factorisation included
  /// The grid's poisson2d: max |u - u_exact| over the global solution (the same on every rank);
  /// NaN where the problem has no known solution.
  double error_max = 0;
  /// With a coarse level (functions > 0): what it is (CoarseSpace::summary, this rank's set-up),
  /// and this rank's counts (corrections applied, solves, contributions, held passes, seconds, the
  /// delays of the applied corrections).
  CoarseSummary coarse_level;
  struct CoarseCounts {
    long corrections = 0, solves = 0, contributions = 0, held = 0;
    int tree_height = 0;  ///< async: the height of the coarse level's tree (0: one rank, or sync)
    int fan_in = 0;       ///< async: the tree's fan-in (given, or the model's)
    comm::TreeCosts fan_in_model;  ///< async, fan-in from the model: the measured costs (else zeros)
    double seconds = 0;
    comm::DelayStats delay;
  } coarse;
};

}  // namespace desync::solvers
