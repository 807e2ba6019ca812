// Decomposition: block sizes, ownership of every global cell, neighbour symmetry, input errors.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <string>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/core/error.hpp"
#include "test_util.hpp"

using desync::InputError;
using namespace desync::decomposition;
using desync_test::TestComm;

TEST(BlockSplit, HandCheckedTenOverThree) {
  EXPECT_EQ(block_size(10, 3, 0), 4);
  EXPECT_EQ(block_size(10, 3, 1), 3);
  EXPECT_EQ(block_size(10, 3, 2), 3);
  EXPECT_EQ(block_start(10, 3, 0), 0);
  EXPECT_EQ(block_start(10, 3, 1), 4);
  EXPECT_EQ(block_start(10, 3, 2), 7);
}

TEST(BlockSplit, HandCheckedOtherCases) {
  // 7 over 4: 2,2,2,1 starting 0,2,4,6.
  const int sizes[] = {2, 2, 2, 1}, starts[] = {0, 2, 4, 6};
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(block_size(7, 4, c), sizes[c]) << c;
    EXPECT_EQ(block_start(7, 4, c), starts[c]) << c;
  }
  // Exact division and one block per cell.
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(block_size(12, 3, c), 4);
    EXPECT_EQ(block_start(12, 3, c), 4 * c);
  }
  for (int c = 0; c < 5; ++c) {
    EXPECT_EQ(block_size(5, 5, c), 1);
    EXPECT_EQ(block_start(5, 5, c), c);
  }
  EXPECT_EQ(block_size(9, 1, 0), 9);
  EXPECT_EQ(block_start(9, 1, 0), 0);
}

TEST(BlockSplit, BlocksTileEveryExtent) {
  for (int n = 1; n <= 40; ++n)
    for (int p = 1; p <= n; ++p) {
      int next = 0, smallest = n, largest = 0;
      for (int c = 0; c < p; ++c) {
        ASSERT_EQ(block_start(n, p, c), next) << n << " over " << p << ", block " << c;
        const int s = block_size(n, p, c);
        ASSERT_GE(s, 1);
        // The first n % p blocks are the larger ones.
        ASSERT_EQ(s, n / p + (c < n % p ? 1 : 0)) << n << " over " << p << ", block " << c;
        smallest = std::min(smallest, s);
        largest = std::max(largest, s);
        next += s;
      }
      ASSERT_EQ(next, n) << n << " over " << p;
      ASSERT_LE(largest - smallest, 1) << n << " over " << p;
    }
}

TEST(ParseExtent, AcceptsCubesAndTriples) {
  EXPECT_EQ(parse_extent("50", "--local"), (Index3{50, 50, 50}));
  EXPECT_EQ(parse_extent("200x100x80", "--global"), (Index3{200, 100, 80}));
  EXPECT_EQ(parse_extent("1x1x1", "--global"), (Index3{1, 1, 1}));
  EXPECT_EQ(parse_extent("7x5x3", "--global"), (Index3{7, 5, 3}));
}

TEST(ParseExtent, RejectsBadText) {
  for (const char* bad : {"", "0", "-1", "abc", "1x2", "1x2x3x4", "1xx2", "x", "5x0x5", "5x5x", "x5x5", "3.5",
                          " 5", "5 ", "1e3", "+5", "1234567890", "12345678901x1x1", "5X5X5"}) {
    EXPECT_THROW(parse_extent(bad, "--global"), InputError) << "'" << bad << "'";
  }
}

TEST(ParseExtent, MessageNamesTheOption) {
  try {
    parse_extent("12y4", "--local");
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--local"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("12y4"), std::string::npos) << e.what();
  }
}

TEST(ChooseDims, FillsZerosAndKeepsFixedEntries) {
  for (int n : {1, 2, 3, 4, 6, 8, 12}) {
    for (Index3 hint : {Index3{0, 0, 0}, Index3{0, 1, 1}, Index3{0, 0, 1}, Index3{1, 0, 1}, Index3{1, 1, 0}}) {
      const Index3 d = choose_dims(n, hint);
      EXPECT_EQ(static_cast<long long>(d[0]) * d[1] * d[2], n);
      for (int a = 0; a < 3; ++a) {
        EXPECT_GE(d[a], 1);
        if (hint[a] != 0) {
          EXPECT_EQ(d[a], hint[a]) << "n=" << n << " axis " << a;
        }
      }
    }
  }
  EXPECT_EQ(choose_dims(4, {1, 1, 4}), (Index3{1, 1, 4}));
  EXPECT_EQ(choose_dims(6, {3, 0, 1}), (Index3{3, 2, 1}));
  EXPECT_EQ(choose_dims(1, {0, 0, 0}), (Index3{1, 1, 1}));
}

