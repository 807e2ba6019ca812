#pragma once
// Ghost exchange: the communication layer of the distributed operators (paper 002, Listings 3-5).
//
// A plan is built once from, per neighbour rank, the list of owned entries that rank needs (sent)
// and the number of ghost entries it provides (received). Every exchange then packs the owned
// entries into one contiguous send buffer, moves them, and leaves the ghost values in one contiguous
// ghost buffer ordered by the plan's receive list. The exchange is split into start() and finish()
// so the caller can compute the rows that need no ghost value in between:
//
//   engine    p2p        MPI_Irecv / MPI_Isend per neighbour, on a private duplicate of the communicator
//             neighbor   one MPI_Ineighbor_alltoallv on a topology communicator created with the plan:
//                        a distributed graph with exactly the plan's neighbour lists
//                        (MPI_Dist_graph_create_adjacent), or, for a Cartesian plan, a duplicate of
//                        the Cartesian communicator (see GhostPlanSpec::cartesian)
//             blocking   start() completes the whole exchange before returning (the reference)
//   progress  none       no MPI call between start() and finish()
//             test       the caller calls poll() (MPI_Test / MPI_Testall) at its own pace
//             thread     a progress thread polls between start() and finish(); needs
//                        MPI_THREAD_MULTIPLE (checked with MPI_Query_thread: InputError otherwise)
//
// Every request is counted in comm::RequestLedger; finish() and the destructor leave none pending,
// and the destructor frees the plan's communicator.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "desync/communication/exchange_engine.hpp"

namespace desync::comm {

/// What a rank sends to and receives from its neighbours in one ghost exchange. Entries are
/// doubles (a block operator lists each scalar entry of a block).
struct GhostPlanSpec {
  /// Ranks (in the communicator given to GhostExchange) that receive owned entries from here.
  std::vector<int> send_ranks;
  /// send_ranks.size() + 1 offsets into send_index.
  std::vector<int> send_offsets{0};
  /// Owned entries packed for each send rank, in the order that rank stores them as ghosts.
  std::vector<std::int32_t> send_index;
  /// Ranks that send ghost entries here; the ghost buffer holds their data in this order.
  std::vector<int> recv_ranks;
  /// recv_ranks.size() + 1 offsets into the ghost buffer.
  std::vector<int> recv_offsets{0};
  /// The communicator is Cartesian (non-periodic) and send_ranks == recv_ranks list its 2 * ndims
  /// neighbours in MPI's neighbour order (per dimension: the lower, then the upper neighbour),
  /// MPI_PROC_NULL included with zero counts. The neighbor engine then uses a duplicate of the
  /// Cartesian communicator. (On a periodic dimension of size 1 or 2 both neighbours are the same
  /// rank and MPI libraries disagree on which receive slot gets which message; periodic
  /// communicators are therefore refused.)
  bool cartesian = false;
};

/// Traffic and time of the exchanges, accumulated.
struct GhostStats {
  long exchanges = 0;
  long messages_sent = 0;
  long messages_received = 0;
  double bytes_sent = 0;
  long polls = 0;  ///< MPI_Test* calls made by poll() or the progress thread
};

/// Throws InputError if the MPI library does not provide MPI_THREAD_MULTIPLE (MPI_Query_thread);
/// `what` names the feature that needs it in the message.
void require_thread_multiple(const char* what);

class GhostExchange {
 public:
  /// Collective over `comm` (duplicates it or creates the topology communicator). Throws
  /// InputError on an inconsistent spec or an unsupported progress mode.
  GhostExchange(MPI_Comm comm, GhostPlanSpec spec, ExchangeEngine engine,
                Progress progress);
  /// Completes a started exchange, stops the progress thread and frees the plan's communicator.
  ~GhostExchange();
  GhostExchange(const GhostExchange&) = delete;
  GhostExchange& operator=(const GhostExchange&) = delete;

  /// Packs x[send_index] and starts the exchange (engine blocking: completes it). x holds the
  /// owned entries. Collective between neighbours; with the neighbor engine collective over the
  /// whole communicator (every rank starts the same number of exchanges). A previous exchange
  /// still pending is finished first.
  void start(const double* x);
  /// Progress::test: one MPI_Test / MPI_Testall on the pending requests. Returns true once the
  /// exchange is complete. Cheap no-op when nothing is pending.
  bool poll();
  /// Waits for the exchange started last; ghosts() then holds the neighbours' values.
  void finish();

  const double* ghosts() const { return ghost_.data(); }
  std::size_t ghost_count() const { return ghost_.size(); }
  const GhostPlanSpec& spec() const { return spec_; }
  ExchangeEngine engine() const { return engine_; }
  Progress progress() const { return progress_; }
  /// Neighbours exchanged with (distinct ranks other than MPI_PROC_NULL).
  int neighbours() const { return neighbours_; }
  const GhostStats& stats() const { return stats_; }
  void reset_stats() { stats_ = GhostStats{}; }

 private:
  void post();
  bool test_pending();
  void wait_pending();
  void thread_main();

  GhostPlanSpec spec_;
  ExchangeEngine engine_;
  Progress progress_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // private duplicate or topology communicator (owned)
  std::vector<double> send_;
  std::vector<double> ghost_;
  std::vector<MPI_Request> requests_;
  int pending_ = 0;  // requests posted and not completed (0 or requests_.size())
  int neighbours_ = 0;
  bool any_traffic_ = true;  // some rank of the communicator sends or receives something
  // p2p: the non-empty messages; neighbor: counts/displacements for MPI_Ineighbor_alltoallv.
  std::vector<int> p2p_send_, p2p_recv_;  // indices into send_ranks / recv_ranks
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
  GhostStats stats_;
  // Progress thread: phase_ is idle, run (poll until complete), stop (hand back) or quit.
  std::atomic<int> phase_{0};
  std::thread thread_;
};

}  // namespace desync::comm
