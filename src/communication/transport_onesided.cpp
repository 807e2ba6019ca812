#include "transport_onesided.hpp"

#include <algorithm>
#include <thread>
#include <utility>

namespace desync::comm::detail {

// ----------------------------------------------------------------------------------------------
// Deferred completions of this process (single-threaded: the channel layer is used by one thread).
namespace {
std::vector<std::pair<TransportBackend*, void (*)(TransportBackend*)>>& deferred() {
  static std::vector<std::pair<TransportBackend*, void (*)(TransportBackend*)>> list;
  return list;
}
}  // namespace

void defer_completion(TransportBackend* backend, void (*complete)(TransportBackend*)) {
  auto& d = deferred();
  for (auto& e : d)
    if (e.first == backend) return;
  d.emplace_back(backend, complete);
}

void cancel_deferred(TransportBackend* backend) {
  auto& d = deferred();
  d.erase(std::remove_if(d.begin(), d.end(), [&](const auto& e) { return e.first == backend; }), d.end());
}

void complete_all_deferred() {
  auto d = std::move(deferred());
  deferred().clear();
  for (auto& [backend, complete] : d) complete(backend);
}

// ----------------------------------------------------------------------------------------------

OneSidedBackend::OneSidedBackend(ChannelCore& core, Completion completion, bool local_flush_after_put)
    : TransportBackend(core), completion_(completion), local_flush_after_put_(local_flush_after_put) {
  send_buffers_.assign(slots(), std::vector<double>(core.packed_size()));
}

OneSidedBackend::~OneSidedBackend() { cancel_deferred(this); }

void OneSidedBackend::complete_pending_cb(TransportBackend* b) { static_cast<OneSidedBackend*>(b)->complete_pending(); }

void OneSidedBackend::complete_pending() {
  if (notified_ == sent_) return;
  complete_remote();  // the data first ...
  set_remote(arrivals, sent_);  // ... then the notification
  notified_ = sent_;
  cancel_deferred(this);
}

void OneSidedBackend::take_arrivals() {
  std::int64_t c[3];
  read_counters(c);
  acked_ = std::max(acked_, c[acks]);
  peer_done_ = c[done];
  if (c[arrivals] > consumed_) {
    sync_local();
    const unsigned char* region = local_region();
    for (std::int64_t k = consumed_; k < c[arrivals]; ++k) {
      if (closing_) continue;  // draining: drop
      const auto* packed = reinterpret_cast<const double*>(region + slot_offset(static_cast<std::size_t>(k) % slots()));
      core_.arrived_message(packed);
    }
    consumed_ = c[arrivals];
    set_remote(acks, consumed_);  // the slots may be reused: their contents are copied out
  }
}

void OneSidedBackend::due_at_call() {
  if (completion_ == Completion::next_call) complete_pending();
}

void OneSidedBackend::progress(bool block) {
  if (block) complete_all_deferred();
  due_at_call();
  take_arrivals();
  if (block) std::this_thread::yield();  // more ranks than cores: let the peer run
}

bool OneSidedBackend::can_send() {
  // before_next_put: can_send() is how a sender asks to put, so the previous message is completed
  // here; a sender that stopped sending and only polls can_send() still gets it announced.
  if (completion_ == Completion::before_next_put) complete_pending();
  progress(false);
  const bool free = sent_ - acked_ < static_cast<std::int64_t>(slots());
  // Held up by flow control: this process is idle on the channel layer, so deferred completions
  // (overlap schemes) happen now; the receiver may be waiting for exactly those messages.
  if (!free) complete_all_deferred();
  return free;
}

void OneSidedBackend::send(std::int64_t time_level) {
  progress(false);
  if (sent_ - acked_ >= static_cast<std::int64_t>(slots())) {
    ++core_.stats.blocked_sends;
    while (sent_ - acked_ >= static_cast<std::int64_t>(slots())) progress(true);
  }
  if (completion_ == Completion::before_next_put) complete_pending();
  const std::size_t s = static_cast<std::size_t>(sent_) % slots();
  double* buf = send_buffers_[s].data();
  core_.pack(buf, time_level);
  put(buf, slot_bytes(), slot_offset(s));
  ++sent_;
  if (local_flush_after_put_) complete_local();
  if (completion_ == Completion::in_send)
    complete_pending();
  else
    defer_completion(this, &complete_pending_cb);
}

void OneSidedBackend::begin_close() {
  closing_ = true;
  complete_pending();
}

bool OneSidedBackend::test_close() {
  if (!connected_) return true;
  complete_pending();
  take_arrivals();
  if (!done_sent_ && acked_ == sent_) {
    // All our messages are taken in; the peer's acknowledgements to us are complete (we saw them),
    // so after `done` we write nothing more into the peer's region except our own acks, which end
    // once the peer's traffic does.
    set_remote(done, 1);
    done_sent_ = true;
  }
  if (!(done_sent_ && peer_done_ == 1)) return false;
  complete_all();
  return true;
}

}  // namespace desync::comm::detail
