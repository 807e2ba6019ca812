// Distributed operators: the matrix-free poisson3d operator and the CSR / BCSR operator.
//
//  * Every engine x progress mode gives bitwise the same y as the blocking exchange, and the same y
//    as a serial reference computed on rank 0 from the gathered x: the global stencil (or the
//    global matrix), each row summed as 0.0 + a_1 x_1 + ... in ascending global column order.
//  * The matrix-free and the assembled poisson3d operators agree bitwise: both sum every row in
//    ascending global column order starting from 0.0 (a -1 coefficient times x is exactly -x, so
//    "s += -1 * x" and "s -= x" round identically; an absent neighbour is skipped or subtracted as
//    +0.0, which leaves s unchanged).
//  * A·1 = poisson3d_rhs (u ≡ 1 solves the system).
//  * Uneven splits, every axis split, blocks one point thick, a rank without rows (BCSR), a
//    non-symmetric sparsity pattern (ranks send to some neighbours and receive from others).
//
// x has values of varied magnitude (powers of two from 2^-3 to 2^3) so that a different summation
// order would show up in the last bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "desync/communication/ghost_exchange.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/operator.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/core/error.hpp"
#include "test_util.hpp"

using desync::InputError;
using namespace desync::decomposition;
using namespace desync::linalg;
using namespace desync::comm;
using namespace desync::problems;
using desync_test::TestComm;

namespace {

bool thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_MULTIPLE;
}

/// Every engine x progress mode (thread only where MPI provides MPI_THREAD_MULTIPLE); a small
/// test interval so that Progress::test polls many times.
std::vector<SpmvConfig> all_configs() {
  std::vector<SpmvConfig> out;
  for (auto e : {ExchangeEngine::blocking, ExchangeEngine::p2p, ExchangeEngine::neighbor})
    for (auto p : {Progress::none, Progress::test, Progress::thread}) {
      if (p == Progress::thread && !thread_multiple()) continue;
      SpmvConfig c;
      c.engine = e;
      c.progress = p;
      c.test_interval = 7;
      out.push_back(c);
    }
  return out;
}

std::string describe(const SpmvConfig& c) {
  return std::string(to_string(c.engine)) + "/" + to_string(c.progress);
}

/// A value of varied magnitude determined by `key` alone.
double value_of(long long key, int salt = 0) {
  const unsigned long long h = (static_cast<unsigned long long>(key) + 977ULL * static_cast<unsigned>(salt)) *
                                   0x9E3779B97F4A7C15ULL +
                               0x632BE59BD9B4E019ULL;
  const double frac = static_cast<double>((h >> 11) % 1000003ULL) / 1000003.0 - 0.5;
  return std::ldexp(frac, static_cast<int>((h >> 40) % 7) - 3);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

/// Gathers every rank's part (rank-major) on rank 0 of `comm`; other ranks get an empty vector.
std::vector<double> gather(MPI_Comm comm, const std::vector<double>& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(counts.size() + 1, 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  for (std::size_t r = 0; r < counts.size(); ++r) displs[r + 1] = displs[r] + counts[r];
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(displs.back()) : 0);
  MPI_Gatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm);
  return all;
}

// ---------------------------------------------------------------------------------------------
// poisson3d: the serial reference from the global stencil.

struct GridCase {
  Index3 global;
  Index3 dims_hint;  // zeros: MPI_Dims_create
};

std::string describe(const GridCase& g, const CartGrid& grid) {
  return std::to_string(g.global[0]) + "x" + std::to_string(g.global[1]) + "x" + std::to_string(g.global[2]) +
         " over " + std::to_string(grid.dims()[0]) + "x" + std::to_string(grid.dims()[1]) + "x" +
         std::to_string(grid.dims()[2]);
}

