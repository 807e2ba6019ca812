// comm::rank_tree: the contiguous-range tree of the asynchronous coarse level (rank_tree.hpp).
//   - every rank but 0 has one parent, which lists it among its children; the children's subtrees
//     tile [rank + 1, subtree_end) in order; no node has more than K children
//   - depths are the parent's plus one, the tree's height is the largest depth, and it is
//     ceil(log_K P)-like: P - 1 for a chain (K = 1), 1 for a flat tree (K >= P - 1)
//   - bad arguments are refused
//   - the fan-in from the model (model_fan_in) minimises 2 height (latency + K per_message) over
//     every K, with heights from the trees themselves; free messages give the flat tree; the
//     costs of the fan-in sweep of docs/results/two-level.md give its fastest fan-in, 16 at 256 ranks
//   - measure_tree_costs (1-4 ranks): finite, non-negative, the same on every rank, zeros on one
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "desync/communication/rank_tree.hpp"

using desync::comm::rank_tree;
using desync::comm::RankTree;
using desync::comm::TreeCosts;

TEST(RankTree, ParentsChildrenAndSubtreesAgree) {
  for (int p = 1; p <= 130; ++p) {
    for (int k : {1, 2, 3, 4, 8, p}) {
      if (k < 1) continue;
      SCOPED_TRACE("P " + std::to_string(p) + ", K " + std::to_string(k));
      std::vector<RankTree> t;
      for (int r = 0; r < p; ++r) t.push_back(rank_tree(r, p, k));
      EXPECT_EQ(t[0].parent, -1);
      EXPECT_EQ(t[0].subtree_end, p);
      int deepest = 0;
      for (int r = 0; r < p; ++r) {
        const auto& n = t[static_cast<std::size_t>(r)];
        ASSERT_LE(static_cast<int>(n.children.size()), k);
        EXPECT_EQ(n.height, t[0].height);
        deepest = std::max(deepest, n.depth);
        if (r > 0) {
          ASSERT_GE(n.parent, 0);
          ASSERT_LT(n.parent, r);  // contiguous ranges: a parent precedes its subtree
          const auto& up = t[static_cast<std::size_t>(n.parent)];
          EXPECT_EQ(std::count(up.children.begin(), up.children.end(), r), 1);
          EXPECT_EQ(n.depth, up.depth + 1);
        }
        int next = r + 1;  // the children's ranges tile [r + 1, subtree_end)
        for (int c : n.children) {
          EXPECT_EQ(c, next);
          EXPECT_EQ(t[static_cast<std::size_t>(c)].parent, r);
          next = t[static_cast<std::size_t>(c)].subtree_end;
        }
        EXPECT_EQ(next, n.subtree_end);
      }
      EXPECT_EQ(deepest, t[0].height);
    }
  }
}

TEST(RankTree, Heights) {
  EXPECT_EQ(rank_tree(0, 1, 4).height, 0);
  EXPECT_EQ(rank_tree(0, 5, 1).height, 4);      // a chain
  EXPECT_EQ(rank_tree(0, 64, 63).height, 1);    // flat
  EXPECT_EQ(rank_tree(0, 64, 1000).height, 1);
  EXPECT_EQ(rank_tree(0, 1024, 4).height, 5);   // 4^5 = 1024: 1 + 341 + ... levels of 4
  EXPECT_EQ(rank_tree(0, 21, 4).height, 2);     // 1 + 4 + 16
  EXPECT_EQ(rank_tree(0, 22, 4).height, 3);
  EXPECT_EQ(rank_tree(7, 8, 2).parent, 5);      // [1, 8) splits into [1, 5) and [5, 8), [6, 8) into [6, 7) and [7, 8)
  EXPECT_EQ(rank_tree(7, 8, 2).depth, 2);
}

TEST(RankTree, BadArgumentsAreRefused) {
  EXPECT_THROW(rank_tree(0, 4, 0), std::invalid_argument);
  EXPECT_THROW(rank_tree(4, 4, 2), std::invalid_argument);
  EXPECT_THROW(rank_tree(-1, 4, 2), std::invalid_argument);
}

TEST(RankTree, TreeHeightIsTheTreesOwn) {
  for (int p = 1; p <= 300; p += (p < 40 ? 1 : 7))
    for (int k = 1; k <= p + 1; k += (k < 20 ? 1 : 5)) EXPECT_EQ(desync::comm::tree_height(p, k), rank_tree(0, p, k).height);
  EXPECT_THROW(desync::comm::tree_height(4, 0), std::invalid_argument);
}

