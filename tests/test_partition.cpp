// Graph partitioning and row redistribution (linalg/partition.hpp) on the 2D 5-point Poisson matrix
// and on a structurally non-symmetric variant of it, for every method this build has:
//   * every input row is owned exactly once, in input order inside a rank;
//   * the renumbered matrix is exactly P A P^T (gathered on rank 0 and compared entry by entry,
//     values bitwise) with ascending columns, and its products agree bitwise with A's;
//   * the reported edge cut, rows and non-zeros equal counts recomputed here by brute force;
//   * vectors survive to_partitioned / to_input bitwise;
//   * the same seed gives the same parts; METIS cuts the grid less than a round-robin file;
//   * a bad partition file or an impossible partition is one InputError on every rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/partition.hpp"
#include "matrix_test_util.hpp"
#include "test_util.hpp"

using desync::InputError;
using namespace desync::linalg;
using namespace desync_test;

namespace {

using Index = std::int64_t;

/// The 5-point Laplacian on an nx x ny grid (4 on the diagonal, -1 to the four neighbours), x
/// fastest. upwind adds a_{k, k-nx-1} = -0.5 (the down-left diagonal neighbour) and 0.5 on the
/// diagonal, so that A != A^T in structure. All values are dyadic: products with integer vectors
/// are exact whatever the summation order.
DistributedCsr grid_matrix(MPI_Comm comm, int nx, int ny, bool upwind) {
  DistributedCsr A;
  A.comm = comm;
  A.row_offsets = balanced_offsets(Index{nx} * ny, size_of(comm));
  const int r = rank_of(comm);
  A.row_ptr.push_back(0);
  for (Index k = A.row_offsets[r]; k < A.row_offsets[r + 1]; ++k) {
    const Index x = k % nx, y = k / nx;
    std::vector<std::pair<Index, double>> row;
    if (upwind && x > 0 && y > 0) row.emplace_back(k - nx - 1, -0.5);
    if (y > 0) row.emplace_back(k - nx, -1.0);
    if (x > 0) row.emplace_back(k - 1, -1.0);
    row.emplace_back(k, upwind ? 4.5 : 4.0);
    if (x + 1 < nx) row.emplace_back(k + 1, -1.0);
    if (y + 1 < ny) row.emplace_back(k + nx, -1.0);
    for (const auto& [c, v] : row) {
      A.col.push_back(c);
      A.val.push_back(v);
    }
    A.row_ptr.push_back(static_cast<Index>(A.col.size()));
  }
  return A;
}

/// Every rank's `mine` concatenated in rank order, on rank 0 (empty elsewhere).
template <class T>
std::vector<T> gather_all(MPI_Comm comm, const std::vector<T>& mine, MPI_Datatype type) {
  const int p = size_of(comm);
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  for (int r = 1; r < p; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<T> all(rank_of(comm) == 0 ? static_cast<std::size_t>(displs[p - 1] + counts[p - 1]) : 0);
  MPI_Gatherv(mine.data(), count, type, all.data(), counts.data(), displs.data(), type, 0, comm);
  return all;
}

using Triplet = std::tuple<Index, Index, double>;

/// The global matrix as sorted (row, column, value) triplets on rank 0 (one gather: the value's bits
/// travel as an integer beside its row and column).
std::vector<Triplet> gather_triplets(const DistributedCsr& A) {
  std::vector<Index> mine;
  for (Index i = 0; i < A.local_block_rows(); ++i)
    for (Index k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      mine.push_back(A.first_block_row() + i);
      mine.push_back(A.col[k]);
      mine.push_back(std::bit_cast<Index>(A.val[k]));
    }
  const auto all = gather_all(A.comm, mine, MPI_INT64_T);
  std::vector<Triplet> t;
  for (std::size_t k = 0; k + 2 < all.size(); k += 3) t.emplace_back(all[k], all[k + 1], std::bit_cast<double>(all[k + 2]));
  std::sort(t.begin(), t.end());
  return t;
}

/// Undirected edges {i, j}, i != j, of the graph of A + A^T cut by `part` (per global row).
Index brute_force_cut(const std::vector<Triplet>& a, const std::vector<int>& part) {
  std::set<std::pair<Index, Index>> edges;
  for (const auto& [i, j, v] : a)
    if (i != j) edges.emplace(std::min(i, j), std::max(i, j));
  Index cut = 0;
  for (const auto& [i, j] : edges)
    if (part[static_cast<std::size_t>(i)] != part[static_cast<std::size_t>(j)]) ++cut;
  return cut;
}

/// Checks `s` against its input `A`; returns the part (new owner) of every input row, on rank 0.
std::vector<int> check_partitioned(const DistributedCsr& A, const PartitionedSystem& s) {
  const MPI_Comm comm = A.comm;
  const int p = size_of(comm), me = rank_of(comm);
  const Index n = A.global_block_rows();

  // Layout: contiguous blocks, original rows ascending here, columns ascending in every row.
  EXPECT_EQ(s.A.comm, comm);
  EXPECT_EQ(s.input_offsets, A.row_offsets);
  EXPECT_EQ(s.A.row_offsets.size(), static_cast<std::size_t>(p) + 1);
  EXPECT_EQ(s.A.global_block_rows(), n);
  EXPECT_EQ(s.A.local_block_rows(), s.A.row_offsets[me + 1] - s.A.row_offsets[me]);
  EXPECT_EQ(static_cast<Index>(s.original_row.size()), s.A.local_block_rows());
  EXPECT_GT(s.A.local_block_rows(), 0);
  EXPECT_TRUE(std::is_sorted(s.original_row.begin(), s.original_row.end()));
  for (Index i = 0; i < s.A.local_block_rows(); ++i)
    EXPECT_TRUE(std::is_sorted(s.A.col.begin() + s.A.row_ptr[i], s.A.col.begin() + s.A.row_ptr[i + 1]));

  // Every input row exactly once: original_row in new order is a permutation.
  const auto perm = gather_all(comm, s.original_row, MPI_INT64_T);  // new index -> input index
  std::vector<int> part;
  if (me == 0) {
    EXPECT_EQ(static_cast<Index>(perm.size()), n);
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    part.assign(static_cast<std::size_t>(n), -1);
    for (Index k = 0; k < static_cast<Index>(perm.size()); ++k) {
      const Index g = perm[static_cast<std::size_t>(k)];
      EXPECT_TRUE(g >= 0 && g < n);
      if (g < 0 || g >= n) continue;
      ++seen[static_cast<std::size_t>(g)];
      part[static_cast<std::size_t>(g)] = static_cast<int>(
          std::upper_bound(s.A.row_offsets.begin(), s.A.row_offsets.end(), k) - s.A.row_offsets.begin() - 1);
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n);
  }

  // P A P^T entry by entry: the renumbered triplets mapped back equal the input's, bitwise.
  const auto a = gather_triplets(A);
  auto b = gather_triplets(s.A);
  if (me == 0 && static_cast<Index>(perm.size()) == n) {
    for (auto& [i, j, v] : b) {
      i = perm[static_cast<std::size_t>(i)];
      j = perm[static_cast<std::size_t>(j)];
    }
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);
    EXPECT_EQ(s.stats.edge_cut, brute_force_cut(a, part));
  }

  // The edge cut of the same assignment, in the input's distribution (each row's new owner carried
  // back with to_input).
  const std::vector<double> owner_here(static_cast<std::size_t>(s.A.local_rows()), static_cast<double>(me));
  const auto owner_input = s.to_input(comm, owner_here);
  std::vector<int> part_input(owner_input.begin(), owner_input.end());
  EXPECT_EQ(part_input, s.input_owner);
  EXPECT_EQ(desync::linalg::edge_cut(A, part_input), s.stats.edge_cut);

  // Rows and non-zeros per rank (minima as maxima of the negatives), and the cut alike everywhere.
  Index high[6] = {-s.A.local_rows(), -s.A.nonzero_blocks(), s.A.local_rows(), s.A.nonzero_blocks(),
                   s.stats.edge_cut, -s.stats.edge_cut};
  Index sum[3] = {s.A.local_rows(), s.A.nonzero_blocks(), A.nonzero_blocks()};
  MPI_Allreduce(MPI_IN_PLACE, high, 6, MPI_INT64_T, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, sum, 3, MPI_INT64_T, MPI_SUM, comm);
  EXPECT_EQ(s.stats.rows_min, -high[0]);
  EXPECT_EQ(s.stats.rows_max, high[2]);
  EXPECT_EQ(s.stats.rows_mean, static_cast<double>(sum[0]) / p);
  EXPECT_EQ(s.stats.nonzeros_min, -high[1]);
  EXPECT_EQ(s.stats.nonzeros_max, high[3]);
  EXPECT_EQ(s.stats.nonzeros_mean, static_cast<double>(sum[1]) / p);
  EXPECT_EQ(sum[1], sum[2]);
  EXPECT_EQ(high[4], -high[5]);
  EXPECT_GE(s.stats.seconds, 0.0);

  // y = A x through the renumbered matrix: x integer-valued, so every product is exact and the
  // two operators (different summation orders) agree bitwise.
  std::vector<double> x(static_cast<std::size_t>(A.local_rows()));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((A.first_block_row() + Index(i)) * 7 % 13) - 6;
  std::vector<double> y(x.size()), y_new(static_cast<std::size_t>(s.A.local_rows()));
  desync::linalg::make_csr_operator(A, {})->apply(x, y);
  const auto x_new = s.to_partitioned(comm, x);
  desync::linalg::make_csr_operator(s.A, {})->apply(x_new, y_new);
  EXPECT_EQ(s.to_input(comm, y_new), y);

  // Vectors: to_partitioned puts input entry original_row[i] at i; the round trip is the identity.
  std::vector<double> v(x.size());
  const auto f = [](Index g) { return std::sin(0.37 * static_cast<double>(g)) * 1e3 + 1.0 / (g + 3); };
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = f(A.first_block_row() + Index(i));
  const auto v_new = s.to_partitioned(comm, v);
  EXPECT_EQ(v_new.size(), s.original_row.size());
  for (std::size_t i = 0; i < std::min(v_new.size(), s.original_row.size()); ++i) EXPECT_EQ(v_new[i], f(s.original_row[i]));
  EXPECT_EQ(s.to_input(comm, v_new), v);
  return part;
}

/// A partition file with part(g) for every row g, with a comment line and a trailing comment.
/// Writes a --partition file for A's rows, part(g, n, p) for row g of n in p parts (ten to a line,
/// with comments), as `name` in `dir`, and returns its path.
std::string partition_file(MPI_Comm comm, const ScratchDir& dir, const std::string& name, const DistributedCsr& A,
                           const std::function<int(Index, Index, int)>& part) {
  const Index n = A.global_block_rows();
  const int p = size_of(comm);
  std::string t = "# part per row\n";
  for (Index g = 0; g < n; ++g) t += std::to_string(part(g, n, p)) + (g % 10 == 9 ? "  # ten more\n" : " ");
  write_file(comm, dir.file(name), t);
  return dir.file(name);
}

/// The message of the InputError that `f` throws on every rank ("" if none, or if not on all).
template <class F>
std::string input_error(MPI_Comm comm, F&& f) {
  std::string what;
  bool thrown = false;
  try {
    f();
  } catch (const InputError& e) {
    thrown = true;
    what = e.what();
  }
  EXPECT_TRUE(desync_test::all_ranks(thrown, comm)) << "no InputError on every rank";
  return what;
}

PartitionOptions options(PartitionMethod m, int seed = 0, std::string file = {}) {
  PartitionOptions o;
  o.method = m;
  o.seed = seed;
  o.file = std::move(file);
  return o;
}

constexpr int kNx = 30, kNy = 30;

}  // namespace