/// Rank-major global index of every global grid point (lexicographic index, x fastest), built
/// independently of the library: each rank's block from its coordinates, offsets by prefix sum.
std::vector<long long> rank_major_map(const CartGrid& grid) {
  const Index3& g = grid.global();
  const Index3& d = grid.dims();
  std::vector<long long> offset(static_cast<std::size_t>(grid.size()) + 1, 0);
  std::vector<Index3> coords(static_cast<std::size_t>(grid.size()));
  for (int r = 0; r < grid.size(); ++r) {
    int c[3];
    MPI_Cart_coords(grid.comm(), r, 3, c);
    coords[static_cast<std::size_t>(r)] = {c[2], c[1], c[0]};
    long long n = 1;
    for (int a = 0; a < 3; ++a) n *= block_size(g[a], d[a], coords[static_cast<std::size_t>(r)][a]);
    offset[static_cast<std::size_t>(r) + 1] = offset[static_cast<std::size_t>(r)] + n;
  }
  std::vector<long long> map(static_cast<std::size_t>(g[0]) * g[1] * g[2]);
  for (int r = 0; r < grid.size(); ++r) {
    const Index3& c = coords[static_cast<std::size_t>(r)];
    Index3 n{}, o{};
    for (int a = 0; a < 3; ++a) {
      n[a] = block_size(g[a], d[a], c[a]);
      o[a] = block_start(g[a], d[a], c[a]);
    }
    long long m = offset[static_cast<std::size_t>(r)];
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i)
          map[(static_cast<std::size_t>(o[2] + k) * g[1] + static_cast<std::size_t>(o[1] + j)) * g[0] +
              static_cast<std::size_t>(o[0] + i)] = m++;
  }
  return map;
}

/// Rank 0: y = A x for the whole grid, x and y rank-major; rows summed in ascending column order.
std::vector<double> poisson_reference(const Index3& g, const std::vector<long long>& map, const std::vector<double>& x) {
  std::vector<double> y(x.size());
  std::vector<std::pair<long long, double>> row;
  for (int k = 0; k < g[2]; ++k)
    for (int j = 0; j < g[1]; ++j)
      for (int i = 0; i < g[0]; ++i) {
        auto at = [&](int a, int b, int c) {
          return map[(static_cast<std::size_t>(c) * g[1] + static_cast<std::size_t>(b)) * g[0] + static_cast<std::size_t>(a)];
        };
        row.clear();
        row.emplace_back(at(i, j, k), 6.0);
        if (i > 0) row.emplace_back(at(i - 1, j, k), -1.0);
        if (i < g[0] - 1) row.emplace_back(at(i + 1, j, k), -1.0);
        if (j > 0) row.emplace_back(at(i, j - 1, k), -1.0);
        if (j < g[1] - 1) row.emplace_back(at(i, j + 1, k), -1.0);
        if (k > 0) row.emplace_back(at(i, j, k - 1), -1.0);
        if (k < g[2] - 1) row.emplace_back(at(i, j, k + 1), -1.0);
        std::sort(row.begin(), row.end());
        double s = 0.0;
        for (const auto& [c, v] : row) s += v * x[static_cast<std::size_t>(c)];
        y[static_cast<std::size_t>(at(i, j, k))] = s;
      }
  return y;
}

/// This rank's part of x: value_of(lexicographic global index), so the field is the same for
/// every decomposition.
std::vector<double> poisson_x(const CartGrid& grid, int salt) {
  const Index3& n = grid.local();
  std::vector<double> x;
  x.reserve(static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) x.push_back(value_of(grid.global_index(i, j, k), salt));
  return x;
}

std::vector<GridCase> grid_cases(int nranks) {
  std::vector<GridCase> cases = {{{7, 5, 6}, {0, 0, 0}},
                                 {{8, 8, 8}, {nranks, 1, 1}},
                                 {{8, 8, 8}, {1, nranks, 1}},
                                 {{8, 8, 8}, {1, 1, nranks}},
                                 {{5, 4, 3}, {0, 0, 0}},
                                 {{3, 2, 4}, {1, 1, nranks}},  // with 4 ranks: blocks one point thick in z
                                 {{1, 1, 9}, {1, 1, nranks}},
                                 {{4, 3, 3}, {nranks, 1, 1}},   // x: blocks one point thick
                                 {{3, 4, 2}, {1, nranks, 1}}};  // y: blocks one point thick
  if (nranks == 4) cases.push_back({{2, 2, 2}, {2, 2, 1}});  // 1x1x2 blocks
  if (nranks == 3) cases.push_back({{7, 5, 6}, {3, 1, 1}});   // x: 3, 2, 2
  return cases;
}

}  // namespace

