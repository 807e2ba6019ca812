// elasticity3d assembly: element stiffness, symmetry, rigid-body modes, the exact uniaxial-stress
// solution, the load, structure, and independence of the number of ranks and the process grid.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/core/error.hpp"
#include "test_util.hpp"

using desync::InputError;
using desync::decomposition::CartGrid;
using desync::decomposition::Index3;
using desync::decomposition::choose_dims;
using namespace desync::problems;
using desync_test::TestComm;

namespace {

/// Geometric DOF number: 3 (i + nx (j + ny k)) + c.
std::int64_t geo_dof(const Index3& n, int i, int j, int k, int c) {
  return 3 * (i + static_cast<std::int64_t>(n[0]) * (j + static_cast<std::int64_t>(n[1]) * k)) + c;
}

/// The assembled system, gathered on every rank in geometric DOF order: a dense matrix and b.
struct Dense {
  std::int64_t n = 0;  // scalar rows
  std::vector<double> A, b;
  double& operator()(std::int64_t r, std::int64_t c) { return A[static_cast<std::size_t>(r * n + c)]; }
  double operator()(std::int64_t r, std::int64_t c) const { return A[static_cast<std::size_t>(r * n + c)]; }
};

struct Triplet {
  std::int64_t row, col;
  double val;
};

/// Maps rank-major node numbers back to geometric (i, j, k).
std::vector<std::array<int, 3>> inverse_numbering(const RankMajorNumbering& num, const Index3& n) {
  std::vector<std::array<int, 3>> inv(static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) inv[static_cast<std::size_t>(num.index(i, j, k))] = {i, j, k};
  return inv;
}

Dense gather(const CartGrid& grid, const ElasticitySystem& sys) {
  const Index3 n = grid.global();
  const auto num = RankMajorNumbering::from_grid(grid);
  const auto inv = inverse_numbering(num, n);
  const auto& A = sys.A;
  int rank = 0, size = 1;
  MPI_Comm_rank(grid.comm(), &rank);
  MPI_Comm_size(grid.comm(), &size);
  std::vector<Triplet> mine, rhs;
  const std::int64_t first = A.row_offsets[rank];
  for (std::int64_t r = 0; r < A.local_block_rows(); ++r) {
    const auto& g = inv[static_cast<std::size_t>(first + r)];
    for (int c = 0; c < 3; ++c) rhs.push_back({geo_dof(n, g[0], g[1], g[2], c), 0, sys.b[static_cast<std::size_t>(3 * r + c)]});
    for (std::int64_t e = A.row_ptr[r]; e < A.row_ptr[r + 1]; ++e) {
      const auto& h = inv[static_cast<std::size_t>(A.col[e])];
      for (int c = 0; c < 3; ++c)
        for (int d = 0; d < 3; ++d)
          mine.push_back({geo_dof(n, g[0], g[1], g[2], c), geo_dof(n, h[0], h[1], h[2], d),
                          A.val[static_cast<std::size_t>(9 * e + 3 * c + d)]});
    }
  }
  auto allgather = [&](const std::vector<Triplet>& part) {
    int bytes = static_cast<int>(part.size() * sizeof(Triplet));
    std::vector<int> counts(size), displs(size);
    MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, grid.comm());
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displs[r] = total;
      total += counts[r];
    }
    std::vector<Triplet> all(static_cast<std::size_t>(total) / sizeof(Triplet));
    MPI_Allgatherv(part.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, grid.comm());
    return all;
  };
  Dense D;
  D.n = 3 * static_cast<std::int64_t>(n[0]) * n[1] * n[2];
  D.A.assign(static_cast<std::size_t>(D.n * D.n), 0.0);
  D.b.assign(static_cast<std::size_t>(D.n), 0.0);
  for (const Triplet& t : allgather(mine)) D(t.row, t.col) = t.val;
  for (const Triplet& t : allgather(rhs)) D.b[static_cast<std::size_t>(t.row)] = t.val;
  return D;
}

