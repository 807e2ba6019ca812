#include "transport_onesided.hpp"

#include "desync/core/waiting.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace desync::comm::detail {

// ----------------------------------------------------------------------------------------------
// Deferred completions of this process (single-threaded: the channel layer is used by one thread).
namespace {
using Deferred = std::pair<TransportBackend*, void (*)(TransportBackend*, bool)>;
std::vector<Deferred>& deferred() {
  static std::vector<Deferred> list;
  return list;
}
}  // namespace

void defer_completion(TransportBackend* backend, void (*complete)(TransportBackend*, bool)) {
  auto& d = deferred();
  for (auto& e : d)
    if (e.first == backend) return;
  d.emplace_back(backend, complete);
}

void cancel_deferred(TransportBackend* backend) {
  auto& d = deferred();
  d.erase(std::remove_if(d.begin(), d.end(), [&](const auto& e) { return e.first == backend; }), d.end());
}

void complete_all_deferred(bool flush_atomics) {
  auto d = std::move(deferred());
  deferred().clear();
  for (auto& [backend, complete] : d) complete(backend, flush_atomics);  // may register again
}

// ----------------------------------------------------------------------------------------------

OneSidedBackend::OneSidedBackend(ChannelCore& core, Completion completion, bool local_flush_after_put)
    : TransportBackend(core), completion_(completion), local_flush_after_put_(local_flush_after_put) {
  // Two put sources, used in turn: a source is reused only after its put completed, so the
  // sender's working set stays two messages (in cache) however many slots the receiver has.
  send_buffers_.assign(std::min<std::size_t>(slots(), 2), std::vector<double>(slot_doubles()));
  stamp_out_.assign(slots(), none);
  slot_sequence_.assign(slots(), -1);
  control_.assign(control_words(), 0);
}

OneSidedBackend::~OneSidedBackend() { cancel_deferred(this); }

void OneSidedBackend::initialise_region(unsigned char* region) const {
  std::memset(region, 0, region_bytes());
  for (std::size_t s = 0; s < slots(); ++s) {
    const std::int64_t v = none;
    std::memcpy(region + stamp_offset(s), &v, sizeof v);
  }
}

// ----------------------------------------------------------------------------------------------
// The notified put, emulated.

void OneSidedBackend::put_notify(const void* src, std::size_t bytes, std::size_t slot, std::int64_t tag) {
  put(src, bytes, slot_offset(slot));
  pending_.emplace_back(slot, tag);
}

void OneSidedBackend::complete_notified() {
  if (pending_.empty()) return;
  complete_remote();  // the data is complete at the target first (and every atomic store issued before) ...
  issued_remote_completed();
  for (const auto& [slot, tag] : pending_) {  // ... then its stamp
    stamp_out_[slot] = tag;  // the source of the slot's previous stamp store is free: that store completed
    store_remote(counters + slot, &stamp_out_[slot]);
  }
  pending_.clear();
  atomics_issued();
  // in send() (rma flush): the notification is visible when send() returns
  if (completion_ == Completion::in_send) flush_issued_atomics();
}

// Atomic stores (stamps, acknowledgements) are issued without waiting for them: under an MPI
// without asynchronous progress (MPICH) each MPI_Win_flush of an accumulate waits for the target to
// enter MPI, and a rank that flushed every stamp and every acknowledgement at once waited for each
// neighbour several times per iteration (with more ranks than cores: for it to be scheduled). They
// are completed by the next flush to the peer anyway (the next message's data), by a wait or close
// in the channel layer, or, at the latest, by the second call on this channel after they were
// issued that finds nothing new (receive_idle): before then, a new store may not reuse a source.
void OneSidedBackend::atomics_issued() {
  if (atomics_ == Atomics::none) defer_completion(this, &complete_deferred_cb);
  atomics_ = Atomics::fresh;
}

void OneSidedBackend::issued_remote_completed() {
  atomics_ = Atomics::none;
  ack_sources_.clear();
}

void OneSidedBackend::flush_issued_atomics() {
  if (atomics_ == Atomics::none) return;
  flush_atomics();
  issued_remote_completed();
}

void OneSidedBackend::receive_idle() {
  if (atomics_ == Atomics::aged) flush_issued_atomics();
}

void OneSidedBackend::poll_notifications(std::int64_t* tags) {
  read_control(control_.data());
  std::copy(control_.begin() + counters, control_.end(), tags);
}

void OneSidedBackend::consume_notifications(const std::size_t* slot_list, std::size_t n) {
  if (n) reset_stamps(slot_list, n);
}