TEST(Poisson3d, EveryEngineMatchesBlockingAssembledAndSerialReference) {
  // ctest runs this program with MPI_THREAD_MULTIPLE requested: the thread mode must not be skipped.
  const char* level = std::getenv("DESYNC_TEST_MPI_THREAD");
  if (level != nullptr && std::string(level) == "multiple") {
    EXPECT_TRUE(thread_multiple()) << "MPI_THREAD_MULTIPLE requested but not provided";
    EXPECT_EQ(all_configs().size(), 9u);
  }
  TestComm comm;
  const int nranks = desync_test::world_size();
  const int rank = desync_test::world_rank();
  for (const GridCase& gc : grid_cases(nranks)) {
    const Index3 dims = choose_dims(nranks, gc.dims_hint);
    ASSERT_EQ(check_split(gc.global, dims), "");
    CartGrid grid(comm, gc.global, dims);
    const std::string where = describe(gc, grid);
    const std::vector<long long> map = rank == 0 ? rank_major_map(grid) : std::vector<long long>{};
    const auto A = assemble_poisson3d(grid);
    const std::vector<double> x1 = poisson_x(grid, 1);

    // The serial reference for x1 and for A x1 (the second product reuses the first's output).
    std::vector<double> ref1, ref2;
    const std::vector<double> x1_all = gather(grid.comm(), x1);
    std::vector<long long> rows_of(static_cast<std::size_t>(grid.size()));
    const long long my_rows = static_cast<long long>(x1.size());
    MPI_Gather(&my_rows, 1, MPI_LONG_LONG, rows_of.data(), 1, MPI_LONG_LONG, 0, grid.comm());
    if (rank == 0) {
      ref1 = poisson_reference(grid.global(), map, x1_all);
      ref2 = poisson_reference(grid.global(), map, ref1);
    }

    std::vector<double> base_y1, base_y2;
    for (const SpmvConfig& cfg : all_configs()) {
      auto mf = make_poisson3d_operator(grid, cfg);
      auto csr = make_csr_operator(A, cfg);
      ASSERT_EQ(mf->local_size(), static_cast<std::int64_t>(x1.size()));
      ASSERT_EQ(csr->local_size(), mf->local_size());
      ASSERT_EQ(mf->global_size(), grid.global_cells());
      ASSERT_EQ(csr->global_size(), grid.global_cells());
      // Per operator: A x1 and A (A x1), all gathered at once for the reference check (few
      // collectives: the test machine runs more ranks than cores).
      std::vector<std::vector<double>> y;
      for (Operator* op : {mf.get(), csr.get()}) {
        const std::string what = where + " " + op->name() + " " + describe(cfg);
        std::vector<double> y1(x1.size(), -7.0), y2(x1.size(), -7.0);
        op->apply(x1, y1);
        op->apply(y1, y2);
        if (base_y1.empty()) {
          base_y1 = y1;
          base_y2 = y2;
        }
        EXPECT_TRUE(same_bits(y1, base_y1)) << what << ": first product differs from blocking matrix-free";
        EXPECT_TRUE(same_bits(y2, base_y2)) << what << ": second product differs from blocking matrix-free";
        EXPECT_EQ(op->stats().applications, 2) << what;
        y.push_back(std::move(y1));
        y.push_back(std::move(y2));
      }
      std::vector<double> mine;
      for (const auto& v : y) mine.insert(mine.end(), v.begin(), v.end());
      const auto all = gather(grid.comm(), mine);  // per rank: mf y1, mf y2, csr y1, csr y2
      int ok = 1;
      if (rank == 0) {
        // Unpack rank by rank: rank r's four vectors have its row count each.
        std::vector<std::vector<double>> got(4);
        std::size_t pos = 0;
        for (int r = 0; r < grid.size(); ++r) {
          const std::size_t n = static_cast<std::size_t>(rows_of[static_cast<std::size_t>(r)]);
          for (auto& g : got) {
            g.insert(g.end(), all.begin() + static_cast<std::ptrdiff_t>(pos), all.begin() + static_cast<std::ptrdiff_t>(pos + n));
            pos += n;
          }
        }
        ok = same_bits(got[0], ref1) && same_bits(got[1], ref2) && same_bits(got[2], ref1) && same_bits(got[3], ref2);
      }
      MPI_Bcast(&ok, 1, MPI_INT, 0, grid.comm());
      EXPECT_TRUE(ok) << where << " " << describe(cfg) << ": differs from the serial reference";
    }
  }
}

