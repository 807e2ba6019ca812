// The rank-local direct solvers (linalg/local_solver.hpp): every factorisation solves to rounding
// error, auto chooses as documented, and bad matrices give the documented errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "desync/linalg/local_solver.hpp"
#include "matrix_test_util.hpp"

using namespace desync::linalg;

namespace {

// 5-point matrix on an n x n grid; wind > 0 adds an upwind convection term (non-symmetric M-matrix).
LocalCsr grid2d(int n, double wind = 0.0, double shift = 0.0) {
  LocalCsr a;
  a.rows = static_cast<std::int64_t>(n) * n;
  a.row_ptr.push_back(0);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const int i = y * n + x;
      auto add = [&](int j, double v) {
        a.col.push_back(j);
        a.val.push_back(v);
      };
      if (y > 0) add(i - n, -1.0);
      if (x > 0) add(i - 1, -1.0 - wind);
      add(i, 4.0 + wind + shift);
      if (x < n - 1) add(i + 1, -1.0);
      if (y < n - 1) add(i + n, -1.0);
      a.row_ptr.push_back(static_cast<std::int64_t>(a.col.size()));
    }
  return a;
}

// 7-point matrix on an n x n x nz grid.
LocalCsr grid3d(int n, int nz) {
  LocalCsr a;
  a.rows = static_cast<std::int64_t>(n) * n * nz;
  a.row_ptr.push_back(0);
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const int i = (z * n + y) * n + x;
        auto add = [&](int j, double v) {
          a.col.push_back(j);
          a.val.push_back(v);
        };
        if (z > 0) add(i - n * n, -1.0);
        if (y > 0) add(i - n, -1.0);
        if (x > 0) add(i - 1, -1.0);
        add(i, 6.0);
        if (x < n - 1) add(i + 1, -1.0);
        if (y < n - 1) add(i + n, -1.0);
        if (z < nz - 1) add(i + n * n, -1.0);
        a.row_ptr.push_back(static_cast<std::int64_t>(a.col.size()));
      }
  return a;
}

// ||b - A x||_inf / ||b||_inf
double residual(const LocalCsr& a, const std::vector<double>& x, const std::vector<double>& b) {
  double r = 0, bn = 0;
  for (double v : desync_test::local_residual(a, x, b)) r = std::max(r, std::abs(v));
  for (double v : b) bn = std::max(bn, std::abs(v));
  return r / bn;
}

std::vector<double> rhs(std::int64_t n) {
  std::vector<double> b(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::sin(0.1 * static_cast<double>(i)) + 1.5;
  return b;
}

}  // namespace

TEST(LocalSolver, EveryKindSolvesAnSpdMatrix) {
  const LocalCsr a = grid2d(30);
  const auto b = rhs(a.rows);
  std::vector<double> ref;
  for (auto kind : {LocalSolverKind::cholmod_simplicial, LocalSolverKind::cholmod_supernodal, LocalSolverKind::cholmod,
                    LocalSolverKind::umfpack, LocalSolverKind::automatic}) {
    auto s = make_local_solver(a, kind);
    std::vector<double> x(b.size());
    s->solve(b.data(), x.data());
    EXPECT_LT(residual(a, x, b), 1e-13) << s->name();
    if (ref.empty()) ref = x;
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], ref[i], 1e-12 * std::abs(ref[i]) + 1e-14);
    EXPECT_GT(s->factor_nonzeros(), a.rows);
  }
}

