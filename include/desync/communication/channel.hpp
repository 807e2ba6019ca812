#pragma once
// Asynchronous point-to-point channel between two ranks (Bethune et al., 2011, section 4.2).
//
// A channel carries fixed-size messages of doubles in both directions, each tagged with the sender's
// time level (its iteration number when the message was packed). Handles of individual operations
// are never exposed: flow control, completion and clean-up happen below this interface.
//
//   async mode  recv() delivers the newest whole message that has arrived and discards older ones;
//               every value delivered together comes from one sender time level.
//   racy mode   a message travels in `racy_chunks` pieces; each piece lands in the receive image as
//               soon as it arrives (element-wise atomic stores), so the image may mix values from
//               different sender time levels. Readers use atomic loads (see read_racy()).
//   bounded     bounded staleness (the weakly-synchronous exchange, Algorithm 2 of the paper on
//               asynchrony-tolerant schemes for Burgers' turbulence with notified RMA; see
//               docs/channel.md): every level is sent, in order; recv_bounded(own) consumes what
//               has arrived and blocks only while the newest level available is more than
//               max_delay (L) levels behind the reader's own level (and, during the first
//               `history` calls, while it is behind at all: a synchronous start).
//
// Time levels (async and bounded): the whole messages that arrive are kept in a ring of `history`
// (T) slots, plus the one delivered last (the receive image); level_data(level) reads any retained
// level, newest_level() is the newest that has arrived.
//
// Flow control is end-to-end: at most `max_in_flight` messages per direction are unacknowledged,
// where acknowledged means the receiving end's channel has taken the message in (p2p: MPI_Issend
// completion; rma/shmem: the receiver's acknowledgement counter), not that the application has read it.
// Synchronous and bounded exchanges (ChannelConfig::sender_bounded) bound the sender themselves; p2p
// then sends with MPI_Isend, whose completion only means MPI holds the message.
//
// Transports (ChannelConfig::transport, see docs/channel.md): the semantics above are implemented
// once, in this facade; a transport backend only moves packed messages (a header carrying the time
// level, then the payload) and acknowledgements between the two ends.
//   p2p    MPI two-sided: MPI_Issend per message (racy: per piece; sender_bounded: MPI_Isend); the receiving end keeps
//          max_in_flight receives posted into private slots, reposted as soon as they complete.
//   rma    MPI-3 one-sided, passive target: one window (MPI_Win_allocate) per channel over a 2-rank
//          communicator, one MPI_Win_lock_all epoch for the channel's lifetime, one packed MPI_Put
//          per message into one of max_in_flight slots of the peer's window, notified (after a
//          flush) by an atomic store of the slot's stamp carrying the level: an emulated notified
//          put. The receiver acknowledges atomically in the sender's window. Completion: RmaSync.
//   shmem  OpenSHMEM: the same slots and stamps in symmetric memory, put / fence / atomic stamp,
//          acknowledgement by a remote atomic (flag-and-acknowledge). Completion: ShmemSync.
// Every transport receives into private slots that the channel drains during any call on it, so
// racy mode is element-wise well defined (no C++ data race) at piece granularity.
#include <mpi.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "desync/communication/transport_config.hpp"