TEST(Poisson3d, OnesGiveTheRightHandSide) {
  TestComm comm;
  const int nranks = desync_test::world_size();
  for (const GridCase& gc : grid_cases(nranks)) {
    CartGrid grid(comm, gc.global, choose_dims(nranks, gc.dims_hint));
    const auto b = poisson3d_rhs(grid);
    const std::vector<double> ones(b.size(), 1.0);
    SpmvConfig cfg;
    std::vector<std::unique_ptr<Operator>> ops;
    ops.push_back(make_poisson3d_operator(grid, cfg));
    ops.push_back(make_csr_operator(assemble_poisson3d(grid), cfg));
    for (auto& op : ops) {
      std::vector<double> y(b.size());
      op->apply(ones, y);
      EXPECT_EQ(y, b) << describe(gc, grid) << " " << op->name();
    }
    // b counts the boundary neighbours: 1..3 per point for grids at least 2 wide, never 0 on
    // the outer layer; the sum over the grid is the number of boundary faces' points, 2(xy+yz+zx).
    double sum = 0;
    for (double v : b) sum += v;
    double total = 0;
    MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, grid.comm());
    const auto& g = grid.global();
    EXPECT_EQ(total, 2.0 * (static_cast<double>(g[0]) * g[1] + static_cast<double>(g[1]) * g[2] +
                            static_cast<double>(g[2]) * g[0]));
  }
}

TEST(Poisson3d, LayoutDiagonalAndDiagonalBlock) {
  TestComm comm;
  const int nranks = desync_test::world_size();
  for (const GridCase& gc : grid_cases(nranks)) {
    CartGrid grid(comm, gc.global, choose_dims(nranks, gc.dims_hint));
    SpmvConfig cfg;
    auto mf_op = make_poisson3d_operator(grid, cfg);
    auto csr_op = make_csr_operator(assemble_poisson3d(grid), cfg);
    auto& mf = dynamic_cast<desync::problems::Poisson3dOperator&>(*mf_op);
    auto& csr = dynamic_cast<CsrOperator&>(*csr_op);
    const std::string where = describe(gc, grid);
    EXPECT_EQ(mf.layout().interior_rows, csr.layout().interior_rows) << where;
    EXPECT_EQ(mf.layout().boundary_rows, csr.layout().boundary_rows) << where;
    EXPECT_EQ(mf.layout().ghost_entries, csr.layout().ghost_entries) << where;
    EXPECT_EQ(mf.layout().neighbours, grid.num_neighbours()) << where;
    EXPECT_EQ(csr.layout().neighbours, grid.num_neighbours()) << where;
    EXPECT_EQ(mf.layout().interior_rows + mf.layout().boundary_rows, mf.local_size()) << where;
    EXPECT_EQ(mf.diagonal(), std::vector<double>(static_cast<std::size_t>(mf.local_size()), 6.0)) << where;
    EXPECT_EQ(csr.diagonal(), mf.diagonal()) << where;
    const LocalCsr a = mf.diagonal_block(), b = csr.diagonal_block();
    EXPECT_EQ(a.rows, b.rows) << where;
    EXPECT_EQ(a.row_ptr, b.row_ptr) << where;
    EXPECT_EQ(a.col, b.col) << where;
    EXPECT_EQ(a.val, b.val) << where;
    EXPECT_EQ(mf.name(), "poisson3d matrix-free");
    EXPECT_EQ(csr.name(), "csr");
  }
}

// ---------------------------------------------------------------------------------------------
// A hand-made matrix with a non-symmetric pattern, block size 1 and 3, uneven row split (with 3 or
// more ranks, rank 1 owns no row).

