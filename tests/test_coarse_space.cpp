// The coarse level of two-level Schwarz (solvers/schwarz/coarse/coarse_space.hpp) against dense references built
// here from the whole (small) matrix:
//   - DenseLu solves a non-symmetric system and refuses a singular one;
//   - Nicolaides: Phi 1 = 1 bitwise, A0 = Phi^T A Phi, symmetric and positive definite;
//   - GDSW: every interface row has one function; Phi reproduces the constant on every subdomain
//     whose rows sum to zero (the harmonic extension of 1 is 1), A0 = Phi^T A Phi, SPD;
//   - RGDSW: Phi against a serial dense transcription, the constant reproduced, fewer functions than
//     GDSW's where subdomains meet at a vertex;
//   - the two-level preconditioner: coarse none is the one-level preconditioner bitwise, and the
//     correction is z_one-level + Phi A0^-1 Phi^T r;
//   - CG with two-level asm (GDSW) converges to the solution;
//   - the coarse matrix on 1 or 2 coarse ranks (MUMPS): the same correction and coarse solve as
//     dense LU on every rank, within 1e-12 relative;
//   - K subdomains per rank: GDSW's and RGDSW's Phi against the serial reference on the pieces,
//     Nicolaides' the pieces' indicators;
//   - bad input: GDSW on one subdomain, more coarse ranks than ranks (and more than one without MUMPS);
//   - the registry: --coarse's choices and its error, a duplicate refused, and a space written as
//     docs/design.md's "Adding a coarse space" says (one global constant function) built from its
//     registration alone, Galerkin and with the correction of its one-dimensional A0.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/schwarz/overlap.hpp"
#include "desync/solvers/cg/cg.hpp"
#include "test_util.hpp"

using namespace desync;

using solvers::CoarseSpace;
using linalg::DistributedCsr;
using desync_test::world_rank;
using desync_test::world_size;