namespace {

/// Every split of m into k factors, largest first (k <= 3), by brute force: the reference the
/// balanced split is checked against.
std::vector<Index3> all_splits(int m, int k) {
  std::vector<Index3> out;
  for (int a = 1; a <= m; ++a) {
    if (m % a != 0) continue;
    if (k == 1) {
      if (a == m) out.push_back({a, 1, 1});
      continue;
    }
    for (int b = 1; b <= a; ++b) {
      if ((m / a) % b != 0) continue;
      const int c = m / a / b;
      if (k == 2 && c == 1 && a * b == m) out.push_back({a, b, 1});
      if (k == 3 && c <= b) out.push_back({a, b, c});
    }
  }
  return out;
}

}  // namespace

TEST(ChooseDims, BalancedFactorsIsTheMostBalancedSplit) {
  // The largest factor as small as any split's, and for that largest the smallest as large.
  for (int k = 1; k <= 3; ++k) {
    for (int m = 1; m <= 400; ++m) {
      const Index3 f = balanced_factors(m, k);
      ASSERT_EQ(static_cast<long long>(f[0]) * f[1] * f[2], m) << "m=" << m << " k=" << k;
      EXPECT_GE(f[0], f[1]);
      EXPECT_GE(f[1], f[2]);
      if (k < 3) {
        EXPECT_EQ(f[2], 1);
      }
      if (k < 2) {
        EXPECT_EQ(f[1], 1);
      }
      const int smallest = f[k - 1];
      for (const Index3& s : all_splits(m, k)) {
        EXPECT_LE(f[0], s[0]) << "m=" << m << " k=" << k << ": " << s[0] << "x" << s[1] << "x" << s[2];
        if (s[0] == f[0]) {
          EXPECT_GE(smallest, s[k - 1]) << "m=" << m << " k=" << k;
        }
      }
    }
  }
  // Counts MPI libraries split differently (Open MPI 4.1 12x6 for 72, MPICH 4.0 9x8) or wrongly
  // (SimGrid 3.32: 9 -> 9x1, 36 -> 9x4, 100 -> 25x4).
  EXPECT_EQ(choose_dims(9, {0, 0, 1}), (Index3{3, 3, 1}));
  EXPECT_EQ(choose_dims(36, {0, 0, 1}), (Index3{6, 6, 1}));
  EXPECT_EQ(choose_dims(100, {0, 0, 1}), (Index3{10, 10, 1}));
  EXPECT_EQ(choose_dims(72, {0, 0, 1}), (Index3{9, 8, 1}));
  EXPECT_EQ(choose_dims(36, {0, 0, 0}), (Index3{4, 3, 3}));
  EXPECT_EQ(choose_dims(1024, {0, 0, 0}), (Index3{16, 8, 8}));
  EXPECT_EQ(choose_dims(216, {0, 0, 0}), (Index3{6, 6, 6}));
  EXPECT_EQ(choose_dims(12, {0, 1, 0}), (Index3{4, 1, 3}));  // free entries non-increasing, fixed kept
}

TEST(ChooseDims, MatchesMpiDimsCreateOnSquaresCubesAndPowersOfTwo) {
  // Where the balanced grid is unambiguous (a square, a cube, a power of two), the grid is the one
  // MPI_Dims_create gives under a real MPI library, so runs decomposed before desync chose its
  // own grids keep them.
  for (int m : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 9, 25, 49, 81, 121, 27, 125, 343, 1000}) {
    for (int k = 2; k <= 3; ++k) {
      int d[3] = {0, 0, k == 2 ? 1 : 0};
      MPI_Dims_create(m, 3, d);
      EXPECT_EQ(choose_dims(m, {0, 0, k == 2 ? 1 : 0}), (Index3{d[0], d[1], d[2]})) << "m=" << m << " k=" << k;
    }
  }
}

TEST(ChooseDims, RejectsImpossibleHints) {
  EXPECT_THROW(choose_dims(4, {3, 0, 0}), InputError);   // 3 does not divide 4
  EXPECT_THROW(choose_dims(4, {2, 2, 2}), InputError);   // 8 ranks, not 4
  EXPECT_THROW(choose_dims(4, {1, 1, 1}), InputError);   // 1 rank, not 4
  EXPECT_THROW(choose_dims(4, {-1, 0, 0}), InputError);  // negative entry
  EXPECT_THROW(choose_dims(4, {0, 0, 8}), InputError);
  EXPECT_THROW(choose_dims(3, {2, 0, 0}), InputError);
}

