// The asynchronous channel (docs/channel.md) on its own: every rank sends a stream of messages to
// its right neighbour in a ring and reads the newest one from its left neighbour, over the transport
// named on the command line.
//
//   mpirun -np 2 ./channel_example            p2p (MPI two-sided)
//   mpirun -np 2 ./channel_example rma        MPI one-sided
//   oshrun -np 2 --mca osc ucx ./channel_example shmem     (needs desync built with OpenSHMEM)
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "desync/communication/channel.hpp"
#include "desync/communication/request_ledger.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  using namespace desync::comm;
  try {
    const Transport transport = parse_transport(argc > 1 ? argv[1] : "p2p", "transport");
    init_transport(transport);  // collective; OpenSHMEM needs it, the others ignore it
    if (size < 2) throw std::runtime_error("run on 2 or more ranks");

    // Channel tags: 1 for traffic to the right, 2 for traffic to the left.
    ChannelConfig right, left;
    right.peer = (rank + 1) % size;
    left.peer = (rank + size - 1) % size;
    for (ChannelConfig* c : {&right, &left}) {
      c->message_size = 1000;    // doubles per message
      c->transport.max_in_flight = 2;  // R: unacknowledged messages per direction
      c->mode = ChannelMode::async;
      c->transport.kind = transport;
      c->transport.rma_sync = RmaSync::flush;
    }
    right.tag = 1, right.recv_tag = 2;
    left.tag = 2, left.recv_tag = 1;
    auto channels = Channel::connect(MPI_COMM_WORLD, {right, left});  // blocks until the peers connect
    Channel& to_right = *channels[0];
    Channel& from_left = *channels[1];

    // Send levels 1..100 whenever flow control allows; read whatever is newest in between.
    const std::int64_t last = 100;
    std::int64_t sent = 0, newest = -1;
    long reads = 0;
    while (sent < last || newest < last) {
      if (sent < last && to_right.can_send()) {
        ++sent;
        for (int m = 0; m < 1000; ++m) to_right.send_buffer()[m] = static_cast<double>(sent);
        to_right.send(sent);
      }
      if (from_left.can_recv()) {
        newest = from_left.recv();  // the newest whole message; older ones are discarded
        ++reads;
        if (from_left.recv_buffer()[999] != static_cast<double>(newest)) status = 1;  // never mixed
      }
    }
    const auto stats = from_left.stats();
    Channel* all[] = {&to_right, &from_left};
    Channel::close_all(all);  // completes what is in flight; blocks until the peers close too
    if (rank == 0)
      std::printf("transport %s: sent %lld, received %ld of them (%ld superseded unread), newest %lld; "
                  "MPI requests pending: %ld\n",
                  to_string(transport), static_cast<long long>(sent), stats.messages_delivered,
                  stats.messages_discarded, static_cast<long long>(newest), RequestLedger::outstanding());
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "channel_example: %s\n", e.what());
    status = 2;
  }
  finalize_transports_and_mpi();  // instead of MPI_Finalize: stops OpenSHMEM first if it was started
  return status;
}
