#pragma once
// Internal to the Schwarz solvers: what the grid solver (schwarz.cpp) and the algebraic one
// (algebraic.cpp) share as solvers::LocalIteration: the iterate on the rank's subdomain, the values
// read from other ranks (the ghosts) and their exchange over a comm::PlanExchange, synchronous
// (Yamazaki et al., 2019, section 4.1: send, then wait for every neighbour's values of the same
// iteration) or asynchronous (section 4.2: push the newest values, pull the newest whole messages),
// and, without termination detection and with a time limit, the last iteration carried by the
// synchronous messages (driver/iteration_driver.hpp).
//
// Layout: x_ holds the subdomain's n values and one more, x_[n], the number exchange_carrying sends;
// the plan sends x_[source + send offsets] and receives into ghost_, which holds the ghosts and one
// more entry per plan neighbour after them, the numbers received.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"

namespace desync::solvers::detail {

/// The driver's settings of a Schwarz run, grid or algebraic (SchwarzOptions, AlgebraicSchwarzOptions):
/// every rank locally converged stops it (Yamazaki et al., 2019, section 4.3), with the tree
/// termination in async mode unless asked otherwise, and the per-rank residual histories kept.
template <class Options>
DriverOptions schwarz_driver_options(const Options& o) {
  DriverOptions it;
  it.iteration = o.iteration;
  it.asynchronous = o.asynchronous();
  it.reduction = o.reduction;
  it.stop_rule = StopRule::every_rank_local;
  it.tree_termination = o.asynchronous() && o.tree_termination && o.detect_termination;
  it.detect_termination = o.detect_termination;
  it.termination_transport = o.transport;
  it.idle = o.idle;
  it.rank_history = true;  // the per-rank local residual histories (their Figures 15-16)
  return it;
}

class SubdomainIteration : public LocalIteration {
 protected:
  /// Sizes the buffers and keeps the plan: n values on the subdomain, of which the plan sends from
  /// x_[source]; `ghosts` values read from other ranks. carry: the synchronous main phase carries
  /// the last iteration (no termination detection, a time limit).
  void init_subdomain(MPI_Comm comm, comm::HaloPlan plan, std::size_t n, std::size_t source, std::size_t ghosts,
                      const comm::TransportConfig& transport, bool wait_all, bool carry) {
    comm_ = comm;
    plan_ = std::move(plan);
    n_ = n;
    source_ = source;
    ghosts_ = ghosts;
    transport_ = transport;
    wait_all_ = wait_all;
    carry_ = carry;
    x_.assign(n + 1, 0.0);
    next_.assign(n + 1, 0.0);
    ghost_.assign(ghosts + plan_.neighbours.size(), 0.0);
  }

  comm::PlanExchangeConfig exchange_config(comm::HaloMode mode) const {
    comm::PlanExchangeConfig c;
    c.mode = mode;
    c.transport = transport_;  // sync: one message in flight (the plan exchange's rule)
    c.wait_all = wait_all_;
    return c;
  }

  /// The ghosts of the current iterate, exchanged synchronously outside the phases (the true
  /// residual). Collective between neighbours.
  std::vector<double> current_ghosts() const {
    comm::PlanExchange ex(comm_, plan_, exchange_config(comm::HaloMode::sync));
    std::vector<double> ghost(ghost_.size(), 0.0);
    ex.start(x_.data() + source_, 0);
    ex.finish(ghost.data(), 0);
    ex.close();
    return ghost;
  }

  void open_exchange(IterationPhase phase, bool synchronous) override {
    exchange_.reset();
    const bool carrying = (carry_ && synchronous && phase == IterationPhase::main) || (carry_async_ && !synchronous);
    exchange_.emplace(comm_, carrying ? carrying_plan() : plan_,
                      exchange_config(synchronous ? comm::HaloMode::sync : comm::HaloMode::async));
  }
  // The last iteration travels as a double (exact up to 2^53), none as +inf.
  std::int64_t exchange_carrying(std::int64_t it, std::int64_t level) override {
    constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
    x_[n_] = level == none ? HUGE_VAL : static_cast<double>(level);
    exchange(it);
    for (std::size_t j = 0; j < plan_.neighbours.size(); ++j) {
      const double v = ghost_[ghosts_ + j];
      if (v < static_cast<double>(level)) level = static_cast<std::int64_t>(v);
    }
    return level;
  }
  // Section 4.1: send the values the neighbours read, wait for theirs of the same iteration.
  void exchange(std::int64_t it) override {
    exchange_->start(x_.data() + source_, it);
    exchange_->finish(ghost_.data(), it);
  }
  void refresh() override { exchange_->install(ghost_.data()); }
  // Section 4.2: push the newest values; pull whatever newest whole messages have arrived.
  void push(std::int64_t it) override { exchange_->start(x_.data() + source_, it); }
  void pull(std::int64_t it) override { exchange_->finish(ghost_.data(), it); }
  comm::ExchangeStats exchange_stats() const override { return exchange_->stats(); }
  void close_exchange() override { exchange_->close(); }
  void advance() override { std::swap(x_, next_); }

  const comm::TransportConfig& transport() const { return transport_; }
  /// The open exchange (for a solver that installs the received values itself).
  comm::PlanExchange& open_plan_exchange() { return *exchange_; }

  /// The asynchronous phase carries x_[n_] to every neighbour too (into ghost_[ghosts_ + j]).
  bool carry_async_ = false;
  MPI_Comm comm_ = MPI_COMM_NULL;
  comm::HaloPlan plan_;
  std::vector<double> x_, next_, ghost_;
  std::size_t n_ = 0, source_ = 0, ghosts_ = 0;

 private:
  // The plan with one more entry each way per neighbour: x_[n_] goes out, the neighbour's lands in
  // ghost_[ghosts_ + its index]. Every neighbour entry exists at both ends (the plans list a peer
  // that only sends or only receives on both sides), so both ends add it.
  comm::HaloPlan carrying_plan() const {
    comm::HaloPlan p = plan_;
    for (std::size_t j = 0; j < p.neighbours.size(); ++j) {
      p.neighbours[j].send.push_back(static_cast<std::int32_t>(n_ - source_));  // offsets from x_ + source_
      p.neighbours[j].recv.push_back(static_cast<std::int32_t>(ghosts_ + j));
    }
    return p;
  }

  comm::TransportConfig transport_;
  bool wait_all_ = false, carry_ = false;
  std::optional<comm::PlanExchange> exchange_;
};

}  // namespace desync::solvers::detail