namespace {

using Dense = std::vector<std::vector<double>>;

/// The n x n grid Laplacian (5-point, unscaled) on `ranks` horizontal strips of rows, in the dense
/// form every rank holds and distributed in the strips' row blocks. With `dirichlet`, the usual
/// Dirichlet matrix (diagonal 4); without, the periodic graph Laplacian (zero row sums) plus 1 on
/// the diagonal of row 0 only, so that the matrix is SPD and only rank 0's rows do not sum to zero.
struct Problem {
  Dense a;
  DistributedCsr A;
};

/// With px > 0 the ranks are a px x (P / px) grid of blocks of the n x n points, each block's points
/// numbered contiguously (row by row within the block), so that rank q's rows are block q.
Problem grid_laplacian(int n, bool dirichlet, int px = 0) {
  const int N = n * n, P = world_size(), r = world_rank();
  const int py = px > 0 ? P / px : 1;
  std::vector<int> number(static_cast<std::size_t>(N));  // point y * n + x -> its row
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(P) + 1, 0);
  if (px > 0) {
    std::vector<std::vector<int>> block(static_cast<std::size_t>(P));
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) block[static_cast<std::size_t>((y * py / n) * px + x * px / n)].push_back(y * n + x);
    int next = 0;
    for (int q = 0; q < P; ++q) {
      for (const int point : block[static_cast<std::size_t>(q)]) number[static_cast<std::size_t>(point)] = next++;
      offsets[static_cast<std::size_t>(q) + 1] = next;
    }
  } else {
    for (int i = 0; i < N; ++i) number[static_cast<std::size_t>(i)] = i;
    for (int q = 0; q < P; ++q) offsets[static_cast<std::size_t>(q) + 1] = static_cast<std::int64_t>(N) * (q + 1) / P;
  }
  Problem p;
  p.a.assign(static_cast<std::size_t>(N), std::vector<double>(static_cast<std::size_t>(N), 0.0));
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const int i = number[static_cast<std::size_t>(y * n + x)];
      auto& row = p.a[static_cast<std::size_t>(i)];
      const int nb[4][2] = {{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
      row[static_cast<std::size_t>(i)] = 4.0;
      for (const auto& q : nb) {
        int qx = q[0], qy = q[1];
        if (!dirichlet) {
          qx = (qx + n) % n;
          qy = (qy + n) % n;
        } else if (qx < 0 || qx >= n || qy < 0 || qy >= n) {
          continue;
        }
        row[static_cast<std::size_t>(number[static_cast<std::size_t>(qy * n + qx)])] -= 1.0;
      }
    }
  if (!dirichlet) p.a[0][0] += 1.0;
  p.A.comm = MPI_COMM_WORLD;
  p.A.row_offsets = offsets;
  p.A.row_ptr.assign(1, 0);
  for (auto i = p.A.row_offsets[static_cast<std::size_t>(r)]; i < p.A.row_offsets[static_cast<std::size_t>(r) + 1]; ++i) {
    for (int j = 0; j < N; ++j)
      if (p.a[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] != 0.0) {
        p.A.col.push_back(j);
        p.A.val.push_back(p.a[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
      }
    p.A.row_ptr.push_back(static_cast<std::int64_t>(p.A.col.size()));
  }
  return p;
}

/// Phi, whole, on every rank (local_basis gathered).
Dense gather_phi(const CoarseSpace& c, const DistributedCsr& A) {
  const std::vector<double> mine = c.local_basis();
  const int P = world_size();
  std::vector<int> counts(static_cast<std::size_t>(P)), displs(static_cast<std::size_t>(P), 0);
  for (int q = 0; q < P; ++q)
    counts[static_cast<std::size_t>(q)] = static_cast<int>((A.row_offsets[static_cast<std::size_t>(q) + 1] - A.row_offsets[static_cast<std::size_t>(q)]) * c.size());
  for (int q = 1; q < P; ++q) displs[static_cast<std::size_t>(q)] = displs[static_cast<std::size_t>(q) - 1] + counts[static_cast<std::size_t>(q) - 1];
  std::vector<double> all(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, MPI_COMM_WORLD);
  const auto N = static_cast<std::size_t>(A.global_rows()), m = static_cast<std::size_t>(c.size());
  Dense phi(N, std::vector<double>(m));
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t k = 0; k < m; ++k) phi[i][k] = all[i * m + k];
  return phi;
}

/// max |A0 - Phi^T a Phi| / max |A0|, and A0's symmetry and definiteness (a dense Cholesky).
void check_galerkin(const CoarseSpace& c, const Dense& a, const Dense& phi) {
  const auto N = a.size(), m = static_cast<std::size_t>(c.size());
  Dense ap(N, std::vector<double>(m, 0.0));
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      if (a[i][j] != 0.0)
        for (std::size_t k = 0; k < m; ++k) ap[i][k] += a[i][j] * phi[j][k];
  double diff = 0, scale = 0, asym = 0;
  const auto& a0 = c.matrix();
  for (std::size_t k = 0; k < m; ++k)
    for (std::size_t l = 0; l < m; ++l) {
      double ref = 0;
      for (std::size_t i = 0; i < N; ++i) ref += phi[i][k] * ap[i][l];
      diff = std::max(diff, std::abs(a0[k * m + l] - ref));
      scale = std::max(scale, std::abs(ref));
      asym = std::max(asym, std::abs(a0[k * m + l] - a0[l * m + k]));
    }
  EXPECT_LE(diff, 1e-12 * scale);
  EXPECT_LE(asym, 1e-12 * scale);
  EXPECT_EQ(desync_test::first_nonpositive_pivot(a0, m), m) << "A0 is not positive definite";
}

}  // namespace

TEST(DenseLu, SolvesAndRefusesSingular) {
  const std::vector<double> a = {0.0, 2.0, 1.0, 3.0, 1.0, -1.0, 1.0, 4.0, 2.0};  // needs pivoting
  solvers::DenseLu lu(a, 3);
  const std::vector<double> x = {1.0, -2.0, 0.5};
  std::vector<double> b(3, 0.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) b[static_cast<std::size_t>(i)] += a[static_cast<std::size_t>(i * 3 + j)] * x[static_cast<std::size_t>(j)];
  lu.solve(b);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(b[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i)], 1e-14);
  EXPECT_THROW(solvers::DenseLu({1.0, 2.0, 2.0, 4.0}, 2), std::runtime_error);
}

TEST(CoarseSpace, NicolaidesReproducesTheConstantAndIsGalerkin) {
  const Problem p = grid_laplacian(8, true);
  const CoarseSpace c(p.A, "nicolaides");
  ASSERT_EQ(c.size(), world_size());
  const Dense phi = gather_phi(c, p.A);
  for (const auto& row : phi) {
    double s = 0;
    for (const double v : row) s += v;
    EXPECT_EQ(s, 1.0);  // one function per row, value 1: the constant exactly
  }
  check_galerkin(c, p.a, phi);
}