TEST(RankTree, ModelFanInMinimisesTheModelsCycle) {
  const std::vector<TreeCosts> costs{{1e-6, 1e-7},    {15e-6, 0.5e-6}, {1e-6, 1e-6}, {2e-6, 0},
                                     {0, 1e-6},       {1e-5, 3e-8},    {1e-6, 5e-7, 6e-6}};
  for (int p : {1, 2, 3, 5, 16, 64, 100, 256, 1024}) {
    for (const TreeCosts& c : costs) {
      SCOPED_TRACE("P " + std::to_string(p) + ", latency " + std::to_string(c.latency) + ", per message " +
                   std::to_string(c.per_message));
      const int k = desync::comm::model_fan_in(p, c);
      ASSERT_GE(k, 1);
      ASSERT_LE(k, std::max(p - 1, 1));
      auto cycle = [&](int kk) {
        return 2.0 * rank_tree(0, p, kk).height * (c.latency + c.poll_wait + kk * c.per_message);
      };
      for (int kk = 1; kk <= std::max(p - 1, 1); ++kk) {
        EXPECT_LE(cycle(k), cycle(kk)) << "K " << kk;
        if (kk < k) {
          EXPECT_LT(cycle(k), cycle(kk)) << "a smaller K ties, K " << kk;  // ties: the smallest K
        }
      }
    }
  }
  // Free messages: one level, rank 0 the parent of every rank; free hops: a narrow tree.
  EXPECT_EQ(desync::comm::model_fan_in(256, {2e-6, 0}), 255);
  EXPECT_LE(desync::comm::model_fan_in(256, {0, 1e-6}), 4);
  // The simulated cluster's sweep at 256 ranks (two-level.md: fan-in 16 the fastest, then 8, 4, 2,
  // flat): a hop of 15 us and 0.5 us a message, which its cycle times fit, give 16.
  EXPECT_EQ(desync::comm::model_fan_in(256, {15e-6, 0.5e-6}), 16);
  EXPECT_EQ(desync::comm::model_fan_in(256, {1e-6, 0.5e-6, 14e-6}), 16);  // the same hop, mostly a wait
  EXPECT_LT(desync::comm::model_fan_in(256, {1e-6, 0.5e-6}), 16);         // without the wait: a narrower tree
  EXPECT_EQ(desync::comm::model_fan_in(1, {1e-6, 1e-6}), 1);
  EXPECT_THROW(desync::comm::model_fan_in(0, {1e-6, 1e-6}), std::invalid_argument);
  EXPECT_THROW(desync::comm::model_fan_in(8, {-1e-6, 1e-6}), std::invalid_argument);
  EXPECT_THROW(desync::comm::model_fan_in(8, {1e-6, std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  EXPECT_THROW(desync::comm::model_fan_in(8, {std::numeric_limits<double>::infinity(), 1e-6}), std::invalid_argument);
  EXPECT_THROW(desync::comm::model_fan_in(8, {1e-6, 1e-6, -1.0}), std::invalid_argument);
}

TEST(RankTree, MeasuredCostsAreRankZerosOnEveryRank) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (int doubles : {0, 1, 100}) {
    const TreeCosts c = desync::comm::measure_tree_costs(MPI_COMM_WORLD, doubles);
    EXPECT_TRUE(std::isfinite(c.latency));
    EXPECT_TRUE(std::isfinite(c.per_message));
    EXPECT_GE(c.per_message, 0.0);
    EXPECT_EQ(c.poll_wait, 0.0);  // the caller's
    if (ranks == 1) {
      EXPECT_EQ(c.latency, 0.0);
      EXPECT_EQ(c.per_message, 0.0);
    } else {
      EXPECT_GT(c.latency, 0.0);
      if (ranks == 2) {
        EXPECT_EQ(c.per_message, 0.0);  // one message: no second to cost
      }
    }
    double lo[2] = {c.latency, c.per_message}, hi[2] = {c.latency, c.per_message};
    MPI_Allreduce(MPI_IN_PLACE, lo, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, hi, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo[0], hi[0]);
    EXPECT_EQ(lo[1], hi[1]);
  }
  // Nothing left behind: a later message on the same communicator is not taken by the measurement.
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  EXPECT_EQ(flag, 0);
}