namespace desync::comm {

/// async: newest whole message wins; racy: pieces land as they arrive; bounded: every level kept in
/// order, the reader at most max_delay levels ahead of what it has (see the header comment).
enum class ChannelMode { async, racy, bounded };

/// True if this build can use the transport (shmem needs a build with OpenSHMEM).
bool transport_built(Transport t);
/// Collective over MPI_COMM_WORLD, after MPI_Init: prepares `t` for use by channels. For shmem this
/// calls shmem_init and allocates the symmetric arena channels carve their buffers from
/// (DESYNC_SHMEM_ARENA_MB, default 64); p2p and rma need nothing. Throws desync::InputError
/// ("built without OpenSHMEM") if the transport is not built. Idempotent.
void init_transport(Transport t);
/// Call instead of MPI_Finalize: if shmem was initialised, shmem_finalize (which finalizes MPI too
/// under Open MPI); then MPI_Finalize unless MPI is already finalized.
void finalize_transports_and_mpi();
/// If shmem was initialised, shmem_finalize; for a process whose MPI someone else finalizes (the
/// Python bindings: mpi4py, after this at exit). Idempotent.
void finalize_transports();

struct ChannelConfig {
  int peer = MPI_PROC_NULL;
  std::size_t message_size = 0;  ///< doubles per message
  ChannelMode mode = ChannelMode::async;
  int racy_chunks = 4;  ///< racy mode: pieces per message (clamped to message_size)
  int tag = 0;          ///< tag of the traffic this end sends; 0 <= tag < 4096
  int recv_tag = -1;    ///< tag of the traffic this end receives; -1 means the same as `tag`
  /// Both ends must agree on the kind and max_in_flight (R, >= 1: unacknowledged messages allowed
  /// per direction); each may choose its own completion scheme.
  TransportConfig transport;
  /// T: whole messages (time levels) retained besides the delivered one (async, bounded; racy
  /// ignores it). 0 = automatic: 2 in async mode (the newest and the previous arrival, as before
  /// the ring existed), 2 L + 2 in bounded mode. Bounded mode needs T >= L + 2.
  int history = 0;
  /// L: bounded mode only, the largest allowed delay in levels (>= 0). max_in_flight is raised to at
  /// least 2 L + 1, the most messages a peer can have sent beyond what this end has taken in while
  /// both keep the bound, so sending every level never blocks unless the bound requires it.
  int max_delay = 0;
  /// bounded mode only: levels behind the delivered one that level_data() must still return (-1:
  /// max_delay, every level within the bound). A smaller value lets an arrival reuse the entry of a
  /// level that just fell out of reach, so a reader in step with its peer cycles through a few
  /// entries (kept in cache) instead of all T. The asynchrony-tolerant halo approximation reads one
  /// level behind (f^{n-k-1}).
  int retain_behind = -1;
  /// The reader takes in every message in order and the exchange itself keeps the sender within a
  /// few messages of it: a synchronous exchange (one level ahead at most) or a bounded one (2 L + 1).
  /// Lets a transport use cheaper sends (p2p: standard sends, no acknowledgement to wait for), and
  /// p2p keep only transport.posted_receives receives posted (fewer keep the receive buffers in
  /// cache; messages beyond them wait in MPI's queue in order until the reader's next call).
  bool sender_bounded = false;
};

struct ChannelStats {
  long messages_sent = 0;       ///< messages this end sent
  long messages_arrived = 0;    ///< messages (or racy pieces / racy_chunks) that arrived here
  long messages_delivered = 0;  ///< async: messages handed to the application by recv()
  long messages_discarded = 0;  ///< superseded before being read (racy: pieces_discarded / chunks)
  long pieces_arrived = 0;      ///< racy: pieces that arrived
  long pieces_discarded = 0;    ///< racy: pieces older than the image's piece, not applied
  long blocked_sends = 0;       ///< send() calls that had to wait for a free slot
  long forced_waits = 0;        ///< bounded: recv_bounded() calls that had to block for the bound
  long levels_consumed = 0;     ///< bounded: levels recv_bounded() advanced over (tr increments)
};

namespace detail {
class TransportBackend;

/// The transport-independent state of one channel end: staging area, receive image, the ring of
/// retained time levels, racy piece levels and statistics. Backends feed arrivals into it.
struct ChannelCore {
  static constexpr std::size_t header_doubles = 4;  ///< packed header: time level, piece index, version, echo

  /// One retained whole message, kept packed (ChannelCore::pack's layout: header, then payload) so
  /// that a transport can hand over the buffer it received into instead of copying it
  /// (arrived_in_place). level -1: empty.
  struct Level {
    std::int64_t level = -1;
    std::vector<double> data;
    const double* payload() const { return data.data() + header_doubles; }
  };

  ChannelConfig config;
  ChannelStats stats;
  std::vector<double> staging;
  std::vector<double> image;  ///< racy: the receive image (atomic element access)
  std::vector<std::size_t> chunk_begin;
  std::vector<std::int64_t> chunk_level;
  std::vector<std::int64_t> chunk_version, chunk_echo;  ///< racy: the round tags each piece held carried
  std::int64_t out_version = -1, out_echo = -1;  ///< the round tags of the messages sent from now on
  std::int64_t level = -1;  ///< delivered level (async, bounded) or newest piece level (racy)
  // async, bounded: T + 1 entries. ring[delivered] is the receive image (the message delivered
  // last, never overwritten until the next delivery); the other T hold the T newest arrivals. An
  // arrival replaces the entry of the oldest level among those T (slot = "oldest retained", which
  // equals level mod T when every level arrives in order, and keeps the newest T when levels are
  // skipped or overtake each other, as async sends may). Bounded mode first reuses an entry the
  // reader can no longer ask for (below the delivered level - retain_behind): the newest such, the
  // one most recently read.
  std::vector<Level> ring;
  std::size_t delivered = 0;
  std::int64_t newest_level = -1;   ///< newest level that has arrived
  std::int64_t last_sent = -1;      ///< bounded: the level of the last send (levels must be consecutive)
  long bounded_calls = 0;           ///< bounded: recv_bounded() calls so far (synchronous start)

