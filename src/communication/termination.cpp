// Binary-tree asynchronous termination detection (termination.hpp; Yamazaki et al., 2019, Fig. 3).
#include "desync/communication/termination.hpp"

#include <algorithm>
#include <stdexcept>

namespace desync::comm {

namespace {
// Level of the messages on a tree edge: upwards the subtree's report, downwards the decision.
constexpr std::int64_t report_level = 0, decision_level = 1;
}  // namespace

TreeTermination::TreeTermination(MPI_Comm comm, int count, const TransportConfig& transport)
    : count_(static_cast<std::size_t>(count)) {
  MPI_Comm_dup(comm, &comm_);  // its own communicator: never matches the solver's traffic
  int size = 1;
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size);
  std::vector<ChannelConfig> configs;
  auto edge = [&](int peer) {
    ChannelConfig c;
    c.transport = transport;
    c.transport.max_in_flight = 1;  // one message each way per edge
    c.peer = peer;
    c.message_size = count_ + 1;  // the vote sums, then the number of voters
    c.mode = ChannelMode::async;
    configs.push_back(c);
  };
  const bool has_parent = rank_ > 0;
  if (has_parent) edge((rank_ - 1) / 2);
  for (int c : {2 * rank_ + 1, 2 * rank_ + 2})
    if (c < size) edge(c);
  auto channels = Channel::connect(comm_, configs);
  std::size_t k = 0;
  if (has_parent) parent_ = std::move(channels[k++]);
  for (; k < channels.size(); ++k) children_.push_back(std::move(channels[k]));
  subtree_.assign(count_ + 1, 0.0);
  reported_.assign(children_.size(), false);
  result_.assign(count_ + 1, 0.0);
}

TreeTermination::~TreeTermination() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) close();
}

void TreeTermination::vote(std::span<const double> votes) {
  if (voted_) throw std::logic_error("TreeTermination::vote: this rank has voted already");
  if (votes.size() != count_) throw std::logic_error("TreeTermination::vote: wrong number of votes");
  for (std::size_t i = 0; i < count_; ++i) subtree_[i] += votes[i];
  subtree_[count_] += 1;  // one voter
  voted_ = true;
}

bool TreeTermination::test() {
  if (decided_ || closed_) return decided_;
  // Figure 3: the left and right children's entries of `converged`.
  for (std::size_t c = 0; c < children_.size(); ++c) {
    if (reported_[c] || !children_[c]->can_recv()) continue;
    children_[c]->recv();
    const double* report = children_[c]->recv_buffer();
    for (std::size_t i = 0; i <= count_; ++i) subtree_[i] += report[i];
    reported_[c] = true;
  }
  const bool complete = voted_ && std::all_of(reported_.begin(), reported_.end(), [](bool r) { return r; });
  if (complete && !sent_up_) {
    sent_up_ = true;
    if (!parent_) {  // the root: every rank has voted; the decision goes down
      result_ = subtree_;
      forward_down();
      return true;
    }
    std::copy(subtree_.begin(), subtree_.end(), parent_->send_buffer());  // MPI_Put of the flag to the parent
    parent_->send(report_level);
    ++sent_;
  }
  // Figure 3: the third entry, the global decision, arrives from the parent (only after this rank's
  // report: the parent decides nothing before its whole subtree has reported).
  if (parent_ && parent_->can_recv()) {
    parent_->recv();
    std::copy(parent_->recv_buffer(), parent_->recv_buffer() + count_ + 1, result_.begin());
    forward_down();
  }
  return decided_;
}

void TreeTermination::forward_down() {
  for (auto& child : children_) {
    std::copy(result_.begin(), result_.end(), child->send_buffer());
    child->send(decision_level);
    ++sent_;
  }
  decided_ = true;
}

void TreeTermination::close() {
  if (closed_) return;
  std::vector<Channel*> all;
  if (parent_) all.push_back(parent_.get());
  for (auto& c : children_) all.push_back(c.get());
  Channel::close_all(all);
  closed_ = true;
  MPI_Comm_free(&comm_);
}

}  // namespace desync::comm
