#pragma once
// Internal to the Schwarz run (schwarz_run.cpp): the coarse level of two-level Schwarz as a
// stationary iteration, synchronous and asynchronous (see solvers/schwarz/algebraic.hpp), as three
// types: CoarseLevel, what both forms share (the coarse space on this rank's subdomain, Phi at its
// rows and ghosts, the counts); SyncCoarseCorrection, the synchronous hybrid step; AsyncCoarseTree,
// the asynchronous tree of sums and corrections with its versions.
//
// Synchronous (the hybrid form: coarse correction multiplicative, local solves additive; Toselli
// and Widlund, 2005, section 2.5.2): before each round of local solves,
//     r = b - A u,   c = A0^-1 Phi^T r,   u <- u + Phi c,
// with Phi^T r summed over the ranks by one MPI_Allreduce and A0 solved on every rank (or on
// --coarse-ranks ranks); the local solves then start from the corrected u (its ghost values
// corrected by Phi at the ghost rows, so no second exchange is needed).
//
// Asynchronous (after Glusa, Boman, Chow, Rajamanickam and Szyld, 2020, and the asynchronous
// multiplicative coarse-space correction of Gbikpi-Benissan and Magoulès, 2023): the coarse
// solutions are numbered (versions); u = f + Phi U_v on a rank that has applied versions up to v
// (U_v = c_1 + ... + c_v). The ranks form a tree of fan-in K rooted at rank 0 (comm::rank_tree,
// --coarse-fan-in; K >= P - 1: rank 0 the parent of every rank). A rank that has applied version v
// and made max(r, 1) local solves since (r = --coarse-reuse; or is at rest: at its limit) and
// whose children have sent their subtrees' sums of version v adds its own part of Phi^T (b - A u)
// to theirs, once per version, and sends the sum up over the run's transport (a comm::PlanExchange
// in async mode: the newest whole message). Rank 0, once its sum is complete, solves
// A0 c_{v+1} = Phi^T r; each rank applies c_{v+1} to its own rows, u_i += (Phi c)_i, and forwards
// it to its children, each restricted to the functions its subtree's rows and ghosts touch. So a
// coarse cycle costs rank 0 K messages each way, not P, and takes about 2 log_K P hops. Halo values
// carry their sender's version; a value of an older version is lifted to the reader's by
// Phi (U_v - U_s) at its row, so every update reads one consistent u. With --coarse-reuse r >= 1 a
// rank makes at most r local solves on one coarse solution, then holds its updates
// (IterationDriver's may_update) until the next arrives: its sum follows the r-th solve, so each
// correction lands on the values it was computed from (r = 0: never holds, an additive form). The delay of an applied correction is the
// rank's iterations since the sum it sent up for it.
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/rank_tree.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/solvers/schwarz/coarse/coarse_solver.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/solvers/schwarz/overlap.hpp"

namespace desync::solvers::detail {

struct CoarseLevelStats {
  long corrections = 0;     ///< coarse corrections applied to this rank's rows
  long solves = 0;          ///< coarse solves made here (sync: every rank; async: rank 0)
  long contributions = 0;   ///< async: coarse residual sums made (sent up the tree, or solved at rank 0)
  long held = 0;            ///< async: passes whose update waited for a newer coarse solution
  double seconds = 0;       ///< time in the coarse level (residuals, restrictions, solves, messages)
  comm::DelayStats delay;   ///< async: this rank's iterations between its sum and the correction built from it
};

/// What both forms share: the coarse space (CoarseSpace) built on this rank's subdomain, Phi at its
/// owned rows and at its ghosts, (A^T Phi) at its owned rows, and the counts.
struct CoarseLevel {
  /// Collective over A.comm: builds the coarse space and Phi's rows at the subdomain's ghosts.
  CoarseLevel(const linalg::DistributedCsr& A, const solvers::OverlappingSubdomain& sub,
              const solvers::CoarseOptions& options);
  ~CoarseLevel();
  CoarseLevel(const CoarseLevel&) = delete;
  CoarseLevel& operator=(const CoarseLevel&) = delete;

  MPI_Comm comm;
  int rank = 0, ranks = 1;
  const solvers::OverlappingSubdomain& sub;
  std::unique_ptr<solvers::CoarseSpace> space;
  std::size_t owned = 0;  // the subdomain's owned rows
  // Phi at the owned rows and at the ghosts, columns as positions in needed (the functions this
  // rank's rows and ghosts touch, ascending).
  std::vector<int> needed;
  solvers::CoarseSpace::Rows own, ghost_rows;
  // The contributions' functions (ascending), (A^T Phi) and Phi at the own rows with columns as
  // positions in it.
  std::vector<int> contributed;
  solvers::CoarseSpace::Rows bt, phi_b;
  CoarseLevelStats stats;
};

/// The synchronous hybrid step (see the top).
class SyncCoarseCorrection {
 public:
  explicit SyncCoarseCorrection(CoarseLevel& level) : level_(level), r_(level.owned, 0.0) {}
  /// x: the local iterate on Omega_p (its owned rows are corrected), ghost: the ghost buffer
  /// (corrected in place). Collective.
  void correct(const double* b_ext, double* x, double* ghost);