TEST(LocalSolver, AutoPicksCholmodSimplicialForSmallSpdAndUmfpackOtherwise) {
  auto spd = make_local_solver(grid2d(20), LocalSolverKind::automatic);
  EXPECT_EQ(spd->kind(), LocalSolverKind::cholmod_simplicial);
  EXPECT_NE(spd->reason().find("symmetric, positive diagonal"), std::string::npos) << spd->reason();

  const LocalCsr ns = grid2d(20, 0.7);
  auto lu = make_local_solver(ns, LocalSolverKind::automatic);
  EXPECT_EQ(lu->kind(), LocalSolverKind::umfpack);
  const auto b = rhs(ns.rows);
  std::vector<double> x(b.size());
  lu->solve(b.data(), x.data());
  EXPECT_LT(residual(ns, x, b), 1e-13);

  // Symmetric with a positive diagonal but indefinite: CHOLMOD refuses, auto falls back to UMFPACK.
  const LocalCsr indefinite = grid2d(12, 0.0, -4.5);
  // shift -4.5 makes the diagonal -0.5: not a positive diagonal, UMFPACK straight away.
  EXPECT_EQ(make_local_solver(indefinite, LocalSolverKind::automatic)->kind(), LocalSolverKind::umfpack);
  const LocalCsr indefinite2 = grid2d(12, 0.0, -1.0);  // diagonal 3 > 0, eigenvalues down to about -1
  auto fallback = make_local_solver(indefinite2, LocalSolverKind::automatic);
  EXPECT_EQ(fallback->kind(), LocalSolverKind::umfpack);
  EXPECT_NE(fallback->reason().find("not positive definite"), std::string::npos) << fallback->reason();
}

TEST(LocalSolver, AutoOnLargeBlocksTrialsOnly3D) {
  using desync::linalg::LocalSolverUse;
  auto solves = [](const LocalCsr& a, desync::linalg::LocalSolver& s) {
    const auto b = rhs(a.rows);
    std::vector<double> x(b.size());
    s.solve(b.data(), x.data());
    EXPECT_LT(residual(a, x, b), 1e-10) << s.reason();  // cond(A) ~ 1e4 here
  };
  // 2D, 22500 rows >= auto_trial_rows: the analysis counts ~80 flops per entry of L, below
  // supernodal_flops_per_entry, so simplicial without a trial, for either use.
  const LocalCsr a2 = grid2d(150);
  for (auto use : {LocalSolverUse::many_solves, LocalSolverUse::few_solves}) {
    auto s = make_local_solver(a2, LocalSolverKind::automatic, use);
    EXPECT_EQ(s->kind(), LocalSolverKind::cholmod_simplicial) << s->reason();
    EXPECT_NE(s->reason().find("flops per factor entry"), std::string::npos) << s->reason();
    EXPECT_EQ(s->reason().find("trial: simplicial"), std::string::npos) << s->reason();
    solves(a2, *s);
  }
  // 3D, 20328 rows, ~440 flops per entry: above the switch; solved many times, both modes are
  // factored and timed; solved a few times, supernodal (the faster factorisation) without a trial.
  const LocalCsr a3 = grid3d(22, 42);
  auto many = make_local_solver(a3, LocalSolverKind::automatic);
  EXPECT_NE(many->reason().find("trial: simplicial"), std::string::npos) << many->reason();
  EXPECT_TRUE(many->kind() == LocalSolverKind::cholmod_simplicial || many->kind() == LocalSolverKind::cholmod_supernodal);
  solves(a3, *many);
  auto few = make_local_solver(a3, LocalSolverKind::automatic, LocalSolverUse::few_solves);
  EXPECT_EQ(few->kind(), LocalSolverKind::cholmod_supernodal) << few->reason();
  EXPECT_EQ(few->reason().find("trial"), std::string::npos) << few->reason();
  solves(a3, *few);
}

TEST(LocalSolver, ErrorsNameTheProblem) {
  // A non-positive-definite matrix given to CHOLMOD explicitly.
  try {
    make_local_solver(grid2d(12, 0.0, -1.0), LocalSolverKind::cholmod_simplicial);
    FAIL() << "no error";
  } catch (const FactorisationError& e) {
    EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos) << e.what();
  }
  // A singular matrix (a zero row) to UMFPACK.
  LocalCsr z = grid2d(4);
  for (auto p = z.row_ptr[5]; p < z.row_ptr[6]; ++p) z.val[static_cast<std::size_t>(p)] = 0.0;
  try {
    make_local_solver(z, LocalSolverKind::umfpack);
    FAIL() << "no error";
  } catch (const FactorisationError& e) {
    EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
  }
}