TEST(CheckSplit, ReportsMoreRanksThanCells) {
  EXPECT_EQ(check_split({4, 4, 4}, {2, 2, 1}), "");
  EXPECT_EQ(check_split({3, 1, 1}, {3, 1, 1}), "");
  const std::string x = check_split({3, 1, 1}, {4, 1, 1});
  EXPECT_FALSE(x.empty());
  EXPECT_NE(x.find("more ranks than cells"), std::string::npos) << x;
  EXPECT_NE(x.find("x"), std::string::npos) << x;
  const std::string y = check_split({13, 1, 9}, {1, 2, 1});
  EXPECT_NE(y.find("along y"), std::string::npos) << y;
  const std::string z = check_split({8, 8, 2}, {1, 1, 3});
  EXPECT_NE(z.find("along z"), std::string::npos) << z;
}

namespace {

struct GridCase {
  Index3 global;
  Index3 hint;
};

// Uneven sizes over 1D, 2D and 3D process grids.
const GridCase grid_cases[] = {
    {{7, 5, 3}, {0, 1, 1}},  {{7, 5, 3}, {0, 0, 1}},  {{7, 5, 3}, {0, 0, 0}},  {{13, 1, 9}, {0, 1, 1}},
    {{13, 1, 9}, {0, 1, 0}}, {{13, 1, 9}, {1, 1, 0}}, {{13, 1, 9}, {0, 0, 0}}, {{5, 6, 7}, {1, 0, 0}},
    {{5, 6, 7}, {0, 0, 0}},  {{4, 4, 4}, {0, 0, 0}},  {{9, 11, 2}, {0, 0, 1}}, {{2, 3, 5}, {1, 1, 0}},
};

std::string describe(const GridCase& c, const Index3& d) {
  return "global " + std::to_string(c.global[0]) + "x" + std::to_string(c.global[1]) + "x" +
         std::to_string(c.global[2]) + " dims " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
         std::to_string(d[2]);
}

}  // namespace

TEST(CartGrid, EveryGlobalCellOwnedExactlyOnce) {
  TestComm comm;
  const int size = desync_test::world_size();
  int grids_tested = 0;
  for (const auto& c : grid_cases) {
    const Index3 d = choose_dims(size, c.hint);
    if (!check_split(c.global, d).empty()) {
      bool too_many = false;
      for (int a = 0; a < 3; ++a) too_many = too_many || d[a] > c.global[a];
      EXPECT_TRUE(too_many) << describe(c, d);
      continue;
    }
    ++grids_tested;
    CartGrid grid(comm, c.global, d);
    SCOPED_TRACE(describe(c, d));
    EXPECT_EQ(grid.size(), size);
    EXPECT_EQ(grid.dims(), d);
    EXPECT_EQ(grid.global(), c.global);
    for (int a = 0; a < 3; ++a) {
      EXPECT_GE(grid.coords()[a], 0);
      EXPECT_LT(grid.coords()[a], d[a]);
      EXPECT_EQ(grid.local()[a], block_size(c.global[a], d[a], grid.coords()[a]));
      EXPECT_EQ(grid.offset()[a], block_start(c.global[a], d[a], grid.coords()[a]));
    }
    const auto& n = grid.local();
    // No ASSERT before the collectives below: a rank leaving early would hang the others.
    std::vector<int> owned(static_cast<std::size_t>(grid.global_cells()), 0);
    long bad_index = 0;
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) {
          const long long g = grid.global_index(i, j, k);
          const long long gi = grid.offset()[0] + i, gj = grid.offset()[1] + j, gk = grid.offset()[2] + k;
          if (g != (gk * c.global[1] + gj) * c.global[0] + gi || g < 0 || g >= grid.global_cells()) {
            ++bad_index;
            continue;
          }
          ++owned[static_cast<std::size_t>(g)];
        }
    EXPECT_EQ(bad_index, 0) << "global_index() disagrees with offset + local index";
    MPI_Allreduce(MPI_IN_PLACE, owned.data(), static_cast<int>(owned.size()), MPI_INT, MPI_SUM, comm);
    int wrong = 0;
    for (std::size_t g = 0; g < owned.size(); ++g)
      if (owned[g] != 1) ++wrong;
    EXPECT_EQ(wrong, 0) << "cells not owned exactly once";
    EXPECT_EQ(desync_test::sum_over_ranks(static_cast<long long>(n[0]) * n[1] * n[2], comm), grid.global_cells());
  }
  EXPECT_GT(grids_tested, 0);
}