  std::size_t pieces() const { return chunk_begin.size() - 1; }
  std::size_t piece_size(std::size_t c) const { return chunk_begin[c + 1] - chunk_begin[c]; }
  /// Doubles of one whole packed message: every piece with its header.
  std::size_t packed_size() const { return config.message_size + header_doubles * pieces(); }
  /// Writes the staging area as a packed message tagged `time_level` into out[0, packed_size()).
  void pack(double* out, std::int64_t time_level) const;
  /// The header of a one-piece message whose payload is already in place at out + header_doubles.
  void pack_header(double* out, std::int64_t time_level) const;
  /// Feeds one arrived packed piece (header + payload) into the ring or the racy image.
  void arrived_piece(const double* piece);
  /// The round tags (version, echo) of the data held: the delivered message's (async), the oldest
  /// of its pieces' (racy); -1 before any.
  std::array<std::int64_t, 2> tags_in() const;
  /// Feeds a whole packed message (as pack() wrote it).
  void arrived_message(const double* packed);
  /// async and bounded modes, one piece: takes the whole packed message in `packed` (packed_size()
  /// doubles) into the ring by exchanging buffers, without copying; `packed` then holds a buffer of
  /// the same size to receive into next.
  void arrived_in_place(std::vector<double>& packed);
  /// The ring entry an arrival of level `lv` replaces, after the bookkeeping of an arrival (npos:
  /// the arrival is discarded).
  std::size_t take_arrival(std::int64_t lv);
  /// Index of the ring entry holding `lv` (npos if not retained).
  std::size_t find(std::int64_t lv) const;
  /// Makes ring[e] the receive image; arrivals between the old and the new level count discarded.
  void deliver(std::size_t e);
  void deliver_newest();
};
}  // namespace detail

class Channel {
 public:
  /// Creates this end and blocks until the peer creates the matching end (same message size,
  /// max_in_flight, mode and chunks; otherwise both ends throw desync::InputError).
  Channel(MPI_Comm comm, const ChannelConfig& config);
  /// Creates several channels at once (one handshake round), e.g. one per halo face. Collective
  /// between each pair of ends; blocks until every peer has created its end.
  static std::vector<std::unique_ptr<Channel>> connect(MPI_Comm comm,
                                                       const std::vector<ChannelConfig>& configs);
  /// Closes the channel if the application did not (see close()).
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// destroy_channel: completes all outstanding traffic in both directions and blocks until the
  /// peer closes its end. Messages still in flight are received and dropped; no request is left
  /// pending. Afterwards only stats() may be called.
  void close();
  /// Closes many channels together (no ordering constraint between peers).
  static void close_all(std::span<Channel* const> channels);

  /// True if a send would not block: fewer than max_in_flight messages are unacknowledged.
  bool can_send();
  /// Where the next message goes (message_size doubles): fill it, then call send(). The same area
  /// until send(); afterwards ask again (p2p packs a whole message straight into a free send slot,
  /// without a copy at send(): finding one blocks as send() would, so check can_send() first to
  /// avoid that; elsewhere it is the channel's staging area).
  double* send_buffer();
  /// Sends what send_buffer() holds, tagged with `time_level`. Blocks until a slot is free if none
  /// is (check can_send() first to avoid that).
  void send(std::int64_t time_level);

  /// async: true if a message newer than the last delivered one has arrived. racy: always true.
  bool can_recv();
  /// async: copies the newest arrived message into recv_buffer(), discards older ones, and returns
  /// its time level (or the previous level if nothing new arrived). racy: applies arrived pieces to
  /// the receive image and returns the newest piece level seen.
  std::int64_t recv();
  /// async: blocks until a message of time level >= min_level has arrived and delivers the oldest
  /// such message still held (see below) into recv_buffer(); returns its level. With one message
  /// in flight per direction and both ends alternating send / wait_recv (a synchronous exchange),
  /// this is exactly level min_level: the peer can be at most one level ahead.
  std::int64_t wait_recv(std::int64_t min_level);