namespace {

/// ILU(k) by its definition, densely (Saad, 2003, Algorithm 10.5): A's entries have level 0, others
/// infinite; for each row i, for each k < i whose level is at most `levels`, the multiplier a_ik /= a_kk
/// and a_i* -= a_ik a_k* on every column, the level of (i, j) lowered to lev_ik + lev_kj + 1; at the
/// row's end every entry above `levels` set to zero. Then the two triangular solves. levels 0: ILU(0)
/// (Algorithm 10.4).
/// relax = omega > 0: at the row's end the entries above `levels` are moved onto the diagonal times
/// omega before they are zeroed (relaxed modified ILU; Saad, 2003, section 10.3.5).
std::vector<double> iluk_reference(const LocalCsr& a, const std::vector<double>& b, int levels, double relax = 0.0) {
  const auto n = static_cast<std::size_t>(a.rows);
  constexpr int inf = 1 << 20;
  std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
  std::vector<std::vector<int>> lev(n, std::vector<int>(n, inf));
  for (std::size_t i = 0; i < n; ++i)
    for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      m[i][static_cast<std::size_t>(a.col[static_cast<std::size_t>(p)])] = a.val[static_cast<std::size_t>(p)];
      lev[i][static_cast<std::size_t>(a.col[static_cast<std::size_t>(p)])] = 0;
    }
  for (std::size_t i = 1; i < n; ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (lev[i][k] > levels) continue;
      m[i][k] /= m[k][k];
      for (std::size_t j = k + 1; j < n; ++j) {
        if (lev[k][j] > levels) continue;  // row k is final: its dropped entries are zero
        m[i][j] -= m[i][k] * m[k][j];
        lev[i][j] = std::min(lev[i][j], lev[i][k] + lev[k][j] + 1);
      }
    }
    for (std::size_t j = 0; j < n; ++j)
      if (lev[i][j] > levels) {
        m[i][i] += relax * m[i][j];
        m[i][j] = 0.0;
      }
  }
  std::vector<double> x(b);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < i; ++j) x[i] -= m[i][j] * x[j];
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = i + 1; j < n; ++j) x[i] -= m[i][j] * x[j];
    x[i] /= m[i][i];
  }
  return x;
}

}  // namespace

// ILU(0): equal to its dense definition on the 2D grid (symmetric and upwind), exact where no fill
// is dropped (a tridiagonal block), only approximate on the grid (its residual well above
// rounding), the factor's entries A's own, and a zero pivot or a missing diagonal refused.
TEST(LocalSolver, Ilu0IsItsDefinition) {
  for (const double wind : {0.0, 0.7}) {
    const LocalCsr a = grid2d(9, wind);
    const auto b = rhs(a.rows);
    auto s = make_local_solver(a, LocalSolverKind::ilu0);
    EXPECT_EQ(s->kind(), LocalSolverKind::ilu0);
    EXPECT_FALSE(exact(s->kind()));
    EXPECT_EQ(s->factor_nonzeros(), static_cast<std::int64_t>(a.val.size()));
    std::vector<double> x(b.size());
    s->solve(b.data(), x.data());
    const std::vector<double> ref = iluk_reference(a, b, 0);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], ref[i], 1e-12 * std::abs(ref[i]) + 1e-14) << i;
    EXPECT_GT(residual(a, x, b), 1e-3) << "ILU(0) of the 5-point matrix drops fill: not a direct solve";
  }
  LocalCsr chain;  // a 1D chain, tridiagonal (non-symmetric): no fill to drop
  chain.rows = 40;
  chain.row_ptr.push_back(0);
  for (int i = 0; i < 40; ++i) {
    if (i > 0) {
      chain.col.push_back(i - 1);
      chain.val.push_back(-1.0);
    }
    chain.col.push_back(i);
    chain.val.push_back(2.5);
    if (i < 39) {
      chain.col.push_back(i + 1);
      chain.val.push_back(-1.2);
    }
    chain.row_ptr.push_back(static_cast<std::int64_t>(chain.col.size()));
  }
  const auto b = rhs(chain.rows);
  std::vector<double> x(b.size());
  make_local_solver(chain, LocalSolverKind::ilu0)->solve(b.data(), x.data());
  EXPECT_LT(residual(chain, x, b), 1e-13);
  LocalCsr z = grid2d(3);
  z.val[static_cast<std::size_t>(z.row_ptr[0])] = 0.0;  // row 0's diagonal: a zero pivot at once
  try {
    make_local_solver(z, LocalSolverKind::ilu0);
    FAIL() << "no error";
  } catch (const FactorisationError& e) {
    EXPECT_NE(std::string(e.what()).find("zero pivot in ILU(0) at row 0"), std::string::npos) << e.what();
  }
  LocalCsr d;  // [[0, 1], [1, 0]]: row 0 has no diagonal entry
  d.rows = 2;
  d.row_ptr = {0, 1, 2};
  d.col = {1, 0};
  d.val = {1.0, 1.0};
  EXPECT_THROW(make_local_solver(d, LocalSolverKind::ilu0), FactorisationError);
}

