#pragma once
// Internal to the algebraic Schwarz solver (algebraic.cpp): the coarse level of two-level Schwarz
// as a stationary iteration, synchronous and asynchronous (see solvers/schwarz/algebraic.hpp).
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
// (U_v = c_1 + ... + c_v). After each local solve a rank sends its part of Phi^T (b - A u), tagged
// with its version, to rank 0 over the run's transport (a comm::PlanExchange in async mode: the
// newest whole message). Rank 0 solves A0 c_{v+1} = sum of the contributions as soon as every
// rank's newest contribution was computed at version v after at least one local solve (or at
// rest: a rank at its limit, which no longer solves), and sends c_{v+1}, restricted to the
// functions each rank's rows and ghosts touch, to every rank. A rank applies it once: its own rows
// u_i += (Phi c)_i. Halo values carry their sender's version; a value of an older version is
// lifted to the reader's by Phi (U_v - U_s) at its row, so every update reads one consistent u.
// With --coarse-reuse r >= 1 a rank makes at most r local solves on one coarse solution, then
// holds its updates (IterationDriver's may_update) until the next arrives. The delay of an applied
// correction is the rank's iterations since the contribution it was built from.
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/linalg/coarse_space.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/overlap.hpp"

namespace desync::solvers::detail {

struct CoarseLevelStats {
  long corrections = 0;     ///< coarse corrections applied to this rank's rows
  long solves = 0;          ///< coarse solves made here (sync: every rank; async: rank 0)
  long contributions = 0;   ///< async: residual contributions sent to rank 0
  long held = 0;            ///< async: passes whose update waited for a newer coarse solution
  double seconds = 0;       ///< time in the coarse level (residuals, restrictions, solves, messages)
  comm::DelayStats delay;   ///< async: this rank's iterations between a contribution and its correction
};

class CoarseLevel {
 public:
  /// Collective over A.comm: builds the coarse space (CoarseSpace) and Phi's rows at the
  /// subdomain's ghosts.
  CoarseLevel(const linalg::DistributedCsr& A, const linalg::OverlappingSubdomain& sub,
              const linalg::CoarseOptions& options, int reuse);
  ~CoarseLevel();

  const linalg::CoarseSpace& space() const { return *space_; }
  const CoarseLevelStats& stats() const { return stats_; }

  /// Synchronous hybrid step (see the top). x: the local iterate on Omega_p (its owned rows are
  /// corrected), ghost: the ghost buffer (corrected in place). Collective.
  void correct_sync(const double* b_ext, double* x, double* ghost);

  /// Asynchronous: opens the two exchanges (contributions to rank 0, corrections from it) over
  /// `transport`. Collective.
  void open_async(const comm::TransportConfig& transport);
  /// Closes them (collective), nothing left pending, after every rank has applied the newest
  /// correction to x (so the final iterate is one version everywhere). `it`: this rank's iteration.
  void close_async(std::int64_t it, double* x);
  /// The version this rank has applied.
  std::int64_t version() const { return version_; }
  /// One pass, first half: takes the newest correction and applies it to x's owned rows. True if
  /// one was applied (the ghosts must be lifted again).
  bool pull(std::int64_t it, double* x);
  /// Second half: contributes the coarse residual of this rank's values x when a local solve has
  /// been made since the last contribution (or the rank is at rest), sends what is pending, and on
  /// rank 0 solves when the contributions allow.
  void contribute_and_solve(std::int64_t it, const double* b_ext, const double* x);
  /// After a local solve: a contribution is due.
  void after_solve();
  /// False while --coarse-reuse r local solves have been made on the current coarse solution.
  bool may_update();
  /// ghost = raw lifted to this rank's version (see the top): raw holds the ghosts as received
  /// and, at raw[ghosts + j], the version plan neighbour j sent with them.
  void lift(const comm::HaloPlan& plan, std::size_t ghosts, const double* raw, double* ghost) const;

 private:
  // r = b - A u on the owned rows (u from x and ghost).
  void residual(const double* b_ext, const double* x, const double* ghost, std::vector<double>& r) const;
  void contribute(std::int64_t it, const double* b_ext, const double* x);
  void root_pass();

  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  const linalg::OverlappingSubdomain& sub_;
  std::unique_ptr<linalg::CoarseSpace> space_;
  int reuse_ = 0;
  // Phi at the owned rows and at the ghosts, columns as positions in needed_ (the functions this
  // rank's rows and ghosts touch, ascending).
  std::vector<int> needed_;
  linalg::CoarseSpace::Rows own_, ghost_rows_;
  // The contributions' functions (ascending), (A^T Phi) and Phi at the own rows with columns as
  // positions in it.
  std::vector<int> contributed_;
  linalg::CoarseSpace::Rows bt_, phi_b_;
  std::vector<double> r_;
  CoarseLevelStats stats_;

  // Asynchronous state.
  std::int64_t version_ = 0;
  std::deque<std::vector<double>> cumulative_;  // U_v over needed_, the newest last; front is version front_version_
  std::int64_t front_version_ = 0;
  long solves_since_apply_ = 0;
  long updates_ = 0, updates_at_pull_ = -1;
  bool applied_since_contribution_ = true;   // contributed nothing at the current version yet
  bool contribution_due_ = false;            // a local solve since the last contribution
  std::vector<double> contribution_;         // [this rank's part of Phi^T r at contributed_..., version, iteration]
  bool contribution_pending_ = false;
  std::int64_t contribution_level_ = 0;
  std::unique_ptr<comm::PlanExchange> gather_, scatter_;
  std::vector<double> correction_;  // [c at needed_..., the iteration of the contribution it answers]
  // Rank 0 only.
  std::vector<std::vector<int>> functions_of_, needed_of_;  // per rank: its local functions, its needed_
  std::vector<std::size_t> gather_at_, scatter_at_;
  std::vector<double> gathered_, scatter_buffer_;
  std::int64_t root_version_ = 0;
  bool scatter_pending_ = false;
};

}  // namespace desync::solvers::detail