TEST(CoarseSpace, GdswReproducesTheConstantWhereRowsSumToZero) {
  if (world_size() < 2) GTEST_SKIP() << "GDSW needs an interface";
  const Problem p = grid_laplacian(8, false);  // only rank 0's rows fail to sum to zero
  const CoarseSpace c(p.A, "gdsw");
  const Dense phi = gather_phi(c, p.A);
  const auto& off = p.A.row_offsets;
  for (std::size_t i = 0; i < phi.size(); ++i) {
    double s = 0;
    for (const double v : phi[i]) s += v;
    if (static_cast<std::int64_t>(i) >= off[1]) {
      EXPECT_NEAR(s, 1.0, 1e-12) << "row " << i;
    }
  }
  check_galerkin(c, p.a, phi);
  // Dirichlet: every interface row carries exactly one function with value 1, A0 SPD.
  const Problem q = grid_laplacian(8, true);
  const CoarseSpace d(q.A, "gdsw");
  const Dense phq = gather_phi(d, q.A);
  check_galerkin(d, q.a, phq);
}

TEST(CoarseSpace, GdswRefusesOneSubdomain) {
  if (world_size() != 1) GTEST_SKIP() << "one rank only";
  const Problem p = grid_laplacian(4, true);
  EXPECT_THROW(CoarseSpace(p.A, "gdsw"), InputError);
}

namespace {

/// RGDSW's Phi from the dense matrix, serially (Dohrmann and Widlund, 2017, option 1): the keys
/// (the row's own and its neighbours' owners, interface where more than one), the nodes (the keys
/// no other key strictly contains, numbered in ascending key order), each interface row's value
/// 1/|A(c)| for each node among its ancestors A(c) (the nodes whose key contains its key), and the
/// harmonic extension into each subdomain's interior rows by a dense solve.
/// With `subdomain` (the subdomain of every row; empty: the ranks' row blocks in `offsets`) and
/// `reduced` false, GDSW's Phi alike: one function per key, 1 on its rows (keys ascending).
Dense interface_reference(const Dense& a, const std::vector<std::int64_t>& offsets, const std::vector<int>& subdomain,
                          bool reduced) {
  const std::size_t N = a.size();
  auto owner = [&](std::size_t i) {
    if (!subdomain.empty()) return subdomain[i];
    return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), static_cast<std::int64_t>(i)) - offsets.begin()) - 1;
  };
  std::vector<std::vector<int>> key(N);
  std::set<std::vector<int>> keys;
  for (std::size_t i = 0; i < N; ++i) {
    std::set<int> k{owner(i)};
    for (std::size_t j = 0; j < N; ++j)
      if (a[i][j] != 0.0) k.insert(owner(j));
    if (k.size() > 1) keys.insert(key[i] = std::vector<int>(k.begin(), k.end()));
  }
  std::vector<std::vector<int>> nodes;
  for (const auto& k : keys) {
    bool maximal = true;
    for (const auto& l : keys)
      if (l.size() > k.size() && std::includes(l.begin(), l.end(), k.begin(), k.end())) maximal = false;
    if (maximal || !reduced) nodes.push_back(k);
  }
  Dense phi(N, std::vector<double>(nodes.size(), 0.0));
  for (std::size_t i = 0; i < N; ++i) {
    if (key[i].empty()) continue;
    std::vector<std::size_t> ancestors;
    for (std::size_t n = 0; n < nodes.size(); ++n)
      if (reduced ? std::includes(nodes[n].begin(), nodes[n].end(), key[i].begin(), key[i].end()) : nodes[n] == key[i])
        ancestors.push_back(n);
    for (const std::size_t n : ancestors) phi[i][n] = 1.0 / static_cast<double>(ancestors.size());
  }
  int subdomains = 0;
  for (std::size_t i = 0; i < N; ++i) subdomains = std::max(subdomains, owner(i) + 1);
  for (int q = 0; q < subdomains; ++q) {  // phi_I = -a_II^-1 a_IG phi_G, subdomain by subdomain
    std::vector<std::size_t> interior;
    for (std::size_t i = 0; i < N; ++i)
      if (owner(i) == q && key[i].empty()) interior.push_back(i);
    const std::size_t m = interior.size();
    if (m == 0) continue;
    std::vector<double> aii(m * m);
    for (std::size_t s = 0; s < m; ++s)
      for (std::size_t t = 0; t < m; ++t) aii[s * m + t] = a[interior[s]][interior[t]];
    solvers::DenseLu lu(aii, static_cast<int>(m));
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      std::vector<double> rhs(m, 0.0);
      for (std::size_t s = 0; s < m; ++s)
        for (std::size_t j = 0; j < N; ++j)
          if (!key[j].empty()) rhs[s] -= a[interior[s]][j] * phi[j][n];
      lu.solve(rhs);
      for (std::size_t s = 0; s < m; ++s) phi[interior[s]][n] = rhs[s];
    }
  }
  return phi;
}

