// Optimized Schwarz (solvers/schwarz/schwarz.hpp) on the 2D Poisson problem: the subdomain matrix
// against hand-written ones, the synchronous and asynchronous solves against a direct solve of the
// global system, the discretisation error's h^2, classical against optimized, one subdomain.
// Runs over the transport of DESYNC_TEST_TRANSPORT (tests/channel_transport.hpp) for the async runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "channel_transport.hpp"
#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/problems/poisson2d.hpp"
#include "desync/core/history.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "desync/solvers/schwarz/schwarz.hpp"
#include "desync/solvers/schwarz/subdomain.hpp"
#include "test_util.hpp"

using namespace desync;
using namespace desync::decomposition;
using namespace desync::solvers;

namespace {

using desync_test::world_size;

/// Dense h^2 A of a subdomain, row by row.
std::vector<std::vector<double>> dense_scaled(const GridSubdomain& s) {
  const auto n = static_cast<std::size_t>(s.matrix.rows);
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (std::size_t r = 0; r < n; ++r)
    for (auto k = s.matrix.row_ptr[r]; k < s.matrix.row_ptr[r + 1]; ++k)
      a[r][static_cast<std::size_t>(s.matrix.col[static_cast<std::size_t>(k)])] =
          s.matrix.val[static_cast<std::size_t>(k)] * s.hx * s.hx;
  return a;
}

/// The global system's solution (one subdomain: the whole grid, a direct solve), x fastest.
std::vector<double> direct_solution(Index3 global, SchwarzProblem problem = SchwarzProblem::poisson2d) {
  const auto s = solvers::make_schwarz_subdomain(global, {1, 1, 1}, {0, 0, 0}, 1, 1.0, problem);
  const auto chol = linalg::make_local_solver(s.matrix, linalg::LocalSolverKind::cholmod);
  std::vector<double> x(s.rhs_fixed.size());
  chol->solve(s.rhs_fixed.data(), x.data());
  return x;
}

/// max |u_block - direct| over this rank's block.
double block_difference(const decomposition::CartGrid& grid, const std::vector<double>& u,
                        SchwarzProblem problem = SchwarzProblem::poisson2d) {
  const auto direct = direct_solution(grid.global(), problem);
  const auto& n = grid.global();
  const auto& o = grid.offset();
  double d = 0;
  for (int k = 0, p = 0; k < grid.local()[2]; ++k)
    for (int j = 0; j < grid.local()[1]; ++j)
      for (int i = 0; i < grid.local()[0]; ++i, ++p) {
        const auto g = static_cast<std::size_t>(((o[2] + k) * n[1] + o[1] + j) * n[0] + o[0] + i);
        d = std::max(d, std::abs(u[static_cast<std::size_t>(p)] - direct[g]));
      }
  MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return d;
}

}  // namespace

// The corner subdomain of a 2x2 process grid with 2x2 blocks and overlap 1 is 3x3 points: its
// interface is the column x = 2 and the row y = 2, with (2, 2) facing two neighbours. h^2 A_p =
// 5-point Laplacian (4 on the diagonal, -1 per neighbour inside) minus beta per external neighbour.
// The Robin shift both subdomain kinds share: each row's couplings of one beta summed, then times
// beta, onto the diagonal; off-diagonal entries untouched; a row without a diagonal entry refused.
TEST(SchwarzSubdomain, RobinShiftMovesTheCouplingsOntoTheDiagonal) {
  linalg::LocalCsr A;
  A.rows = 2;
  A.row_ptr = {0, 2, 4};
  A.col = {0, 1, 0, 1};
  A.val = {4.0, -1.0, -1.0, 4.0};
  const std::vector<RobinCoupling> couplings = {
      {0, 0, -1, -1.0, 0.5}, {0, 1, -1, -2.0, 0.5}, {1, 2, -1, -1.0, 0.25}, {1, 3, -1, -8.0, 0.0}};
  shift_robin_diagonal(A, couplings);
  EXPECT_EQ(A.val, (std::vector<double>{4.0 + 0.5 * (-1.0 - 2.0), -1.0, -1.0, 4.0 + 0.25 * -1.0}));
  linalg::LocalCsr no_diagonal;
  no_diagonal.rows = 1;
  no_diagonal.row_ptr = {0, 0};
  EXPECT_THROW(shift_robin_diagonal(no_diagonal, std::vector<RobinCoupling>{{0, 0, -1, -1.0, 0.5}}), std::logic_error);
}

