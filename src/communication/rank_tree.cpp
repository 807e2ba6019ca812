// A contiguous-range tree over the ranks (rank_tree.hpp).
#include "desync/communication/rank_tree.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace desync::comm {

namespace {

// The first ranks of the pieces [lo + 1, hi) splits into (and hi at the end): min(fan_in, hi - lo - 1)
// pieces, the first (hi - lo - 1) % m of them one rank longer.
std::vector<int> piece_starts(int lo, int hi, int fan_in) {
  const int rest = hi - lo - 1;
  const int m = std::min(fan_in, rest);
  std::vector<int> s{lo + 1};
  for (int i = 0; i < m; ++i) s.push_back(s.back() + rest / m + (i < rest % m ? 1 : 0));
  return s;
}

int height_of(int n, int fan_in) {  // a range of n ranks
  if (n <= 1) return 0;
  const int m = std::min(fan_in, n - 1);
  return 1 + height_of((n - 1 + m - 1) / m, fan_in);  // the largest piece
}

}  // namespace

RankTree rank_tree(int rank, int ranks, int fan_in) {
  if (fan_in < 1) throw std::invalid_argument("rank_tree: fan-in " + std::to_string(fan_in) + " (must be >= 1)");
  if (rank < 0 || rank >= ranks)
    throw std::invalid_argument("rank_tree: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  RankTree t;
  t.height = height_of(ranks, fan_in);
  int lo = 0, hi = ranks;
  for (;;) {
    const std::vector<int> s = piece_starts(lo, hi, fan_in);
    if (lo == rank) {
      t.children.assign(s.begin(), s.end() - 1);
      t.subtree_end = hi;
      return t;
    }
    const auto i = static_cast<std::size_t>(std::upper_bound(s.begin(), s.end(), rank) - s.begin()) - 1;
    t.parent = lo;
    lo = s[i];
    hi = s[i + 1];
    ++t.depth;
  }
}

}  // namespace desync::comm
