// Transport p2p: MPI two-sided. Each message travels as `pieces` MPI sends (one per racy piece, one
// in async mode): MPI_Issend in the asynchronous modes, where acknowledged = the synchronous send
// completed, i.e. the receiving end matched it; standard MPI_Isend in the synchronous and bounded
// modes, whose exchange itself keeps the sender within a few levels of its receiver. The receiving
// end keeps max_in_flight * pieces receives posted into private slots and reposts each the moment
// the channel sees it complete (during any call on the channel), so a sender is never held up by an
// application that does not call recv() (ChannelConfig::posted_receives may ask for fewer). MPI
// forbids reading a buffer a pending receive may write, hence the slots.
#include <algorithm>
#include <vector>

#include "desync/communication/request_ledger.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/waiting.hpp"
#include "transport_backend.hpp"

namespace desync::comm::detail {
namespace {
int data_tag(int t) { return 4 * t; }
int close_tag(int t) { return 4 * t + 2; }
constexpr std::size_t npos = static_cast<std::size_t>(-1);

class P2PBackend final : public TransportBackend {
 public:
  P2PBackend(ChannelCore& core, MPI_Comm comm, int send_tag, int recv_tag)
      : TransportBackend(core), comm_(comm), send_tag_(send_tag), recv_tag_(recv_tag) {
    pieces_ = core.pieces();
    const auto R = static_cast<std::size_t>(core.config.transport.max_in_flight);
    std::size_t largest = 0;
    for (std::size_t c = 0; c < pieces_; ++c) largest = std::max(largest, core.piece_size(c));
    piece_capacity_ = largest + ChannelCore::header_doubles;
    send_slots_.assign(R, std::vector<double>(core.packed_size()));
    send_requests_.assign(R * pieces_, MPI_REQUEST_NULL);
    // Receives kept posted: max_in_flight messages' worth, or fewer when the configuration asks
    // (messages beyond them wait in MPI's queue, in order, until a receive is posted again).
    const auto posted = core.config.sender_bounded && core.config.transport.posted_receives > 0
                            ? std::min(R, static_cast<std::size_t>(core.config.transport.posted_receives))
                            : R;
    recv_slots_.assign(posted * pieces_, std::vector<double>(piece_capacity_));
    recv_requests_.assign(recv_slots_.size(), MPI_REQUEST_NULL);
    completed_.resize(std::max(recv_requests_.size(), send_requests_.size()));
  }

  void connect(std::int64_t) override {
    for (std::size_t s = 0; s < recv_slots_.size(); ++s) post_receive(s);
  }

  bool can_send() override {
    progress_sends();
    return free_send_slot() != npos;
  }

  // A one-piece message is packed straight into the send slot it leaves from: one pass over the
  // halo values instead of two (a pack into the staging area, then a copy of 8 x message_size bytes
  // into the slot at each send).
  double* send_payload() override {
    if (pieces_ != 1) return nullptr;
    if (held_ == npos) held_ = acquire_slot();
    return send_slots_[held_].data() + ChannelCore::header_doubles;
  }

