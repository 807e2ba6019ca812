#pragma once
// Ghost exchange: the communication layer of the distributed operators (Hoefler et al., 2007, Listings 3-5).
//
// A thin layer over a comm::HaloPlan built from a GhostPlanSpec (per neighbour rank: the owned
// entries it needs, the number of ghost entries it provides; make_ghost_plan). Every exchange packs
// the owned entries, moves them, and leaves the ghost values in one contiguous ghost buffer ordered
// by the spec's receive list. The exchange is split into start() and finish() so the caller can
// compute the rows that need no ghost value in between:
//
//   engine    p2p        a comm::PlanExchange in sync mode: one comm::Channel per neighbour over
//                        the chosen transport (p2p: MPI two-sided; rma: MPI one-sided; shmem:
//                        OpenSHMEM), time level = the exchange's sequence number
//             neighbor   one MPI_Ineighbor_alltoallv on a distributed-graph communicator made once
//                        with the plan: one edge per distinct peer, the parts of several plan
//                        neighbours with the same peer (periodic dimensions of one or two ranks)
//                        concatenated in tag order on both ends; the transport is ignored
//             blocking   start() completes the whole exchange (MPI_Isend/MPI_Irecv, MPI_Waitall)
//                        before returning (the reference); the transport is ignored
//   progress  none       no call between start() and finish()
//             test       the caller calls poll() at its own pace
//             thread     a progress thread polls between start() and finish(); needs
//                        MPI_THREAD_MULTIPLE (checked with MPI_Query_thread: InputError otherwise)
// Neighbours that are this rank itself are served by a local copy in every engine.
//
// Every request is counted in comm::RequestLedger; finish() and the destructor leave none pending,
// and the destructor frees the exchange's communicators.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/exchange_engine.hpp"
#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"

namespace desync::comm {

/// Traffic and time of the exchanges, accumulated.
struct GhostStats {
  long exchanges = 0;
  long messages_sent = 0;
  long messages_received = 0;
  double bytes_sent = 0;
  long polls = 0;  ///< progress passes made by poll() or the progress thread
};

/// How the channels of engine p2p move data (channel.hpp); the other engines ignore it.
struct TransportConfig {
  Transport transport = Transport::p2p;
  RmaSync rma_sync = RmaSync::flush;
  ShmemSync shmem_sync = ShmemSync::put;
};

class GhostExchange {
 public:
  /// Collective over `comm` (splits or duplicates it, or creates the topology communicator).
  /// Throws InputError on every rank if the spec is inconsistent on any, or the progress mode or
  /// transport is not available.
  GhostExchange(MPI_Comm comm, GhostPlanSpec spec, ExchangeEngine engine, Progress progress,
                TransportConfig transport = {});
  /// Completes a started exchange, stops the progress thread and frees the communicators.
  ~GhostExchange();
  GhostExchange(const GhostExchange&) = delete;
  GhostExchange& operator=(const GhostExchange&) = delete;

  /// Packs x[send_index] and starts the exchange (engine blocking: completes it). x holds the
  /// owned entries and may change once start() returns. Collective between neighbours; with the
  /// neighbor engine collective over the whole communicator (every rank starts the same number of
  /// exchanges). A previous exchange still pending is finished first. Between start() and
  /// finish() only poll() may be called; ghosts() is valid again after finish().
  void start(const double* x);
  /// Progress::test: one progress pass (channels, or MPI_Test on the collective's request).
  /// Returns true once the exchange is complete. Cheap no-op when nothing is pending.
  bool poll();
  /// Waits for the exchange started last; ghosts() then holds the neighbours' values.
  void finish();

  const double* ghosts() const { return ghost_.data(); }
  std::size_t ghost_count() const { return ghost_.size(); }
  const GhostPlanSpec& spec() const { return spec_; }
  const HaloPlan& plan() const { return plan_; }
  ExchangeEngine engine() const { return engine_; }
  Progress progress() const { return progress_; }
  const TransportConfig& transport() const { return transport_; }
  /// Neighbours exchanged with (distinct ranks other than this one and MPI_PROC_NULL).
  int neighbours() const { return neighbours_; }
  const GhostStats& stats() const;
  void reset_stats();

 private:
  void copy_local(const double* x);  // local neighbours: x -> ghost buffer
  bool test_pending();
  void wait_pending();
  void thread_main();

  GhostPlanSpec spec_;
  HaloPlan plan_;
  ExchangeEngine engine_;
  Progress progress_;
  TransportConfig transport_;
  int neighbours_ = 0;
  std::vector<double> ghost_;
  mutable GhostStats stats_;
  // Engine p2p.
  std::unique_ptr<PlanExchange> channels_;
  bool started_ = false;
  std::int64_t sequence_ = 0;  // time level of the next exchange
  // Engines neighbor and blocking: one send and one receive buffer, by peer (neighbor) or by plan
  // neighbour (blocking); `unpack_` maps each received value to its ghost slot.
  MPI_Comm comm_ = MPI_COMM_NULL;  // distributed graph or private duplicate (owned)
  std::vector<double> send_, recv_;
  std::vector<std::int32_t> pack_, unpack_;  // send_[e] = x[pack_[e]], ghost_[unpack_[e]] = recv_[e]
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_, peers_, send_tags_, recv_tags_;
  std::vector<MPI_Request> requests_;
  int pending_ = 0;
  bool any_traffic_ = true;  // some rank of the communicator sends or receives something
  std::atomic<int> phase_{0};
  std::thread thread_;
};

}  // namespace desync::comm