TEST(Partition, ParseOptions) {
  EXPECT_EQ(desync::linalg::parse_partition("rows", 3).method, PartitionMethod::rows);
  EXPECT_EQ(desync::linalg::parse_partition("metis", 3).method, PartitionMethod::metis);
  EXPECT_EQ(desync::linalg::parse_partition("ptscotch", 3).method, PartitionMethod::ptscotch);
  const auto f = desync::linalg::parse_partition("parts.txt", 7);
  EXPECT_EQ(f.method, PartitionMethod::file);
  EXPECT_EQ(f.file, "parts.txt");
  EXPECT_EQ(f.seed, 7);
  EXPECT_THROW(desync::linalg::parse_partition("", 0), InputError);
}

TEST(Partition, HandCheckedCut) {
  // 4 x 1 path graph 0-1-2-3 (and its non-symmetric upwind cousin has no extra edge there): split
  // {0,1} | {2,3} cuts one edge; alternating cuts three; all in one part cuts none.
  TestComm comm;
  const int p = size_of(comm);
  const auto A = grid_matrix(comm, 4, 1, false);
  const auto cut_with = [&](int (*rule)(Index)) {
    std::vector<int> part;
    for (Index g = A.first_block_row(); g < A.first_block_row() + A.local_block_rows(); ++g) part.push_back(rule(g));
    return desync::linalg::edge_cut(A, part);
  };
  EXPECT_EQ(cut_with([](Index) { return 0; }), 0);
  EXPECT_EQ(cut_with([](Index g) { return g < 2 ? 0 : 1; }), 1);
  EXPECT_EQ(cut_with([](Index g) { return int(g % 2); }), 3);
  (void)p;
}

