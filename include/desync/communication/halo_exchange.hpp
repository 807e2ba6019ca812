#pragma once
// Halo exchange between the blocks of a Cartesian grid, one channel per neighbour.
//
// Each face's channel carries the sender's boundary layer tagged with its time level (iteration).
// The consistency contract is set by the mode:
//   sync   staleness bound 0: exchange() returns only when every halo holds the neighbour's values
//          of exactly the requested time level (paper 000, 3.1.1).
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
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"

namespace desync::comm {

enum class HaloMode { sync, async, racy };
const char* to_string(HaloMode mode);

struct HaloConfig {
  HaloMode mode = HaloMode::sync;
  int max_in_flight = 1;  ///< R, messages in flight per neighbour and direction (async, racy)
  int racy_chunks = 4;    ///< racy: pieces per face message
  int tag_base = 0;       ///< channel tags used: tag_base .. tag_base + 5
  Transport transport = Transport::p2p;  ///< how the channels move data (channel.hpp)
  RmaSync rma_sync = RmaSync::flush;     ///< rma completion scheme
  ShmemSync shmem_sync = ShmemSync::put; ///< shmem completion scheme
};

/// Ages of the halo data used by the sweeps: age = own iteration - sender's time level, recorded
/// per face (racy: per piece) each time halos are installed. A negative age means the sender is
/// ahead in iteration count (the receiver is the slower rank); those count in `ahead` and in bin 0.
struct DelayStats {
  static constexpr int bins = 64;  ///< ages 0..62, the last bin counts 63 and older
  std::array<long, bins> histogram{};
  long count = 0;
  long ahead = 0;   ///< records with a negative age
  double sum = 0;   ///< signed
  std::int64_t max = 0;
  std::int64_t min = 0;
  void record(std::int64_t age);
  double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
};

struct HaloStats {
  long messages_sent = 0;
  long messages_received = 0;   ///< whole messages delivered (async/sync) or arrived (racy)
  long messages_discarded = 0;  ///< superseded before being read
  long sends_skipped = 0;       ///< async/racy: no free slot, send skipped (3.1.2)
  DelayStats delay;
};

class HaloExchange {
 public:
  /// Collective over the grid: connects one channel per neighbour (blocks until they all exist).
  HaloExchange(const decomposition::CartGrid& grid, HaloConfig config);
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

  const HaloStats& stats() const { return stats_; }
  const HaloConfig& config() const { return config_; }
  int neighbours() const { return static_cast<int>(faces_.size()); }

 private:
  void install(decomposition::Field& u, std::size_t n) const;  // latest data of channel n -> halo

  HaloConfig config_;
  std::vector<int> faces_;                         // faces with a neighbour
  std::vector<std::unique_ptr<Channel>> channels_;  // parallel to faces_
  HaloStats stats_;
  bool closed_ = false;
};

/// Reference halo exchange: blocking MPI_Sendrecv per axis, no channels. Fills u's halo with the
/// neighbours' current boundary values. Collective over the grid. Used for the true residual and
/// by the tests as the plain synchronous reference.
void exchange_halos_blocking(const decomposition::CartGrid& grid, decomposition::Field& u);

}  // namespace desync::comm