TEST(CartGrid, NeighboursAreSymmetricAndAdjacent) {
  TestComm comm;
  const int size = desync_test::world_size();
  for (const auto& c : grid_cases) {
    const Index3 d = choose_dims(size, c.hint);
    if (!check_split(c.global, d).empty()) continue;
    CartGrid grid(comm, c.global, d);
    SCOPED_TRACE(describe(c, d));
    // Everyone's neighbours and coordinates, by rank of the grid communicator.
    std::array<int, num_faces + 3> mine{};
    for (int f = 0; f < num_faces; ++f) mine[f] = grid.neighbour(f);
    for (int a = 0; a < 3; ++a) mine[num_faces + a] = grid.coords()[a];
    std::vector<int> all(static_cast<std::size_t>(size) * mine.size());
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT, all.data(), static_cast<int>(mine.size()),
                  MPI_INT, grid.comm());
    auto at = [&](int r, int field) { return all[static_cast<std::size_t>(r) * mine.size() + field]; };

    int expected_neighbours = 0;
    for (int f = 0; f < num_faces; ++f) {
      const int a = face_axis(f);
      const bool edge = face_is_high(f) ? grid.coords()[a] == d[a] - 1 : grid.coords()[a] == 0;
      EXPECT_EQ(grid.on_global_boundary(f), edge) << "face " << face_name(f);
      if (edge) {
        EXPECT_EQ(grid.neighbour(f), MPI_PROC_NULL) << "face " << face_name(f);
        continue;
      }
      ++expected_neighbours;
      const int nb = grid.neighbour(f);
      if (nb < 0 || nb >= size) {
        ADD_FAILURE() << "face " << face_name(f) << ": neighbour " << nb << " is not a rank";
        continue;
      }
      EXPECT_NE(nb, grid.rank());
      // My neighbour across f has me across the opposite face.
      EXPECT_EQ(at(nb, opposite_face(f)), grid.rank()) << "face " << face_name(f);
      // ... and sits one step away along f's axis only.
      for (int b = 0; b < 3; ++b) {
        const int step = b == a ? (face_is_high(f) ? 1 : -1) : 0;
        EXPECT_EQ(at(nb, num_faces + b), grid.coords()[b] + step) << "face " << face_name(f) << " axis " << b;
      }
      // Facing blocks agree on the two other extents (so halo messages have matching sizes).
      for (int b = 0; b < 3; ++b) {
        if (b != a) {
          EXPECT_EQ(block_size(c.global[b], d[b], at(nb, num_faces + b)), grid.local()[b]);
        }
      }
    }
    EXPECT_EQ(grid.num_neighbours(), expected_neighbours);
    // Consecutive ranks are neighbours along x (the fastest storage axis).
    if (grid.coords()[0] < d[0] - 1) {
      EXPECT_EQ(grid.neighbour(x_hi), grid.rank() + 1);
    }
  }
}

TEST(CartGrid, CoordinatesAreDistinct) {
  TestComm comm;
  const int size = desync_test::world_size();
  CartGrid grid(comm, {9, 8, 7}, choose_dims(size, {0, 0, 0}));
  const auto& d = grid.dims();
  int linear = (grid.coords()[2] * d[1] + grid.coords()[1]) * d[0] + grid.coords()[0];
  std::vector<int> seen(static_cast<std::size_t>(size), 0);
  seen[static_cast<std::size_t>(linear)] = 1;
  MPI_Allreduce(MPI_IN_PLACE, seen.data(), size, MPI_INT, MPI_SUM, comm);
  for (int r = 0; r < size; ++r) EXPECT_EQ(seen[static_cast<std::size_t>(r)], 1) << "block " << r;
}

TEST(Faces, Helpers) {
  for (int f = 0; f < num_faces; ++f) {
    EXPECT_EQ(opposite_face(opposite_face(f)), f);
    EXPECT_EQ(face_axis(opposite_face(f)), face_axis(f));
    EXPECT_NE(face_is_high(opposite_face(f)), face_is_high(f));
  }
  EXPECT_STREQ(face_name(x_lo), "x-");
  EXPECT_STREQ(face_name(z_hi), "z+");
}
