#include "desync/communication/reduction.hpp"

#include <algorithm>
#include <stdexcept>
#include <array>

#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/waiting.hpp"

namespace desync::comm {

void allreduce_sum(MPI_Comm comm, std::span<double> values) {
  core::WaitScope waiting("an allreduce (every rank's part of a sum)");
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm);
}

std::int64_t exclusive_prefix_sum(MPI_Comm comm, std::int64_t value) {
  return exclusive_prefix_sums(comm, std::span<const std::int64_t>(&value, 1))[0];
}

std::vector<std::int64_t> exclusive_prefix_sums(MPI_Comm comm, std::span<const std::int64_t> values) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const auto n = static_cast<int>(values.size());
  std::vector<std::int64_t> before(values.size(), 0);
  // Hillis-Steele: after the round of distance d, `window` is the sum over ranks rank-2d+1..rank;
  // what arrives from rank-d is the sum over rank-2d+1..rank-d, all below this rank.
  std::vector<std::int64_t> window(values.begin(), values.end()), got(values.size());
  MPI_Comm dup = MPI_COMM_NULL;  // no other traffic can match
  MPI_Comm_dup(comm, &dup);
  for (int d = 1; d < size; d *= 2) {
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const std::vector<std::int64_t> out = window;
    if (rank + d < size) MPI_Isend(out.data(), n, MPI_INT64_T, rank + d, 0, dup, &req[0]);
    if (rank - d >= 0) MPI_Irecv(got.data(), n, MPI_INT64_T, rank - d, 0, dup, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    if (rank - d >= 0)
      for (std::size_t i = 0; i < got.size(); ++i) {
        window[i] += got[i];
        before[i] += got[i];
      }
  }
  MPI_Comm_free(&dup);
  return before;
}

namespace {
thread_local NonblockingReduction* progressed = nullptr;
}  // namespace

void set_progressed_reduction(NonblockingReduction* reduction) { progressed = reduction; }

void progress_reduction() {
  if (progressed != nullptr && progressed->active()) progressed->test();
}