namespace {

constexpr long long hand_rows = 11;

std::vector<long long> hand_columns(long long i) {
  std::vector<long long> c = {i, (i + 1) % hand_rows, (3 * i + 2) % hand_rows, hand_rows - 1 - i};
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

double hand_value(long long i, long long j, int a, int b) {
  const double v = value_of(((i * 131 + j) * 7 + a) * 5 + b, 3);
  return i == j && a == b ? v + 10.0 : v;
}

std::vector<std::int64_t> hand_offsets(int nranks) {
  std::vector<double> w(static_cast<std::size_t>(nranks));
  double total = 0;
  for (int r = 0; r < nranks; ++r) total += (w[static_cast<std::size_t>(r)] = (nranks >= 3 && r == 1) ? 0.0 : r + 1.0);
  std::vector<std::int64_t> off(static_cast<std::size_t>(nranks) + 1, 0);
  double acc = 0;
  for (int r = 0; r < nranks; ++r) {
    acc += w[static_cast<std::size_t>(r)];
    off[static_cast<std::size_t>(r) + 1] = static_cast<std::int64_t>(std::llround(hand_rows * acc / total));
  }
  off.back() = hand_rows;
  return off;
}

DistributedCsr hand_matrix(MPI_Comm comm, int bs) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  DistributedCsr A;
  A.comm = comm;
  A.block_size = bs;
  A.row_offsets = hand_offsets(size);
  A.row_ptr = {0};
  for (auto i = A.row_offsets[static_cast<std::size_t>(rank)]; i < A.row_offsets[static_cast<std::size_t>(rank) + 1]; ++i) {
    for (long long j : hand_columns(i)) {
      A.col.push_back(j);
      for (int a = 0; a < bs; ++a)
        for (int b = 0; b < bs; ++b) A.val.push_back(hand_value(i, j, a, b));
    }
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  return A;
}

std::vector<double> hand_reference(int bs, const std::vector<double>& x) {
  std::vector<double> y(static_cast<std::size_t>(hand_rows * bs));
  for (long long i = 0; i < hand_rows; ++i)
    for (int a = 0; a < bs; ++a) {
      double s = 0.0;
      for (long long j : hand_columns(i))
        for (int b = 0; b < bs; ++b) s += hand_value(i, j, a, b) * x[static_cast<std::size_t>(j * bs + b)];
      y[static_cast<std::size_t>(i * bs + a)] = s;
    }
  return y;
}

}  // namespace

TEST(Csr, HandMadeBlockMatrixEveryEngineMatchesSerialReference) {
  TestComm comm;
  const int rank = desync_test::world_rank();
  for (int bs : {1, 3}) {
    const DistributedCsr A = hand_matrix(comm, bs);
    const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank)];
    std::vector<double> x(static_cast<std::size_t>(A.local_rows()));
    for (std::size_t e = 0; e < x.size(); ++e) x[e] = value_of(first * bs + static_cast<long long>(e), 9);
    const auto x_all = gather(comm, x);
    std::vector<double> ref1, ref2;
    if (rank == 0) {
      ref1 = hand_reference(bs, x_all);
      ref2 = hand_reference(bs, ref1);
    }
    std::vector<double> base;
    for (const SpmvConfig& cfg : all_configs()) {
      auto op = make_csr_operator(A, cfg);
      const std::string what = "bs " + std::to_string(bs) + " " + describe(cfg);
      EXPECT_EQ(op->name(), bs == 1 ? "csr" : "bcsr3");
      ASSERT_EQ(op->local_size(), static_cast<std::int64_t>(x.size()));
      ASSERT_EQ(op->global_size(), hand_rows * bs);
      std::vector<double> y1(x.size()), y2(x.size());
      op->apply(x, y1);
      op->apply(y1, y2);
      std::vector<double> both = y1;
      both.insert(both.end(), y2.begin(), y2.end());
      if (base.empty()) base = both;
      EXPECT_TRUE(same_bits(both, base)) << what << ": differs from the blocking engine";
      const auto all = gather(comm, both);  // per rank: y1, y2
      int ok = 1;
      if (rank == 0) {
        std::vector<double> y1_all, y2_all;
        std::size_t pos = 0;
        for (std::size_t r = 0; r + 1 < A.row_offsets.size(); ++r) {
          const auto n = static_cast<std::ptrdiff_t>((A.row_offsets[r + 1] - A.row_offsets[r]) * bs);
          const auto at = all.begin() + static_cast<std::ptrdiff_t>(pos);
          y1_all.insert(y1_all.end(), at, at + n);
          y2_all.insert(y2_all.end(), at + n, at + 2 * n);
          pos += static_cast<std::size_t>(2 * n);
        }
        ok = same_bits(y1_all, ref1) && same_bits(y2_all, ref2);
      }
      MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
      EXPECT_TRUE(ok) << what << ": differs from the serial reference";
    }

