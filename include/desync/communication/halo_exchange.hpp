#pragma once
// Halo exchange between the blocks of a Cartesian grid, one channel per neighbour: a thin layer
// over a structured comm::HaloPlan (faces only, width 1: Jacobi's 7-point stencil) carried by a
// comm::PlanExchange, which owns the channels, the modes and the statistics.
//
// Each face's channel carries the sender's boundary layer tagged with its time level (iteration).
// The consistency contract is set by the mode:
//   sync   staleness bound 0: exchange() returns only when every halo holds the neighbour's values
//          of exactly the requested time level (Bethune et al., 2011, 3.1.1).
//   async  unbounded staleness, whole messages: push() sends where a slot is free and skips
//          otherwise; pull() installs the newest whole message per face (3.1.2).
//   racy   unbounded staleness, element-wise: pull() installs the newest value of every element,
//          which may come from different sender iterations (3.1.3).
// The halo layer keeps the latest data per face, so pull()/refresh() can install it into whichever
// field buffer the solver is about to read (solvers swap two buffers every sweep).
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"

namespace desync::comm {

// HaloMode, DelayStats, ExchangeStats, PlanExchangeConfig: communication/plan_exchange.hpp.

class HaloExchange {
 public:
  /// Collective over the grid: connects one channel per neighbour (blocks until they all exist).
  /// The config's mode, transport, racy_chunks and max_delay apply (see PlanExchangeConfig).
  HaloExchange(const decomposition::CartGrid& grid, PlanExchangeConfig config);
  /// Completes all traffic and closes the channels (see close()).
  ~HaloExchange();
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// sync: sends u's boundary tagged `time_level`, waits for every neighbour's boundary of the same
  /// time level and writes it into u's halo. Collective between neighbours.
  void exchange(decomposition::Field& u, std::int64_t time_level);
  /// async/racy: sends u's boundary to every neighbour with a free slot; skips the others.
  void push(const decomposition::Field& u, std::int64_t time_level);
  /// async/racy: installs the newest data per face into u's halo and records its age relative
  /// to `own_level`.
  void pull(decomposition::Field& u, std::int64_t own_level);
  /// Installs the data last received per face into u's halo (no communication).
  void refresh(decomposition::Field& u) const;
  /// Time level of the data installed across `face` (-1: none yet or no neighbour); racy: oldest
  /// element's level.
  std::int64_t halo_level(int face) const;
  /// Drains in-flight messages and closes every channel: no request remains pending afterwards.
  /// Collective between neighbours. Idempotent.
  void close();

  /// messages_sent, messages_received, messages_discarded, sends_skipped and the ages of the halo
  /// data used by the sweeps (DelayStats), as the plan exchange counts them.
  const ExchangeStats& stats() const { return exchange_->stats(); }
  const PlanExchangeConfig& config() const { return exchange_->config(); }
  int neighbours() const { return static_cast<int>(faces_.size()); }

 private:
  std::vector<int> faces_;                  // per plan neighbour: the face it lies across
  std::unique_ptr<PlanExchange> exchange_;
};

/// Reference halo exchange: blocking MPI_Sendrecv per axis, no channels. Fills u's halo with the
/// neighbours' current boundary values. Collective over the grid. Used for the true residual and
/// by the tests as the plain synchronous reference.
void exchange_halos_blocking(const decomposition::CartGrid& grid, decomposition::Field& u);

}  // namespace desync::comm