 private:
  // r = b - A u on the owned rows (u from x and ghost).
  void residual(const double* b_ext, const double* x, const double* ghost);
  CoarseLevel& level_;
  std::vector<double> r_;
};

/// The synchronous hybrid step in fixed-point form (--coarse-form fixed-point, schwarz_options.hpp):
/// the coarse problem of the iteration's fixed-point equation M^-1 A u = M^-1 b, M^-1 the round of
/// restricted local solves (with their Robin condition, exact or approximate), instead of A's
/// Galerkin problem. Set up once (collective): W = M^-1 A Phi at the owned rows, one restriction
/// exchange per coarse function and a subdomain solve where it reaches the subdomain (elsewhere the
/// restricted right-hand side is zero, and so is the solve), and B0 = Phi^T W, factored where the
/// Galerkin level factors A0 (coarse_solver.hpp): with --coarse-ranks 0 dense on every rank (one
/// MPI_Allreduce, LU with partial pivoting); with k >= 1 sparse (B0 couples only functions whose
/// supports lie a few subdomains apart), its entries gathered on the coarse ranks and factored
/// there by an unsymmetric sparse LU (MUMPS, or UMFPACK on rank 0). Each iteration, after the local
/// solves gave y = u + d, d = M^-1 (b - A u) on the owned rows:
///     c = B0^-1 Phi^T d          (an MPI_Allreduce, or MPI_Reduce, solve and MPI_Bcast)
///     y <- y + (Phi - W) c       = u + Phi c + M^-1 (b - A (u + Phi c)),
/// the hybrid iteration (coarse step, then local solves) with one round of local solves.
class FixedPointCoarseCorrection {
 public:
  /// Collective. InputError (every rank alike) if B0 is singular, or, with --coarse-ranks 0 (B0
  /// dense on every rank), the space has more than max_dense_functions functions.
  FixedPointCoarseCorrection(CoarseLevel& level, const comm::TransportConfig& transport);
  static constexpr int max_dense_functions = 4000;
  /// x: the iterate on Omega_p before the local solves; y: their result (its owned rows corrected).
  /// Collective.
  void correct(const double* x, double* y);
  /// Set-up seconds on this rank (W, B0 and its factorisation).
  double setup_seconds() const { return setup_seconds_; }

  /// The asynchronous form's set-up (collective; A and the subdomain matrices symmetric): v = M^-1 b
  /// and Wt = A^T M^-T Phi at the owned rows, so that a rank's part of the coarse right-hand side
  ///     Phi^T M^-1 (b - A u) = sum over owned rows j of (Phi_j v_j - Wt_j u_j)
  /// reads its own values alone (as the Galerkin form's Phi^T b - (A^T Phi)^T u does). M^-T =
  /// sum_p R_p^T A_p^-1 Rt_p: per function, a solve on phi restricted to the owned rows, its overlap
  /// rows added into their owners' (the prolongation's plan), then A applied (one ghost exchange).
  void prepare_async(const comm::TransportConfig& transport);
  /// v = M^-1 b at the owned rows; Wt at the owned rows, columns the global function numbers.
  const std::vector<double>& v() const { return v_; }
  const solvers::CoarseSpace::Rows& wt() const { return wt_; }
  /// c = B0^-1 c in place (the whole coarse vector): on this rank alone with --coarse-ranks 0; on
  /// rank 0 with --coarse-ranks 1 (the asynchronous form's root; CoarseSolver::solve).
  void solve(std::span<double> c) const { b0_->solve(c); }
  /// Charges one solve with B0's factors to a simulated cluster's clock (free elsewhere).
  void charge_solve() const;
  /// What a run reports of B0 in place of A0 (CoarseSummary's solver, nonzeros, factor_nonzeros):
  /// how it is factored (CoarseSolver::name), its nonzeros (dense: its n^2 places) and its factors'.
  void describe(solvers::CoarseSummary& c) const;

 private:
  CoarseLevel& level_;
  solvers::CoarseSpace::Rows w_;  // W at the owned rows, columns the global function numbers
  solvers::CoarseSpace::Rows wt_;  // prepare_async: A^T M^-T Phi at the owned rows (global columns)
  std::vector<double> v_;          // prepare_async: M^-1 b at the owned rows
  std::unique_ptr<solvers::CoarseSolver> b0_;
  std::int64_t b0_nonzeros_ = 0;
  std::vector<double> d_, cn_;
  double setup_seconds_ = 0;
};

/// The asynchronous tree of sums and corrections (see the top).
class AsyncCoarseTree {
 public:
  /// reuse: --coarse-reuse; fan_in: --coarse-fan-in (>= 1; 0: from the model, at open_async).
  /// fixed_point (prepared for the asynchronous form), or null: the sums are Phi^T M^-1 (b - A u)
  /// and rank 0 solves B0 c = that (--coarse-form fixed-point); the correction is Phi c, as Galerkin's.
  AsyncCoarseTree(CoarseLevel& level, int reuse, int fan_in, const FixedPointCoarseCorrection* fixed_point = nullptr);
  ~AsyncCoarseTree();

