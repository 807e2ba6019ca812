// Restarted GMRES (src/solvers/cg/gmres.cpp): its iterates follow a plain dense transcription of
// the algorithm (Saad and Schultz, 1986; right preconditioning as Saad, 2003, Algorithm 9.5) written
// here, across restarts; it solves a non-symmetric convection-diffusion system to the tolerance
// (none, jacobi), restart 5 costing more iterations than no restart; on an SPD system it agrees with
// CG; a happy breakdown ends the run exactly; a restart length < 1 is refused.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/solvers/cg/cg.hpp"
#include "desync/solvers/pc/preconditioner.hpp"
#include "matrix_test_util.hpp"
#include "test_util.hpp"

using namespace desync;
using linalg::DistributedCsr;
using solvers::CgOptions;
using solvers::CgResult;

namespace {

using V = std::vector<double>;

/// The 5-point upwind discretisation of -Laplace(u) + beta . grad(u) on the unit square, N x N
/// interior points, Dirichlet boundary, scaled by h^2 (row i = x + N y), with a velocity that slows
/// down along the flow, beta = (bx (2 - x/N), by (2 - y/N)) at point (x, y): diagonal
/// 4 + (beta_x + beta_y) h, west -1 - beta_x h, south -1 - beta_y h, east and north -1.
/// Non-symmetric; its diagonal varies (so jacobi differs from none); its symmetric part is weakly
/// diagonally dominant (beta_x does not grow along x, nor beta_y along y), hence positive definite,
/// so GMRES(m) converges for every m (Elman's bound).
DistributedCsr convection_diffusion(MPI_Comm comm, int N, double bx, double by) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const double h = 1.0 / (N + 1);
  DistributedCsr A;
  A.comm = comm;
  A.row_offsets = desync_test::balanced_offsets(static_cast<std::int64_t>(N) * N, size);
  A.row_ptr.push_back(0);
  for (std::int64_t i = A.row_offsets[static_cast<std::size_t>(rank)]; i < A.row_offsets[static_cast<std::size_t>(rank) + 1]; ++i) {
    const std::int64_t x = i % N, y = i / N;
    const double beta_x = bx * (2.0 - static_cast<double>(x) / N), beta_y = by * (2.0 - static_cast<double>(y) / N);
    auto add = [&](std::int64_t c, double v) {
      A.col.push_back(c);
      A.val.push_back(v);
    };
    if (y > 0) add(i - N, -1 - beta_y * h);            // south
    if (x > 0) add(i - 1, -1 - beta_x * h);            // west
    add(i, 4 + (beta_x + beta_y) * h);                 // diagonal
    if (x < N - 1) add(i + 1, -1);                     // east
    if (y < N - 1) add(i + N, -1);                     // north
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  return A;
}

/// A distributed vector, whole, on every rank.
V allgather(MPI_Comm comm, const V& local) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(local.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  V all(static_cast<std::size_t>(total));
  MPI_Allgatherv(local.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm);
  return all;
}

/// The matrix as a dense row-major n x n array on every rank (block size 1).
V dense(const DistributedCsr& A) {
  V triplets;  // row, column, value
  for (std::int64_t i = 0; i < A.local_block_rows(); ++i)
    for (std::int64_t e = A.row_ptr[static_cast<std::size_t>(i)]; e < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++e) {
      triplets.push_back(static_cast<double>(A.first_block_row() + i));
      triplets.push_back(static_cast<double>(A.col[static_cast<std::size_t>(e)]));
      triplets.push_back(A.val[static_cast<std::size_t>(e)]);
    }
  const V all = allgather(A.comm, triplets);
  const auto n = static_cast<std::size_t>(A.global_rows());
  V d(n * n, 0.0);
  for (std::size_t t = 0; t + 2 < all.size(); t += 3)
    d[static_cast<std::size_t>(all[t]) * n + static_cast<std::size_t>(all[t + 1])] += all[t + 2];
  return d;
}

// ---- the plain reference: GMRES(m) with right preconditioning, serial and dense ----------------

double dot(const V& a, const V& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// x after `iterations` Arnoldi steps of GMRES(m) from x_0 = 0, M = diag(minv)^-1 (minv: ones for
/// M = I), and the residual estimates ||r_k|| / ||b||, k = 0..iterations, one per step.
struct DenseRun {
  V x, residuals;
};

DenseRun dense_gmres(const V& A, const V& b, const V& minv, int m, int iterations) {
  const std::size_t n = b.size();
  auto mul = [&](const V& v) {  // A v
    V out(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < n; ++c) out[i] += A[i * n + c] * v[c];
    return out;
  };
  auto pc = [&](const V& v) {  // M^-1 v
    V out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = minv[i] * v[i];
    return out;
  };
  DenseRun out;
  out.x.assign(n, 0.0);
  const double bnorm = std::sqrt(dot(b, b));
  V r = b;  // r_0 = b - A x_0, x_0 = 0
  double beta = std::sqrt(dot(r, r));
  out.residuals.push_back(beta / bnorm);
  int k = 0;
  const auto M = static_cast<std::size_t>(m);
  for (;;) {
    std::vector<V> v(M + 1, V(n, 0.0));
    V H((M + 1) * M, 0.0), c(M), s(M), g(M + 1, 0.0);
    auto h = [&](std::size_t i, std::size_t j) -> double& { return H[j * (M + 1) + i]; };
    for (std::size_t i = 0; i < n; ++i) v[0][i] = r[i] * (1.0 / beta);  // v_1 = r_0 / beta
    g[0] = beta;
    std::size_t j = 0;
    for (;; ++j) {
      V w = mul(pc(v[j]));  // w = A M^-1 v_j
      for (int pass = 0; pass < 2; ++pass) {  // classical Gram-Schmidt, twice
        V hij(j + 1);
        for (std::size_t i = 0; i <= j; ++i) hij[i] = dot(w, v[i]);
        for (std::size_t i = 0; i <= j; ++i) {
          h(i, j) += hij[i];
          for (std::size_t l = 0; l < n; ++l) w[l] -= hij[i] * v[i][l];
        }
      }
      h(j + 1, j) = std::sqrt(dot(w, w));
      for (std::size_t i = 0; i < j; ++i) {  // the previous rotations
        const double a = h(i, j), bb = h(i + 1, j);
        h(i, j) = c[i] * a + s[i] * bb;
        h(i + 1, j) = -s[i] * a + c[i] * bb;
      }
      const double d = std::hypot(h(j, j), h(j + 1, j));  // the rotation zeroing h_{j+1,j}
      c[j] = h(j, j) / d;
      s[j] = h(j + 1, j) / d;
      h(j, j) = d;
      g[j + 1] = -s[j] * g[j];
      g[j] = c[j] * g[j];
      ++k;
      out.residuals.push_back(std::fabs(g[j + 1]) / bnorm);
      if (k == iterations || j + 1 == M) break;
      for (std::size_t l = 0; l < n; ++l) v[j + 1][l] = w[l] * (1.0 / h(j + 1, j));  // v_{j+1} = w / h_{j+1,j}
    }
    V y(j + 1);  // R y = g
    for (std::size_t i = j + 1; i-- > 0;) {
      double t = g[i];
      for (std::size_t l = i + 1; l <= j; ++l) t -= h(i, l) * y[l];
      y[i] = t / h(i, i);
    }
    V vy(n, 0.0);  // x = x_0 + M^-1 V y
    for (std::size_t i = 0; i <= j; ++i)
      for (std::size_t l = 0; l < n; ++l) vy[l] += y[i] * v[i][l];
    const V z = pc(vy);
    for (std::size_t l = 0; l < n; ++l) out.x[l] += z[l];
    if (k == iterations) return out;
    const V ax = mul(out.x);  // restart: r_0 = b - A x_0
    for (std::size_t l = 0; l < n; ++l) r[l] = b[l] - ax[l];
    beta = std::sqrt(dot(r, r));
  }
}

/// The system of the tests: A (distributed and dense), b = A (1, 2, ..., n) / n, its operator.
struct System {
  DistributedCsr A;
  std::unique_ptr<linalg::Operator> op;
  V b;        ///< this rank's rows
  V dense_a;  ///< every rank
};

System make_system(DistributedCsr A) {
  System s;
  s.A = std::move(A);
  s.op = linalg::make_csr_operator(s.A, {});
  V xs(static_cast<std::size_t>(s.op->local_size()));
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = static_cast<double>(s.A.first_block_row() + static_cast<std::int64_t>(i) + 1) / static_cast<double>(s.A.global_rows());
  s.b.assign(xs.size(), 0.0);
  s.op->apply(xs, s.b);
  s.dense_a = dense(s.A);
  return s;
}

CgResult solve_gmres(System& s, std::string pc, int restart, double tol, std::int64_t max_iters, V& x) {
  CgOptions o;
  o.method = "gmres";
  o.pc = pc;
  o.restart = restart;
  o.iteration.tol = tol;
  o.iteration.max_iters = max_iters;
  x.assign(s.b.size(), 0.0);
  return solvers::solve_cg(*s.op, s.b, x, o);
}

/// ||a - b|| / ||b|| of two distributed vectors.
double relative_difference(MPI_Comm comm, const V& a, const V& b) {
  double sums[2] = {0, 0};
  for (std::size_t i = 0; i < a.size(); ++i) {
    sums[0] += (a[i] - b[i]) * (a[i] - b[i]);
    sums[1] += b[i] * b[i];
  }
  MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm);
  return std::sqrt(sums[0] / sums[1]);
}

// ---- tests ---------------------------------------------------------------------------------------

TEST(Gmres, FollowsThePlainDenseTranscriptionAcrossRestarts) {
  desync_test::TestComm comm;
  System s = make_system(convection_diffusion(comm, 10, 40.0, 20.0));
  const std::size_t n = static_cast<std::size_t>(s.A.global_rows());
  const V b_all = allgather(comm, s.b);
  const auto first = static_cast<std::size_t>(s.A.first_block_row());
  for (const std::string pc : {"none", "jacobi"}) {
    V minv(n, 1.0);
    if (pc == "jacobi")
      for (std::size_t i = 0; i < n; ++i) minv[i] = 1.0 / s.dense_a[i * n + i];
    const int m = 5;  // restarts after iterations 5 and 10
    for (int k = 1; k <= 12; ++k) {
      SCOPED_TRACE(pc + ", " + std::to_string(k) + " iterations");
      const DenseRun ref = dense_gmres(s.dense_a, b_all, minv, m, k);
      V x;
      const CgResult r = solve_gmres(s, pc, m, 1e-30, k, x);  // tol: no test fires, max_iters stops it
      EXPECT_EQ(r.stop, core::StopReason::max_iters) << r.message;
      EXPECT_EQ(r.iterations, k);
      const V ref_local(ref.x.begin() + static_cast<std::ptrdiff_t>(first),
                        ref.x.begin() + static_cast<std::ptrdiff_t>(first + x.size()));
      EXPECT_LE(relative_difference(comm, x, ref_local), 1e-10);
      ASSERT_EQ(r.history.size(), ref.residuals.size());
      for (std::size_t i = 0; i < ref.residuals.size(); ++i) {
        EXPECT_EQ(r.history[i].iteration, static_cast<std::int64_t>(i));
        EXPECT_NEAR(r.history[i].residual, ref.residuals[i], 1e-10 * ref.residuals[i]) << "iteration " << i;
      }
      // Three reductions per step, ||b|| and ||r_0||, one per restart (the final true residual's
      // is not the iteration's).
      const std::int64_t restarts = (k - 1) / m;
      EXPECT_EQ(r.stats.reductions, 2 + 3 * k + restarts);
      EXPECT_EQ(r.stats.spmvs, 1 + k + restarts + 1);
      EXPECT_EQ(r.stats.pc_applications, pc == "none" ? 0 : k + restarts + 1);
    }
  }
}

TEST(Gmres, SolvesANonSymmetricSystemToTheTolerance) {
  desync_test::TestComm comm;
  System s = make_system(convection_diffusion(comm, 40, 100.0, 50.0));
  const double tol = 1e-8;
  // The solution A^-1 b = (1, 2, ..., n) / n.
  V exact(s.b.size());
  for (std::size_t i = 0; i < exact.size(); ++i)
    exact[i] = static_cast<double>(s.A.first_block_row() + static_cast<std::int64_t>(i) + 1) / static_cast<double>(s.A.global_rows());
  // Restart 5 against no restart (300 > the iterations needed), without a preconditioner; restart 5
  // with jacobi. Full GMRES minimises the residual over the whole Krylov space, so it never takes
  // more steps than a restarted one; between two restart lengths that both restart, the shorter one
  // may well win (Embree, 2003, "The tortoise and the hare restart GMRES"). bjacobi-ic0 factors the
  // lower triangle as if A were symmetric: not for this matrix (its pivots turn negative);
  // AgreesWithCgOnAnSpdSystem runs GMRES with it.
  struct Case {
    std::string pc;
    int restart;
  };
  std::int64_t iterations[3] = {0, 0, 0};
  const Case cases[3] = {{"none", 5}, {"none", 300}, {"jacobi", 5}};
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE(cases[c].pc + ", restart " + std::to_string(cases[c].restart));
    V x;
    const CgResult r = solve_gmres(s, cases[c].pc, cases[c].restart, tol, 20000, x);
    EXPECT_EQ(r.stop, core::StopReason::converged) << r.message;
    EXPECT_TRUE(r.converged);
    EXPECT_LE(r.true_residual, tol);
    EXPECT_LE(r.recursive_residual, tol);
    EXPECT_LE(relative_difference(comm, x, exact), 1e-5);  // to cond(A) tol
    iterations[c] = r.iterations;
  }
  EXPECT_GT(iterations[0], iterations[1]) << "restart 5 against none";
}