TEST(SchwarzSubdomain, CornerMatrixByHand) {
  const double alpha = 3.0;
  const auto s = solvers::make_schwarz_subdomain({4, 4, 1}, {2, 2, 1}, {0, 0, 0}, 1, alpha);
  ASSERT_EQ(s.ext.nx(), 3);
  ASSERT_EQ(s.ext.ny(), 3);
  const double b = 1.0 / (1.0 + alpha / 5.0);  // h = 1/5
  // points in row-major order: (0,0) (1,0) (2,0) / (0,1) (1,1) (2,1) / (0,2) (1,2) (2,2)
  const std::vector<std::vector<double>> expected = {
      {4, -1, 0, -1, 0, 0, 0, 0, 0},
      {-1, 4, -1, 0, -1, 0, 0, 0, 0},
      {0, -1, 4 - b, 0, 0, -1, 0, 0, 0},
      {-1, 0, 0, 4, -1, 0, -1, 0, 0},
      {0, -1, 0, -1, 4, -1, 0, -1, 0},
      {0, 0, -1, 0, -1, 4 - b, 0, 0, -1},
      {0, 0, 0, -1, 0, 0, 4 - b, -1, 0},
      {0, 0, 0, 0, -1, 0, -1, 4 - b, -1},
      {0, 0, 0, 0, 0, -1, 0, -1, 4 - 2 * b},
  };
  const auto a = dense_scaled(s);
  for (std::size_t r = 0; r < 9; ++r)
    for (std::size_t c = 0; c < 9; ++c) EXPECT_NEAR(a[r][c], expected[r][c], 1e-12) << "row " << r << " col " << c;
  // Robin terms: one per external neighbour, the corner twice.
  EXPECT_EQ(s.couplings.size(), 6u);
}

// The paper's Figure 1 example: a 3x3 process grid with 2x2 blocks, the middle subdomain extended
// by 1 is 4x4 and D_p = diag(2b, b, b, 2b, b, 0, 0, b, b, 0, 0, b, 2b, b, b, 2b).
TEST(SchwarzSubdomain, PaperExampleInterfaceDiagonal) {
  const double alpha = 0.5;
  const auto s = solvers::make_schwarz_subdomain({6, 6, 1}, {3, 3, 1}, {1, 1, 0}, 1, alpha);
  ASSERT_EQ(s.matrix.rows, 16);
  const double b = 1.0 / (1.0 + alpha / 7.0);
  const double d[16] = {2 * b, b, b, 2 * b, b, 0, 0, b, b, 0, 0, b, 2 * b, b, b, 2 * b};
  const auto a = dense_scaled(s);
  for (std::size_t r = 0; r < 16; ++r) EXPECT_NEAR(4.0 - a[r][r], d[r], 1e-12) << "row " << r;
  // symmetric
  for (std::size_t r = 0; r < 16; ++r)
    for (std::size_t c = 0; c < 16; ++c) EXPECT_EQ(a[r][c], a[c][r]);
}

TEST(SchwarzSubdomain, PositiveDefiniteForPositiveAlphaAndClassical) {
  for (double alpha : {1e-3, 1.0, 50.0, solvers::schwarz_classical}) {
    const auto s = solvers::make_schwarz_subdomain({12, 12, 1}, {3, 3, 1}, {1, 1, 0}, 2, alpha);
    EXPECT_NO_THROW(linalg::make_local_solver(s.matrix, linalg::LocalSolverKind::cholmod)) << "alpha " << alpha;
  }
  // alpha < 0 makes an interior subdomain's matrix indefinite: the factorisation says so.
  // (h = 1/13: alpha = -12 gives beta = 13, a diagonal 4 - 13 on the interface rows)
  const auto bad = solvers::make_schwarz_subdomain({12, 12, 1}, {3, 3, 1}, {1, 1, 0}, 1, -12.0);
  EXPECT_THROW(linalg::make_local_solver(bad.matrix, linalg::LocalSolverKind::cholmod), linalg::FactorisationError);
}