TEST(Partition, Rows) {
  TestComm comm;
  const auto A = grid_matrix(comm, kNx, kNy, true);
  const auto s = partition_system(A, options(PartitionMethod::rows, 5));
  check_partitioned(A, s);
  // Nothing moves: the same blocks, the same rows, the same matrix.
  EXPECT_EQ(s.A.row_offsets, A.row_offsets);
  EXPECT_EQ(s.A.row_ptr, A.row_ptr);
  EXPECT_EQ(s.A.col, A.col);
  EXPECT_EQ(s.A.val, A.val);
  EXPECT_EQ(s.stats.method, "rows");
  EXPECT_EQ(s.stats.seed, 5);
  // Two balanced row blocks of the symmetric 30 x 30 grid split it between lines 15 and 16: the
  // 30 vertical edges there are cut.
  const auto S = grid_matrix(comm, kNx, kNy, false);
  const std::vector<int> own(static_cast<std::size_t>(S.local_block_rows()), rank_of(comm));
  const Index cut = desync::linalg::edge_cut(S, own);
  if (size_of(comm) == 1) {
    EXPECT_EQ(cut, 0);
  }
  if (size_of(comm) == 2) {
    EXPECT_EQ(cut, kNx);
  }
}

namespace {

/// A graph partitioner on the 30 x 30 grid matrix, symmetric and upwind: a valid partition
/// (check_partitioned), named in the stats, the same parts again with the same seed; `check` adds
/// the partitioner's own expectations. Without the library: one InputError containing `missing`,
/// and the test is skipped.
void check_graph_partitioner(PartitionMethod method, int seed, const std::string& name, const std::string& missing,
                             const std::function<void(const PartitionedSystem&, bool upwind)>& check) {
  TestComm comm;
  std::string why;
  if (!partition_available(method, &why)) {
    const auto what = input_error(comm, [&] { partition_system(grid_matrix(comm, 4, 4, false), options(method)); });
    EXPECT_NE(what.find(missing), std::string::npos) << what;
    GTEST_SKIP() << why;
  }
  for (const bool upwind : {false, true}) {
    const auto A = grid_matrix(comm, kNx, kNy, upwind);
    const auto s = partition_system(A, options(method, seed));
    check_partitioned(A, s);
    EXPECT_EQ(s.stats.method, name);
    check(s, upwind);
    if (upwind) {  // determinism: the same seed, the same parts (and so the same matrix)
      const auto again = partition_system(A, options(method, seed));
      EXPECT_EQ(again.original_row, s.original_row);
      EXPECT_EQ(again.A.col, s.A.col);
      EXPECT_EQ(again.stats.edge_cut, s.stats.edge_cut);
    }
  }
}

}  // namespace