std::vector<double> multiply(const Dense& D, const std::vector<double>& x) {
  std::vector<double> y(static_cast<std::size_t>(D.n), 0.0);
  for (std::int64_t r = 0; r < D.n; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < D.n; ++c) s += D(r, c) * x[static_cast<std::size_t>(c)];
    y[static_cast<std::size_t>(r)] = s;
  }
  return y;
}

/// The field u(x, y, z) sampled at the nodes, geometric order.
std::vector<double> sample(const Index3& n, const std::function<std::array<double, 3>(double, double, double)>& u) {
  std::vector<double> v(3 * static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        const auto w = u(static_cast<double>(i) / (n[0] - 1), static_cast<double>(j) / (n[1] - 1),
                         static_cast<double>(k) / (n[2] - 1));
        for (int c = 0; c < 3; ++c) v[static_cast<std::size_t>(geo_dof(n, i, j, k, c))] = w[c];
      }
  return v;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

const Index3 kGrid{6, 5, 7};  // nodes; every axis split over up to 4 ranks

}  // namespace

TEST(ElementStiffness, SymmetricWithRigidBodyNullSpace) {
  ElasticityParams p;
  for (auto h : {std::array<double, 3>{1, 1, 1}, std::array<double, 3>{0.2, 0.25, 1.0 / 6}}) {
    const auto K = elasticity_element_stiffness(h[0], h[1], h[2], p);
    ASSERT_EQ(K.size(), 576u);
    double kmax = 0;
    for (int r = 0; r < 24; ++r) {
      EXPECT_GT(K[r * 24 + r], 0.0);
      for (int c = 0; c < 24; ++c) {
        EXPECT_EQ(K[r * 24 + c], K[c * 24 + r]);
        kmax = std::max(kmax, std::abs(K[r * 24 + c]));
      }
    }
    // Rigid motions at the element's corners: 3 translations and 3 rotations.
    for (int mode = 0; mode < 6; ++mode) {
      double u[24];
      for (int a = 0; a < 8; ++a) {
        const double x = (a & 1) * h[0], y = ((a >> 1) & 1) * h[1], z = ((a >> 2) & 1) * h[2];
        const double m[6][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, -z, y}, {z, 0, -x}, {-y, x, 0}};
        for (int c = 0; c < 3; ++c) u[3 * a + c] = m[mode][c];
      }
      for (int r = 0; r < 24; ++r) {
        double s = 0;
        for (int c = 0; c < 24; ++c) s += K[r * 24 + c] * u[c];
        EXPECT_NEAR(s, 0.0, 1e-13 * kmax) << "mode " << mode << " row " << r;
      }
    }
  }
}

TEST(ElementStiffness, UnitCubeHandValues) {
  // For a unit cube with E = 1, nu = 0.3: lambda = 0.3 / (1.3 * 0.4), mu = 1 / 2.6. The diagonal
  // entry of DOF (node 0, x) is the integral of (lambda + 2 mu) (dN/dx)^2 + mu ((dN/dy)^2 +
  // (dN/dz)^2) = (lambda + 2 mu) / 9 + 2 mu / 9 (each squared derivative integrates to 1/9).
  ElasticityParams p;
  const auto K = elasticity_element_stiffness(1, 1, 1, p);
  const double lambda = 0.3 / (1.3 * 0.4), mu = 1 / 2.6;
  EXPECT_NEAR(K[0], (lambda + 4 * mu) / 9, 1e-15);
  // Coupling of x at node 0 with y at node 0: (lambda + mu) * integral dN/dx dN/dy = (lambda + mu) / 12.
  EXPECT_NEAR(K[1], (lambda + mu) / 12, 1e-15);
}