// 3D: the interior subdomain of a 3x3x3 process grid with 2-point blocks and overlap 1 is 4^3
// points; a point on k of its faces faces k neighbours, so h^2 A_p's diagonal is 6 - k beta there,
// off-diagonals -1 to each neighbour inside, and the matrix is symmetric.
TEST(SchwarzSubdomain, Interior3DDiagonalByFacesTouched) {
  const double alpha = 2.5;
  const auto s = solvers::make_schwarz_subdomain({6, 6, 6}, {3, 3, 3}, {1, 1, 1}, 1, alpha, SchwarzProblem::laplace3d);
  ASSERT_EQ(s.matrix.rows, 64);
  ASSERT_EQ(s.ext.nz(), 4);
  const double b = 1.0 / (1.0 + alpha / 7.0);
  const auto a = dense_scaled(s);
  for (int z = 0, r = 0; z < 4; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x, ++r) {
        const int faces = (x == 0 || x == 3) + (y == 0 || y == 3) + (z == 0 || z == 3);
        EXPECT_NEAR(a[r][r], 6.0 - faces * b, 1e-12) << x << " " << y << " " << z;
        int off = 0;
        for (int c = 0; c < 64; ++c)
          if (c != r && a[r][c] != 0) {
            EXPECT_DOUBLE_EQ(a[r][c], -1.0);
            ++off;
          }
        EXPECT_EQ(off, 6 - faces);
      }
  for (std::size_t r = 0; r < 64; ++r)
    for (std::size_t c = 0; c < 64; ++c) EXPECT_EQ(a[r][c], a[c][r]);
  EXPECT_NO_THROW(linalg::make_local_solver(s.matrix, linalg::LocalSolverKind::cholmod));
}

// laplace3d is Jacobi's system: the direct solution leaves a residual of rounding size in Jacobi's
// own residual (problems::laplace_residual_sq, normalised by the source as Jacobi reports it).
TEST(SchwarzProblem, Laplace3DIsJacobisSystem) {
  const Index3 n{7, 6, 5};
  const auto x = direct_solution(n, SchwarzProblem::laplace3d);
  decomposition::CartGrid grid(MPI_COMM_SELF, n, {1, 1, 1});
  decomposition::Field u(grid.local());
  problems::Laplace3D problem;
  problem.initialise(grid, u);
  for (int k = 0, p = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i, ++p) u(i, j, k) = x[static_cast<std::size_t>(p)];
  const double s2 = problem.local_source_norm_sq(grid, u);
  ASSERT_GT(s2, 0.0);
  EXPECT_LT(std::sqrt(problems::laplace_residual_sq(u) / s2), 1e-12);
  // and a perturbed solution does not
  u(3, 3, 2) += 1e-3;
  EXPECT_GT(std::sqrt(problems::laplace_residual_sq(u) / s2), 1e-4);
}

// The global residual estimated from per-rank histories (Yamazaki et al., 2019, section 7.2),
// worked by hand: shares 0.6 and 0.8, points merged by time, starting once both ranks have one.
TEST(GlobalEstimate, MergedByTimeByHand) {
  using core::HistoryPoint;
  const std::vector<std::vector<HistoryPoint>> h = {{{1.0, 1, 1.0}, {3.0, 2, 0.5}}, {{2.0, 1, 1.0}, {4.0, 7, 0.25}}};
  const auto g = core::estimate_global_history(h, {0.6, 0.8});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_DOUBLE_EQ(g[0].residual, 1.0);                   // t = 2: sqrt(0.36 + 0.64)
  EXPECT_DOUBLE_EQ(g[1].residual, std::sqrt(0.09 + 0.64));  // t = 3: rank 0 at 0.5
  EXPECT_DOUBLE_EQ(g[2].residual, std::sqrt(0.09 + 0.04));  // t = 4: rank 1 at 0.25
  EXPECT_EQ(g[1].iteration, 2);
  EXPECT_EQ(g[2].iteration, 7);
  EXPECT_EQ(g[2].time, 4.0);
  // Thinned to a cap, keeping the first and the last point.
  std::vector<std::vector<HistoryPoint>> many(1);
  for (int k = 0; k < 100; ++k) many[0].push_back({double(k), k, 1.0 / (k + 1)});
  const auto thin = core::estimate_global_history(many, {1.0}, 10);
  ASSERT_EQ(thin.size(), 10u);
  EXPECT_EQ(thin.front().iteration, 0);
  EXPECT_EQ(thin.back().iteration, 99);
}

// The direct solve's error against the known solution falls as h^2.
TEST(SchwarzProblem, DiscretisationErrorIsSecondOrder) {
  double previous = 0;
  for (int m : {15, 31, 63}) {
    const auto u = direct_solution({m, m, 1});
    const double h = 1.0 / (m + 1);
    double err = 0;
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i)
        err = std::max(err, std::abs(u[static_cast<std::size_t>(j * m + i)] -
                                     problems::Poisson2D::exact((i + 1) * h, (j + 1) * h)));
    if (previous > 0) {
      EXPECT_GT(previous / err, 3.5) << m;
      EXPECT_LT(previous / err, 4.5) << m;
    }
    previous = err;
  }
}

