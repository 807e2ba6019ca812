#include "collective_exchange.hpp"

#include <algorithm>

#include "desync/communication/request_ledger.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/waiting.hpp"

namespace desync::comm::detail {

namespace {

/// Closes the part that ends at `total` entries: its displacement and count.
void close_part(std::vector<int>& counts, std::vector<int>& displs, std::size_t total) {
  const int start = displs.empty() ? 0 : displs.back() + counts.back();
  displs.push_back(start);
  counts.push_back(static_cast<int>(total) - start);
}

}  // namespace

CollectiveExchange::CollectiveExchange(MPI_Comm comm, const HaloPlan& plan, ExchangeEngine engine)
    : engine_(engine), recv_at_(plan.neighbours.size(), 0) {
  std::size_t received = 0;
  auto take_recv = [&](std::size_t n) {
    recv_at_[n] = received;
    received += plan.neighbours[n].recv.size();
  };
  if (engine_ == ExchangeEngine::neighbor) {
    // One edge per distinct peer; a peer's parts in ascending send tag (sending) and receive tag
    // (receiving) order, which pair up on the two ends since a send tag is the peer's receive tag.
    for (std::size_t n = 0; n < plan.neighbours.size(); ++n)
      if (!plan.is_local(n)) peers_.push_back(plan.neighbours[n].peer);
    std::sort(peers_.begin(), peers_.end());
    peers_.erase(std::unique(peers_.begin(), peers_.end()), peers_.end());
    for (int p : peers_) {
      std::vector<std::size_t> of;
      for (std::size_t n = 0; n < plan.neighbours.size(); ++n)
        if (plan.neighbours[n].peer == p) of.push_back(n);
      const auto& nbs = plan.neighbours;
      std::sort(of.begin(), of.end(), [&](auto a, auto b) { return nbs[a].send_tag < nbs[b].send_tag; });
      for (auto n : of) pack_.insert(pack_.end(), nbs[n].send.begin(), nbs[n].send.end());
      close_part(send_counts_, send_displs_, pack_.size());
      std::sort(of.begin(), of.end(), [&](auto a, auto b) { return nbs[a].recv_tag < nbs[b].recv_tag; });
      for (auto n : of) take_recv(n);
      close_part(recv_counts_, recv_displs_, received);
    }
    MPI_Dist_graph_create_adjacent(comm, static_cast<int>(peers_.size()), peers_.data(), MPI_UNWEIGHTED,
                                   static_cast<int>(peers_.size()), peers_.data(), MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   /*reorder=*/0, &comm_);
    requests_.assign(1, MPI_REQUEST_NULL);
  } else {
    for (std::size_t n = 0; n < plan.neighbours.size(); ++n) {
      if (plan.is_local(n)) continue;
      const auto& nb = plan.neighbours[n];
      pack_.insert(pack_.end(), nb.send.begin(), nb.send.end());
      take_recv(n);
      close_part(send_counts_, send_displs_, pack_.size());
      close_part(recv_counts_, recv_displs_, received);
      peers_.push_back(nb.peer);
      send_tags_.push_back(nb.send_tag);
      recv_tags_.push_back(nb.recv_tag);
    }
    MPI_Comm_dup(comm, &comm_);
    requests_.assign(2 * peers_.size(), MPI_REQUEST_NULL);
  }
  send_.assign(pack_.size(), 0.0);
  recv_.assign(received, 0.0);

  // No rank exchanges anything (e.g. one rank): the neighbour collective need not be called at all.
  int mine = pack_.empty() && recv_.empty() ? 0 : 1;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  any_traffic_ = any != 0;
}

CollectiveExchange::~CollectiveExchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void CollectiveExchange::start(const double* x, ExchangeStats& stats) {
  const std::int32_t* idx = pack_.data();
  double* out = send_.data();
  for (std::size_t e = 0; e < send_.size(); ++e) out[e] = x[idx[e]];
  core::charge("halo.element", static_cast<double>(send_.size()));  // simulated cluster: the pack's cost
  stats.bytes_sent += static_cast<double>(send_.size() * sizeof(double));
  if (engine_ == ExchangeEngine::neighbor) {
    if (!any_traffic_) return;
    MPI_Ineighbor_alltoallv(send_.data(), send_counts_.data(), send_displs_.data(), MPI_DOUBLE, recv_.data(),
                            recv_counts_.data(), recv_displs_.data(), MPI_DOUBLE, comm_, &requests_[0]);
    RequestLedger::posted(1);
    pending_ = 1;
    for (int c : send_counts_) stats.messages_sent += c > 0 ? 1 : 0;
    for (int c : recv_counts_) stats.messages_received += c > 0 ? 1 : 0;
    return;
  }
  // Blocking: one message per remote plan neighbour, tagged with the plan's tags.
  int q = 0;
  for (std::size_t n = 0; n < peers_.size(); ++n) {
    if (recv_counts_[n] == 0) continue;
    MPI_Irecv(recv_.data() + recv_displs_[n], recv_counts_[n], MPI_DOUBLE, peers_[n], recv_tags_[n], comm_,
              &requests_[static_cast<std::size_t>(q++)]);
    ++stats.messages_received;
  }
  for (std::size_t n = 0; n < peers_.size(); ++n) {
    if (send_counts_[n] == 0) continue;
    MPI_Isend(send_.data() + send_displs_[n], send_counts_[n], MPI_DOUBLE, peers_[n], send_tags_[n], comm_,
              &requests_[static_cast<std::size_t>(q++)]);
    ++stats.messages_sent;
  }
  RequestLedger::posted(q);
  pending_ = q;
  wait();
}

bool CollectiveExchange::test() {
  if (pending_ == 0) return true;
  int done = 0;
  MPI_Testall(pending_, requests_.data(), &done, MPI_STATUSES_IGNORE);
  return done != 0;
}

void CollectiveExchange::wait() {
  if (pending_ == 0) return;
  {
    core::WaitScope waiting("its neighbours' ghost values (neighbourhood exchange)");
    MPI_Waitall(pending_, requests_.data(), MPI_STATUSES_IGNORE);  // completed ones are MPI_REQUEST_NULL
  }
  RequestLedger::retired(pending_);
  pending_ = 0;
}

}  // namespace desync::comm::detail