TEST(Elasticity, StructureAndNumbering) {
  TestComm comm;
  const int size = desync_test::world_size();
  CartGrid grid(comm, kGrid, choose_dims(size, {0, 0, 0}));
  const auto sys = assemble_elasticity3d(grid);
  const auto& A = sys.A;
  EXPECT_EQ(A.block_size, 3);
  EXPECT_EQ(A.comm, grid.comm());
  ASSERT_EQ(A.row_offsets.size(), static_cast<std::size_t>(size) + 1);
  EXPECT_EQ(A.row_offsets.front(), 0);
  EXPECT_EQ(A.global_block_rows(), 6 * 5 * 7);
  const Index3 l = grid.local();
  EXPECT_EQ(A.local_block_rows(), static_cast<std::int64_t>(l[0]) * l[1] * l[2]);
  EXPECT_EQ(A.row_offsets[grid.rank() + 1] - A.row_offsets[grid.rank()], A.local_block_rows());
  EXPECT_EQ(sys.b.size(), static_cast<std::size_t>(A.local_rows()));
  ASSERT_EQ(A.row_ptr.size(), static_cast<std::size_t>(A.local_block_rows()) + 1);
  EXPECT_EQ(A.val.size(), A.col.size() * 9);
  // Owned rows in order, x fastest; neighbour counts 8..27; columns ascending and in range.
  const auto num = RankMajorNumbering::from_grid(grid);
  std::int64_t row = 0;
  for (int k = 0; k < l[2]; ++k)
    for (int j = 0; j < l[1]; ++j)
      for (int i = 0; i < l[0]; ++i, ++row) {
        const int g[3] = {grid.offset()[0] + i, grid.offset()[1] + j, grid.offset()[2] + k};
        EXPECT_EQ(num.index(g[0], g[1], g[2]), A.row_offsets[grid.rank()] + row);
        int expect = 1;
        for (int a = 0; a < 3; ++a) expect *= 1 + (g[a] > 0) + (g[a] < kGrid[a] - 1);
        EXPECT_EQ(A.row_ptr[row + 1] - A.row_ptr[row], expect);
        for (std::int64_t e = A.row_ptr[row]; e < A.row_ptr[row + 1]; ++e) {
          EXPECT_GE(A.col[e], 0);
          EXPECT_LT(A.col[e], A.global_block_rows());
          if (e > A.row_ptr[row]) {
            EXPECT_LT(A.col[e - 1], A.col[e]);
          }
        }
      }
}

TEST(Elasticity, SymmetricWithPositiveDiagonal) {
  TestComm comm;
  CartGrid grid(comm, kGrid, choose_dims(desync_test::world_size(), {0, 0, 0}));
  const auto sys = assemble_elasticity3d(grid);
  const Dense D = gather(grid, sys);
  std::int64_t asym = 0, nonpos = 0;
  for (std::int64_t r = 0; r < D.n; ++r) {
    if (!(D(r, r) > 0)) ++nonpos;
    for (std::int64_t c = 0; c < r; ++c)
      if (D(r, c) != D(c, r)) ++asym;  // bitwise symmetric
  }
  EXPECT_EQ(asym, 0);
  EXPECT_EQ(nonpos, 0);
}

