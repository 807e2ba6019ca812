#pragma once
// Restricted additive Schwarz on an assembled matrix (solvers::OverlappingSubdomain), optionally
// optimized (Robin), synchronous and asynchronous: the algebraic counterpart of the grid solver of
// solvers/schwarz/schwarz.hpp, after Yamazaki, Chow, Bouteiller and Dongarra (2019), sections 3-4.
//
// Rank p holds its extended subdomain Omega_p (overlap delta by graph distance) and the factored
// local matrix A_p (dropped couplings moved onto the diagonal times robin). One iteration:
//     rhs_i  = b_i - sum over dropped e of a_ie (u_e - robin u_i)   (i in Omega_p)
//     y_p    = A_p^-1 rhs
//     u_i   <- y_p,i on the owned rows i                            (restricted: no sum)
// with u_e, u_i the owners' newest values: the synchronous exchange of their section 4.1 (values
// of exactly the previous iteration: the plain RAS iteration u_{k+1} = u_k + M_RAS^-1 (b - A u_k)
// when robin = 0) or the asynchronous one of 4.2 (the newest whole message, over p2p, rma or shmem
// through comm::PlanExchange). The run loop is solvers::IterationDriver's with
// StopRule::every_rank_local: each rank tests ||b_p - (A u)_p|| < tol ||b_p|| on its own rows, and
// async runs stop by the binary-tree termination detection of section 4.3 (or repeated
// non-blocking reductions).
//
//   mpirun -np 4 desync schwarz --matrix A.petsc --overlap 1 --robin 0 --mode async
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>

#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/waiting.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/schwarz/overlap.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/solvers/schwarz/schwarz_loop.hpp"

namespace desync::solvers {

/// The matrix solver's options: its loop's (SchwarzLoopOptions, as the grid solver's) and the
/// subdomains' and the coarse level's.
struct AlgebraicSchwarzOptions : SchwarzLoopOptions {
  int overlap = 1;      ///< delta >= 0 (0: block Jacobi with exact block solves)
  double robin = 0.0;   ///< beta in [0, 1): 0 classical RAS, else the dropped couplings times beta on the diagonal
  linalg::LocalSolverKind local_solver = linalg::LocalSolverKind::automatic;
  /// The coarse level (two-level Schwarz; kind none: one level). Sync: the hybrid iteration, the
  /// coarse correction multiplicative before each round of local solves; async: the coarse
  /// problem solved on rank 0 from the ranks' residuals summed up a tree (see the top).
  solvers::CoarseOptions coarse;
  /// async with a coarse level: a rank runs at most this many local solves on one coarse solution
  /// before it waits for the next; its residual sum is taken after the last of them, so each
  /// correction lands on the iterate it was computed from (the hybrid's multiplicative coarse step).
  /// 0: never waits: the corrections land on iterates the local solves have moved since (an
  /// additive two-level iteration, which may diverge; coarse_level.cpp).
  int coarse_reuse = 1;
  /// async with a coarse level: the fan-in of the tree the residual sums go up and the corrections
  /// come down (comm::rank_tree; >= 1, at least P - 1: rank 0 exchanges with every rank).
  int coarse_fan_in = 8;
  solvers::OverlapOptions overlap_options() const { return {overlap, robin, local_solver, {}}; }
};

struct AlgebraicSchwarzResult : SchwarzRunResult {
  linalg::LocalSolverKind local_solver = linalg::LocalSolverKind::umfpack;  ///< this rank's choice
  std::string local_solver_name, local_solver_reason;
  std::int64_t extended_rows = 0;     ///< |Omega_p|
  double setup_seconds = 0;           ///< subdomain construction, factorisation included
  /// With a coarse level: its dimension, A0's nonzeros, its set-up seconds on this rank, its
  /// description, and this rank's counts (corrections applied, solves, contributions, held
  /// passes, seconds, the delays of the applied corrections).
  int coarse_size = 0;
  std::int64_t coarse_nonzeros = 0, coarse_factor_nonzeros = 0;  ///< A0's, its factors'
  double coarse_setup_seconds = 0;
  std::string coarse_description;
  std::string coarse_solver;  ///< "dense-lu", "mumps", "cholmod-simplicial-rank0", ... (solvers::CoarseSolver::name)
  struct CoarseCounts {
    long corrections = 0, solves = 0, contributions = 0, held = 0;
    int tree_height = 0;  ///< async: the height of the coarse level's tree (0: one rank, or sync)
    double seconds = 0;
    comm::DelayStats delay;
  } coarse;
};

/// Solves A x = b (collective over A.comm). x: this rank's rows, the initial guess on entry, the
/// final iterate on return. Throws InputError for bad options or sizes, and (every rank) naming
/// the rank and subdomain size if a local matrix is singular.
AlgebraicSchwarzResult solve_algebraic_schwarz(const linalg::DistributedCsr& A, std::span<const double> b,
                                               std::span<double> x, const AlgebraicSchwarzOptions& options);

}  // namespace desync::solvers
