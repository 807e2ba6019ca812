#pragma once
// Shared logic of the one-sided transports (rma, shmem): notified puts, slots, flow control,
// completion schemes and close. The concrete backends supply the primitives.
//
// Each end owns a region the peer writes into (an MPI window, or a piece of the symmetric arena):
//
//   control[0]      acks   messages of ours the peer has taken in (peer writes)
//   control[1]      done   1 once the peer has closed and all its traffic is complete (peer writes)
//   control[2 + s]  stamp  notification of slot s: the sequence number of the message the slot
//                          holds, or NotifiedPut::none (peer sets it, this end resets it when consumed)
//   slots           max_in_flight slots, each the message's sequence number followed by the packed
//                   message (ChannelCore::pack, whose header carries the time level)
//
// Sender, message k (its k-th): wait until k - acks < R, then a notified put of the message into the
// lowest slot of the peer whose last message the receiver has taken in (its sequence number is below
// acks), notified with k; the completion scheme decides when the notification is made visible. The
// lowest free slot, not slot k % R: a receiver that keeps up (one or two messages in flight) finds
// every message in the same one or two slots, which stay in cache, however many slots a bounded
// exchange needs for its worst case (2 L + 1). Receiver, in every call on the channel: read its
// control words atomically; take in message consumed, consumed + 1, ... (the slot whose stamp is that
// number) while one is notified (at most R per call: a slot is rewritten only after our ack); reset
// those stamps to none; set the sender's ack counter atomically. A slot is read only after its
// notification was observed and rewritten only after its acknowledgement, so the plain copy out of
// it never races with a put.
#include <cstdint>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

#include "transport_backend.hpp"

namespace desync::comm::detail {

/// Notified put (foMPI-NA's MPI_Put_notify; the notified RMA of the weakly-synchronous exchange in
/// docs/channel.md): a put whose arrival the target observes only once the data is complete at the
/// target, carrying a 64-bit tag (here the message's sequence number). The target polls one notification
/// word per slot and consumes it after copying the slot.
///
/// MPI-3 and OpenSHMEM have no notified put; OneSidedBackend emulates it (put, remote completion,
/// then an atomic store of the slot's stamp). A native notified put overrides these four calls.
class NotifiedPut {
 public:
  static constexpr std::int64_t none = std::numeric_limits<std::int64_t>::min();  ///< no notification
  virtual ~NotifiedPut() = default;
  /// Starts putting `bytes` from `src` into slot `slot` of the peer, notified with `tag`. The
  /// notification becomes visible at the peer no earlier than the data is complete there, and at
  /// the latest when complete_notified() returns. `src` stays untouched until then.
  virtual void put_notify(const void* src, std::size_t bytes, std::size_t slot, std::int64_t tag) = 0;
  /// Every notified put issued so far is complete at the peer and its notification visible.
  virtual void complete_notified() = 0;
  /// Atomically reads this end's notifications: tags[s] for each slot s (none: no notification).
  virtual void poll_notifications(std::int64_t* tags) = 0;
  /// The given slots are copied out: their notifications go back to none (complete on return).
  virtual void consume_notifications(const std::size_t* slots, std::size_t n) = 0;
};

class OneSidedBackend : public TransportBackend, public NotifiedPut {
 public:
  enum Counter { acks = 0, done = 1 };
  static constexpr std::size_t counters = 2;  // control words before the stamps

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
  void receive_idle() override;
  int in_flight() const override { return static_cast<int>(sent_ - acked_); }
  void begin_close() override;
  bool test_close() override;

  /// Bytes of this end's region (control words + slots).
  std::size_t region_bytes() const { return control_bytes() + slot_bytes() * slots(); }
  /// Writes the initial control words (no notification in any slot) into this end's region with
  /// plain stores: before the peer can access it.
  void initialise_region(unsigned char* region) const;

  // NotifiedPut, emulated: put now; at completion, complete_remote() and then an atomic store of
  // each pending slot's stamp (Algorithm 1 line 3 / Algorithm 2 line 7 without hardware support).
  void put_notify(const void* src, std::size_t bytes, std::size_t slot, std::int64_t tag) override;
  void complete_notified() override;
  void poll_notifications(std::int64_t* tags) override;
  void consume_notifications(const std::size_t* slots, std::size_t n) override;

