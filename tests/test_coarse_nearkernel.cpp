// The coarse spaces built from near-kernel vectors (solvers/schwarz/coarse/coarse_space.hpp) on 3D elasticity with
// its six rigid-body modes (problems/elasticity3d.hpp), in scalar rows:
//   - independent_columns keeps an independent subset of the columns and never a zero one;
//   - Nicolaides: Phi reproduces every rigid-body mode on every row;
//   - GDSW and RGDSW: Phi reproduces every rigid-body mode on the interface rows, and the
//     combination that does is discrete harmonic (A applied to it is zero) on the interior rows;
//   - all: A0 = Phi^T A Phi (from A's products with Phi's columns), symmetric, positive definite;
//   - the constant as the only near-kernel vector gives the scalar spaces bitwise, and dependent or
//     zero vectors are dropped (Phi as without them, bitwise).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "test_util.hpp"

using namespace desync;

using solvers::CoarseOptions;
using solvers::CoarseSpace;
using linalg::DistributedCsr;

namespace {

struct Elasticity {
  std::unique_ptr<decomposition::CartGrid> grid;  // owns A's communicator
  DistributedCsr A;                     // scalar rows
  std::vector<std::vector<double>> z;   // the rigid-body modes, this rank's rows
};

/// 6 x 6 x 6 nodes (648 unknowns) over the ranks' CartGrid blocks.
Elasticity elasticity() {
  Elasticity e;
  e.grid = std::make_unique<decomposition::CartGrid>(MPI_COMM_WORLD, decomposition::Index3{6, 6, 6},
                                                     decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}));
  e.A = linalg::scalar_csr(problems::assemble_elasticity3d(*e.grid).A);
  e.z = problems::elasticity3d_rigid_body_modes(*e.grid);
  return e;
}

/// Whether local row i couples to another rank's row (GDSW's interface).
std::vector<char> interface_rows(const DistributedCsr& A) {
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(desync_test::world_rank())], n = A.local_rows();
  std::vector<char> out(static_cast<std::size_t>(n), 0);
  for (std::int64_t i = 0; i < n; ++i)
    for (auto k = A.row_ptr[static_cast<std::size_t>(i)]; k < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      if (j < first || j >= first + n) out[static_cast<std::size_t>(i)] = 1;
    }
  return out;
}