  void send(std::int64_t time_level) override {
    std::size_t slot = held_;
    held_ = npos;
    double* out = nullptr;
    if (slot != npos) {
      out = send_slots_[slot].data();
      core_.pack_header(out, time_level);  // the payload is in place (send_payload)
    } else {
      slot = acquire_slot();
      out = send_slots_[slot].data();
      core_.pack(out, time_level);
    }
    for (std::size_t c = 0; c < pieces_; ++c) {
      const std::size_t len = core_.piece_size(c) + ChannelCore::header_doubles;
      // The asynchronous modes send synchronously (MPI_Issend): a send completes once matched, so
      // the slots bound what is unreceived, and a sender skips a level rather than flood a slow
      // receiver (with standard sends, which SMPI completes at once, 64 simulated ranks of 400
      // iterations took 359 s of host time instead of 2.6). The synchronous and bounded modes,
      // whose exchange keeps the sender within a few levels of its receiver, use standard sends:
      // a small message then leaves at once, without the acknowledgement an MPI_Issend waits for
      // (2 ranks of this 2-core machine, Open MPI, sync Jacobi on 2^3 points: 1.0-1.15 us an
      // exchange instead of 1.8; docs/benchmarks.md). On a simulated cluster it also keeps host
      // time down: SimGrid 3.32 keeps every request that MPI_Test completes in the rank's list of
      // activities and scans that list at each later computation and wait, while a standard send
      // below smpi/send-is-detached-thresh (64 KiB) is detached and leaves nothing there (64 ranks
      // of sync Jacobi: 4x the iterations took 6x the time with MPI_Issend, 3x with MPI_Isend).
      // The asynchronous modes' synchronous sends are completed by reap_sends while a slot is
      // free, and receives by MPI_Wait, so neither fills that list (docs/simulation.md, "Behaviour
      // of SMPI 3.32").
      if (core_.config.sender_bounded)
        MPI_Isend(out, static_cast<int>(len), MPI_DOUBLE, core_.config.peer, data_tag(send_tag_), comm_,
                  &send_requests_[slot * pieces_ + c]);
      else
        MPI_Issend(out, static_cast<int>(len), MPI_DOUBLE, core_.config.peer, data_tag(send_tag_), comm_,
                   &send_requests_[slot * pieces_ + c]);
      RequestLedger::posted();
      out += len;
    }
    pieces_sent_ += static_cast<long>(pieces_);
  }

  void progress(bool block) override {
    if (block) complete_all_deferred();
    progress_receives(block);
    progress_sends();
  }

  int in_flight() const override {
    int busy = 0;
    for (std::size_t s = 0; s < send_slots_.size(); ++s) {
      bool any = false;
      for (std::size_t p = 0; p < pieces_; ++p) any = any || send_requests_[s * pieces_ + p] != MPI_REQUEST_NULL;
      busy += any ? 1 : 0;
    }
    return busy;
  }

  void begin_close() override {
    closing_ = true;
    // Messages that arrived but were never delivered are part of pieces_received_ already.
    close_out_ = pieces_sent_;
    MPI_Irecv(&close_in_, 1, MPI_INT64_T, core_.config.peer, close_tag(recv_tag_), comm_, &control_[0]);
    MPI_Isend(&close_out_, 1, MPI_INT64_T, core_.config.peer, close_tag(send_tag_), comm_, &control_[1]);
    RequestLedger::posted(2);
  }

  bool test_close() override {
    if (closed_) return true;
    progress_sends();
    test_request(control_[1]);
    const bool know_peer = test_request(control_[0]);
    progress_receives(false);
    if (!know_peer) return false;
    // Every piece the peer sent must be received; posted receives beyond that are never matched
    // and are cancelled. Receives match in posting order, so counting completions is enough.
    if (pieces_received_ < close_in_) {
      long pending = 0;
      for (auto r : recv_requests_) pending += r != MPI_REQUEST_NULL ? 1 : 0;
      for (std::size_t s = 0; s < recv_requests_.size() && pieces_received_ + pending < close_in_; ++s) {
        if (recv_requests_[s] == MPI_REQUEST_NULL) {
          post_receive(s);
          ++pending;
        }
      }
      return false;
    }
    for (auto& r : recv_requests_)
      if (r != MPI_REQUEST_NULL && !cancel_request(r)) ++pieces_received_;  // matched after all
    for (auto r : send_requests_)
      if (r != MPI_REQUEST_NULL) return false;
    if (control_[1] != MPI_REQUEST_NULL) return false;
    closed_ = true;
    return true;
  }

 private:
  // A free send slot, the lowest (the most recently used are likely still in cache); blocks while
  // none is.
  std::size_t acquire_slot() {
    progress_sends();
    std::size_t slot = free_send_slot();
    if (slot == npos) {
      ++core_.stats.blocked_sends;
      core::WaitScope waiting("a free send slot (the peer must receive a message first)", core_.config.peer);
      while (slot == npos) {
        // Keep receiving while blocked so two ends that both wait cannot deadlock.
        progress_receives(false);
        int index = 0;
        MPI_Waitany(static_cast<int>(send_requests_.size()), send_requests_.data(), &index, MPI_STATUS_IGNORE);
        if (index != MPI_UNDEFINED) RequestLedger::retired();
        slot = free_send_slot();
      }
    }
    return slot;
  }

