#pragma once
// A tree over the ranks 0..P-1 of fan-in K, rooted at rank 0, whose subtrees are contiguous rank
// ranges: the node lo of the range [lo, hi) has as children the first ranks of the min(K, hi - lo - 1)
// nearly equal pieces [lo + 1, hi) splits into (larger pieces first), each the node of its piece.
// Contiguous ranges keep a subtree's subdomains neighbours in a partition numbered along the grid
// (or a graph partitioner's order), so what the subtree sends up (a sum over its subdomains' coarse
// functions) stays short. K >= P - 1 is the flat tree (rank 0 the parent of every other rank); K = 1
// a chain. Height: the most edges from the root to a leaf, ceil(log_K P) for large P.
#include <mpi.h>

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

/// The height of rank_tree(*, ranks, fan_in) (fan_in >= 1).
int tree_height(int ranks, int fan_in);

/// The model a tree's fan-in is chosen from: a message takes `latency` seconds to cross a level and
/// then waits `poll_wait` for its receiver to look (a rank that computes between its looks: about
/// half the time between them), and a parent handles its children's messages one after the other,
/// `per_message` seconds each.
struct TreeCosts {
  double latency = 0;      ///< one message's one-way time (half a ping-pong's round trip)
  double per_message = 0;  ///< what one more message costs the rank that takes them all
  double poll_wait = 0;    ///< the mean wait of an arrived message for its receiver
};

/// The fan-in K in 1..max(ranks - 1, 1) that makes a cycle up and down the tree cheapest in the
/// model, 2 height(P, K) (latency + poll_wait + K per_message): a low tree waits on few levels, a
/// narrow one on few children per level. per_message 0 gives the flat tree, latency and poll_wait 0
/// a narrow one. Ties: the smallest K. (Any P >= 1, costs finite and >= 0; std::invalid_argument
/// otherwise.)
int model_fan_in(int ranks, const TreeCosts& costs);

/// Measures the model's two costs on `comm` with messages of `doubles` values: rank 0 and rank 1
/// ping-pong (latency: the least half round trip of 5), then the first m = min(P - 1, 32) other ranks
/// send rank 0 one message at once, into receives rank 0 posted before, as a tree's channels do,
/// and rank 0 takes each in with a channel's work per message (per_message: (the least time rank 0
/// takes to receive them all, of 3) - latency, over m; 0 on two ranks). Collective; every rank returns rank 0's
/// figures (so every rank builds the same tree); one rank: zeros. Point-to-point messages on a
/// duplicate of comm. poll_wait is the caller's (0 here).
TreeCosts measure_tree_costs(MPI_Comm comm, int doubles);

}  // namespace desync::comm
