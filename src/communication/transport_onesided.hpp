#pragma once
// Shared logic of the one-sided transports (rma, shmem): slots, counters, flow control, completion
// schemes and close. The concrete backends supply the primitives.
//
// Each end owns a region the peer writes into (an MPI window, or a piece of the symmetric arena):
//
//   counters[0]  arrivals  messages the peer has sent and made visible here (peer writes)
//   counters[1]  acks      messages of ours the peer has taken in (peer writes)
//   counters[2]  done      1 once the peer has closed and all its traffic is complete (peer writes)
//   slots        max_in_flight packed messages (ChannelCore::pack); message k lands in slot k % R
//
// Sender, message k: wait until k - acks < R (slot k % R was taken in by the receiver), put the
// packed message into the peer's slot, make it visible (the completion scheme decides when), then
// raise the peer's arrival counter to k + 1 with an atomic operation. Receiver, in every call on
// the channel: read its counters atomically; copy messages acks..arrivals-1 out of their slots into
// the channel core; set the sender's ack counter atomically. A slot is rewritten only after its
// acknowledgement, so the plain copy out of it never races with a put.
#include <cstdint>
#include <vector>

#include "transport_backend.hpp"

namespace desync::comm::detail {

class OneSidedBackend : public TransportBackend {
 public:
  enum Counter { arrivals = 0, acks = 1, done = 2 };
  static constexpr std::size_t counter_bytes = 64;  // counters padded to a cache line

  /// When the remote completion and the notification of a message happen.
  enum class Completion {
    in_send,         ///< inside send()
    next_call,       ///< at the next call on this channel
    before_next_put  ///< just before the next put on this channel
  };

  OneSidedBackend(ChannelCore& core, Completion completion, bool local_flush_after_put);
  ~OneSidedBackend() override;

  bool can_send() override;
  void send(std::int64_t time_level) override;
  void progress(bool block) override;
  int in_flight() const override { return static_cast<int>(sent_ - acked_); }
  void begin_close() override;
  bool test_close() override;

  /// Bytes of this end's region (counters + slots).
  std::size_t region_bytes() const { return counter_bytes + slot_bytes() * slots(); }

 protected:
  std::size_t slots() const { return static_cast<std::size_t>(core_.config.max_in_flight); }
  std::size_t slot_bytes() const { return core_.packed_size() * sizeof(double); }
  std::size_t slot_offset(std::size_t s) const { return counter_bytes + s * slot_bytes(); }

  // Primitives. Offsets are byte offsets into a region (this end's or the peer's).
  /// Starts putting `bytes` from `src` into the peer's region at `offset`; src stays untouched
  /// until complete_local() or complete_remote().
  virtual void put(const void* src, std::size_t bytes, std::size_t offset) = 0;
  /// Puts issued so far are complete at the origin (src reusable).
  virtual void complete_local() = 0;
  /// Puts issued so far are ordered before (or complete before) any later notification.
  virtual void complete_remote() = 0;
  /// Atomically sets the peer's counter to `value`, visible at the peer without its help.
  virtual void set_remote(Counter c, std::int64_t value) = 0;
  /// Atomically reads this end's counters; also gives the library a chance to progress.
  virtual void read_counters(std::int64_t out[3]) = 0;
  /// Makes the peer's completed puts visible to plain loads of this end's region (memory barrier).
  virtual void sync_local() {}
  /// This end's region (slots are read with plain loads after read_counters + sync_local).
  virtual const unsigned char* local_region() const = 0;
  /// Everything issued so far has completed at the peer (close).
  virtual void complete_all() = 0;

  bool connected_ = false;

 private:
  void complete_pending();  // remote completion + notification of messages sent but not yet notified
  static void complete_pending_cb(TransportBackend* b);
  void take_arrivals();
  void due_at_call();

  Completion completion_;
  bool local_flush_after_put_;
  std::vector<std::vector<double>> send_buffers_;  // one per slot: the put's source
  std::int64_t sent_ = 0, notified_ = 0, acked_ = 0, consumed_ = 0, peer_done_ = 0;
  bool closing_ = false, done_sent_ = false;
};

}  // namespace desync::comm::detail
