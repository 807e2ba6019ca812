#include "desync/communication/reduction.hpp"

#include <algorithm>

#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"

namespace desync::comm {

void allreduce_sum(MPI_Comm comm, std::span<double> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm);
}

ReductionKind parse_reduction(const std::string& name) {
  if (name == "iallreduce") return ReductionKind::iallreduce;
  if (name == "tree") return ReductionKind::tree;
  throw InputError("unknown reduction '" + name + "' (expected iallreduce or tree)");
}

const char* to_string(ReductionKind kind) { return kind == ReductionKind::tree ? "tree" : "iallreduce"; }

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
    from_children_.assign(children_.size(), std::vector<double>(n_));
    child_requests_.assign(children_.size(), MPI_REQUEST_NULL);
    down_send_requests_.assign(children_.size(), MPI_REQUEST_NULL);
    down_.resize(n_);
    result_.resize(n_);
  }
  ~TreeReduction() override { finish(); }

  void start(std::span<const double> values) override {
    std::copy(values.begin(), values.end(), partial_.begin());
    for (std::size_t c = 0; c < children_.size(); ++c) {
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
      for (auto& r : child_requests_)
        if (!test_request(r)) return false;
      for (const auto& v : from_children_)
        for (std::size_t i = 0; i < n_; ++i) partial_[i] += v[i];
      // down_ is the buffer the last round's broadcast sent from; those sends are matched by now
      // (the children took part in this round) but must be completed before down_ is reused.
      for (auto& r : down_send_requests_) wait_request(r);
      if (parent_ == MPI_PROC_NULL) {
        down_ = partial_;
        return broadcast_down();
      }
      wait_request(up_send_request_);  // previous round's send, long complete in practice
      up_ = partial_;
      MPI_Isend(up_.data(), static_cast<int>(n_), MPI_DOUBLE, parent_, up_tag, comm_.get(), &up_send_request_);
      MPI_Irecv(down_.data(), static_cast<int>(n_), MPI_DOUBLE, parent_, down_tag, comm_.get(), &parent_request_);
      RequestLedger::posted(2);
      phase_ = Phase::waiting_for_root;
    }
    if (!test_request(parent_request_)) return false;
    return broadcast_down();
  }

  void finish() override {
    if (active_) {  // only reached on error paths: complete the round so nothing stays pending
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
    result_ = down_;
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

}  // namespace

std::unique_ptr<NonblockingReduction> make_reduction(ReductionKind kind, MPI_Comm comm, int count) {
  if (kind == ReductionKind::tree) return std::make_unique<TreeReduction>(comm, count);
  return std::make_unique<IallreduceReduction>(comm, count);
}

}  // namespace desync::comm