TEST(Partition, Metis) {
  check_graph_partitioner(PartitionMethod::metis, 11, "metis", "desync was built without METIS",
                          [](const PartitionedSystem& s, bool) {
                            // METIS keeps the load within its 3% imbalance (of 900 / p rows).
                            EXPECT_LE(static_cast<double>(s.stats.rows_max), 1.03 * s.stats.rows_mean + 1);
                          });
}

TEST(Partition, Ptscotch) {
  check_graph_partitioner(PartitionMethod::ptscotch, 3, "ptscotch",
                          "--partition ptscotch: desync was built without PT-Scotch (",
                          [](const PartitionedSystem& s, bool upwind) {
                            if (desync_test::world_rank() == 0)
                              std::printf("30 x 30 grid%s, %d parts: PT-Scotch edge cut %lld (rows %lld..%lld)\n",
                                          upwind ? " (upwind)" : "", desync_test::world_size(),
                                          static_cast<long long>(s.stats.edge_cut),
                                          static_cast<long long>(s.stats.rows_min),
                                          static_cast<long long>(s.stats.rows_max));
                          });
}

TEST(Partition, FileReversedBlocks) {
  // Rank r gets the input's block of rank p-1-r: everything moves (for p > 1), in one piece.
  TestComm comm;
  ScratchDir dir(comm, "desync_partition");
  const int p = size_of(comm);
  const auto A = grid_matrix(comm, kNx, kNy, true);
  const auto blocks = balanced_offsets(A.global_block_rows(), p);
  const auto reversed = partition_file(comm, dir, "reversed.txt", A, [&](Index g, Index, int) {
    const int owner = static_cast<int>(std::upper_bound(blocks.begin(), blocks.end(), g) - blocks.begin() - 1);
    return p - 1 - owner;
  });
  const auto s = partition_system(A, options(PartitionMethod::file, 0, reversed));
  const auto part = check_partitioned(A, s);
  EXPECT_EQ(s.stats.method, "file");
  const int me = rank_of(comm);
  const int from = p - 1 - me;
  ASSERT_EQ(static_cast<Index>(s.original_row.size()), blocks[from + 1] - blocks[from]);
  for (std::size_t i = 0; i < s.original_row.size(); ++i) EXPECT_EQ(s.original_row[i], blocks[from] + Index(i));
  (void)part;
}