TEST(Elasticity, RigidBodyModes) {
  TestComm comm;
  CartGrid grid(comm, kGrid, choose_dims(desync_test::world_size(), {0, 0, 0}));
  const Dense D = gather(grid, assemble_elasticity3d(grid));
  const Index3 n = kGrid;
  const double amax = max_abs(D.A), tol = 1e-13 * amax;
  using U = std::array<double, 3>;
  // Translation along axis a: A t is 0 at every row of a node at least two nodes away from the
  // plane where component a is fixed (its row and the columns it couples to are unconstrained, or
  // constrained where t is 0).
  for (int a = 0; a < 3; ++a) {
    const auto t = sample(n, [a](double, double, double) { U u{0, 0, 0}; u[a] = 1; return u; });
    const auto f = multiply(D, t);
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) {
          const int g[3] = {i, j, k};
          if (g[a] < 2) continue;
          for (int c = 0; c < 3; ++c)
            EXPECT_NEAR(f[static_cast<std::size_t>(geo_dof(n, i, j, k, c))], 0.0, tol)
                << "translation " << a << " node " << i << "," << j << "," << k << " component " << c;
        }
  }
  // Rotations about the three axes: 0 at the nodes two or more nodes away from every symmetry
  // plane (top and far faces included: they carry no constraint).
  const std::function<U(double, double, double)> rot[3] = {
      [](double, double y, double z) { return U{0, -z, y}; },
      [](double x, double, double z) { return U{z, 0, -x}; },
      [](double x, double y, double) { return U{-y, x, 0}; }};
  for (int a = 0; a < 3; ++a) {
    const auto f = multiply(D, sample(n, rot[a]));
    for (int k = 2; k < n[2]; ++k)
      for (int j = 2; j < n[1]; ++j)
        for (int i = 2; i < n[0]; ++i)
          for (int c = 0; c < 3; ++c)
            EXPECT_NEAR(f[static_cast<std::size_t>(geo_dof(n, i, j, k, c))], 0.0, tol)
                << "rotation " << a << " node " << i << "," << j << "," << k << " component " << c;
  }
}

TEST(Elasticity, ReproducesUniaxialStressExactly) {
  // u = load / E (-nu x, -nu y, z) satisfies the symmetry-plane constraints and the traction on
  // z = 1; it is linear, so trilinear elements reproduce it and A u = b holds up to rounding.
  TestComm comm;
  ElasticityParams p;
  p.E = 2.5;
  p.nu = 0.3;
  p.load = 3.0;
  CartGrid grid(comm, kGrid, choose_dims(desync_test::world_size(), {0, 0, 0}));
  const Dense D = gather(grid, assemble_elasticity3d(grid, p));
  const double s = p.load / p.E;
  const auto u = sample(kGrid, [&](double x, double y, double z) {
    return std::array<double, 3>{-p.nu * s * x, -p.nu * s * y, s * z};
  });
  const auto Au = multiply(D, u);
  const double scale = max_abs(D.b);
  for (std::int64_t r = 0; r < D.n; ++r)
    EXPECT_NEAR(Au[static_cast<std::size_t>(r)], D.b[static_cast<std::size_t>(r)], 1e-12 * scale) << "row " << r;
}

TEST(Elasticity, LoadSumsToTotalForce) {
  TestComm comm;
  for (double load : {1.0, -2.5}) {
    ElasticityParams p;
    p.load = load;
    CartGrid grid(comm, kGrid, choose_dims(desync_test::world_size(), {0, 0, 0}));
    const auto sys = assemble_elasticity3d(grid, p);
    double sum[3] = {0, 0, 0};
    const Index3 l = grid.local();
    std::size_t row = 0;
    for (int k = 0; k < l[2]; ++k)
      for (int j = 0; j < l[1]; ++j)
        for (int i = 0; i < l[0]; ++i, ++row)
          for (int c = 0; c < 3; ++c) {
            const double v = sys.b[3 * row + c];
            sum[c] += v;
            if (c != 2 || grid.offset()[2] + k != kGrid[2] - 1) {
              EXPECT_EQ(v, 0.0);
            } else {
              EXPECT_EQ(v > 0, load > 0);  // the sign of the load: +z for a positive load
            }
          }
    MPI_Allreduce(MPI_IN_PLACE, sum, 3, MPI_DOUBLE, MPI_SUM, grid.comm());
    EXPECT_EQ(sum[0], 0.0);
    EXPECT_EQ(sum[1], 0.0);
    EXPECT_NEAR(sum[2], load, 1e-14 * std::abs(load));
    // Consistent nodal loads: corner 1/4, edge 1/2, interior 1 times load hx hy.
    const Dense D = gather(grid, sys);
    const double hxhy = load / ((kGrid[0] - 1) * (kGrid[1] - 1));
    const int top = kGrid[2] - 1;
    EXPECT_DOUBLE_EQ(D.b[static_cast<std::size_t>(geo_dof(kGrid, 0, 0, top, 2))], hxhy / 4);
    EXPECT_DOUBLE_EQ(D.b[static_cast<std::size_t>(geo_dof(kGrid, 2, 0, top, 2))], hxhy / 2);
    EXPECT_DOUBLE_EQ(D.b[static_cast<std::size_t>(geo_dof(kGrid, 2, 3, top, 2))], hxhy);
  }
}

