#pragma once
// Ghost exchange: the communication layer of the distributed operators (Hoefler et al., 2007, Listings 3-5).
//
// A thin layer over a comm::HaloPlan built from a GhostPlanSpec (per neighbour rank: the owned
// entries it needs, the number of ghost entries it provides; make_ghost_plan). Every exchange packs
// the owned entries, moves them, and leaves the ghost values in one contiguous ghost buffer ordered
// by the spec's receive list. The exchange is split into start() and finish() so the caller can
// compute the rows that need no ghost value in between:
//
// The moving is a comm::PlanExchange in sync mode, time level = the exchange's sequence number,
// with its engines (p2p: one comm::Channel per neighbour over the chosen transport; neighbor: one
// MPI_Ineighbor_alltoallv; blocking: start() completes the exchange, the reference) and progress
// modes (none, test: the caller calls poll(), thread: a progress thread polls; plan_exchange.hpp).
// Neighbours that are this rank itself are served by a local copy in every engine.
//
// Every request is counted in comm::RequestLedger; finish() and the destructor leave none pending,
// and the destructor frees the exchange's communicators.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/exchange_engine.hpp"
#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"

namespace desync::comm {

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
  ExchangeEngine engine() const { return exchange_->config().engine; }
  Progress progress() const { return exchange_->config().progress; }  ///< none for engine blocking
  const TransportConfig& transport() const { return exchange_->config().transport; }
  /// Neighbours exchanged with (distinct ranks other than this one and MPI_PROC_NULL).
  int neighbours() const { return exchange_->neighbours(); }
  const ExchangeStats& stats() const { return exchange_->stats(); }
  void reset_stats() { exchange_->reset_stats(); }

 private:
  GhostPlanSpec spec_;
  HaloPlan plan_;
  std::vector<double> ghost_;
  std::unique_ptr<PlanExchange> exchange_;
  bool started_ = false;
  std::int64_t sequence_ = 0;  // time level of the next exchange
};

}  // namespace desync::comm