TEST(Partition, MetisCutsLessThanRoundRobin) {
  TestComm comm;
  ScratchDir dir(comm, "desync_partition");
  const int p = size_of(comm);
  const auto A = grid_matrix(comm, kNx, kNy, false);
  const auto round_robin = partition_file(comm, dir, "rr.txt", A, [](Index g, Index, int parts) { return int(g % parts); });
  const auto rr = partition_system(A, options(PartitionMethod::file, 0, round_robin));
  check_partitioned(A, rr);
  if (p == 1) {
    EXPECT_EQ(rr.stats.edge_cut, 0);
    return;
  }
  // Round robin on an even line length: horizontal neighbours always differ, vertical ones when p
  // does not divide 30.
  EXPECT_GE(rr.stats.edge_cut, Index{kNy} * (kNx - 1));
  if (!partition_available(PartitionMethod::metis)) GTEST_SKIP() << "no METIS";
  const auto metis = partition_system(A, options(PartitionMethod::metis, 1));
  EXPECT_LT(metis.stats.edge_cut, rr.stats.edge_cut);
  if (rank_of(comm) == 0)
    std::printf("30 x 30 grid, %d parts: edge cut %lld round robin, %lld METIS (rows %lld..%lld)\n", p,
                static_cast<long long>(rr.stats.edge_cut), static_cast<long long>(metis.stats.edge_cut),
                static_cast<long long>(metis.stats.rows_min), static_cast<long long>(metis.stats.rows_max));
  // A 30 x 30 grid in p pieces: a straight cut costs 30 edges per piece boundary.
  EXPECT_LE(metis.stats.edge_cut, Index{kNx} * 2 * (p - 1));
}

