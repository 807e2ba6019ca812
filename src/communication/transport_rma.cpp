// Transport rma: MPI-3 one-sided communication, passive target.
//
// One window (MPI_Win_allocate) per group of channels created together -- one Channel::connect()
// call, e.g. all faces of a HaloExchange, or one Channel constructor -- over their communicator,
// opened with a single MPI_Win_lock_all epoch for the window's lifetime and freed (MPI_Win_unlock_all,
// MPI_Win_free) when its last channel closes. Each channel end owns a region of its process's part
// of the window; the two ends exchange their regions' offsets in the handshake. Layout and protocol:
// transport_onesided.hpp.
//
// Why not a window per channel over a 2-rank communicator: Open MPI 4.1's osc/rdma names the
// shared-memory file backing a window after the communicator's context id, and communicators of
// disjoint rank pairs often get the same id; two such windows created at the same time on one node
// then collide (seen here as "unlink(2) /dev/shm/osc_rdma...: No such file" and wrong data). A message is one contiguous MPI_Put (header and payload
// packed together), sent as an emulated notified put (transport_onesided.hpp): its arrival is
// signalled only after the data is complete at the target (MPI_Win_flush), by an
// MPI_Accumulate(MPI_REPLACE) of the slot's stamp with the message's sequence number.
//
// Defined behaviour of the target-side reads:
//  * Control words (counters, slot stamps) are touched only by accumulate operations on MPI_INT64_T:
//    MPI_REPLACE by the peer (and by the owner resetting a consumed stamp), MPI_NO_OP
//    (MPI_Get_accumulate) by the owner. MPI guarantees accumulate operations on the same
//    basic datatype to be element-wise atomic with respect to each other, so the owner never does
//    a racy plain load of a location the peer may be updating.
//  * Slot data is read with plain loads only after the owner saw the slot's stamp (an atomic read)
//    and called MPI_Win_sync: the put was completed at the target by the sender's
//    flush before the counter was raised, and the sender rewrites that slot only after our
//    acknowledgement, so no access conflicts with the loads.
//
// Progress: every call on the channel reads the control words with an RMA operation on its own window
// followed by MPI_Win_flush, which drives the MPI progress engine, so the channel works with MPI
// libraries that make RMA progress only inside MPI calls of the target.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "desync/core/error.hpp"
#include "transport_onesided.hpp"

namespace desync::comm::detail {
namespace {

OneSidedBackend::Completion completion_of(RmaSync s) {
  switch (s) {
    case RmaSync::flush: return OneSidedBackend::Completion::in_send;
    case RmaSync::flush_local: return OneSidedBackend::Completion::next_call;
    case RmaSync::overlap: return OneSidedBackend::Completion::before_next_put;
    case RmaSync::overlap_local: return OneSidedBackend::Completion::next_call;
  }
  return OneSidedBackend::Completion::in_send;
}

/// One window shared by the rma channels created together (one Channel::connect() call, or one
/// Channel constructor): collective over their communicator.
struct RmaWindow {
  MPI_Win win = MPI_WIN_NULL;
  unsigned char* base = nullptr;
  int users = 0;
};

class RmaBackend final : public OneSidedBackend {
 public:
  RmaBackend(ChannelCore& core, MPI_Comm comm)
      : OneSidedBackend(core, completion_of(core.config.transport.rma_sync), core.config.transport.rma_sync == RmaSync::flush_local),
        comm_(comm) {
    MPI_Comm_rank(comm, &me_);
    peer_ = core.config.peer;
  }

  ~RmaBackend() override {
    if (connected_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) disconnect();
    }
  }

  std::int64_t handshake_value() const override { return static_cast<std::int64_t>(local_offset_); }
  void set_local_offset(std::size_t offset) { local_offset_ = offset; }
  void connect(std::int64_t peer_offset) override {
    peer_offset_ = static_cast<std::size_t>(peer_offset);
    connected_ = true;
  }
  void attach(std::shared_ptr<RmaWindow> w) {
    window_ = std::move(w);
    ++window_->users;
  }

