#include "desync/communication/ghost_exchange.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "desync/communication/reduction.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/waiting.hpp"

namespace desync::comm {

namespace {

enum Phase : int { idle = 0, run = 1, stop = 2, quit = 3 };

}  // namespace

GhostExchange::GhostExchange(MPI_Comm comm, GhostPlanSpec spec, ExchangeEngine engine, Progress progress,
                             TransportConfig transport)
    : spec_(std::move(spec)), engine_(engine), progress_(progress), transport_(transport) {
  if (engine_ == ExchangeEngine::blocking) progress_ = Progress::none;

  // Validation, agreed on by every rank so that none goes on into the collective calls alone.
  std::string problem = check_ghost_plan(comm, spec_);
  if (problem.empty() && progress_ == Progress::thread) {
    try {
      require_thread_multiple("--progress thread (a progress thread polling the exchange)");
    } catch (const InputError& e) {
      problem = e.what();
    }
  }
  if (problem.empty() && engine_ == ExchangeEngine::p2p && !transport_built(transport_.transport))
    problem = "--transport shmem: desync was built without OpenSHMEM";
  agree_or_throw(comm, problem.empty(), problem);

  plan_ = make_ghost_plan(comm, spec_);
  neighbours_ = plan_.remote_peers();
  ghost_.assign(spec_.recv_offsets.empty() ? 0 : static_cast<std::size_t>(spec_.recv_offsets.back()), 0.0);

  if (engine_ == ExchangeEngine::p2p) {
    PlanExchangeConfig c;
    c.mode = HaloMode::sync;
    c.transport = transport_.transport;
    c.rma_sync = transport_.rma_sync;
    c.shmem_sync = transport_.shmem_sync;
    c.progress = progress_;
    channels_ = std::make_unique<PlanExchange>(comm, plan_, c);
    return;
  }

  // Engines neighbor and blocking: the remote neighbours' messages, laid out in one buffer per
  // direction.
  auto add = [&](const PlanNeighbour& nb) {
    pack_.insert(pack_.end(), nb.send.begin(), nb.send.end());
    unpack_.insert(unpack_.end(), nb.recv.begin(), nb.recv.end());
  };
  auto close_part = [&](std::vector<int>& counts, std::vector<int>& displs, std::size_t total) {
    const int start = displs.empty() ? 0 : displs.back() + counts.back();
    displs.push_back(start);
    counts.push_back(static_cast<int>(total) - start);
  };
  if (core::simulated_build && engine_ == ExchangeEngine::neighbor)
    throw InputError("--engine neighbor is not available on a simulated cluster: SimGrid's SMPI 3.32 has no "
                     "neighbourhood collectives or distributed-graph communicators (use --engine p2p)");
  if (engine_ == ExchangeEngine::neighbor) {
    // One edge per distinct peer; a peer's parts in ascending send tag (sending) and receive tag
    // (receiving) order, which pair up on the two ends since a send tag is the peer's receive tag.
    std::vector<int> peers;
    for (std::size_t n = 0; n < plan_.neighbours.size(); ++n)
      if (!plan_.is_local(n)) peers.push_back(plan_.neighbours[n].peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    for (int p : peers) {
      std::vector<const PlanNeighbour*> of;
      for (const auto& nb : plan_.neighbours)
        if (nb.peer == p) of.push_back(&nb);
      std::sort(of.begin(), of.end(), [](auto* a, auto* b) { return a->send_tag < b->send_tag; });
      for (auto* nb : of) pack_.insert(pack_.end(), nb->send.begin(), nb->send.end());
      close_part(send_counts_, send_displs_, pack_.size());
      std::sort(of.begin(), of.end(), [](auto* a, auto* b) { return a->recv_tag < b->recv_tag; });
      for (auto* nb : of) unpack_.insert(unpack_.end(), nb->recv.begin(), nb->recv.end());
      close_part(recv_counts_, recv_displs_, unpack_.size());
    }
    peers_ = peers;
    MPI_Dist_graph_create_adjacent(comm, static_cast<int>(peers_.size()), peers_.data(), MPI_UNWEIGHTED,
                                   static_cast<int>(peers_.size()), peers_.data(), MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   /*reorder=*/0, &comm_);
    requests_.assign(1, MPI_REQUEST_NULL);
  } else {
    for (std::size_t n = 0; n < plan_.neighbours.size(); ++n) {
      if (plan_.is_local(n)) continue;
      const auto& nb = plan_.neighbours[n];
      add(nb);
      close_part(send_counts_, send_displs_, pack_.size());
      close_part(recv_counts_, recv_displs_, unpack_.size());
      peers_.push_back(nb.peer);
      send_tags_.push_back(nb.send_tag);
      recv_tags_.push_back(nb.recv_tag);
    }
    MPI_Comm_dup(comm, &comm_);
    requests_.assign(2 * peers_.size(), MPI_REQUEST_NULL);
  }
  send_.assign(pack_.size(), 0.0);
  recv_.assign(unpack_.size(), 0.0);

  // No rank exchanges anything (e.g. one rank): the neighbour collective need not be called at all.
  int mine = pack_.empty() && unpack_.empty() ? 0 : 1;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  any_traffic_ = any != 0;

  if (progress_ == Progress::thread) thread_ = std::thread([this] { thread_main(); });
}

GhostExchange::~GhostExchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) finish();
  if (thread_.joinable()) {
    phase_.store(quit, std::memory_order_release);
    phase_.notify_all();
    thread_.join();
  }
  channels_.reset();  // closes the channels, frees their communicator
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void GhostExchange::copy_local(const double* x) {
  for (std::size_t n = 0; n < plan_.neighbours.size(); ++n) {
    if (!plan_.is_local(n)) continue;
    const auto& nb = plan_.neighbours[n];
    for (const auto& from : plan_.neighbours)  // the local entry whose send_tag is our recv_tag
      if (from.peer == plan_.rank && from.send_tag == nb.recv_tag)
        for (std::size_t e = 0; e < nb.recv.size(); ++e) ghost_[static_cast<std::size_t>(nb.recv[e])] = x[from.send[e]];
    core::charge("halo.element", static_cast<double>(nb.recv.size()));  // simulated cluster: the copy's cost
  }
}

void GhostExchange::start(const double* x) {
  finish();  // a previous exchange still pending is completed first (the buffers are reused)
  ++stats_.exchanges;
  if (channels_) {
    // Time level = the exchange's sequence number, the same on every rank.
    channels_->start(x, sequence_);
    started_ = true;
    progress_reduction();  // a reduction in flight advances with the halo traffic
    return;
  }
  copy_local(x);
  const std::int32_t* idx = pack_.data();
  double* out = send_.data();
  for (std::size_t e = 0; e < send_.size(); ++e) out[e] = x[idx[e]];
  core::charge("halo.element", static_cast<double>(send_.size()));  // simulated cluster: the pack's cost
  stats_.bytes_sent += static_cast<double>(send_.size() * sizeof(double));
  if (engine_ == ExchangeEngine::neighbor) {
    if (!any_traffic_) return;
    MPI_Ineighbor_alltoallv(send_.data(), send_counts_.data(), send_displs_.data(), MPI_DOUBLE, recv_.data(),
                            recv_counts_.data(), recv_displs_.data(), MPI_DOUBLE, comm_, &requests_[0]);
    RequestLedger::posted(1);
    pending_ = 1;
    for (int c : send_counts_) stats_.messages_sent += c > 0 ? 1 : 0;
    for (int c : recv_counts_) stats_.messages_received += c > 0 ? 1 : 0;
  } else {
    // Blocking: one message per remote plan neighbour, tagged with the plan's tags.
    int q = 0;
    for (std::size_t n = 0; n < peers_.size(); ++n) {
      if (recv_counts_[n] == 0) continue;
      MPI_Irecv(recv_.data() + recv_displs_[n], recv_counts_[n], MPI_DOUBLE, peers_[n], recv_tags_[n], comm_,
                &requests_[static_cast<std::size_t>(q++)]);
      ++stats_.messages_received;
    }
    for (std::size_t n = 0; n < peers_.size(); ++n) {
      if (send_counts_[n] == 0) continue;
      MPI_Isend(send_.data() + send_displs_[n], send_counts_[n], MPI_DOUBLE, peers_[n], send_tags_[n], comm_,
                &requests_[static_cast<std::size_t>(q++)]);
      ++stats_.messages_sent;
    }
    RequestLedger::posted(q);
    pending_ = q;
    wait_pending();
    return;
  }
  if (progress_ == Progress::thread && pending_ > 0) {
    phase_.store(run, std::memory_order_release);
    phase_.notify_all();
  }
}

bool GhostExchange::test_pending() {
  if (pending_ == 0) return true;
  int done = 0;
  MPI_Testall(pending_, requests_.data(), &done, MPI_STATUSES_IGNORE);
  ++stats_.polls;
  if (!done) return false;
  wait_pending();  // completed: retire and scatter
  return true;
}

void GhostExchange::wait_pending() {
  if (pending_ == 0) return;
  {
    core::WaitScope waiting("its neighbours' ghost values (neighbourhood exchange)");
    MPI_Waitall(pending_, requests_.data(), MPI_STATUSES_IGNORE);
  }
  RequestLedger::retired(pending_);
  pending_ = 0;
  // Received: scatter into the ghost buffer.
  const std::int32_t* idx = unpack_.data();
  for (std::size_t e = 0; e < recv_.size(); ++e) ghost_[static_cast<std::size_t>(idx[e])] = recv_[e];
  core::charge("halo.element", static_cast<double>(recv_.size()));
}

bool GhostExchange::poll() {
  if (progress_ == Progress::thread) return false;  // the thread owns the requests
  progress_reduction();  // --progress test: a reduction in flight advances at every poll too
  if (channels_) return !started_ || channels_->poll();
  return test_pending();
}

void GhostExchange::finish() {
  progress_reduction();  // a reduction in flight advances with the halo traffic (a no-op when none)
  if (channels_) {
    if (started_) channels_->finish(ghost_.data(), sequence_++);
    started_ = false;
    return;
  }
  if (progress_ == Progress::thread && phase_.load(std::memory_order_acquire) != idle) {
    phase_.store(stop, std::memory_order_release);
    phase_.notify_all();
    for (int p = phase_.load(std::memory_order_acquire); p != idle; p = phase_.load(std::memory_order_acquire))
      phase_.wait(p, std::memory_order_acquire);
  }
  wait_pending();
}

void GhostExchange::thread_main() {
  for (;;) {
    phase_.wait(idle, std::memory_order_acquire);
    int p = phase_.load(std::memory_order_acquire);
    if (p == quit) return;
    if (p == run) {
      bool done = pending_ == 0;
      while (!done && phase_.load(std::memory_order_acquire) == run) {
        int flag = 0;
        MPI_Testall(pending_, requests_.data(), &flag, MPI_STATUSES_IGNORE);
        ++stats_.polls;
        done = flag != 0;
        if (!done) std::this_thread::yield();
      }
      // Complete (the requests are MPI_REQUEST_NULL now; finish() retires them): sleep until the
      // caller asks for the requests back.
      if (done) phase_.wait(run, std::memory_order_acquire);
    }
    phase_.store(idle, std::memory_order_release);
    phase_.notify_all();
  }
}

const GhostStats& GhostExchange::stats() const {
  if (channels_) {
    const auto& s = channels_->stats();
    stats_.messages_sent = s.messages_sent;
    stats_.messages_received = s.messages_received;
    stats_.bytes_sent = s.bytes_sent;
    stats_.polls = s.polls;
  }
  return stats_;
}

void GhostExchange::reset_stats() {
  stats_ = GhostStats{};
  if (channels_) channels_->reset_stats();
}

}  // namespace desync::comm
