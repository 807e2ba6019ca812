#pragma once
// A tree over the ranks 0..P-1 of fan-in K, rooted at rank 0, whose subtrees are contiguous rank
// ranges: the node lo of the range [lo, hi) has as children the first ranks of the min(K, hi - lo - 1)
// nearly equal pieces [lo + 1, hi) splits into (larger pieces first), each the node of its piece.
// Contiguous ranges keep a subtree's subdomains neighbours in a partition numbered along the grid
// (or a graph partitioner's order), so what the subtree sends up (a sum over its subdomains' coarse
// functions) stays short. K >= P - 1 is the flat tree (rank 0 the parent of every other rank); K = 1
// a chain. Height: the most edges from the root to a leaf, ceil(log_K P) for large P.
#include <vector>

namespace desync::comm {

struct RankTree {
  int parent = -1;              ///< -1 at the root (rank 0)
  std::vector<int> children;    ///< ascending
  int subtree_end = 0;          ///< this rank's subtree is the ranks [rank, subtree_end)
  int depth = 0;                ///< edges between this rank and the root
  int height = 0;               ///< the whole tree's: the most edges from the root to a leaf
};

/// Rank `rank`'s place in the tree of `ranks` ranks and fan-in `fan_in` (>= 1; std::invalid_argument
/// otherwise, or for a rank outside 0..ranks-1).
RankTree rank_tree(int rank, int ranks, int fan_in);

}  // namespace desync::comm