// ILU(k), k = 1..3: equal to the dense definition with levels of fill (symmetric and upwind grids),
// the factor growing and the solve nearing A^-1 with k; on a 3 x 3 grid, whose whole LU fill has
// level at most 3, ILU(2) drops some and ILU(3) is a direct solve; a missing diagonal is refused
// with the level named.
TEST(LocalSolver, IlukIsItsDefinition) {
  for (const double wind : {0.0, 0.7}) {
    const LocalCsr a = grid2d(9, wind);
    const auto b = rhs(a.rows);
    std::int64_t previous_fill = static_cast<std::int64_t>(a.val.size());
    std::vector<double> x(b.size());
    make_local_solver(a, LocalSolverKind::ilu0)->solve(b.data(), x.data());
    double previous_residual = residual(a, x, b);
    for (int k = 1; k <= 3; ++k) {
      auto s = make_local_solver(a, ilu_kind(k));
      EXPECT_EQ(s->kind(), ilu_kind(k));
      EXPECT_FALSE(exact(s->kind()));
      EXPECT_STREQ(s->name(), ("ilu" + std::to_string(k)).c_str());
      EXPECT_GT(s->factor_nonzeros(), previous_fill) << "ILU(" << k << ") adds fill";
      previous_fill = s->factor_nonzeros();
      s->solve(b.data(), x.data());
      const std::vector<double> ref = iluk_reference(a, b, k);
      for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], ref[i], 1e-12 * std::abs(ref[i]) + 1e-14) << k << " " << i;
      const double r = residual(a, x, b);
      EXPECT_LT(r, previous_residual) << "ILU(" << k << ") nearer A^-1 than ILU(" << k - 1 << ")";
      EXPECT_GT(r, 1e-10) << "ILU(" << k << ") on a 9 x 9 grid still drops fill";
      previous_residual = r;
    }
  }
  const LocalCsr small = grid2d(3, 0.4);
  const auto b = rhs(small.rows);
  std::vector<double> x(b.size());
  make_local_solver(small, LocalSolverKind::ilu2)->solve(b.data(), x.data());
  EXPECT_GT(residual(small, x, b), 1e-8);
  make_local_solver(small, LocalSolverKind::ilu3)->solve(b.data(), x.data());
  EXPECT_LT(residual(small, x, b), 1e-13);
  LocalCsr d;  // [[0, 1], [1, 0]]: row 0 has no diagonal entry
  d.rows = 2;
  d.row_ptr = {0, 1, 2};
  d.col = {1, 0};
  d.val = {1.0, 1.0};
  try {
    make_local_solver(d, LocalSolverKind::ilu2);
    FAIL() << "no error";
  } catch (const FactorisationError& e) {
    EXPECT_NE(std::string(e.what()).find("zero pivot in ILU(2) at row 0 (no diagonal entry)"), std::string::npos) << e.what();
  }
}