  void post_receive(std::size_t slot) {
    mark_unreceived(recv_slots_[slot].data());  // simulated clusters: see progress_receives
    MPI_Irecv(recv_slots_[slot].data(), static_cast<int>(piece_capacity_), MPI_DOUBLE, core_.config.peer,
              data_tag(recv_tag_), comm_, &recv_requests_[slot]);
    RequestLedger::posted();
  }

  // On a simulated cluster the asynchronous modes' synchronous sends are completed by reaping
  // (progress_receives) while a send slot is free: testing them would leave each in SimGrid's list
  // of the rank's activities. Closing, or with every slot busy, they are tested as in a real run.
  bool sends_reaped() const { return core::simulated_build && !core_.config.sender_bounded && !closing_; }

  void progress_sends() {
    if (sends_reaped()) {
      if (free_send_slot() != npos) return;
      if (any_receive_written()) progress_receives(false);  // reaps with that receive; no MPI_Test
      if (free_send_slot() != npos) return;
    }
    int count = 0;
    MPI_Testsome(static_cast<int>(send_requests_.size()), send_requests_.data(), &count, completed_.data(),
                 MPI_STATUSES_IGNORE);
    if (count != MPI_UNDEFINED && count > 0) RequestLedger::retired(count);
  }

  void progress_receives(bool block) {
    // Real runs: until a pass completes nothing. A receive reposted in one pass may match a message
    // already queued (the receives are fewer than the messages a sender may have in flight: one
    // posted receive, or a reader that fell behind), which the next pass reports, as Algorithm 2 of
    // Aditya et al. (2019), lines 17-24, starts and tests the next level's receive while the last
    // test succeeded. With one pass such a message waited for the next call: with one receive
    // posted, both ranks of a 2-rank bounded run without noise read their neighbour's previous
    // level at 99 % of their steps. (Simulated runs keep one pass: each MPI_Testsome there costs
    // simulated time.) A call takes in at most max_in_flight messages (pieces), what a sender can
    // have in flight, so that a reader's ring of history levels keeps every level a call took in
    // until the reader looks (a fast asynchronous sender would otherwise keep one call going).
    const long most = static_cast<long>(core_.config.transport.max_in_flight) * static_cast<long>(pieces_);
    long taken = 0;
    for (bool first = true;; first = false) {
      int count = 0;
      if (core::simulated_build && !block) {
        // On a simulated cluster, receives whose slot SimGrid has written are complete: MPI_Wait
        // completes them without leaving them in SimGrid's list of the rank's activities, as
        // MPI_Test would (request_ledger.hpp, test_receive). Only when none has arrived does
        // MPI_Testsome run, which advances simulated time and lets the other ranks run.
        for (std::size_t s = 0; s < recv_requests_.size(); ++s)
          if (receive_written(s)) {
            if (count == 0 && sends_reaped())
              reap_sends(s);
            else
              MPI_Wait(&recv_requests_[s], MPI_STATUS_IGNORE);
            completed_[static_cast<std::size_t>(count++)] = static_cast<int>(s);
          }
      }
      if (count == 0) {
        if (block && first)
          MPI_Waitsome(static_cast<int>(recv_requests_.size()), recv_requests_.data(), &count, completed_.data(),
                       MPI_STATUSES_IGNORE);
        else
          test_receives(count);
      }
      if (count == MPI_UNDEFINED || count == 0) return;
      RequestLedger::retired(count);
      pieces_received_ += count;
      taken += count;
      for (int n = 0; n < count; ++n) {
        const auto s = static_cast<std::size_t>(completed_[static_cast<std::size_t>(n)]);
        if (closing_) continue;  // draining: drop, the reposting policy is test_close's
        // A whole message goes into the ring without a copy: the ring's entry becomes this slot's
        // next receive buffer (the same size).
        if (pieces_ == 1 && core_.config.mode != ChannelMode::racy)
          core_.arrived_in_place(recv_slots_[s]);
        else
          core_.arrived_piece(recv_slots_[s].data());
        post_receive(s);
      }
      if (closing_ || core::simulated_build || taken >= most) return;
    }
  }