    // diagonal() and diagonal_block() against the definition.
    auto op = make_csr_operator(A, SpmvConfig{});
    const auto d = op->diagonal();
    const LocalCsr D = op->diagonal_block();
    const std::int64_t n = A.local_block_rows();
    ASSERT_EQ(D.rows, n * bs);
    ASSERT_EQ(D.row_ptr.size(), static_cast<std::size_t>(n * bs) + 1);
    for (std::int64_t r = 0; r < n; ++r)
      for (int a = 0; a < bs; ++a) {
        const long long i = first + r;
        EXPECT_EQ(d[static_cast<std::size_t>(r * bs + a)], hand_value(i, i, a, a));
        std::vector<std::int32_t> cols;
        std::vector<double> vals;
        for (long long j : hand_columns(i)) {
          if (j < first || j >= first + n) continue;
          for (int b = 0; b < bs; ++b) {
            cols.push_back(static_cast<std::int32_t>((j - first) * bs + b));
            vals.push_back(hand_value(i, j, a, b));
          }
        }
        const auto row = static_cast<std::size_t>(r * bs + a);
        const std::vector<std::int32_t> got_c(D.col.begin() + D.row_ptr[row], D.col.begin() + D.row_ptr[row + 1]);
        const std::vector<double> got_v(D.val.begin() + D.row_ptr[row], D.val.begin() + D.row_ptr[row + 1]);
        EXPECT_EQ(got_c, cols) << "row " << i << "." << a;
        EXPECT_EQ(got_v, vals) << "row " << i << "." << a;
      }
  }
}

TEST(Csr, BadInputIsAnInputErrorOnEveryRank) {
  TestComm comm;
  {
    DistributedCsr A = hand_matrix(comm, 1);
    A.block_size = 2;
    EXPECT_THROW(make_csr_operator(A, SpmvConfig{}), InputError);
  }
  {
    DistributedCsr A = hand_matrix(comm, 1);
    if (desync_test::world_rank() == 0 && A.col.size() >= 2) std::swap(A.col[0], A.col[1]);  // unsorted row 0
    EXPECT_THROW(make_csr_operator(A, SpmvConfig{}), InputError);
  }
  {
    DistributedCsr A = hand_matrix(comm, 1);
    if (desync_test::world_rank() == desync_test::world_size() - 1) A.col.back() = hand_rows;  // out of range
    EXPECT_THROW(make_csr_operator(A, SpmvConfig{}), InputError);
  }
  {
    SpmvConfig cfg;
    cfg.test_interval = 0;
    EXPECT_THROW(make_csr_operator(hand_matrix(comm, 3), cfg), InputError);
    CartGrid grid(comm, {4, 4, 4}, choose_dims(desync_test::world_size(), {0, 0, 0}));
    EXPECT_THROW(make_poisson3d_operator(grid, cfg), InputError);
  }
  EXPECT_THROW(parse_exchange_engine("alltoall"), InputError);
  EXPECT_THROW(parse_progress("sometimes"), InputError);
  EXPECT_EQ(parse_exchange_engine("neighbor"), ExchangeEngine::neighbor);
  EXPECT_EQ(parse_progress("thread"), Progress::thread);
}