/// The least-squares combination w = Phi c of the coarse functions closest to v on the rows marked
/// in `rows` (normal equations, summed over the ranks), on all of this rank's rows.
std::vector<double> fit(const CoarseSpace& c, const std::vector<double>& v, const std::vector<char>& rows) {
  const auto m = static_cast<std::size_t>(c.size()), n = v.size();
  const std::vector<double> phi = c.local_basis();
  std::vector<double> g(m * m, 0.0), rhs(m, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    if (!rows[i]) continue;
    for (std::size_t a = 0; a < m; ++a) {
      rhs[a] += phi[i * m + a] * v[i];
      for (std::size_t b = 0; b < m; ++b) g[a * m + b] += phi[i * m + a] * phi[i * m + b];
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, g.data(), static_cast<int>(g.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, rhs.data(), static_cast<int>(m), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  solvers::DenseLu(g, static_cast<int>(m)).solve(rhs);
  std::vector<double> w(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t a = 0; a < m; ++a) w[i] += phi[i * m + a] * rhs[a];
  return w;
}

double max_all(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

/// A0 against Phi^T (A Phi) from the matrix's products with Phi's columns; symmetric to 1e-12 and
/// positive definite (a dense Cholesky of A0 succeeds).
void check_spd_galerkin(const CoarseSpace& c, const DistributedCsr& A) {
  const auto m = static_cast<std::size_t>(c.size()), n = static_cast<std::size_t>(A.local_rows());
  const std::vector<double> phi = c.local_basis();
  auto op = linalg::make_csr_operator(A, linalg::SpmvConfig{});
  std::vector<double> ref(m * m, 0.0), col(n), acol(n);
  for (std::size_t d = 0; d < m; ++d) {
    for (std::size_t i = 0; i < n; ++i) col[i] = phi[i * m + d];
    op->apply(col, acol);
    for (std::size_t a = 0; a < m; ++a)
      for (std::size_t i = 0; i < n; ++i) ref[a * m + d] += phi[i * m + a] * acol[i];
  }
  MPI_Allreduce(MPI_IN_PLACE, ref.data(), static_cast<int>(ref.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const auto& a0 = c.matrix();
  double diff = 0, asym = 0, scale = 0;
  for (std::size_t a = 0; a < m; ++a)
    for (std::size_t b = 0; b < m; ++b) {
      diff = std::max(diff, std::abs(a0[a * m + b] - ref[a * m + b]));
      asym = std::max(asym, std::abs(a0[a * m + b] - a0[b * m + a]));
      scale = std::max(scale, std::abs(ref[a * m + b]));
    }
  EXPECT_LE(diff, 1e-12 * scale);
  EXPECT_LE(asym, 1e-12 * scale);
  EXPECT_EQ(desync_test::first_nonpositive_pivot(a0, m), m) << "A0 is not positive definite";
}

void expect_same(const CoarseSpace& a, const CoarseSpace& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(a.local_basis() == b.local_basis());  // bitwise
  EXPECT_TRUE(a.matrix() == b.matrix());
}

}  // namespace

TEST(IndependentColumns, KeepsAnIndependentSubset) {
  // Columns e1, 2 e1, 0, e2, e1 + e2 of R^3: the Gram matrix of Z = [e1 2e1 0 e2 e1+e2].
  const std::vector<std::vector<double>> z = {{1, 0, 0}, {2, 0, 0}, {0, 0, 0}, {0, 1, 0}, {1, 1, 0}};
  std::vector<double> g(25, 0.0);
  for (std::size_t a = 0; a < 5; ++a)
    for (std::size_t b = 0; b < 5; ++b)
      for (std::size_t i = 0; i < 3; ++i) g[a * 5 + b] += z[a][i] * z[b][i];
  EXPECT_EQ(solvers::independent_columns(g, 5), (std::vector<int>{0, 3}));
  EXPECT_TRUE(solvers::independent_columns(std::vector<double>(4, 0.0), 2).empty());
}

TEST(NearKernel, NicolaidesReproducesTheRigidBodyModes) {
  const Elasticity e = elasticity();
  const CoarseSpace c(e.A, CoarseOptions{"nicolaides", e.z, 0});
  EXPECT_EQ(c.size(), 6 * desync_test::world_size());  // a block of nodes carries all six modes
  EXPECT_EQ(c.near_kernel_vectors(), 6);
  const std::vector<char> all(static_cast<std::size_t>(e.A.local_rows()), 1);
  for (std::size_t k = 0; k < 6; ++k) {
    const std::vector<double> w = fit(c, e.z[k], all);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      err = std::max(err, std::abs(w[i] - e.z[k][i]));
      norm = std::max(norm, std::abs(e.z[k][i]));
    }
    EXPECT_LE(max_all(err), 1e-10 * max_all(norm)) << "mode " << k;
  }
  check_spd_galerkin(c, e.A);
}

TEST(NearKernel, GdswAndRgdswReproduceTheRigidBodyModesOnTheInterface) {
  if (desync_test::world_size() < 2) GTEST_SKIP() << "GDSW and RGDSW need an interface";
  const Elasticity e = elasticity();
  for (const std::string kind : {"gdsw", "rgdsw"}) {
    SCOPED_TRACE(kind);
    const CoarseSpace c(e.A, CoarseOptions{kind, e.z, 0});
    EXPECT_GE(c.size(), 6);  // six per interface component, fewer where a component is small
    const std::vector<char> gamma = interface_rows(e.A);
    auto op = linalg::make_csr_operator(e.A, linalg::SpmvConfig{});
    for (std::size_t k = 0; k < 6; ++k) {
      const std::vector<double> w = fit(c, e.z[k], gamma);
      double err = 0, norm = 0;
      for (std::size_t i = 0; i < w.size(); ++i) {
        norm = std::max(norm, std::abs(e.z[k][i]));
        if (gamma[i]) err = std::max(err, std::abs(w[i] - e.z[k][i]));
      }
      EXPECT_LE(max_all(err), 1e-10 * max_all(norm)) << "mode " << k;
      // Harmonic inside: (A w)_I = 0 on the interior rows, w being z_k on the interface.
      std::vector<double> aw(w.size());
      op->apply(w, aw);
      double inside = 0, scale = 0;
      for (std::size_t i = 0; i < w.size(); ++i) {
        scale = std::max(scale, std::abs(aw[i]));
        if (!gamma[i]) inside = std::max(inside, std::abs(aw[i]));
      }
      EXPECT_GT(max_all(scale), 0.0);
      EXPECT_LE(max_all(inside), 1e-10 * max_all(scale)) << "mode " << k;
    }
    check_spd_galerkin(c, e.A);
  }
}

TEST(NearKernel, TheConstantGivesTheScalarSpacesBitwise) {
  const Elasticity e = elasticity();
  const std::vector<double> one(static_cast<std::size_t>(e.A.local_rows()), 1.0);
  for (const std::string kind : {"nicolaides", "gdsw", "rgdsw"}) {
    if (kind != "nicolaides" && desync_test::world_size() < 2) continue;
    const CoarseSpace plain(e.A, kind);
    const CoarseSpace constant(e.A, CoarseOptions{kind, {one}, 0});
    expect_same(plain, constant);
    // A dependent and a zero vector beside the rigid-body modes change nothing.
    std::vector<std::vector<double>> more = e.z;
    more.insert(more.begin() + 1, std::vector<double>(one.size(), 0.0));
    more.push_back(e.z[4]);
    for (auto& v : more.back()) v *= 2.0;  // exactly dependent: a tie, the first is kept
    const CoarseSpace modes(e.A, CoarseOptions{kind, e.z, 0});
    const CoarseSpace padded(e.A, CoarseOptions{kind, more, 0});
    ASSERT_EQ(modes.size(), padded.size());
    EXPECT_TRUE(modes.local_basis() == padded.local_basis());
  }
}

TEST(NearKernel, RefusesVectorsOfTheWrongLength) {
  const Elasticity e = elasticity();
  std::vector<std::vector<double>> z = e.z;
  z[2].pop_back();
  EXPECT_THROW(CoarseSpace(e.A, CoarseOptions{"nicolaides", z, 0}), InputError);
}