class SchwarzRuns : public ::testing::Test {
 protected:
  static SchwarzOptions options(bool async) {
    SchwarzOptions o;
    o.mode = async ? desync::comm::HaloMode::async : desync::comm::HaloMode::sync;
    o.iteration.tol = 1e-9;
    o.alpha = solvers::schwarz_auto_alpha(1, 1.0 / 33);
    if (async) desync_test::apply_transport(o);
    return o;
  }
  std::vector<double> u;
};

TEST_F(SchwarzRuns, SyncMatchesTheDirectSolve) {
  const int n = world_size();
  decomposition::CartGrid grid(MPI_COMM_WORLD, {32, 32, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  const auto r = solvers::solve_schwarz(grid, options(false), u);
  EXPECT_TRUE(r.run.converged);
  EXPECT_EQ(r.run.stop, solvers::StopReason::converged);
  EXPECT_LT(block_difference(grid, u), 1e-6);
  EXPECT_LT(r.error_max, 4e-3);  // the discretisation error at h = 1/33 (2.6e-3)
  if (n == 1) {
    EXPECT_EQ(r.run.stats.iterations, 1);  // one subdomain: the direct solve
  }
}

TEST_F(SchwarzRuns, OptimizedNeedsFewerIterationsThanClassical) {
  const int n = world_size();
  if (n == 1) GTEST_SKIP() << "one subdomain: both are the direct solve";
  decomposition::CartGrid grid(MPI_COMM_WORLD, {32, 32, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  auto o = options(false);
  o.iteration.tol = 1e-6;
  const auto optimized = solvers::solve_schwarz(grid, o, u);
  o.alpha = solvers::schwarz_classical;
  const auto classical = solvers::solve_schwarz(grid, o, u);
  EXPECT_TRUE(optimized.run.converged);
  EXPECT_TRUE(classical.run.converged);
  EXPECT_LT(3 * optimized.run.stats.iterations, classical.run.stats.iterations)
      << "optimized " << optimized.run.stats.iterations << ", classical " << classical.run.stats.iterations;
}

TEST_F(SchwarzRuns, AsyncConvergesToTheDirectSolve) {
  const int n = world_size();
  decomposition::CartGrid grid(MPI_COMM_WORLD, {32, 32, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  auto o = options(true);
  o.iteration.polish = true;
  const auto r = solvers::solve_schwarz(grid, o, u);
  EXPECT_TRUE(r.run.converged) << "true residual " << r.run.true_residual;
  EXPECT_LE(r.run.true_residual, o.iteration.tol);
  EXPECT_LT(block_difference(grid, u), 1e-5);
}

// Waiting for all neighbours together changes the order of the waits, not the data: bitwise the same.
TEST_F(SchwarzRuns, SyncWaitAllIsBitwiseSyncWaitOne) {
  const int n = world_size();
  decomposition::CartGrid grid(MPI_COMM_WORLD, {24, 24, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  auto o = options(false);
  const auto one = solvers::solve_schwarz(grid, o, u);
  const std::vector<double> u_one = u;
  o.wait_all = true;
  const auto all = solvers::solve_schwarz(grid, o, u);
  EXPECT_EQ(one.run.stats.iterations, all.run.stats.iterations);
  EXPECT_EQ(u_one, u);
  ASSERT_EQ(one.run.rank_history.size(), all.run.rank_history.size());
  for (std::size_t k = 0; k < one.run.rank_history.size(); ++k)
    EXPECT_EQ(one.run.rank_history[k].residual, all.run.rank_history[k].residual);
}

// The repeated non-blocking votes terminate as well as the tree (the default), and each rank's
// recorded local residual history ends below the tolerance of its vote.
TEST_F(SchwarzRuns, AsyncIallreduceTerminationAndRankHistories) {
  const int n = world_size();
  decomposition::CartGrid grid(MPI_COMM_WORLD, {24, 24, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  auto o = options(true);
  o.tree_termination = false;
  o.iteration.polish = true;
  const auto r = solvers::solve_schwarz(grid, o, u);
  EXPECT_TRUE(r.run.converged) << "true residual " << r.run.true_residual;
  EXPECT_LT(block_difference(grid, u), 1e-5);
  o.tree_termination = true;
  o.iteration.polish = false;
  const auto t = solvers::solve_schwarz(grid, o, u);
  EXPECT_EQ(t.run.stop, solvers::StopReason::converged);
  ASSERT_FALSE(t.run.rank_history.empty());
  // The vote was this rank's local convergence by the minimum-residual rule (it may iterate on
  // after voting, with residuals above the smallest).
  // (Beyond rank_history_cap points the history is thinned and may have lost that point: more ranks
  // than cores can iterate thousands of times while waiting for the decision.)
  double smallest = HUGE_VAL;
  for (const auto& h : t.run.rank_history) smallest = std::min(smallest, h.residual);
  if (static_cast<std::size_t>(t.run.stats.iterations) < solvers::rank_history_cap) {
    EXPECT_LT(smallest, o.iteration.tol);
    // A residual is recorded where it counts: on an update that sees a new round of the exchange
    // (every neighbour's data made from this rank's current version), at most every iteration.
    EXPECT_LE(t.run.rank_history.size(), static_cast<std::size_t>(t.run.stats.iterations));
  }
  EXPECT_GT(t.run.source_share, 0.0);
  EXPECT_LE(t.run.source_share, 1.0);
}

// --idle skip (the default): a subdomain solve depends on the interface values alone, so a rank makes
// no solve while nothing new has arrived, except one that computes the residual of its current
// iterate for a vote: at most two updates per message received (plus the first solve and its
// repeat). --idle spin solves every pass. Both converge to the direct solve.
TEST_F(SchwarzRuns, AsyncSkipSolvesOnlyOnNewValues) {
  const int n = world_size();
  decomposition::CartGrid grid(MPI_COMM_WORLD, {24, 24, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  for (auto idle : {core::IdlePolicy::skip, core::IdlePolicy::spin}) {
    for (bool tree : {true, false}) {
      auto o = options(true);
      o.idle = idle;
      o.tree_termination = tree;
      o.iteration.polish = true;
      const auto r = solvers::solve_schwarz(grid, o, u);
      const auto& st = r.run.stats;
      EXPECT_TRUE(r.run.converged) << core::to_string(idle) << " tree " << tree << ": true residual "
                                   << r.run.true_residual;
      EXPECT_LT(block_difference(grid, u), 1e-5) << core::to_string(idle);
      if (idle == core::IdlePolicy::skip) {
        EXPECT_LE(st.iterations, 2 * st.halo.messages_received + 2)
            << "tree " << tree << ": " << st.iterations << " solves on " << st.halo.messages_received
            << " messages (" << st.idle_passes << " passes found nothing new)";
      }
      if (n == 1 && idle == core::IdlePolicy::skip) {
        EXPECT_EQ(st.iterations, 2);  // the solve, and its repeat for the vote
      }
    }
  }
}

// 3D: sync at every rank count (including subdomains without any source, where the local criterion
// falls back to the shared reference) meets the tolerance and matches the direct solve; async too.
TEST_F(SchwarzRuns, Laplace3DSyncAndAsyncMatchTheDirectSolve) {
  const int n = world_size();
  // split along z: only the lowest subdomain touches the source disc on z = 0
  decomposition::CartGrid grid(MPI_COMM_WORLD, {12, 12, 12}, decomposition::choose_dims(n, {1, 1, 0}));
  auto o = options(false);
  o.problem = SchwarzProblem::laplace3d;
  o.alpha = solvers::schwarz_auto_alpha(1, 1.0 / 13);
  const auto r = solvers::solve_schwarz(grid, o, u);
  EXPECT_EQ(r.run.stop, solvers::StopReason::converged);
  EXPECT_LE(r.run.true_residual, o.iteration.tol);
  EXPECT_LT(block_difference(grid, u, SchwarzProblem::laplace3d), 1e-8);
  if (n == 1) {
    EXPECT_EQ(r.run.stats.iterations, 1);
  }
  EXPECT_TRUE(std::isnan(r.error_max));  // no known solution
  auto a = options(true);
  a.problem = SchwarzProblem::laplace3d;
  a.alpha = o.alpha;
  a.iteration.polish = true;
  const auto ra = solvers::solve_schwarz(grid, a, u);
  EXPECT_TRUE(ra.run.converged) << "true residual " << ra.run.true_residual;
  EXPECT_LT(block_difference(grid, u, SchwarzProblem::laplace3d), 1e-7);
}

TEST_F(SchwarzRuns, BadOptionsAreRefusedOnEveryRank) {
  const int n = world_size();
  decomposition::CartGrid grid(MPI_COMM_WORLD, {16, 16, 1}, decomposition::choose_dims(n, {0, 0, 1}));
  auto o = options(false);
  o.alpha = 0;
  EXPECT_THROW(solvers::solve_schwarz(grid, o, u), InputError);
  o.alpha = -1;
  EXPECT_THROW(solvers::solve_schwarz(grid, o, u), InputError);
  o.alpha = 1;
  o.subdomains.overlap = 0;
  EXPECT_THROW(solvers::solve_schwarz(grid, o, u), InputError);
  if (n > 1) {
    o.subdomains.overlap = 16;
    EXPECT_THROW(solvers::solve_schwarz(grid, o, u), InputError);
  }
}