// Progress::thread needs MPI_THREAD_MULTIPLE: without it, a clear InputError on every rank.
TEST(ThreadLevel, ProgressThreadNeedsThreadMultiple) {
  TestComm comm;
  CartGrid grid(comm, {6, 6, 6}, choose_dims(desync_test::world_size(), {0, 0, 0}));
  SpmvConfig cfg;
  cfg.progress = Progress::thread;
  EXPECT_EQ(required_thread_level(cfg), MPI_THREAD_MULTIPLE);
  if (thread_multiple()) {
    EXPECT_NO_THROW(make_poisson3d_operator(grid, cfg));
  } else {
    try {
      make_poisson3d_operator(grid, cfg);
      ADD_FAILURE() << "no InputError without MPI_THREAD_MULTIPLE";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("MPI_THREAD_MULTIPLE"), std::string::npos) << e.what();
    }
  }
  cfg.engine = ExchangeEngine::blocking;  // nothing to progress: no thread, no requirement
  EXPECT_EQ(required_thread_level(cfg), MPI_THREAD_FUNNELED);
  EXPECT_NO_THROW(make_poisson3d_operator(grid, cfg));
}

// ---------------------------------------------------------------------------------------------
// The exchange itself: a ring (send to the next rank, receive from the previous one).

namespace {

GhostPlanSpec ring_spec(int rank, int size) {
  GhostPlanSpec s;
  s.send_ranks = {(rank + 1) % size};
  s.send_index = {2, 0};
  s.send_offsets = {0, 2};
  s.recv_ranks = {(rank + size - 1) % size};
  s.recv_offsets = {0, 2};
  return s;
}

}  // namespace

TEST(GhostExchange, RingDeliversAndNothingStaysPending) {
  TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  const int prev = (rank + size - 1) % size;
  const double x[3] = {10.0 * rank, 10.0 * rank + 1, 10.0 * rank + 2};
  for (const SpmvConfig& cfg : all_configs()) {
    const long before = desync::comm::RequestLedger::outstanding();
    {
      GhostExchange ex(comm, ring_spec(rank, size), cfg.engine, cfg.progress);
      for (int round = 0; round < 3; ++round) {
        ex.start(x);
        if (cfg.progress == Progress::test)
          desync_test::poll_until([&] { return ex.poll(); });
        ex.finish();
        ASSERT_EQ(ex.ghost_count(), 2u);
        EXPECT_EQ(ex.ghosts()[0], 10.0 * prev + 2) << describe(cfg);
        EXPECT_EQ(ex.ghosts()[1], 10.0 * prev) << describe(cfg);
      }
      EXPECT_EQ(ex.stats().exchanges, 3);
      // Started and never finished: the destructor completes it.
      ex.start(x);
    }
    EXPECT_EQ(desync::comm::RequestLedger::outstanding(), before) << describe(cfg);
  }
}

// --progress test: a reduction set as progressed (recursive doubling, which advances only when
// tested) completes at the exchange's polls alone, with no test() of its own: the pipelined CG
// methods' reductions advance inside the matrix-vector product.
TEST(GhostExchange, PollsAdvanceAProgressedReduction) {
  TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  const double x[3] = {1.0, 2.0, 3.0};
  for (auto engine : {ExchangeEngine::p2p, ExchangeEngine::neighbor}) {
    GhostExchange ex(comm, ring_spec(rank, size), engine, Progress::test);
    auto red = desync::comm::make_reduction(desync::comm::ReductionKind::doubling, comm, 1);
    ex.start(x);
    const double v = rank + 1.0;
    red->start(std::span<const double>(&v, 1));
    desync::comm::set_progressed_reduction(red.get());
    EXPECT_TRUE(desync_test::poll_until([&] {
      ex.poll();
      return !red->active();
    }));
    desync::comm::set_progressed_reduction(nullptr);
    EXPECT_EQ(red->result()[0], size * (size + 1) / 2.0);
    ex.finish();
    red->finish();
  }
  EXPECT_EQ(desync::comm::RequestLedger::outstanding(), 0);
}

TEST(GhostExchange, InconsistentSpecIsAnInputError) {
  TestComm comm;
  GhostPlanSpec s = ring_spec(desync_test::world_rank(), desync_test::world_size());
  if (desync_test::world_rank() == 0) s.send_offsets = {0, 3};  // more than send_index holds
  EXPECT_THROW(GhostExchange(comm, s, ExchangeEngine::p2p, Progress::none), InputError);
}