TEST(Partition, BlockRows) {
  // Block size 3 (each grid coupling a dyadic 3 x 3 block, not symmetric): the graph and the parts
  // are those of the block rows; vectors move three entries per block row.
  TestComm comm;
  const int me = rank_of(comm);
  const auto S = grid_matrix(comm, 12, 10, true);
  DistributedCsr A = S;
  A.block_size = 3;
  A.val.clear();
  for (const double a : S.val)
    for (const double b : {2.0, 1.0, 0.0, 0.5, 2.0, 0.0, 0.0, 0.0, 1.0}) A.val.push_back(a * b);
  const auto method = partition_available(PartitionMethod::metis) ? PartitionMethod::metis : PartitionMethod::rows;
  const auto s = partition_system(A, options(method, 2));
  EXPECT_EQ(s.A.block_size, 3);
  EXPECT_EQ(s.A.global_block_rows(), A.global_block_rows());
  // The block graph's cut is the scalar pattern's cut under the same assignment.
  const std::vector<double> owner_here(static_cast<std::size_t>(s.A.local_block_rows()), static_cast<double>(me));
  PartitionedSystem one = s;  // the same moves with block size 1: one number per block row
  one.A.block_size = 1;
  const auto owner_input = one.to_input(comm, owner_here);
  const std::vector<int> part(owner_input.begin(), owner_input.end());
  EXPECT_EQ(part, s.input_owner);
  EXPECT_EQ(desync::linalg::edge_cut(S, part), s.stats.edge_cut);
  Index sum[2] = {s.A.local_rows(), s.A.nonzero_blocks() * 9};
  MPI_Allreduce(MPI_IN_PLACE, sum, 2, MPI_INT64_T, MPI_SUM, comm);
  EXPECT_EQ(sum[0], 3 * A.global_block_rows());
  EXPECT_EQ(s.stats.rows_mean * size_of(comm), static_cast<double>(sum[0]));
  EXPECT_EQ(sum[1], static_cast<Index>(desync_test::sum_over_ranks(static_cast<long long>(A.val.size()), comm)));
  // Products (integer x: exact) and vectors.
  std::vector<double> x(static_cast<std::size_t>(A.local_rows())), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((A.first_block_row() * 3 + Index(i)) % 9) - 4;
  desync::linalg::make_csr_operator(A, {})->apply(x, y);
  const auto x_new = s.to_partitioned(comm, x);
  std::vector<double> y_new(x_new.size());
  desync::linalg::make_csr_operator(s.A, {})->apply(x_new, y_new);
  EXPECT_EQ(s.to_input(comm, y_new), y);
  for (std::size_t i = 0; i < s.original_row.size() && 3 * i + 2 < x_new.size(); ++i)
    for (std::size_t c = 0; c < 3; ++c)
      EXPECT_EQ(x_new[3 * i + c], static_cast<double>((s.original_row[i] * 3 + Index(c)) % 9) - 4);
}