  void disconnect() override {
    if (!connected_) return;
    connected_ = false;
    if (--window_->users == 0) {  // the last channel of the window: collective over comm_
      MPI_Win_unlock_all(window_->win);
      MPI_Win_free(&window_->win);
    }
    window_.reset();
  }

 protected:
  MPI_Aint remote(std::size_t offset) const { return static_cast<MPI_Aint>(peer_offset_ + offset); }
  void put(const void* src, std::size_t bytes, std::size_t offset) override {
    MPI_Put(src, static_cast<int>(bytes), MPI_BYTE, peer_, remote(offset), static_cast<int>(bytes), MPI_BYTE,
            window_->win);
  }
  void complete_local() override { MPI_Win_flush_local(peer_, window_->win); }
  void complete_remote() override { MPI_Win_flush(peer_, window_->win); }
  void store_remote(std::size_t word, const std::int64_t* src) override {
    MPI_Accumulate(src, 1, MPI_INT64_T, peer_, remote(word * sizeof(std::int64_t)), 1, MPI_INT64_T, MPI_REPLACE,
                   window_->win);
  }
  void flush_atomics() override { MPI_Win_flush(peer_, window_->win); }  // visible at the peer without its help
  void read_control(std::int64_t* out) override {
    const int n = static_cast<int>(control_words());
    dummy_.assign(control_words(), 0);
    MPI_Get_accumulate(dummy_.data(), n, MPI_INT64_T, out, n, MPI_INT64_T, me_, static_cast<MPI_Aint>(local_offset_),
                       n, MPI_INT64_T, MPI_NO_OP, window_->win);
    MPI_Win_flush(me_, window_->win);
  }
  void reset_stamps(const std::size_t* slot_list, std::size_t n) override {
    for (std::size_t k = 0; k < n; ++k)
      MPI_Accumulate(&none_, 1, MPI_INT64_T, me_, static_cast<MPI_Aint>(local_offset_ + stamp_offset(slot_list[k])), 1,
                     MPI_INT64_T, MPI_REPLACE, window_->win);
    MPI_Win_flush(me_, window_->win);
  }
  void sync_local() override { MPI_Win_sync(window_->win); }
  const unsigned char* local_region() const override { return window_->base + local_offset_; }
  void complete_all() override { MPI_Win_flush(peer_, window_->win); }

 private:
  MPI_Comm comm_;
  int me_ = 0, peer_ = 0;
  std::size_t local_offset_ = 0, peer_offset_ = 0;
  std::shared_ptr<RmaWindow> window_;
  std::vector<std::int64_t> dummy_;           // origin of the MPI_NO_OP reads (not accessed)
  static constexpr std::int64_t none_ = none;  // origin of the stamp resets
};

}  // namespace

std::unique_ptr<TransportBackend> make_rma_backend(ChannelCore& core, MPI_Comm comm) {
  return std::make_unique<RmaBackend>(core, comm);
}

void rma_assign_regions(const std::vector<TransportBackend*>& backends) {
  std::size_t offset = 0;
  for (TransportBackend* b : backends) {
    auto* r = static_cast<RmaBackend*>(b);
    r->set_local_offset(offset);
    offset += (r->region_bytes() + 63) / 64 * 64;
  }
}

void rma_create_window(MPI_Comm comm, const std::vector<TransportBackend*>& backends) {
  std::size_t bytes = 0;
  for (TransportBackend* b : backends) bytes += (static_cast<RmaBackend*>(b)->region_bytes() + 63) / 64 * 64;
  auto w = std::make_shared<RmaWindow>();
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "accumulate_ops", "same_op_no_op");  // counters: MPI_REPLACE or MPI_NO_OP only
  void* base = nullptr;
  MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, info, comm, &base, &w->win);
  MPI_Info_free(&info);
  w->base = static_cast<unsigned char*>(base);
  for (TransportBackend* b : backends) {  // no notification in any slot; plain stores before any access
    auto* r = static_cast<RmaBackend*>(b);
    r->initialise_region(w->base + r->handshake_value());
  }
  MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
  MPI_Win_sync(w->win);
  MPI_Barrier(comm);  // no process writes into another's window before it is zeroed
  for (TransportBackend* b : backends) static_cast<RmaBackend*>(b)->attach(w);
}

}  // namespace desync::comm::detail