/// Phi gathered, checked against `ref` (the same functions, to 1e-12) and Galerkin with A0 SPD.
Dense matches_reference(const CoarseSpace& c, const Problem& p, const Dense& ref) {
  const Dense phi = gather_phi(c, p.A);
  EXPECT_EQ(static_cast<std::size_t>(c.size()), ref[0].size());
  if (static_cast<std::size_t>(c.size()) != ref[0].size()) return phi;
  double diff = 0;
  for (std::size_t i = 0; i < phi.size(); ++i)
    for (std::size_t k = 0; k < ref[i].size(); ++k) diff = std::max(diff, std::abs(phi[i][k] - ref[i][k]));
  EXPECT_LE(diff, 1e-12);
  check_galerkin(c, p.a, phi);
  return phi;
}

}  // namespace

// RGDSW: Phi equals the serial reference (on a 2 x 2 grid of blocks at 4 ranks: four nodes, one per
// corner row around the cross point, where GDSW has eight components), reproduces the constant where
// the rows sum to zero, is Galerkin with A0 SPD, and has fewer functions than GDSW's wherever
// subdomains meet at a vertex.
TEST(CoarseSpace, RgdswMatchesTheSerialReference) {
  if (world_size() < 2) GTEST_SKIP() << "RGDSW needs an interface";
  const int px = world_size() == 4 ? 2 : world_size();
  for (const bool dirichlet : {true, false}) {
    SCOPED_TRACE(dirichlet ? "dirichlet" : "periodic");
    const Problem p = grid_laplacian(12, dirichlet, px);
    const CoarseSpace c(p.A, "rgdsw");
    const Dense phi = matches_reference(c, p, interface_reference(p.a, p.A.row_offsets, {}, true));
    if (!dirichlet) {
      for (auto i = static_cast<std::size_t>(p.A.row_offsets[1]); i < phi.size(); ++i) {
        double s = 0;
        for (const double v : phi[i]) s += v;
        EXPECT_NEAR(s, 1.0, 1e-12) << "row " << i;
      }
    } else {
      const CoarseSpace g(p.A, "gdsw");
      if (world_size() == 4) {
        EXPECT_EQ(c.size(), 4);  // the four corner rows around the cross point
        EXPECT_EQ(g.size(), 8);  // and GDSW's four edges beside them
      } else {
        EXPECT_EQ(c.size(), g.size());  // strips: every component is an edge between two strips, a node
      }
    }
  }
}