TEST(Elasticity, ConstrainedDofsDecoupled) {
  TestComm comm;
  CartGrid grid(comm, kGrid, choose_dims(desync_test::world_size(), {0, 0, 0}));
  const Dense D = gather(grid, assemble_elasticity3d(grid));
  const Index3 n = kGrid;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        const int g[3] = {i, j, k};
        for (int c = 0; c < 3; ++c) {
          if (g[c] != 0) continue;
          const std::int64_t r = geo_dof(n, i, j, k, c);
          EXPECT_GT(D(r, r), 0.0);
          EXPECT_EQ(D.b[static_cast<std::size_t>(r)], 0.0);
          for (std::int64_t q = 0; q < D.n; ++q)
            if (q != r) {
              ASSERT_EQ(D(r, q), 0.0) << r << "," << q;
              ASSERT_EQ(D(q, r), 0.0) << q << "," << r;
            }
        }
      }
}

TEST(Elasticity, IndependentOfRanksAndProcessGrid) {
  TestComm comm;
  const int size = desync_test::world_size();
  // Reference: one rank (every rank assembles the whole problem on its own).
  CartGrid self(MPI_COMM_SELF, kGrid, {1, 1, 1});
  const Dense ref = gather(self, assemble_elasticity3d(self));
  std::vector<Index3> grids = {choose_dims(size, {0, 0, 0}), {size, 1, 1}, {1, size, 1}, {1, 1, size}};
  if (size == 4) grids.push_back({2, 1, 2});
  for (const Index3& dims : grids) {
    CartGrid grid(comm, kGrid, dims);
    const Dense D = gather(grid, assemble_elasticity3d(grid));
    ASSERT_EQ(D.A.size(), ref.A.size());
    // Bitwise: every entry sums the same element contributions in the same order.
    EXPECT_EQ(std::memcmp(D.A.data(), ref.A.data(), D.A.size() * sizeof(double)), 0)
        << dims[0] << "x" << dims[1] << "x" << dims[2];
    EXPECT_EQ(std::memcmp(D.b.data(), ref.b.data(), D.b.size() * sizeof(double)), 0)
        << dims[0] << "x" << dims[1] << "x" << dims[2];
  }
}

TEST(Elasticity, SmallestGridAndBadInput) {
  TestComm comm;
  const int size = desync_test::world_size();
  // 2 nodes per axis on one rank: a single element.
  CartGrid one(MPI_COMM_SELF, {2, 2, 2}, {1, 1, 1});
  const auto sys = assemble_elasticity3d(one);
  EXPECT_EQ(sys.A.nonzero_blocks(), 64);
  double total = 0;
  for (double v : sys.b) total += v;
  EXPECT_DOUBLE_EQ(total, 1.0);

  // An axis with a single node has no elements: InputError on every rank.
  CartGrid flat(comm, {1, 4, 4}, choose_dims(size, {1, 0, 0}));
  bool threw = false;
  try {
    assemble_elasticity3d(flat);
  } catch (const InputError& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find("at least 2 nodes"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(threw);
  CartGrid grid(comm, kGrid, choose_dims(size, {0, 0, 0}));
  ElasticityParams bad;
  bad.nu = 0.5;
  EXPECT_THROW(assemble_elasticity3d(grid, bad), InputError);
  bad = {};
  bad.E = 0;
  EXPECT_THROW(assemble_elasticity3d(grid, bad), InputError);
}
