#include "desync/communication/ghost_exchange.hpp"

#include <string>

#include "desync/communication/reduction.hpp"
#include "desync/core/error.hpp"

namespace desync::comm {

GhostExchange::GhostExchange(MPI_Comm comm, GhostPlanSpec spec, ExchangeEngine engine, Progress progress,
                             TransportConfig transport)
    : spec_(std::move(spec)) {
  // Validation, agreed on by every rank so that none goes on into the collective calls alone (the
  // plan exchange checks the engine, progress mode and transport; engine blocking has no progress).
  const std::string problem = check_ghost_plan(comm, spec_);
  agree_or_throw(comm, problem.empty(), problem);

  plan_ = make_ghost_plan(comm, spec_);
  ghost_.assign(spec_.recv_offsets.empty() ? 0 : static_cast<std::size_t>(spec_.recv_offsets.back()), 0.0);
  PlanExchangeConfig c;
  c.mode = HaloMode::sync;
  c.engine = engine;
  c.transport = transport;
  c.progress = progress;
  exchange_ = std::make_unique<PlanExchange>(comm, plan_, c);
}

GhostExchange::~GhostExchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) finish();
  exchange_.reset();  // closes the channels, frees the communicators
}

void GhostExchange::start(const double* x) {
  finish();  // a previous exchange still pending is completed first (the buffers are reused)
  // Time level = the exchange's sequence number, the same on every rank.
  exchange_->start(x, sequence_);
  started_ = true;
  progress_reduction();  // a reduction in flight advances with the halo traffic
}

bool GhostExchange::poll() {
  if (progress() == Progress::thread) return false;  // the thread owns the requests
  progress_reduction();  // --progress test: a reduction in flight advances at every poll too
  return !started_ || exchange_->poll();
}

void GhostExchange::finish() {
  progress_reduction();  // a reduction in flight advances with the halo traffic (a no-op when none)
  if (started_) exchange_->finish(ghost_.data(), sequence_++);
  started_ = false;
}

}  // namespace desync::comm