// K subdomains per rank (--subdomains-per-rank, CoarseOptions::subdomains_per_rank): the space is
// built on the K p pieces, the pieces the local solves use (linalg::block_pieces of each rank's own
// rows): GDSW's and RGDSW's Phi equal the serial reference on that labelling (keys from the pieces,
// the harmonic extension piece by piece), Nicolaides' columns are the pieces' indicators, each is
// Galerkin with A0 SPD, and one rank with K > 1 has an interface (K = 1 there is refused above).
TEST(CoarseSpace, PiecesPerRankMatchTheSerialReferenceOnThePieces) {
  const int K = 3;
  const Problem p = grid_laplacian(12, true);
  // Every row's subdomain, rank * K + its piece, gathered from the ranks.
  const int r = world_rank(), P = world_size();
  const linalg::LocalCsr own = linalg::owned_block(p.A, r);
  std::vector<int> mine = linalg::block_pieces(own, 0, own.rows, K);
  for (int& l : mine) l += r * K;
  std::vector<int> counts(static_cast<std::size_t>(P)), displs(static_cast<std::size_t>(P), 0);
  for (int q = 0; q < P; ++q)
    counts[static_cast<std::size_t>(q)] = static_cast<int>(p.A.row_offsets[static_cast<std::size_t>(q) + 1] - p.A.row_offsets[static_cast<std::size_t>(q)]);
  for (int q = 1; q < P; ++q) displs[static_cast<std::size_t>(q)] = displs[static_cast<std::size_t>(q) - 1] + counts[static_cast<std::size_t>(q) - 1];
  std::vector<int> subdomain(p.a.size());
  MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_INT, subdomain.data(), counts.data(), displs.data(),
                 MPI_INT, MPI_COMM_WORLD);
  for (const bool reduced : {false, true}) {
    SCOPED_TRACE(reduced ? "rgdsw" : "gdsw");
    solvers::CoarseOptions o;
    o.kind = reduced ? "rgdsw" : "gdsw";
    o.subdomains_per_rank = K;
    const CoarseSpace c(p.A, o);
    matches_reference(c, p, interface_reference(p.a, p.A.row_offsets, subdomain, reduced));
    EXPECT_NE(c.description().find(std::to_string(K * P) + " subdomains, 3 per rank"), std::string::npos) << c.description();
    if (!reduced && world_size() > 1) {  // the pieces' space is not the ranks' (K = 1): more functions
      const CoarseSpace ranks_only(p.A, "gdsw");
      EXPECT_GT(c.size(), ranks_only.size());
    }
  }
  solvers::CoarseOptions o;
  o.kind = "nicolaides";
  o.subdomains_per_rank = K;
  const CoarseSpace c(p.A, o);
  const Dense phi = gather_phi(c, p.A);
  ASSERT_EQ(c.size(), K * P);
  for (std::size_t i = 0; i < phi.size(); ++i)
    for (int k = 0; k < K * P; ++k)
      EXPECT_EQ(phi[i][static_cast<std::size_t>(k)], subdomain[i] == k ? 1.0 : 0.0) << "row " << i << ", piece " << k;
  check_galerkin(c, p.a, phi);
}