  /// Asynchronous: opens the two exchanges of the tree (sums up to the parent, corrections down to
  /// the children) over `transport`. Collective. Fan-in from the model (the first time): `pass`,
  /// this rank's seconds between two looks for messages (a halo exchange and a local solve), gives the model's
  /// poll_wait, half the slowest rank's.
  void open_async(const comm::TransportConfig& transport, double pass = 0);
  /// Closes them (collective), nothing left pending, after every rank has applied the newest
  /// correction to x (so the final iterate is one version everywhere). `it`: this rank's iteration.
  void close_async(std::int64_t it, double* x);
  /// Collective, the exchanges left open: every rank takes the corrections it has not applied yet
  /// (at most the newest, on its way down the tree), so that x is one version everywhere. Before a
  /// stop is confirmed (the true residual is then the final iterate's) and in close_async.
  void settle(std::int64_t it, double* x);
  /// The version this rank has applied.
  std::int64_t version() const { return version_; }
  /// async: this rank's place in the tree (open_async).
  const comm::RankTree& tree() const { return tree_; }
  /// The tree's fan-in (open_async: the given one, or the model's).
  int fan_in() const { return fan_in_; }
  /// Fan-in from the model: the costs measured at open_async (zeros when the fan-in was given).
  const comm::TreeCosts& fan_in_model() const { return model_; }
  /// One pass, first half: takes the newest correction and applies it to x's owned rows. True if
  /// one was applied (the ghosts must be lifted again).
  bool pull(std::int64_t it, double* x);
  /// Second half: once per version, when this rank has made a local solve since it applied the
  /// version (or is at rest) and its children's sums of that version are in, adds its coarse
  /// residual (of its values x) to them and sends the sum up (rank 0: solves); sends what is pending.
  void contribute_and_solve(std::int64_t it, const double* b_ext, const double* x);
  /// After a local solve.
  void after_solve();
  /// False while --coarse-reuse r local solves have been made on the current coarse solution.
  bool may_update();
  /// ghost = raw lifted to this rank's version (see the top): raw holds the ghosts as received
  /// and, at raw[ghosts + j], the version plan neighbour j sent with them.
  void lift(const comm::HaloPlan& plan, std::size_t ghosts, const double* raw, double* ghost) const;

 private:
  void sum_up(std::int64_t it, const double* b_ext, const double* x);
  // The plan index of child j in the tree's exchanges (the parent first, where there is one).
  std::size_t child_index(std::size_t j) const { return j + (tree_.parent >= 0 ? 1 : 0); }

  CoarseLevel& level_;
  int reuse_ = 0, fan_in_ = 1;
  const FixedPointCoarseCorrection* fixed_point_ = nullptr;
  solvers::CoarseSpace::Rows phi_up_, wt_up_;  // fixed-point form: Phi and Wt at the owned rows, columns positions in up_functions_
  comm::TreeCosts model_;
  std::int64_t version_ = 0;
  std::deque<std::vector<double>> cumulative_;  // U_v over needed_, the newest last; front is version front_version_
  std::int64_t front_version_ = 0;
  long solves_since_apply_ = 0;
  long updates_ = 0, updates_at_pull_ = -1;
  bool held_ = false;  // may_update refused the last pass's update (--coarse-reuse)
  comm::RankTree tree_;
  // Up the tree: the subtree's functions (ascending; the union of contributed_ over the subtree),
  // where this rank's and each child's functions sit in it, the children's sums as received
  // ([sum at the child's functions..., version] per child, at child_up_at_) and this rank's sum
  // ([sum at up_functions_..., version]).
  std::vector<int> up_functions_, own_up_pos_;
  std::vector<std::vector<int>> child_up_pos_;
  std::vector<std::size_t> child_up_at_;
  std::vector<double> up_in_, up_out_;
  std::int64_t sent_version_ = -1;       // the version of the last sum made
  std::int64_t sum_iteration_ = 0;       // the iteration it was made at
  bool up_pending_ = false;
  // Down: the functions the subtree needs (the union of needed_), where this rank's and each
  // child's sit in it, the correction as received ([c at down_needed_..., version]) and the
  // children's pieces ([c at the child's functions..., version] per child, at child_down_at_).
  std::vector<int> down_needed_, own_down_pos_;
  std::vector<std::vector<int>> child_down_pos_;
  std::vector<std::size_t> child_down_at_;
  std::vector<double> down_in_, down_out_;
  bool down_pending_ = false;
  // A sum (up) or a correction (down) was sent and may not be announced yet (the overlap completion
  // schemes announce a put at the next call on its channel): the next pass calls progress() on it.
  bool up_unannounced_ = false, down_unannounced_ = false;
  std::unique_ptr<comm::PlanExchange> gather_, scatter_;
  std::int64_t root_version_ = 0;  // rank 0: the newest coarse solution made
};

}  // namespace desync::solvers::detail