  // MPI_Testsome over the posted receives. Open MPI 4.1 runs its progress engine inside
  // MPI_Testsome only when none of the requests has completed, and reports what that progress
  // completed at the next call: a rendezvous message that arrived while this process computed is
  // matched and copied by the first call but seen only by the second, a whole step later for a
  // stepper that tests once a step (2 ranks, burgers3d 64^3, bounded, no noise: 29 % of one rank's
  // remote face-steps read a level older than one already sent; docs/channel.md). A second call
  // when the first finds nothing reports it; MPICH and SMPI complete within one call.
  void test_receives(int& count) {
    const int n = static_cast<int>(recv_requests_.size());
    MPI_Testsome(n, recv_requests_.data(), &count, completed_.data(), MPI_STATUSES_IGNORE);
    if (count == 0 && !core::simulated_build)
      MPI_Testsome(n, recv_requests_.data(), &count, completed_.data(), MPI_STATUSES_IGNORE);
  }

  // Simulated clusters only: completes the receive into slot s, which SimGrid has written, and
  // every send SimGrid has finished, without MPI_Test. SMPI's MPI_Waitany registers the call with
  // each request in order and completes the first that has ended, which removes it from the
  // rank's list of activities (as MPI_Wait does); the finished receive, placed last, guarantees
  // that each call returns at once. A call that returns a send is repeated.
  void reap_sends(std::size_t s) {
    reap_.assign(send_requests_.begin(), send_requests_.end());
    reap_.push_back(recv_requests_[s]);
    const int last = static_cast<int>(reap_.size()) - 1;
    for (int index = 0; index != last;) {
      MPI_Waitany(last + 1, reap_.data(), &index, MPI_STATUS_IGNORE);
      if (index == MPI_UNDEFINED) break;  // unreachable: the receive is active
      if (index != last) RequestLedger::retired();
    }
    std::copy(reap_.begin(), reap_.begin() + last, send_requests_.begin());
    recv_requests_[s] = reap_.back();
  }

  // Simulated clusters: the pending receive into slot s has arrived (its mark is overwritten).
  bool receive_written(std::size_t s) const {
    return recv_requests_[s] != MPI_REQUEST_NULL && marked_buffer_written(recv_slots_[s].data());
  }

  bool any_receive_written() const {
    for (std::size_t s = 0; s < recv_requests_.size(); ++s)
      if (receive_written(s)) return true;
    return false;
  }

  std::size_t free_send_slot() const {
    for (std::size_t s = 0; s < send_slots_.size(); ++s) {
      bool free = true;
      for (std::size_t p = 0; p < pieces_ && free; ++p) free = send_requests_[s * pieces_ + p] == MPI_REQUEST_NULL;
      if (free) return s;
    }
    return npos;
  }

  MPI_Comm comm_;
  int send_tag_, recv_tag_;
  std::size_t pieces_ = 1, piece_capacity_ = 0;
  std::vector<std::vector<double>> send_slots_;
  std::vector<MPI_Request> send_requests_;  // slot * pieces_ + piece
  std::vector<std::vector<double>> recv_slots_;
  std::vector<MPI_Request> recv_requests_;
  std::vector<int> completed_;
  std::vector<MPI_Request> reap_;  // reap_sends: the sends, then one finished receive
  std::size_t held_ = npos;        // the slot send_payload() gave for the next send
  std::int64_t close_out_ = 0, close_in_ = -1;
  MPI_Request control_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  long pieces_sent_ = 0, pieces_received_ = 0;
  bool closing_ = false, closed_ = false;
};
}  // namespace

std::unique_ptr<TransportBackend> make_p2p_backend(ChannelCore& core, MPI_Comm comm, int send_tag, int recv_tag) {
  return std::make_unique<P2PBackend>(core, comm, send_tag, recv_tag);
}

}  // namespace desync::comm::detail