TEST(Partition, NoCouplings) {
  // A diagonal matrix: the graph has no edge, every partition cuts nothing; the partitioners must
  // still spread the rows over every rank.
  TestComm comm;
  DistributedCsr D;
  D.comm = comm;
  D.row_offsets = balanced_offsets(40, size_of(comm));
  const int me = rank_of(comm);
  D.row_ptr.push_back(0);
  for (Index g = D.row_offsets[me]; g < D.row_offsets[me + 1]; ++g) {
    D.col.push_back(g);
    D.val.push_back(static_cast<double>(g + 1));
    D.row_ptr.push_back(static_cast<Index>(D.col.size()));
  }
  for (const auto m : {PartitionMethod::rows, PartitionMethod::metis, PartitionMethod::ptscotch}) {
    if (!partition_available(m)) continue;
    const auto s = partition_system(D, options(m, 4));
    EXPECT_EQ(s.stats.edge_cut, 0) << desync::linalg::to_string(m);
    EXPECT_GT(s.stats.rows_min, 0) << desync::linalg::to_string(m);
    EXPECT_EQ(s.to_input(comm, s.to_partitioned(comm, std::vector<double>(static_cast<std::size_t>(D.local_rows()), 1.5))),
              std::vector<double>(static_cast<std::size_t>(D.local_rows()), 1.5));
  }
}

TEST(Partition, FileErrors) {
  TestComm comm;
  ScratchDir dir(comm, "desync_partition");
  const int p = size_of(comm);
  const auto A = grid_matrix(comm, 6, 5, false);
  const Index n = A.global_block_rows();
  const auto try_file = [&](const std::string& name, const std::string& text) {
    const auto path = dir.file(name);
    if (!text.empty()) write_file(comm, path, text);
    return input_error(comm, [&] { partition_system(A, options(PartitionMethod::file, 0, path)); });
  };
  const auto has = [](const std::string& what, const std::string& part) {
    return what.find(part) != std::string::npos;
  };
  std::string zeros;
  for (Index g = 0; g < n; ++g) zeros += "0 ";

  auto what = try_file("short.txt", zeros.substr(2));
  EXPECT_TRUE(has(what, "short.txt has 29 part numbers, the matrix 30 rows")) << what;
  what = try_file("long.txt", zeros + "0\n");
  EXPECT_TRUE(has(what, "long.txt has 31 part numbers, the matrix 30 rows")) << what;
  what = try_file("big.txt", "# fine\n" + zeros.substr(2) + std::to_string(p) + "\n");
  EXPECT_TRUE(has(what, "big.txt, line 2: part number " + std::to_string(p) + " is not a rank")) << what;
  what = try_file("negative.txt", "-1 " + zeros.substr(2));
  EXPECT_TRUE(has(what, "negative.txt, line 1: part number -1 is not a rank")) << what;
  what = try_file("word.txt", "0 0\n0 zero " + zeros.substr(8));
  EXPECT_TRUE(has(what, "word.txt, line 2: 'zero' is not a part number")) << what;
  what = try_file("float.txt", "0.5 " + zeros.substr(2));
  EXPECT_TRUE(has(what, "'0.5' is not a part number")) << what;
  what = try_file("missing.txt", "");
  EXPECT_TRUE(has(what, "partition file " + dir.file("missing.txt") + " cannot be read")) << what;
  if (p > 1) {
    what = try_file("all_zero.txt", zeros);
    EXPECT_TRUE(has(what, "all_zero.txt leaves rank 1 with no rows")) << what;
  }
}

TEST(Partition, MoreRanksThanRows) {
  TestComm comm;
  const int p = size_of(comm);
  if (p < 3) GTEST_SKIP() << "needs more ranks than the 2 rows";
  const auto A = grid_matrix(comm, 2, 1, false);  // ranks 2.. own no rows
  const auto what = input_error(comm, [&] { partition_system(A, options(PartitionMethod::rows)); });
  EXPECT_NE(what.find("more ranks (" + std::to_string(p) + ") than matrix rows (2)"), std::string::npos) << what;
}
