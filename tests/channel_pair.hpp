#pragma once
// The pairs of ranks the channel tests run on (test_channel.cpp, test_channel_levels.cpp).
#include <mpi.h>

#include <cstddef>

#include "channel_transport.hpp"
#include "desync/communication/channel.hpp"
#include "test_util.hpp"

namespace desync_test {

/// Ranks 2r and 2r+1 form a pair; an odd rank out (3 ranks) has no partner and sits the test out.
/// rma: only ranks 0 and 1 pair up. Windows of disjoint pairs are created over communicators that
/// Open MPI 4.1 gives equal context ids, and its osc/rdma names a window's shared-memory file after
/// that id, so two such windows created at once on one node collide (see src/communication/transport_rma.cpp).
class Pair {
 public:
  Pair() {
    const int rank = desync_test::world_rank(), size = desync_test::world_size();
    const bool rma = desync_test::test_transport() == desync::comm::Transport::rma;
    const bool paired = (rank ^ 1) < size && (!rma || rank < 2);
    MPI_Comm_split(MPI_COMM_WORLD, paired ? rank / 2 : MPI_UNDEFINED, rank, &comm_);
    if (paired) MPI_Comm_rank(comm_, &me_);
  }
  ~Pair() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  bool active() const { return comm_ != MPI_COMM_NULL; }
  MPI_Comm comm() const { return comm_; }
  int me() const { return me_; }
  int peer() const { return 1 - me_; }
  void barrier() const { MPI_Barrier(comm_); }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int me_ = -1;
};

/// A channel to `peer` of messages of `size` doubles, at most `inflight` in flight, over the
/// transport the test runs on (channel_transport.hpp); each test sets its mode's own fields.
inline desync::comm::ChannelConfig pair_config(int peer, std::size_t size, int inflight, desync::comm::ChannelMode mode,
                                               int tag) {
  desync::comm::ChannelConfig c;
  c.peer = peer;
  c.message_size = size;
  c.transport.max_in_flight = inflight;
  c.mode = mode;
  c.tag = tag;
  apply_transport(c);
  return c;
}

}  // namespace desync_test
