// A contiguous-range tree over the ranks, and the model of its cycle that picks a fan-in (rank_tree.hpp).
#include "desync/communication/rank_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "desync/core/comm.hpp"
#include "desync/core/simulation.hpp"

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

int tree_height(int ranks, int fan_in) {
  if (fan_in < 1) throw std::invalid_argument("tree_height: fan-in " + std::to_string(fan_in) + " (must be >= 1)");
  return height_of(ranks, fan_in);
}

int model_fan_in(int ranks, const TreeCosts& costs) {
  for (double c : {costs.latency, costs.per_message, costs.poll_wait})
    if (ranks < 1 || !(c >= 0) || !std::isfinite(c))
      throw std::invalid_argument("model_fan_in: " + std::to_string(ranks) + " ranks, latency " +
                                  std::to_string(costs.latency) + ", per message " + std::to_string(costs.per_message) +
                                  ", poll wait " + std::to_string(costs.poll_wait));
  int best = 1;
  double best_cost = std::numeric_limits<double>::infinity();
  for (int k = 1; k <= std::max(ranks - 1, 1); ++k) {
    // One cycle: the sums up and the corrections down cross every level once each way, and at each
    // level a parent takes (sends) its k children's messages one after the other.
    const double cost = 2.0 * height_of(ranks, k) * (costs.latency + costs.poll_wait + k * costs.per_message);
    if (cost < best_cost) {
      best = k;
      best_cost = cost;
    }
  }
  return best;
}

TreeCosts measure_tree_costs(MPI_Comm comm, int doubles) {
  const int rank = core::rank_of(comm), ranks = core::size_of(comm);
  TreeCosts c;
  if (ranks < 2) return c;
  MPI_Comm mc = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &mc);
  std::vector<double> buf(static_cast<std::size_t>(std::max(doubles, 1)), 1.0);
  const int n = static_cast<int>(buf.size());
  double latency = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep < 5; ++rep) {  // ping-pong between ranks 0 and 1
    MPI_Barrier(mc);
    if (rank == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(buf.data(), n, MPI_DOUBLE, 1, 0, mc);
      MPI_Recv(buf.data(), n, MPI_DOUBLE, 1, 0, mc, MPI_STATUS_IGNORE);
      latency = std::min(latency, (MPI_Wtime() - t0) / 2);
    } else if (rank == 1) {
      MPI_Recv(buf.data(), n, MPI_DOUBLE, 0, 0, mc, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), n, MPI_DOUBLE, 0, 0, mc);
    }
  }
  // The first m = min(P - 1, 32) other ranks send rank 0 one message at once, into receives rank
  // 0 posted before (as a tree's channels post theirs ahead of the messages, so that the transfers
  // overlap; a blocking receive posted after the other would instead pay a whole latency per
  // message where the transfer waits for its receive, as on SMPI). Rank 0 takes each message in as
  // a channel does: its work per message (on a simulated cluster the cost model's halo.message, as
  // ChannelCore::arrived_piece charges it; on a real one the MPI completions measured). m bounds
  // the measurement's own time, which counts in the run's (it is made as the asynchronous phase
  // opens): with P - 1 messages it would grow with the ranks.
  const int senders = std::min(ranks - 1, 32);
  double incast = std::numeric_limits<double>::infinity();
  std::vector<MPI_Request> rq(static_cast<std::size_t>(senders), MPI_REQUEST_NULL);
  std::vector<double> in(rank == 0 ? rq.size() * buf.size() : 0);
  for (int rep = 0; rep < 3; ++rep) {
    if (rank == 0)
      for (int q = 1; q <= senders; ++q)
        MPI_Irecv(in.data() + static_cast<std::size_t>(q - 1) * buf.size(), n, MPI_DOUBLE, q, 1, mc,
                  &rq[static_cast<std::size_t>(q - 1)]);
    MPI_Barrier(mc);
    if (rank == 0) {
      const double t0 = MPI_Wtime();
      MPI_Waitall(senders, rq.data(), MPI_STATUSES_IGNORE);
      core::charge("halo.message", static_cast<double>(senders));
      incast = std::min(incast, MPI_Wtime() - t0);
    } else if (rank <= senders) {
      MPI_Send(buf.data(), n, MPI_DOUBLE, 0, 1, mc);
    }
  }
  double out[2] = {latency, senders > 1 ? std::max(0.0, (incast - latency) / senders) : 0.0};
  MPI_Bcast(out, 2, MPI_DOUBLE, 0, mc);
  MPI_Comm_free(&mc);
  c.latency = out[0];
  c.per_message = out[1];
  return c;
}

}  // namespace desync::comm