// Relaxed modified ILU(k) (ilu_relax = omega): equal to the dense definition with the dropped fill
// moved onto the diagonal times omega (symmetric and upwind grids, k = 0..2); omega = 1 keeps A's
// row sums, so M^-1 (A e) = e to rounding at every k where plain ILU(k) misses it; one piece in a
// block solver is the same factorisation bitwise; a pivot the relaxation drives below zero (a
// badly scaled matrix) and a relaxation outside [0, 1] or with an exact solver are refused.
TEST(LocalSolver, RelaxedIluIsModifiedIlu) {
  for (const double wind : {0.0, 0.7}) {
    const LocalCsr a = grid2d(9, wind);
    const auto b = rhs(a.rows);
    std::vector<double> x(b.size());
    for (int k = 0; k <= 2; ++k)
      for (const double omega : {0.5, 1.0}) {
        auto s = make_local_solver(a, ilu_kind(k), LocalSolverUse::many_solves, omega);
        EXPECT_EQ(s->kind(), ilu_kind(k));
        EXPECT_NE(s->reason().find("relaxed"), std::string::npos) << s->reason();
        s->solve(b.data(), x.data());
        const std::vector<double> ref = iluk_reference(a, b, k, omega);
        const std::vector<double> plain = iluk_reference(a, b, k);
        double moved = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          EXPECT_NEAR(x[i], ref[i], 1e-12 * std::abs(ref[i]) + 1e-14) << k << " " << omega << " " << i;
          moved = std::max(moved, std::abs(ref[i] - plain[i]));
        }
        EXPECT_GT(moved, 1e-3) << "ILU(" << k << ") drops fill on a 9 x 9 grid: the relaxation changes M";
      }
    // Row sums: A e, then M^-1 (A e).
    std::vector<double> ae(static_cast<std::size_t>(a.rows), 0.0);
    for (std::size_t i = 0; i < ae.size(); ++i)
      for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) ae[i] += a.val[static_cast<std::size_t>(p)];
    for (int k = 0; k <= 3; ++k) {
      double milu = 0, plain = 0;
      make_local_solver(a, ilu_kind(k), LocalSolverUse::many_solves, 1.0)->solve(ae.data(), x.data());
      for (double v : x) milu = std::max(milu, std::abs(v - 1.0));
      make_local_solver(a, ilu_kind(k))->solve(ae.data(), x.data());
      for (double v : x) plain = std::max(plain, std::abs(v - 1.0));
      EXPECT_LT(milu, 1e-12) << "MILU(" << k << ") keeps A's row sums";
      EXPECT_GT(plain, 1e-4) << "ILU(" << k << ") does not";
    }
    LocalBlocks one;  // one piece, every row: the local solver itself
    std::vector<double> y(b.size());
    make_block_solver(a, one, LocalSolverKind::ilu1, 0.9)->solve(b.data(), x.data());
    make_local_solver(a, LocalSolverKind::ilu1, LocalSolverUse::many_solves, 0.9)->solve(b.data(), y.data());
    EXPECT_EQ(x, y);
  }
  // D A D with D over three decades: SPD, an M-matrix, but not diagonally dominant; plain ILU(0)
  // keeps its pivots positive, the relaxed one drives one below zero and is refused.
  LocalCsr scaled = grid2d(9);
  std::vector<double> d(static_cast<std::size_t>(scaled.rows));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::pow(10.0, 1.5 * std::sin(1.7 * static_cast<double>(i)));
  for (std::size_t i = 0; i < d.size(); ++i)
    for (auto p = scaled.row_ptr[i]; p < scaled.row_ptr[i + 1]; ++p)
      scaled.val[static_cast<std::size_t>(p)] *= d[i] * d[static_cast<std::size_t>(scaled.col[static_cast<std::size_t>(p)])];
  EXPECT_NO_THROW(make_local_solver(scaled, LocalSolverKind::ilu0));
  try {
    make_local_solver(scaled, LocalSolverKind::ilu0, LocalSolverUse::many_solves, 1.0);
    FAIL() << "no error";
  } catch (const FactorisationError& e) {
    EXPECT_NE(std::string(e.what()).find("ILU(0) relaxed by 1: pivot"), std::string::npos) << e.what();
  }
  const LocalCsr a = grid2d(4);
  EXPECT_THROW(make_local_solver(a, LocalSolverKind::ilu0, LocalSolverUse::many_solves, 1.5), std::invalid_argument);
  EXPECT_THROW(make_local_solver(a, LocalSolverKind::ilu0, LocalSolverUse::many_solves, -0.1), std::invalid_argument);
  EXPECT_THROW(make_local_solver(a, LocalSolverKind::cholmod_simplicial, LocalSolverUse::many_solves, 0.5),
               std::invalid_argument);
  EXPECT_THROW(make_local_solver(a, LocalSolverKind::automatic, LocalSolverUse::many_solves, 0.5),
               std::invalid_argument);
}

