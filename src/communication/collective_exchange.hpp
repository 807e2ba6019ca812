#pragma once
// Internal to the communication layer: the engines of a synchronous PlanExchange that move a whole
// exchange with MPI requests instead of channels (comm::ExchangeEngine):
//   neighbor  one MPI_Ineighbor_alltoallv on a distributed-graph communicator made once with the
//             plan: one edge per distinct peer, the parts of several plan neighbours with the same
//             peer (periodic dimensions of one or two ranks) concatenated in tag order on both ends
//   blocking  one MPI_Isend / MPI_Irecv per remote plan neighbour with the plan's tags, completed
//             by MPI_Waitall before start() returns (the reference without overlap)
// Local neighbours (this rank itself) are the PlanExchange's loopback, not served here.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "desync/communication/exchange_engine.hpp"
#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"

namespace desync::comm::detail {

class CollectiveExchange {
 public:
  /// Collective over `comm`: lays out the buffers and creates the engine's communicator.
  CollectiveExchange(MPI_Comm comm, const HaloPlan& plan, ExchangeEngine engine);
  /// Frees the communicator; the caller has waited for the last exchange (wait()).
  ~CollectiveExchange();
  CollectiveExchange(const CollectiveExchange&) = delete;
  CollectiveExchange& operator=(const CollectiveExchange&) = delete;

  /// Packs x[send entries] and posts the exchange (blocking: completes it). Counts its messages.
  void start(const double* x, ExchangeStats& stats);
  /// MPI_Testall on the requests in flight; true when none is left to wait for. Safe to call from
  /// the progress thread while the caller computes.
  bool test();
  /// Waits for the requests in flight and retires them.
  void wait();
  /// Plan neighbour n's received values, in the order of its receive offsets.
  const double* received(std::size_t n) const { return recv_.data() + recv_at_[n]; }

 private:
  ExchangeEngine engine_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // distributed graph or private duplicate (owned)
  std::vector<double> send_, recv_;
  std::vector<std::int32_t> pack_;        // send_[e] = x[pack_[e]]
  std::vector<std::size_t> recv_at_;      // plan neighbour n's values start at recv_[recv_at_[n]]
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_, peers_, send_tags_, recv_tags_;
  std::vector<MPI_Request> requests_;
  int pending_ = 0;
  bool any_traffic_ = true;  // some rank of the communicator sends or receives something
};

}  // namespace desync::comm::detail
