#pragma once
// Asynchronous point-to-point channel between two ranks (paper 000, section 4.2).
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
//
// Flow control is end-to-end: at most `max_in_flight` messages per direction are unacknowledged,
// where acknowledged means the receiving end has matched the message (MPI_Issend completion), not
// that the application has read it.
//
// Transport: MPI two-sided. Receives land in private slots that are reposted the moment the channel
// sees them complete (during any call on the channel): async mode keeps a copy of the newest
// message, racy mode applies each piece to the receive image. So the receiving end always has
// max_in_flight receives posted and a sender is never held up by an application that does not
// call recv(). MPI forbids reading a buffer a pending receive may write, hence the slots; the
// observable semantics of racy mode are those of the paper's single-buffer scheme at piece
// granularity.
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace desync::comm {

enum class ChannelMode { async, racy };

struct ChannelConfig {
  int peer = MPI_PROC_NULL;
  std::size_t message_size = 0;  ///< doubles per message
  int max_in_flight = 1;         ///< R: unacknowledged messages allowed per direction (>= 1)
  ChannelMode mode = ChannelMode::async;
  int racy_chunks = 4;  ///< racy mode: pieces per message (clamped to message_size)
  int tag = 0;          ///< tag of the traffic this end sends; 0 <= tag < 4096
  int recv_tag = -1;    ///< tag of the traffic this end receives; -1 means the same as `tag`
};

struct ChannelStats {
  long messages_sent = 0;       ///< messages this end sent
  long messages_arrived = 0;    ///< messages (or racy pieces / racy_chunks) that arrived here
  long messages_delivered = 0;  ///< async: messages handed to the application by recv()
  long messages_discarded = 0;  ///< superseded before being read (racy: pieces_discarded / chunks)
  long pieces_arrived = 0;      ///< racy: pieces that arrived
  long pieces_discarded = 0;    ///< racy: pieces older than the image's piece, not applied
  long blocked_sends = 0;       ///< send() calls that had to wait for a free slot
};

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
  /// Staging area for the next message (message_size doubles): fill it, then call send().
  double* send_buffer() { return staging_.data(); }
  /// Sends the staging area tagged with `time_level`. Blocks until a slot is free if none is
  /// (check can_send() first to avoid that). On return the staging area may be reused.
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
  const double* recv_buffer() const { return image_.data(); }
  /// racy: atomic (relaxed) load of element m of the receive image.
  double read_racy(std::size_t m) const {
    return std::atomic_ref<const double>(image_[m]).load(std::memory_order_relaxed);
  }
  /// Time level of the last delivered message (async) or newest piece (racy); -1 before any.
  std::int64_t time_level() const { return level_; }
  /// racy: number of pieces, their element ranges and the time level of each (-1: none yet).
  int chunks() const { return static_cast<int>(chunk_begin_.size()) - 1; }
  std::size_t chunk_begin(int c) const { return chunk_begin_[static_cast<std::size_t>(c)]; }
  std::size_t chunk_end(int c) const { return chunk_begin_[static_cast<std::size_t>(c) + 1]; }
  std::int64_t chunk_level(int c) const { return chunk_level_[static_cast<std::size_t>(c)]; }

  const ChannelConfig& config() const { return config_; }
  const ChannelStats& stats() const { return stats_; }
  int in_flight() const;  ///< unacknowledged messages this end has sent
  bool closed() const { return state_ == State::closed; }

 private:
  enum class State { open, closing, closed };
  struct Header {
    std::int64_t time_level;
    std::int64_t chunk;
  };
  static constexpr std::size_t header_doubles = 2;

  Channel(MPI_Comm comm, const ChannelConfig& config, bool defer_handshake);
  void post_handshake();
  void finish_handshake();
  void post_receive(std::size_t slot);
  std::size_t piece_capacity() const;  // doubles in one receive slot, header included
  void progress_sends();
  void progress_receives(bool block);
  void apply_piece(const double* slot);
  void keep_if_newest(const double* slot);
  void deliver_newest();
  std::size_t free_send_slot() const;  // npos if none
  void begin_close();
  bool test_close();

  MPI_Comm comm_;
  ChannelConfig config_;
  int send_tag_ = 0, recv_tag_ = 0;
  State state_ = State::open;
  ChannelStats stats_;

  std::vector<double> staging_;
  std::vector<double> image_;
  std::vector<std::size_t> chunk_begin_;
  std::vector<std::int64_t> chunk_level_;
  std::int64_t level_ = -1;

  // Send side: max_in_flight slots, each holding one message (racy: all its pieces).
  std::size_t pieces_per_message_ = 1;
  std::vector<std::vector<double>> send_slots_;
  std::vector<MPI_Request> send_requests_;  // slot * pieces_per_message_ + piece

  // Receive side: max_in_flight * pieces_per_message_ slots of one piece each, always reposted as
  // soon as they complete, so matching never waits for the application to call recv().
  std::vector<std::vector<double>> recv_slots_;
  std::vector<MPI_Request> recv_requests_;
  std::vector<int> completed_indices_;
  // async: the two most recent messages that have arrived; one is undelivered while its level is
  // above level_. recv() takes the newest; wait_recv(L) the oldest held with level >= L.
  std::vector<double> newest_, previous_;
  std::int64_t newest_level_ = -1, previous_level_ = -1;

  // Handshake and close.
  std::int64_t handshake_out_[4] = {0, 0, 0, 0}, handshake_in_[4] = {0, 0, 0, 0};
  std::int64_t close_out_ = 0, close_in_ = -1;
  MPI_Request control_requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  long pieces_sent_ = 0, pieces_received_ = 0;
};

}  // namespace desync::comm