TEST(TwoLevelSchwarz, CorrectionIsAddedToTheOneLevelPreconditioner) {
  const Problem p = grid_laplacian(10, true);
  const std::int64_t n = p.A.local_rows();
  std::vector<double> r(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = std::sin(1.0 + static_cast<double>(p.A.first_block_row() + i));
  solvers::SubdomainOptions o;
  o.overlap = 1;
  std::vector<double> z1(r.size()), z0(r.size()), z2(r.size());
  solvers::SchwarzPreconditioner one(p.A, o, false);
  one.apply(r, z1);
  o.coarse.kind = "none";
  solvers::SchwarzPreconditioner none(p.A, o, false);
  none.apply(r, z0);
  EXPECT_EQ(z0, z1);  // coarse none: the one-level preconditioner bitwise
  for (const std::string kind : {"nicolaides", "gdsw"}) {
    if (kind == "gdsw" && world_size() < 2) continue;
    o.coarse.kind = kind;
    solvers::SchwarzPreconditioner two(p.A, o, false);
    two.apply(r, z2);
    CoarseSpace c(p.A, kind);
    std::vector<double> expect = z1;
    c.add_correction(r, expect);  // z1 + Phi A0^-1 Phi^T r
    for (std::size_t i = 0; i < r.size(); ++i) EXPECT_DOUBLE_EQ(z2[i], expect[i]);
  }
}

TEST(TwoLevelSchwarz, CgConvergesToTheSolution) {
  if (world_size() < 2) GTEST_SKIP() << "GDSW needs an interface";
  const Problem p = grid_laplacian(16, true);
  const auto op = linalg::make_csr_operator(p.A, linalg::SpmvConfig{});
  std::vector<double> b(static_cast<std::size_t>(p.A.local_rows()), 1.0);
  long its[2] = {0, 0};
  for (int two = 0; two < 2; ++two) {
    solvers::CgOptions o;
    o.method = "cg";
    o.pc = "asm";
    o.pc_matrix = &p.A;
    o.pc_subdomains.overlap = 1;
    o.pc_subdomains.coarse.kind = two ? "gdsw" : "none";
    o.iteration.tol = 1e-10;
    std::vector<double> x(b.size(), 0.0);
    const auto result = solvers::solve_cg(*op, b, x, o);
    EXPECT_TRUE(result.converged) << result.message;
    its[two] = static_cast<long>(result.iterations);
    // against the dense direct solve
    const auto N = p.a.size();
    std::vector<double> ax(b.size(), 0.0);
    op->apply(x, ax);
    double res = 0;
    for (std::size_t i = 0; i < b.size(); ++i) res = std::max(res, std::abs(ax[i] - b[i]));
    EXPECT_LT(res, 1e-7) << N;
  }
  // Strips all touch the boundary: the coarse level need not save iterations here (the counts at 4,
  // 9 and 16 subdomains are tests/coarse_counts.py's); it must not cost many.
  EXPECT_LE(its[1], its[0] + 3);
}

// With MUMPS on 1 and 2 coarse ranks; without MUMPS (MPICH), coarse ranks 1 is SuiteSparse on rank 0
// (CHOLMOD: A0 is symmetric positive definite here).
TEST(CoarseSpace, MumpsOnCoarseRanksMatchesDenseLu) {
  const Problem p = grid_laplacian(10, true);
  const std::int64_t n = p.A.local_rows();
  std::vector<double> r(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = std::cos(0.5 + static_cast<double>(p.A.first_block_row() + i));
  const auto max_abs = [](const std::vector<double>& v) {
    double m = 0;
    for (const double x : v) m = std::max(m, std::abs(x));
    return m;
  };
  for (const std::string kind : {"nicolaides", "gdsw"}) {
    if (kind == "gdsw" && world_size() < 2) continue;
    const CoarseSpace dense(p.A, kind);
    std::vector<double> z0(r.size(), 0.0);
    dense.add_correction(r, z0);
    double scale = max_abs(z0);
    MPI_Allreduce(MPI_IN_PLACE, &scale, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const std::vector<double> c = dense.restrict_to_coarse(r);
    for (int k = 1; k <= std::min(solvers::have_mumps() ? 2 : 1, world_size()); ++k) {
      const CoarseSpace sparse(p.A, solvers::CoarseOptions{kind, {}, k});
      EXPECT_EQ(sparse.coarse_ranks(), k);
      EXPECT_STREQ(sparse.solver_name(), solvers::have_mumps() ? "mumps" : "cholmod-simplicial-rank0");
      ASSERT_EQ(sparse.size(), dense.size());
      EXPECT_EQ(sparse.matrix_nonzeros(), dense.matrix_nonzeros());
      // The factors' entries: dense n^2; sparse at least A0's lower triangle, at most n^2 (the same on
      // every rank); a solve one multiply-add per entry of LU (dense, MUMPS), two of CHOLMOD's L.
      const auto nc = static_cast<std::int64_t>(dense.size());
      EXPECT_EQ(dense.factor_nonzeros(), nc * nc);
      EXPECT_EQ(dense.solve_multiply_adds(), static_cast<double>(nc * nc));
      EXPECT_GE(sparse.factor_nonzeros(), (sparse.matrix_nonzeros() + nc) / 2);
      EXPECT_LE(sparse.factor_nonzeros(), nc * nc);
      std::int64_t fill[2] = {sparse.factor_nonzeros(), -sparse.factor_nonzeros()};
      MPI_Allreduce(MPI_IN_PLACE, fill, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_EQ(fill[0], -fill[1]) << "factor entries differ between ranks";
      EXPECT_EQ(sparse.solve_multiply_adds(),
                static_cast<double>(sparse.factor_nonzeros()) * (solvers::have_mumps() ? 1.0 : 2.0));
      const auto& a = dense.matrix();
      const auto& b = sparse.matrix();  // gathered: size() is small
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t e = 0; e < a.size(); ++e) EXPECT_NEAR(a[e], b[e], 1e-12 * max_abs(a)) << "entry " << e;
      std::vector<double> z(r.size(), 0.0);
      sparse.add_correction(r, z);
      double diff = 0;
      for (std::size_t i = 0; i < z.size(); ++i) diff = std::max(diff, std::abs(z[i] - z0[i]));
      MPI_Allreduce(MPI_IN_PLACE, &diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_LE(diff, 1e-12 * scale) << kind << " on " << k << " coarse ranks";
      // solve: k = 1 on rank 0 alone; k = 2 on ranks 0 and 1 together, the solution on both.
      if (world_rank() < k) {
        std::vector<double> x0 = c, x = c;
        dense.solve(x0);
        sparse.solve(x);
        for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], x0[i], 1e-12 * max_abs(x0)) << "entry " << i;
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
}

TEST(CoarseSpace, CoarseRanksAboveTheRunOrWithoutMumpsAreRefused) {
  const Problem p = grid_laplacian(4, true);
  try {
    const CoarseSpace c(p.A, solvers::CoarseOptions{"nicolaides", {}, world_size() + 1});
    ADD_FAILURE() << "more coarse ranks than ranks accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("above the"), std::string::npos) << e.what();
  }
  if (!solvers::have_mumps() && world_size() >= 2) {  // more than one coarse rank needs MUMPS
    EXPECT_THROW(CoarseSpace(p.A, solvers::CoarseOptions{"nicolaides", {}, 2}), InputError);
  }
}

namespace {

/// docs/design.md's "Adding a coarse space", followed once: a space of one function, the constant on
/// every row (the coarsest of all; not registered), as its file would define it.
solvers::CoarseBasis build_global_constant(const solvers::CoarseBasisInput& in) {
  solvers::CoarseBasis phi;
  phi.size = 1;
  phi.ptr.assign(1, 0);
  for (std::int64_t i = 0; i < in.A.local_rows(); ++i) {
    phi.col.push_back(0);
    phi.val.push_back(1.0);
    phi.ptr.push_back(static_cast<std::int64_t>(phi.col.size()));
  }
  return phi;
}

solvers::CoarseSpaceInfo global_constant_coarse_space() {
  return {"global-constant", "one coarse function, the constant on every row", &build_global_constant};
}

}  // namespace

TEST(CoarseRegistry, ChoicesErrorsAndDuplicates) {
  const auto& spaces = solvers::coarse_space_registry().spaces();
  ASSERT_EQ(spaces.size(), 3u);
  EXPECT_EQ(spaces[0].name, "nicolaides");
  EXPECT_EQ(spaces[1].name, "gdsw");
  EXPECT_EQ(spaces[2].name, "rgdsw");
  for (const auto& s : spaces) {
    EXPECT_FALSE(s.description.empty());
    EXPECT_NE(s.build, nullptr);
    EXPECT_EQ(&solvers::find_coarse_space(s.name), &s);
  }
  EXPECT_EQ(solvers::parse_coarse("none"), "none");
  EXPECT_EQ(solvers::parse_coarse("gdsw"), "gdsw");
  try {
    solvers::parse_coarse("bddc");
    ADD_FAILURE() << "bddc accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--coarse 'bddc': unknown coarse space (expected none, nicolaides, gdsw or rgdsw)");
  }
  EXPECT_THROW(solvers::find_coarse_space("none"), InputError);
  EXPECT_EQ(solvers::coarse_help().rfind("none | nicolaides | gdsw | rgdsw\n  none: one level", 0), 0u) << solvers::coarse_help();
  solvers::CoarseSpaceRegistry r;
  solvers::register_all_coarse_spaces(r);
  EXPECT_THROW(r.add(solvers::gdsw_coarse_space()), std::logic_error);
  EXPECT_THROW(r.add({"none", "one level", &build_global_constant}), std::logic_error);
  r.add(global_constant_coarse_space());  // the one line a new space adds
  EXPECT_NE(r.find("global-constant"), nullptr);
}

TEST(CoarseRegistry, ANewSpaceFromItsRegistrationIsGalerkin) {
  const Problem p = grid_laplacian(6, true);
  const CoarseSpace c(p.A, global_constant_coarse_space(), solvers::CoarseOptions{});
  EXPECT_EQ(c.kind(), "global-constant");
  ASSERT_EQ(c.size(), 1);
  const Dense phi = gather_phi(c, p.A);
  check_galerkin(c, p.a, phi);
  double total = 0;  // A0 = 1^T A 1, the sum of every entry
  for (const auto& row : p.a)
    for (const double v : row) total += v;
  EXPECT_NEAR(c.matrix()[0], total, 1e-12 * std::abs(total));
  // The correction z += Phi A0^-1 Phi^T r: every row gets (sum of r) / A0.
  const auto rows = static_cast<std::size_t>(p.A.local_rows());
  std::vector<double> r(rows), z(rows, 0.0);
  double local = 0, sum = 0;
  for (std::size_t i = 0; i < rows; ++i) local += (r[i] = 1.0 + 0.25 * static_cast<double>(i % 3));
  MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  c.add_correction(r, z);
  for (std::size_t i = 0; i < rows; ++i) EXPECT_NEAR(z[i], sum / total, 1e-12 * std::abs(sum / total));
}
