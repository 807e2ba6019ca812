// Transport shmem: OpenSHMEM, flag-and-acknowledge.
//
// OpenSHMEM allocates symmetric memory collectively over all PEs, while channels are created pair
// by pair. So init_transport(Transport::shmem) allocates one symmetric arena (shmem_malloc, all PEs
// at once) and each channel end takes its region from its own copy of the arena; the two ends tell
// each other their region's offset in the MPI handshake. Remote addresses are formed from the local
// arena address plus the peer's offset, which OpenSHMEM translates to the peer's copy.
//
// Protocol (transport_onesided.hpp), the emulated notified put: shmem_putmem of the packed message,
// shmem_fence (delivery of the data is ordered before what follows to the same PE), then the flag:
// an atomic set of the slot's stamp to the message's sequence number. The receiver reads its control
// words with atomic fetches on its own PE, resets consumed stamps with atomic sets, and acknowledges
// with an atomic set of the sender's ack counter. Slot data is read with plain loads only after its
// stamp was seen; the sender rewrites a slot only after its acknowledgement.
//
// PE numbers are MPI_COMM_WORLD ranks (Open MPI's OpenSHMEM runs the PEs as the MPI job's ranks).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>

#include "desync/core/error.hpp"
#include "transport_onesided.hpp"

#ifdef DESYNC_HAVE_SHMEM
#include <shmem.h>
#endif

namespace desync::comm::detail {

#ifndef DESYNC_HAVE_SHMEM

bool shmem_built() { return false; }
void shmem_start() { throw InputError("--transport shmem: desync was built without OpenSHMEM"); }
bool shmem_started() { return false; }
void shmem_stop() {}
std::unique_ptr<TransportBackend> make_shmem_backend(ChannelCore&, MPI_Comm) {
  throw InputError("--transport shmem: desync was built without OpenSHMEM");
}

#else

static_assert(sizeof(long) == sizeof(std::int64_t), "shmem counters use shmem_long atomics");

namespace {

/// The symmetric arena and a first-fit allocator over this PE's copy of it.
struct Arena {
  unsigned char* base = nullptr;
  std::size_t size = 0;
  std::map<std::size_t, std::size_t> free;  // offset -> bytes
  bool started = false;

  std::size_t allocate(std::size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < bytes) continue;
      const std::size_t offset = it->first, left = it->second - bytes;
      free.erase(it);
      if (left) free.emplace(offset + bytes, left);
      return offset;
    }
    throw InputError("--transport shmem: the symmetric arena (" + std::to_string(size >> 20) +
                     " MiB) is full; raise DESYNC_SHMEM_ARENA_MB");
  }
  void release(std::size_t offset, std::size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    auto it = free.emplace(offset, bytes).first;
    if (auto next = std::next(it); next != free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free.erase(next);
    }
    if (it != free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free.erase(it);
      }
    }
  }
};

Arena& arena() {
  static Arena a;
  return a;
}

class ShmemBackend final : public OneSidedBackend {
 public:
  ShmemBackend(ChannelCore& core, MPI_Comm comm)
      : OneSidedBackend(core,
                        core.config.transport.shmem_sync == ShmemSync::put ? Completion::in_send : Completion::before_next_put,
                        false) {
    if (!arena().started)
      throw InputError("--transport shmem: OpenSHMEM not started (call desync::comm::init_transport first)");
    MPI_Group group, world;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    const int peer = core.config.peer;
    MPI_Group_translate_ranks(group, 1, &peer, world, &peer_pe_);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    me_pe_ = shmem_my_pe();
    offset_ = arena().allocate(region_bytes());
    initialise_region(arena().base + offset_);  // no notification in any slot
  }
  ~ShmemBackend() override {
    if (owns_) arena().release(offset_, region_bytes());
  }

  std::int64_t handshake_value() const override { return static_cast<std::int64_t>(offset_); }
  void connect(std::int64_t peer_offset) override {
    peer_offset_ = static_cast<std::size_t>(peer_offset);
    connected_ = true;
  }
  void disconnect() override {
    if (!connected_) return;
    connected_ = false;
    shmem_quiet();
  }

 protected:
  unsigned char* remote(std::size_t offset) const { return arena().base + peer_offset_ + offset; }
  unsigned char* local(std::size_t offset) const { return arena().base + offset_ + offset; }

  void put(const void* src, std::size_t bytes, std::size_t offset) override {
    shmem_putmem(remote(offset), src, bytes, peer_pe_);  // returns when src is reusable
  }
  void complete_local() override {}
  void complete_remote() override { shmem_fence(); }
  void store_remote(std::size_t word, const std::int64_t* src) override {
    shmem_long_atomic_set(reinterpret_cast<long*>(remote(word * sizeof(long))), static_cast<long>(*src), peer_pe_);
  }
  void flush_atomics() override {}  // an atomic set is visible at the peer without its help
  void read_control(std::int64_t* out) override {
    for (std::size_t w = 0; w < control_words(); ++w)
      out[w] = shmem_long_atomic_fetch(reinterpret_cast<const long*>(local(w * sizeof(long))), me_pe_);
  }
  void reset_stamps(const std::size_t* slot_list, std::size_t n) override {
    for (std::size_t k = 0; k < n; ++k)
      shmem_long_atomic_set(reinterpret_cast<long*>(local(stamp_offset(slot_list[k]))), static_cast<long>(none), me_pe_);
    shmem_quiet();  // complete before the acknowledgement lets the peer stamp the slot again
  }
  void sync_local() override { std::atomic_thread_fence(std::memory_order_acquire); }
  const unsigned char* local_region() const override { return local(0); }
  void complete_all() override { shmem_quiet(); }

 private:
  int peer_pe_ = -1, me_pe_ = -1;
  std::size_t offset_ = 0, peer_offset_ = 0;
  bool owns_ = true;
};

}  // namespace

bool shmem_built() { return true; }

void shmem_start() {
  Arena& a = arena();
  if (a.started) return;
  shmem_init();
  std::size_t mb = 64;
  if (const char* env = std::getenv("DESYNC_SHMEM_ARENA_MB")) mb = std::strtoull(env, nullptr, 10);
  if (mb == 0) mb = 64;
  a.size = mb << 20;
  a.base = static_cast<unsigned char*>(shmem_malloc(a.size));  // collective over all PEs
  if (!a.base) throw InputError("--transport shmem: shmem_malloc of the arena failed");
  a.free.clear();
  a.free.emplace(0, a.size);
  a.started = true;
}

bool shmem_started() { return arena().started; }

void shmem_stop() {
  Arena& a = arena();
  if (!a.started) return;
  shmem_barrier_all();
  shmem_free(a.base);
  a.started = false;
  shmem_finalize();
}

std::unique_ptr<TransportBackend> make_shmem_backend(ChannelCore& core, MPI_Comm comm) {
  return std::make_unique<ShmemBackend>(core, comm);
}

#endif

}  // namespace desync::comm::detail