TEST(Gmres, AgreesWithCgOnAnSpdSystem) {
  decomposition::CartGrid grid(MPI_COMM_WORLD, {9, 8, 7}, decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}));
  const auto A = problems::assemble_poisson3d(grid);
  auto op = linalg::make_csr_operator(A, {});
  const V b = problems::poisson3d_rhs(grid);
  const double tol = 1e-10;
  // jacobi is none scaled here (constant diagonal); test_cg runs every preconditioner with gmres.
  for (const std::string pc : {"none", "bjacobi-ic0"}) {
    V x[2];
    CgResult r[2];
    for (int which = 0; which < 2; ++which) {
      CgOptions o;
      o.method = which == 0 ? "cg" : "gmres";
      o.pc = pc;
      o.iteration.tol = tol;
      x[which].assign(b.size(), 0.0);
      r[which] = solvers::solve_cg(*op, b, x[which], o);
      EXPECT_TRUE(r[which].converged) << o.method << "/" << pc << ": " << r[which].message;
    }
    // Both residuals are below tol ||b||, so both errors are below cond(A) tol (cond(A) < 50 here).
    EXPECT_LE(relative_difference(A.comm, x[1], x[0]), 1e2 * tol) << pc;
  }
}

TEST(Gmres, HappyBreakdownEndsWithTheExactSolution) {
  // diag(1, -1, 1, -1, ...), b = 1: the Krylov space of A and b has dimension 2 (two eigenvalues),
  // so step 2 finds h_32 = 0 and x_2 = A^-1 b = (1, -1, 1, ...) exactly; CG breaks down on it.
  desync_test::TestComm comm;
  const auto A = desync_test::diagonal_matrix(comm, 16, [](std::int64_t i) { return i % 2 == 0 ? 1.0 : -1.0; });
  auto op = linalg::make_csr_operator(A, {});
  const V b(static_cast<std::size_t>(op->local_size()), 1.0);
  V x(b.size(), 0.0);
  CgOptions o;
  o.method = "gmres";
  o.iteration.tol = 1e-14;
  const CgResult r = solvers::solve_cg(*op, b, x, o);
  EXPECT_EQ(r.stop, core::StopReason::converged) << r.message;
  EXPECT_EQ(r.iterations, 2);
  EXPECT_EQ(r.history.back().residual, 0.0);
  EXPECT_LE(r.true_residual, 1e-15);
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(x[i], (A.first_block_row() + static_cast<std::int64_t>(i)) % 2 == 0 ? 1.0 : -1.0, 1e-15);
  // The identity: one step.
  const auto I = desync_test::diagonal_matrix(comm, 16, [](std::int64_t) { return 1.0; });
  auto iop = linalg::make_csr_operator(I, {});
  x.assign(b.size(), 0.0);
  const CgResult ri = solvers::solve_cg(*iop, b, x, o);
  EXPECT_EQ(ri.stop, core::StopReason::converged) << ri.message;
  EXPECT_EQ(ri.iterations, 1);
  for (double v : x) EXPECT_EQ(v, 1.0);
}

TEST(Gmres, RestartLengthBelowOneIsRefused) {
  desync_test::TestComm comm;
  System s = make_system(convection_diffusion(comm, 6, 1.0, 1.0));
  V x;
  try {
    solve_gmres(s, "none", 0, 1e-6, 100, x);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--restart 0: must be >= 1");
  }
}

}  // namespace