  /// Receive image: async, the last delivered message; racy, pieces written as they land.
  /// async: the pointer may change at each recv(); fetch it again after every call.
  const double* recv_buffer() const {
    return core_.config.mode == ChannelMode::racy ? core_.image.data() : core_.ring[core_.delivered].payload();
  }
  /// racy: atomic (relaxed) load of element m of the receive image.
  double read_racy(std::size_t m) const {
    return std::atomic_ref<const double>(core_.image[m]).load(std::memory_order_relaxed);
  }
  /// Time level of the last delivered message (async) or newest piece (racy); -1 before any.
  std::int64_t time_level() const { return core_.level; }
  /// Round tags: two numbers the caller attaches to the messages it sends from now on (in their
  /// header), read back at the other end with the data they came with. comm::PlanExchange sends its
  /// version (the rounds it has completed) and its echo (the version of the peer's data its
  /// iterate was computed from); see ExchangeStats::rounds.
  void set_round_tags(std::int64_t version, std::int64_t echo) {
    core_.out_version = version;
    core_.out_echo = echo;
  }
  /// The round tags of the data held (async: the delivered message's; racy: the oldest of the
  /// pieces'); -1 before any data.
  std::int64_t tag_version() const { return core_.tags_in()[0]; }
  std::int64_t tag_echo() const { return core_.tags_in()[1]; }
  /// racy: number of pieces, their element ranges and the time level of each (-1: none yet).
  int chunks() const { return static_cast<int>(core_.pieces()); }
  std::size_t chunk_begin(int c) const { return core_.chunk_begin[static_cast<std::size_t>(c)]; }
  std::size_t chunk_end(int c) const { return core_.chunk_begin[static_cast<std::size_t>(c) + 1]; }
  std::int64_t chunk_level(int c) const { return core_.chunk_level[static_cast<std::size_t>(c)]; }

  // ---- Time levels (async and bounded modes; see ChannelConfig::history).
  /// Newest time level that has arrived (taken in by the channel, delivered or not); -1 before any.
  /// Makes no progress: call recv(), can_recv() or recv_bounded() to take arrivals in.
  std::int64_t newest_level() const { return core_.newest_level; }
  /// The data (message_size doubles) of time level `level` if this end retains it (one of the T
  /// newest arrivals, or the delivered message), else nullptr. Valid until the next call on the
  /// channel other than the const accessors: an arrival may replace it.
  const double* level_data(std::int64_t level) const;
  /// Number of time levels retained besides the delivered one (T, after the automatic choice).
  int history() const { return core_.config.history; }

  /// bounded mode: one step of the weakly-synchronous exchange (WS-NA), Algorithm 2, lines 9-31,
  /// for a reader whose own level is `own_level` (it has sent own_level already). Takes in every message that has
  /// arrived, then blocks only while the newest level available is below the constraint
  /// tc = own_level - max_delay (tc = own_level during the first `history` calls: the synchronous
  /// start that fills the ring). Returns tr, the newest level available but at most own_level,
  /// and delivers it into recv_buffer(); levels above own_level that arrived stay retained for
  /// later calls. With max_delay 0 this is wait_recv(own_level). Contract: both ends send every
  /// level in order and call recv_bounded(own) once per level after send(own).
  std::int64_t recv_bounded(std::int64_t own_level);

  const ChannelConfig& config() const { return core_.config; }
  const ChannelStats& stats() const { return core_.stats; }
  int in_flight() const;  ///< unacknowledged messages this end has sent
  bool closed() const { return state_ == State::closed; }

 private:
  enum class State { open, closing, closed };

  /// An end not yet configured nor connected (connect() makes several, then one handshake); closed
  /// (nothing to close) until configure() succeeds.
  explicit Channel(MPI_Comm comm);
  /// Checks `config`, sets up the transport-independent state and creates the backend; opens the end.
  void configure(const ChannelConfig& config);
  void post_handshake();
  void finish_handshake();
  void begin_close();
  bool test_close();
  void progress_receiving();
  std::array<int, 4> order_key() const;  // the same on both ends; orders pairwise-blocking steps

  MPI_Comm comm_;
  int rank_ = 0;
  int send_tag_ = 0, recv_tag_ = 0;
  State state_ = State::open;
  detail::ChannelCore core_;
  std::unique_ptr<detail::TransportBackend> backend_;

  // Handshake and close.
  std::int64_t handshake_out_[6] = {0, 0, 0, 0, 0, 0}, handshake_in_[6] = {0, 0, 0, 0, 0, 0};
  MPI_Request control_requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

}  // namespace desync::comm