namespace {

/// Owns a duplicate communicator so reduction traffic never matches halo traffic.
class DupComm {
 public:
  explicit DupComm(MPI_Comm comm) { MPI_Comm_dup(comm, &comm_); }
  ~DupComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class IallreduceReduction final : public NonblockingReduction {
 public:
  IallreduceReduction(MPI_Comm comm, int count) : comm_(comm), in_(static_cast<std::size_t>(count)) {
    result_.resize(in_.size());
  }
  ~IallreduceReduction() override { finish(); }
  void start(std::span<const double> values) override {
    std::copy(values.begin(), values.end(), in_.begin());
    MPI_Iallreduce(in_.data(), result_.data(), static_cast<int>(in_.size()), MPI_DOUBLE, MPI_SUM, comm_.get(),
                   &request_);
    RequestLedger::posted();
    active_ = true;
  }
  bool test() override {
    if (!active_) return false;
    if (!test_request(request_)) return false;
    active_ = false;
    ++completed_;
    return true;
  }
  void finish() override {
    if (active_) wait_request(request_);
    active_ = false;
  }
  const char* name() const override { return "iallreduce"; }

 private:
  DupComm comm_;
  std::vector<double> in_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

/// Binary tree: rank r's parent is (r-1)/2, its children 2r+1 and 2r+2. Partial sums travel up,
/// the root's total travels down; each hop happens whenever the rank next calls test(), so the
/// reduction spans several iterations (at least 2 log2 p) without blocking anyone.
class TreeReduction final : public NonblockingReduction {
 public:
  TreeReduction(MPI_Comm comm, int count) : comm_(comm), n_(static_cast<std::size_t>(count)) {
    MPI_Comm_rank(comm_.get(), &rank_);
    MPI_Comm_size(comm_.get(), &size_);
    parent_ = rank_ == 0 ? MPI_PROC_NULL : (rank_ - 1) / 2;
    for (int c : {2 * rank_ + 1, 2 * rank_ + 2})
      if (c < size_) children_.push_back(c);
    partial_.resize(n_);
    // Receive buffers hold at least one double: the mark of mark_unreceived (simulated clusters).
    from_children_.assign(children_.size(), std::vector<double>(std::max<std::size_t>(n_, 1)));
    child_requests_.assign(children_.size(), MPI_REQUEST_NULL);
    down_send_requests_.assign(children_.size(), MPI_REQUEST_NULL);
    down_.resize(std::max<std::size_t>(n_, 1));
    result_.resize(n_);
  }
  ~TreeReduction() override { finish(); }

  void start(std::span<const double> values) override {
    std::copy(values.begin(), values.end(), partial_.begin());
    for (std::size_t c = 0; c < children_.size(); ++c) {
      mark_unreceived(from_children_[c].data());
      MPI_Irecv(from_children_[c].data(), static_cast<int>(n_), MPI_DOUBLE, children_[c], up_tag, comm_.get(),
                &child_requests_[c]);
      RequestLedger::posted();
    }
    phase_ = Phase::gathering;
    active_ = true;
  }

  bool test() override {
    if (!active_) return false;
    retire_sends();
    if (phase_ == Phase::gathering) {
      for (std::size_t c = 0; c < children_.size(); ++c)
        if (!test_receive(child_requests_[c], from_children_[c].data())) return false;
      for (const auto& v : from_children_)
        for (std::size_t i = 0; i < n_; ++i) partial_[i] += v[i];
      // down_ is the buffer the last round's broadcast sent from; those sends are matched by now
      // (the children took part in this round) but must be completed before down_ is reused.
      for (auto& r : down_send_requests_) wait_request(r);
      if (parent_ == MPI_PROC_NULL) {
        std::copy(partial_.begin(), partial_.end(), down_.begin());
        return broadcast_down();
      }
      wait_request(up_send_request_);  // previous round's send, long complete in practice
      up_ = partial_;
      MPI_Isend(up_.data(), static_cast<int>(n_), MPI_DOUBLE, parent_, up_tag, comm_.get(), &up_send_request_);
      mark_unreceived(down_.data());  // the sends from down_ completed above
      MPI_Irecv(down_.data(), static_cast<int>(n_), MPI_DOUBLE, parent_, down_tag, comm_.get(), &parent_request_);
      RequestLedger::posted(2);
      phase_ = Phase::waiting_for_root;
    }
    if (!test_receive(parent_request_, down_.data())) return false;
    return broadcast_down();
  }

  void wait() override {
    while (active_ && !test()) {  // block on the message the round waits for, then advance
      if (phase_ == Phase::waiting_for_root) {
        wait_request(parent_request_);
        continue;
      }
      for (auto& r : child_requests_)
        if (r != MPI_REQUEST_NULL) {
          wait_request(r);
          break;
        }
    }
  }

  void finish() override {
    if (active_) {  // only reached on error paths: complete the round so nothing stays pending
      core::WaitScope waiting("the other ranks' parts of a non-blocking reduction (completing it at the end)");
      while (!test()) {
      }
    }
    wait_request(up_send_request_);
    for (auto& r : down_send_requests_) wait_request(r);
  }
  const char* name() const override { return "tree"; }

 private:
  static constexpr int up_tag = 1, down_tag = 2;
  enum class Phase { gathering, waiting_for_root };

  bool broadcast_down() {
    for (std::size_t c = 0; c < children_.size(); ++c) {
      wait_request(down_send_requests_[c]);
      MPI_Isend(down_.data(), static_cast<int>(n_), MPI_DOUBLE, children_[c], down_tag, comm_.get(),
                &down_send_requests_[c]);
      RequestLedger::posted();
    }
    std::copy_n(down_.begin(), n_, result_.begin());
    active_ = false;
    ++completed_;
    return true;
  }
  void retire_sends() {
    test_request(up_send_request_);
    for (auto& r : down_send_requests_) test_request(r);
  }

  DupComm comm_;
  std::size_t n_;
  int rank_ = 0, size_ = 1, parent_ = MPI_PROC_NULL;
  std::vector<int> children_;
  std::vector<double> partial_, up_, down_;
  std::vector<std::vector<double>> from_children_;
  std::vector<MPI_Request> child_requests_, down_send_requests_;
  MPI_Request up_send_request_ = MPI_REQUEST_NULL, parent_request_ = MPI_REQUEST_NULL;
  Phase phase_ = Phase::gathering;
};

/// Recursive doubling over point-to-point messages: with p2 the largest power of two <= p, ranks
/// r >= p2 first hand their values to r - p2 (and get the total back at the end); then in round
/// j = 0..log2(p2)-1 rank r < p2 swaps its partial sum with r XOR 2^j and adds. Partners add the
/// same two numbers (a + b = b + a in IEEE arithmetic), so every rank ends with bitwise the same
/// sum. A round advances whenever the rank calls test(), as a non-blocking collective does in an
/// MPI without asynchronous progress: log2(p) message latencies instead of MPI_Iallreduce's
/// implementation's, and 2 log2(p) messages per rank (a simulated cluster's MPI_Iallreduce may
/// be all-to-all; see docs/simulation.md).
class DoublingReduction final : public NonblockingReduction {
 public:
  DoublingReduction(MPI_Comm comm, int count) : comm_(comm), n_(static_cast<std::size_t>(count)) {
    MPI_Comm_rank(comm_.get(), &rank_);
    MPI_Comm_size(comm_.get(), &size_);
    p2_ = 1;
    while (2 * p2_ <= size_) p2_ *= 2;
    for (int m = 1; m < p2_; m *= 2) ++rounds_;
    x_.resize(n_);
    y_.resize(std::max<std::size_t>(n_, 1));  // at least the mark of mark_unreceived
    result_.resize(n_);
    // Two sets of send buffers, used by consecutive reductions in turn: a send of reduction j is
    // matched before this rank completes reduction j + 1 (every partner of j + 1 has finished j).
    for (auto& set : send_buffers_) set.assign(static_cast<std::size_t>(rounds_ + 1), std::vector<double>(n_));
    for (auto& set : send_requests_) set.assign(static_cast<std::size_t>(rounds_ + 1), MPI_REQUEST_NULL);
  }
  ~DoublingReduction() override { finish(); }

  void start(std::span<const double> values) override {
    std::copy(values.begin(), values.end(), x_.begin());
    parity_ ^= 1;
    for (auto& r : send_requests_[static_cast<std::size_t>(parity_)]) wait_request(r);  // matched long ago
    active_ = true;
    if (rank_ >= p2_) {  // hand the values to r - p2, then wait for the total
      send(0, rank_ - p2_, fold_tag);
      post_receive(rank_ - p2_, result_tag);
      step_ = Step::waiting_for_total;
    } else if (rank_ + p2_ < size_) {
      post_receive(rank_ + p2_, fold_tag);
      step_ = Step::folding;
    } else {
      begin_round(0);
    }
  }

  bool test() override {
    if (!active_) return false;
    for (;;) {
      if (step_ == Step::done) return complete();
      if (!test_receive(receive_, y_.data())) return false;
      switch (step_) {
        case Step::waiting_for_total:
          std::copy_n(y_.begin(), n_, x_.begin());
          step_ = Step::done;
          break;
        case Step::folding:
          for (std::size_t i = 0; i < n_; ++i) x_[i] += y_[i];
          begin_round(0);
          break;
        case Step::exchanging:
          // x <- x + y: the partner computes y + x, the same sum bitwise.
          for (std::size_t i = 0; i < n_; ++i) x_[i] += y_[i];
          begin_round(round_ + 1);
          break;
        case Step::done: break;
      }
    }
  }

  void wait() override {
    while (active_ && !test()) wait_request(receive_);  // block on the round's message, then advance
  }

  void finish() override {
    if (active_) {  // only reached on error paths: complete the round so nothing stays pending
      core::WaitScope waiting("the other ranks' parts of a non-blocking reduction (completing it at the end)");
      while (!test()) {
      }
    }
    for (auto& set : send_requests_)
      for (auto& r : set) wait_request(r);
  }
  const char* name() const override { return "doubling"; }

 private:
  static constexpr int fold_tag = 1, result_tag = 2, round_tag = 8;
  enum class Step { folding, exchanging, waiting_for_total, done };

  void begin_round(int j) {
    round_ = j;
    if (j == rounds_) {
      if (rank_ + p2_ < size_) send(static_cast<std::size_t>(rounds_), rank_ + p2_, result_tag);
      step_ = Step::done;
      return;
    }
    const int partner = rank_ ^ (1 << j);
    post_receive(partner, round_tag + j);
    send(static_cast<std::size_t>(j), partner, round_tag + j);
    step_ = Step::exchanging;
  }
  void send(std::size_t slot, int to, int tag) {
    auto& buffer = send_buffers_[static_cast<std::size_t>(parity_)][slot];
    auto& request = send_requests_[static_cast<std::size_t>(parity_)][slot];
    wait_request(request);
    buffer = x_;
    MPI_Isend(buffer.data(), static_cast<int>(n_), MPI_DOUBLE, to, tag, comm_.get(), &request);
    RequestLedger::posted();
  }
  void post_receive(int from, int tag) {
    mark_unreceived(y_.data());
    MPI_Irecv(y_.data(), static_cast<int>(n_), MPI_DOUBLE, from, tag, comm_.get(), &receive_);
    RequestLedger::posted();
  }
  bool complete() {
    result_ = x_;
    active_ = false;
    ++completed_;
    return true;
  }

  DupComm comm_;
  std::size_t n_;
  int rank_ = 0, size_ = 1, p2_ = 1, rounds_ = 0, round_ = 0, parity_ = 0;
  std::vector<double> x_, y_;
  std::array<std::vector<std::vector<double>>, 2> send_buffers_;
  std::array<std::vector<MPI_Request>, 2> send_requests_;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  Step step_ = Step::done;
};

}  // namespace

std::unique_ptr<NonblockingReduction> make_reduction(ReductionKind kind, MPI_Comm comm, int count) {
  if (kind == ReductionKind::blocking) throw std::logic_error("make_reduction: blocking is summed at once (allreduce_sum)");
  if (kind == ReductionKind::tree) return std::make_unique<TreeReduction>(comm, count);
  if (kind == ReductionKind::doubling) return std::make_unique<DoublingReduction>(comm, count);
  return std::make_unique<IallreduceReduction>(comm, count);
}

}  // namespace desync::comm