void OneSidedBackend::set_remote(Counter c, std::int64_t value) {
  if (c == acks) {  // visible at the latest when flush_issued_atomics() returns
    ack_sources_.push_back(value);  // a deque: the sources of earlier stores stay where they are
    store_remote(static_cast<std::size_t>(c), &ack_sources_.back());
    atomics_issued();
    return;
  }
  counter_out_[c] = value;
  store_remote(static_cast<std::size_t>(c), &counter_out_[c]);
  flush_atomics();
  issued_remote_completed();
}

// ----------------------------------------------------------------------------------------------

void OneSidedBackend::complete_deferred_cb(TransportBackend* b, bool flush_atomics) {
  auto* self = static_cast<OneSidedBackend*>(b);
  self->complete_pending();
  if (flush_atomics) self->flush_issued_atomics();
  if (self->atomics_ != Atomics::none) defer_completion(self, &complete_deferred_cb);  // still to flush
}

void OneSidedBackend::complete_pending() {
  complete_notified();
  if (atomics_ == Atomics::none) cancel_deferred(this);
}

void OneSidedBackend::take_arrivals() {
  // One atomic read of the counters and every slot's notification.
  read_control(control_.data());
  acked_ = std::max(acked_, control_[acks]);
  peer_done_ = control_[done];
  // Consume the notifications in order (Algorithm 2, lines 17-24): message `consumed_` sits in the
  // slot whose stamp carries that number; at most R per read, since a slot is rewritten only after
  // our acknowledgement.
  consumed_slots_.clear();
  for (std::size_t n = 0; n < slots(); ++n) {
    std::size_t s = 0;
    while (s < slots() && control_[counters + s] != consumed_) ++s;
    if (s == slots()) break;  // the next message is not notified yet
    if (consumed_slots_.empty()) sync_local();
    const auto* slot = reinterpret_cast<const double*>(local_region() + slot_offset(s));
    if (!closing_) {  // draining: drop
      std::int64_t sequence = 0;
      std::memcpy(&sequence, slot, sizeof sequence);
      if (sequence != consumed_)
        throw std::logic_error("one-sided channel: notification of message " + std::to_string(consumed_) +
                               " observed before its data (slot holds message " + std::to_string(sequence) + ")");
      core_.arrived_message(slot + 1);
    }
    consumed_slots_.push_back(s);
    ++consumed_;
  }
  if (!consumed_slots_.empty()) {
    consume_notifications(consumed_slots_.data(), consumed_slots_.size());  // before the ack frees the slots
    set_remote(acks, consumed_);  // the slots may be reused: their contents are copied out
  }
}

void OneSidedBackend::due_at_call() {
  if (completion_ == Completion::next_call) complete_pending();
}

void OneSidedBackend::progress(bool block) {
  if (atomics_ == Atomics::fresh) atomics_ = Atomics::aged;  // a new call on this channel
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
    core::WaitScope waiting("an acknowledgement that frees a send slot (one-sided flow control)", core_.config.peer);
    while (sent_ - acked_ >= static_cast<std::int64_t>(slots())) progress(true);
  }
  if (completion_ == Completion::before_next_put) complete_pending();
  // The lowest slot the receiver has taken in (its message's number is below acked_): one exists,
  // since fewer than R messages are unacknowledged.
  std::size_t s = 0;
  while (slot_sequence_[s] >= acked_) ++s;
  slot_sequence_[s] = sent_;
  // The pending puts are the last pending_.size() sends; the one that used this source must be
  // complete before the source is rewritten.
  if (!local_flush_after_put_ && pending_.size() >= send_buffers_.size()) complete_pending();
  double* buf = send_buffers_[static_cast<std::size_t>(sent_) % send_buffers_.size()].data();
  std::memcpy(buf, &sent_, sizeof sent_);  // the slot's first word: the message's number
  core_.pack(buf + 1, time_level);
  put_notify(buf, slot_bytes(), s, sent_);
  ++sent_;
  if (local_flush_after_put_) complete_local();
  if (completion_ == Completion::in_send) {
    complete_pending();
  } else {
    // Deferred completions announce messages in the order they were put, across channels: a
    // channel registered only for its unflushed stores moves behind those with earlier puts.
    if (pending_.size() == 1) cancel_deferred(this);
    defer_completion(this, &complete_deferred_cb);
  }
}

void OneSidedBackend::begin_close() {
  closing_ = true;
  complete_pending();
  flush_issued_atomics();
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
  if (!(done_sent_ && peer_done_ == 1)) {
    flush_issued_atomics();  // the acknowledgements the peer's draining waits for
    return false;
  }
  complete_all();
  issued_remote_completed();
  cancel_deferred(this);
  return true;
}

}  // namespace desync::comm::detail
