// comm::rank_tree: the contiguous-range tree of the asynchronous coarse level (rank_tree.hpp).
//   - every rank but 0 has one parent, which lists it among its children; the children's subtrees
//     tile [rank + 1, subtree_end) in order; no node has more than K children
//   - depths are the parent's plus one, the tree's height is the largest depth, and it is
//     ceil(log_K P)-like: P - 1 for a chain (K = 1), 1 for a flat tree (K >= P - 1)
//   - bad arguments are refused
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "desync/communication/rank_tree.hpp"

using desync::comm::rank_tree;
using desync::comm::RankTree;

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