 protected:
  std::size_t slots() const { return static_cast<std::size_t>(core_.config.transport.max_in_flight); }
  std::size_t control_words() const { return counters + slots(); }
  std::size_t control_bytes() const { return (control_words() * sizeof(std::int64_t) + 63) / 64 * 64; }
  /// A slot: the message's sequence number (one double's room), then the packed message.
  std::size_t slot_doubles() const { return 1 + core_.packed_size(); }
  std::size_t slot_bytes() const { return slot_doubles() * sizeof(double); }
  std::size_t slot_offset(std::size_t s) const { return control_bytes() + s * slot_bytes(); }
  static std::size_t stamp_offset(std::size_t s) { return (counters + s) * sizeof(std::int64_t); }

  // Primitives. Offsets are byte offsets into a region (this end's or the peer's).
  /// Starts putting `bytes` from `src` into the peer's region at `offset`; src stays untouched
  /// until complete_local() or complete_remote().
  virtual void put(const void* src, std::size_t bytes, std::size_t offset) = 0;
  /// Puts issued so far are complete at the origin (src reusable).
  virtual void complete_local() = 0;
  /// Puts issued so far are complete at the target (or ordered before any later atomic store).
  virtual void complete_remote() = 0;
  /// Atomically stores `value` into the peer's control word `word`; `*src` must stay unchanged
  /// until flush_atomics(). Not yet visible.
  virtual void store_remote(std::size_t word, const std::int64_t* src) = 0;
  /// The atomic stores issued so far are visible at the peer without its help.
  virtual void flush_atomics() = 0;
  /// Atomically reads this end's control_words() words; also gives the library a chance to progress.
  virtual void read_control(std::int64_t* out) = 0;
  /// Atomically stores NotifiedPut::none into this end's stamps of the given slots; complete on return.
  virtual void reset_stamps(const std::size_t* slots, std::size_t n) = 0;
  /// Makes the peer's completed puts visible to plain loads of this end's region (memory barrier).
  virtual void sync_local() {}
  /// This end's region (slots are read with plain loads after poll_notifications + sync_local).
  virtual const unsigned char* local_region() const = 0;
  /// Everything issued so far has completed at the peer (close).
  virtual void complete_all() = 0;

  bool connected_ = false;

 private:
  void set_remote(Counter c, std::int64_t value);
  void complete_pending();  // remote completion + notification of messages sent but not yet notified
  static void complete_deferred_cb(TransportBackend* b, bool flush_atomics);
  // Atomic stores issued and not yet flushed: none; fresh (in the current call on the channel);
  // aged (before it: flushed by a receive that finds nothing new, receive_idle).
  enum class Atomics { none, fresh, aged };
  void atomics_issued();           // a store was issued: registers the deferred flush
  void issued_remote_completed();  // a flush to the peer completed every store issued so far
  void flush_issued_atomics();
  void take_arrivals();
  void due_at_call();

  Completion completion_;
  bool local_flush_after_put_;
  std::vector<std::vector<double>> send_buffers_;  // the puts' sources, in turn (at most 2)
  std::vector<std::int64_t> stamp_out_;            // per slot: source of its pending stamp store
  std::vector<std::int64_t> slot_sequence_;        // per slot of the peer: our last message put there (-1: none)
  std::vector<std::pair<std::size_t, std::int64_t>> pending_;  // (slot, message number) put, not yet notified
  std::deque<std::int64_t> ack_sources_;           // sources of the acknowledgements not yet flushed
  Atomics atomics_ = Atomics::none;
  std::int64_t counter_out_[counters] = {0, 0};    // sources of the counter stores
  std::vector<std::int64_t> control_;              // last read of this end's control words
  std::vector<std::size_t> consumed_slots_;
  std::int64_t sent_ = 0, acked_ = 0, consumed_ = 0, peer_done_ = 0;
  bool closing_ = false, done_sent_ = false;
};

}  // namespace desync::comm::detail
