#pragma once
// Internal interface between the channel facade (channel.cpp) and its transport backends
// (transport_p2p.cpp, transport_rma.cpp, transport_shmem.cpp). Not installed.
//
// A backend moves packed messages (ChannelCore::pack) from the staging area to the peer and feeds
// the messages that arrive here into ChannelCore (arrived_message / arrived_piece). It enforces the
// end-to-end flow control (at most max_in_flight unacknowledged messages per direction) and the
// clean close. The facade owns the handshake and every semantic decision (newest message, racy
// pieces, wait_recv).
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "desync/communication/channel.hpp"

namespace desync::comm::detail {

class TransportBackend {
 public:
  explicit TransportBackend(ChannelCore& core) : core_(core) {}
  virtual ~TransportBackend() = default;
  TransportBackend(const TransportBackend&) = delete;
  TransportBackend& operator=(const TransportBackend&) = delete;

  /// Sent to the peer in the handshake (shmem: where this end's buffers lie in the arena).
  virtual std::int64_t handshake_value() const { return 0; }
  /// After a successful handshake. May block until the peer makes the matching call: the facade
  /// calls it on all channels of a process in one order both ends agree on.
  virtual void connect(std::int64_t /*peer_value*/) {}
  /// Fewer than max_in_flight messages unacknowledged (makes progress first).
  virtual bool can_send() = 0;
  /// Where the next message's payload goes, if the backend takes it straight into its own send slot
  /// (no copy from core.staging at send): that slot's payload, held for the next send(); blocks
  /// while no slot is free, as send() would. nullptr: the message is packed in core.staging.
  virtual double* send_payload() { return nullptr; }
  /// Sends the message (the slot send_payload() gave, or core.staging) tagged `time_level`; blocks
  /// while no slot is free.
  virtual void send(std::int64_t time_level) = 0;
  /// Takes in whatever has arrived (and acknowledges it), completes deferred work that is due.
  /// block: this process is about to wait in the channel layer; first complete every deferred
  /// completion of every channel (so no peer waits on us), then wait for something to happen.
  virtual void progress(bool block) = 0;
  /// A receive on this channel found nothing new: work this end left for later that is now due
  /// (one-sided: atomic stores issued before the previous call, still unflushed).
  virtual void receive_idle() {}
  virtual int in_flight() const = 0;
  /// Close: stop sending, drain and drop arriving traffic, finish what was sent.
  virtual void begin_close() = 0;
  /// Non-blocking; true once both directions are complete and the peer is closing too.
  virtual bool test_close() = 0;
  /// After test_close() returned true; may block until the peer's matching call (frees windows and
  /// communicators). Called in the same agreed order as connect().
  virtual void disconnect() {}

 protected:
  ChannelCore& core_;
};

std::unique_ptr<TransportBackend> make_p2p_backend(ChannelCore& core, MPI_Comm comm, int send_tag, int recv_tag);
std::unique_ptr<TransportBackend> make_rma_backend(ChannelCore& core, MPI_Comm comm);
/// rma: place the regions of channels created together in one window (before the handshake), then
/// after it allocate that window, collectively over `comm`, and attach the channels to it.
void rma_assign_regions(const std::vector<TransportBackend*>& backends);
void rma_create_window(MPI_Comm comm, const std::vector<TransportBackend*>& backends);
std::unique_ptr<TransportBackend> make_shmem_backend(ChannelCore& core, MPI_Comm comm);

/// Deferred completions (overlap schemes): a backend with work that must happen before its peer can
/// see a message registers here; a process about to block in the channel layer completes them all,
/// so two processes that each wait for the other never hold back each other's notifications.
/// `complete(backend, flush_atomics)`: the pending puts always; with flush_atomics, also the atomic
/// stores already issued (notifications, acknowledgements) that no flush has completed yet.
void defer_completion(TransportBackend* backend, void (*complete)(TransportBackend*, bool));
void cancel_deferred(TransportBackend* backend);
/// Every registered completion. flush_atomics false (a receive that found nothing new, not a wait):
/// the pending puts are completed and announced, the issued atomic stores left to their next flush.
void complete_all_deferred(bool flush_atomics = true);

/// shmem runtime (transport_shmem.cpp).
bool shmem_built();
void shmem_start();  // collective over MPI_COMM_WORLD
bool shmem_started();
void shmem_stop();   // shmem_finalize if started

}  // namespace desync::comm::detail