// Several pieces in one block (make_block_solver): the pieces are balanced and connected on a grid;
// overlap 0 makes the restricted and additive sums one block-diagonal solve (bitwise alike); an
// overlap that reaches the whole block makes every piece the whole matrix, so the restricted sum is
// A^-1 b and the additive one K A^-1 b; bad counts and a singular piece are refused.
TEST(LocalSolver, BlockSolverIsSchwarzOnItsPieces) {
  const int n = 24, K = 4;
  const LocalCsr a = grid2d(n, /*wind=*/0.5);
  const auto label = block_pieces(a, 0, a.rows, K);
  std::vector<int> size(K, 0);
  for (int l : label) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, K);
    ++size[static_cast<std::size_t>(l)];
  }
  for (int s : size) EXPECT_EQ(s, n * n / K);
  for (int k = 0; k < K; ++k) {  // connected: a breadth-first search inside piece k reaches all of it
    std::vector<int> seen(label.size(), 0), queue;
    for (std::size_t i = 0; i < label.size() && queue.empty(); ++i)
      if (label[i] == k) queue.push_back(static_cast<int>(i)), seen[i] = 1;
    for (std::size_t h = 0; h < queue.size(); ++h) {
      const auto i = static_cast<std::size_t>(queue[h]);
      for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const auto j = static_cast<std::size_t>(a.col[static_cast<std::size_t>(p)]);
        if (label[j] == k && !seen[j]) seen[j] = 1, queue.push_back(static_cast<int>(j));
      }
    }
    EXPECT_EQ(static_cast<int>(queue.size()), size[static_cast<std::size_t>(k)]) << "piece " << k;
  }
  const auto b = rhs(a.rows);
  std::vector<double> x(b.size()), y(b.size()), direct(b.size());
  make_local_solver(a, LocalSolverKind::umfpack)->solve(b.data(), direct.data());
  LocalBlocks pieces;
  pieces.blocks = K;
  pieces.overlap = 0;
  {
    auto m = make_block_solver(a, pieces, LocalSolverKind::umfpack);
    EXPECT_FALSE(m->exact());
    EXPECT_NE(m->reason().find("4 pieces of 144-144 rows (overlap 0"), std::string::npos) << m->reason();
  }
  pieces.restricted = true;
  make_block_solver(a, pieces, LocalSolverKind::umfpack)->solve(b.data(), x.data());
  pieces.restricted = false;
  make_block_solver(a, pieces, LocalSolverKind::umfpack)->solve(b.data(), y.data());
  EXPECT_EQ(x, y) << "overlap 0: the pieces do not overlap";
  EXPECT_GT(residual(a, x, b), 1e-3) << "block Jacobi on four pieces is not the direct solve";
  pieces.overlap = 2 * n;
  for (bool restricted : {true, false}) {
    pieces.restricted = restricted;
    make_block_solver(a, pieces, LocalSolverKind::umfpack)->solve(b.data(), x.data());
    const double scale = restricted ? 1.0 : K;
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - scale * direct[i]));
    EXPECT_LT(worst, 1e-12 * scale) << (restricted ? "restricted" : "additive");
  }
  pieces.blocks = static_cast<int>(a.rows) + 1;
  EXPECT_THROW(make_block_solver(a, pieces, LocalSolverKind::umfpack), std::invalid_argument);
  pieces.blocks = 0;
  EXPECT_THROW(make_block_solver(a, pieces, LocalSolverKind::umfpack), std::invalid_argument);
  LocalCsr z = grid2d(8);
  for (auto p = z.row_ptr[0]; p < z.row_ptr[1]; ++p) z.val[static_cast<std::size_t>(p)] = 0.0;  // row 0 empty
  LocalBlocks four;
  four.blocks = 4;
  try {
    make_block_solver(z, four, LocalSolverKind::umfpack);
    FAIL() << "no error";
  } catch (const FactorisationError& e) {
    EXPECT_NE(std::string(e.what()).find("of 4 (16 rows): singular matrix"), std::string::npos) << e.what();
  }
}
