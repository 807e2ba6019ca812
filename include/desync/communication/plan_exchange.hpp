#pragma once
// Plan exchange: moves the entries of a comm::HaloPlan through one comm::Channel per remote plan
// neighbour, over any transport (p2p, rma, shmem), with one of the consistency modes of Bethune et al. (2011),
// section 3.1, and in split phase so the caller can compute what needs no halo value meanwhile.
//
//   mode   sync   staleness 0: finish() returns only when every halo entry holds the neighbour's
//                 value of exactly the time level the caller asks for (3.1.1).
//          async  unbounded staleness, whole messages: start() sends where a slot is free and
//                 skips the others; finish() installs the newest whole message per neighbour (3.1.2).
//          racy   unbounded staleness, element-wise: finish() installs the newest value of every
//                 element (pieces of a message land as they arrive, read with Channel::read_racy),
//                 so a halo may mix sender time levels (3.1.3).
//   progress  none    no call between start() and finish()
//             test    the caller calls poll() at its own pace (e.g. every few hundred rows)
//             thread  a progress thread polls the channels between start() and finish(); needs
//                     MPI_THREAD_MULTIPLE (InputError otherwise). While it runs the caller must make
//                     no channel call on this process (the channel layer is not thread-safe), which
//                     the split-phase contract below already asks.
//   engine    p2p       the channels above (every mode)
//   (sync)    neighbor  one MPI_Ineighbor_alltoallv per exchange on a distributed-graph communicator
//             blocking  start() completes the exchange with MPI_Isend / MPI_Irecv / MPI_Waitall
//                       (the reference without overlap); progress does not apply
//             The transport applies to the channels only; neighbor and blocking ignore it.
//
// Neighbours that are this rank itself (a periodic dimension of one rank) are served by a local
// copy: start() packs their entries, finish() installs them; their time level is start()'s.
//
// The channels live on a communicator of their own, split from the plan's communicator over the
// ranks that have a remote neighbour (so a rank with none takes no part in the one-sided window
// of the rma transport), with the plan's tags: two exchanges never share a communicator, so their
// tags need not differ.
#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/exchange_engine.hpp"
#include "desync/communication/halo_plan.hpp"
#include "desync/communication/index_runs.hpp"
#include "desync/communication/transport_config.hpp"

namespace desync::comm {

namespace detail {
class CollectiveExchange;
}

/// Consistency of the data a pull installs (see the header comment). A bounded-staleness mode
/// (maximum delay L) goes here too: PlanExchange::pull_neighbour is its only pull path.
/// The consistency contract of the halo data a reader installs (its staleness bound):
///   sync     0: the data of exactly the reader's level
///   bounded  L (max_delay): every level is sent and kept in a ring; a pull blocks only while the
///            newest level available is more than L behind the reader's own (the weakly-synchronous
///            exchange, Algorithm 2 of Aditya et al., 2019); retained levels can be read (level_data)
///   async    unbounded, the newest whole message
///   racy     unbounded, element-wise (per piece)
enum class HaloMode { sync, async, racy, bounded };
inline constexpr core::Named<HaloMode> halo_mode_names[] = {
    {HaloMode::sync, "sync"}, {HaloMode::async, "async"}, {HaloMode::racy, "racy"}, {HaloMode::bounded, "bounded"}};
inline const char* to_string(HaloMode mode) { return core::name_of(halo_mode_names, mode); }

/// Ages of the halo data: age = own iteration - sender's time level, recorded per neighbour (racy:
/// per piece) each time halos are installed. A negative age means the sender is ahead in iteration
/// count (the receiver is the slower rank); those count in `ahead` and in bin 0.
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

struct ExchangeStats {
  long messages_sent = 0;       ///< to remote neighbours
  long messages_received = 0;   ///< whole messages delivered (sync/async) or arrived (racy)
  long messages_discarded = 0;  ///< superseded before being read
  long sends_skipped = 0;       ///< async/racy: no free slot, send skipped (3.1.2)
  DelayStats delay;
  long exchanges = 0;   ///< start() calls
  double bytes_sent = 0;
  long polls = 0;       ///< poll() passes, the progress thread's included
  /// Rounds of news, also this rank's version: every message carries its sender's version and its
  /// echo, the version of the receiver's data the sender's iterate was made from (the initial
  /// values count as version 0; the initial iterate itself, made from nothing, echoes -1). A
  /// finish() after which every remote neighbour that sends here holds data echoing this rank's
  /// current version completes a round (with no such neighbour, every finish() does). An
  /// asynchronous convergence test counts a local residual only on a new round: then the
  /// neighbours' data reacts to what this rank's iterate came from. Data a neighbour made without
  /// news from here (a fast rank re-solving against a slow rank's old values, a rank resending what
  /// it had, a rank at rest) is what the iterate was already made from, and a residual against it
  /// measures how well this rank solved for it (zero for an exact subdomain solve without overlap),
  /// not how far the iterate is from the solution.
  long rounds = 0;
};

struct PlanExchangeConfig {
  HaloMode mode = HaloMode::sync;
  /// How the channels move data; transport.max_in_flight is R, messages in flight per neighbour
  /// and direction (async, racy; sync: 1), transport.posted_receives the receives kept posted per
  /// neighbour over p2p (sync, bounded; 0: one per message in flight, bounded 2 L + 1).
  TransportConfig transport;
  /// sync only: p2p moves the exchange over the channels; neighbor and blocking over MPI requests
  /// (see ExchangeEngine), ignoring `transport`.
  ExchangeEngine engine = ExchangeEngine::p2p;
  int racy_chunks = 4;    ///< racy: pieces per message
  Progress progress = Progress::none;
  int max_delay = 0;  ///< bounded: L, the largest delay in levels a pull accepts (>= 0)
  int history = 0;    ///< bounded/async: time levels retained per neighbour (0: the channel's default)
  /// bounded: levels behind the installed one that level_data() must still return (-1: max_delay;
  /// see ChannelConfig::retain_behind). Fewer keep a neighbour's ring in cache.
  int retain_behind = -1;
  /// sync: finish() waits for every neighbour together, polling all channels until each has
  /// delivered (the MPI_Waitall variant of Yamazaki et al., 2019, section 4.1), instead of one
  /// neighbour after the other (one MPI_Wait each, their standard variant).
  bool wait_all = false;
  /// start() and finish() visit the neighbours from a different one each exchange (round robin),
  /// so that no direction is always served first (Aditya et al., 2019, section 5.2).
  bool round_robin = false;
  /// OpenMP threads for the pack and unpack loops of messages of 4096 entries or more (0 or 1: none;
  /// the hybrid runs of Aditya et al., 2019, thread them).
  int threads = 0;
};

/// Every plan exchange this process has opened so far (constructed: the channel communicator split,
/// the channels connected) and the seconds that took, for the run record's set-up figures
/// (exchange_opens, exchange_open_seconds). Opening costs more than a few iterations of a small
/// problem (2 ranks of this machine: 15-110 us for the communicator split alone, the first in a
/// process the dearest), and a solver opens one per phase and per true-residual check.
struct ExchangeOpenStats {
  long opens = 0;
  double seconds = 0;
};
ExchangeOpenStats exchange_open_stats();

class PlanExchange {
 public:
  /// Collective over `comm` (the plan's peers are ranks of it): checks the plan and the config on
  /// every rank (InputError on all ranks alike if any is wrong), splits the channel communicator
  /// and connects one channel per remote neighbour (blocks until the peers' ends exist).
  PlanExchange(MPI_Comm comm, HaloPlan plan, PlanExchangeConfig config);
  /// Finishes a started exchange (sync), stops the progress thread, closes the channels.
  ~PlanExchange();
  PlanExchange(const PlanExchange&) = delete;
  PlanExchange& operator=(const PlanExchange&) = delete;

  /// Split phase, first half: packs x[send offsets] per neighbour and sends it tagged
  /// `time_level`. sync and bounded: to every neighbour (blocks while a channel has no free slot;
  /// bounded: time levels must be consecutive); async/racy:
  /// where a slot is free, skipping the others (counted in sends_skipped).
  /// Contract: between start() and finish() the caller may read anything and write anything but
  /// the destination entries of the plan (x's send entries may change: they were copied); it must
  /// make no other call on this exchange than poll(). If finish() is never called, the destructor
  /// (or close()) completes the traffic; nothing stays pending.
  void start(const double* x, std::int64_t time_level);
  /// Progress::test: one progress pass over the channels still awaited. True once every
  /// neighbour's message for this exchange has arrived (sync), or something new arrived from each
  /// (async); racy: always true. Progress::thread: false (the thread owns the channels).
  bool poll();
  /// One progress pass over every channel of this exchange, outside any start()/finish() pair:
  /// takes in what has arrived (delivering nothing) and completes this end's deferred sends. The
  /// overlap completion schemes announce a put at the next call on its channel, or when this
  /// process finds nothing new on some channel; an exchange that sends rarely (the sums and
  /// corrections of a tree) calls this on the passes after a send, and in every round of a loop
  /// that waits for its peers, so that its last message never waits for a next one that may not
  /// come. No effect with engines neighbor and blocking, with the progress thread running, or
  /// after close().
  void progress();
  /// Split phase, second half: takes the neighbours' data and writes it to dest[recv offsets]
  /// (dest may be x itself, as for a field with its halo). sync: waits for time level `own_level`
  /// from every neighbour (the level given to start() by every rank); async: the newest whole
  /// message per neighbour, where one arrived; racy: the newest value of every element; bounded:
  /// consumes the levels that arrived in order and blocks only while a neighbour's newest level is
  /// more than max_delay behind own_level (during the first `history` exchanges, while it is behind
  /// at all), then installs the newest level held, at most own_level. Records
  /// each installed neighbour's age own_level - level in the delay statistics. With dest null it
  /// takes the data without writing it anywhere: the caller installs per neighbour (install_neighbour)
  /// or builds its own halo values from level_data (an asynchrony-tolerant stencil), in one pass.
  void finish(double* dest, std::int64_t own_level);
  /// Writes the data last taken per neighbour into dest (no communication); entries of a
  /// neighbour that never delivered anything are left alone.
  void install(double* dest) const;
  /// The same for neighbour n alone.
  void install_neighbour(std::size_t n, double* dest) const;
  /// Time level of the data held for neighbour n (-1: nothing yet); racy: its oldest piece.
  std::int64_t time_level(std::size_t n) const;
  /// async/bounded: neighbour n's data of a retained time level, in the order of its receive
  /// offsets (nullptr if that level is not held, or n is a local neighbour); bounded mode keeps the
  /// levels from the installed one - retain_behind up, so a solver can combine several (e.g. an
  /// asynchrony-tolerant stencil).
  const double* level_data(std::size_t n, std::int64_t level) const;
  /// Neighbour n's receive offsets as runs (what install_neighbour copies by), for a solver that
  /// writes computed halo values itself.
  const IndexRuns& recv_runs(std::size_t n) const { return recv_runs_[n]; }
  /// bounded: pulls that had to block for the bound, summed over the neighbours.
  long forced_waits() const;
  /// Neighbour n's channel statistics (nullptr for a local neighbour): per-neighbour counts such as
  /// forced_waits and levels_consumed.
  const ChannelStats* channel_stats(std::size_t n) const;
  /// Completes all traffic and closes every channel: no request remains pending. Collective
  /// between neighbours. Idempotent. Afterwards only the accessors may be called.
  void close();

  const HaloPlan& plan() const { return plan_; }
  const PlanExchangeConfig& config() const { return config_; }
  const ExchangeStats& stats() const { return stats_; }
  void reset_stats() { stats_ = ExchangeStats{}; }
  /// Distinct remote peers.
  int neighbours() const { return plan_.remote_peers(); }

 private:
  bool progress_pass();         // one poll over the awaited channels; true when all arrived
  void pull_neighbour(std::size_t n, std::int64_t own_level);  // the pull path, per mode
  void hand_back();             // stop the progress thread's run, take the channels back
  void thread_main();

  HaloPlan plan_;
  PlanExchangeConfig config_;
  std::unique_ptr<detail::CollectiveExchange> collective_;  // engines neighbor and blocking
  MPI_Comm comm_ = MPI_COMM_NULL;               // channel communicator (owned), null if no channels
  std::vector<std::unique_ptr<Channel>> channels_;  // per neighbour; null for local ones
  std::vector<IndexRuns> send_runs_, recv_runs_;  // per neighbour: plan offsets as runs (pack, unpack)
  std::vector<std::size_t> local_source_;       // local neighbour n installs loopback_[local_source_[n]]
  std::vector<std::vector<double>> loopback_;   // local neighbours: the values packed by start()
  std::vector<std::int64_t> loopback_level_;
  std::vector<char> awaited_;                   // this exchange still waits for neighbour n
  // ExchangeStats::rounds: per neighbour, the version of its data the last finish() installed.
  std::vector<std::int64_t> used_version_;
  std::int64_t started_level_ = -1;
  std::int64_t collective_level_ = -1;  // engines neighbor and blocking: the level last received
  std::size_t rotation_ = 0;  // round_robin: the neighbour the current exchange visits first
  bool started_ = false;
  bool closed_ = false;
  ExchangeStats stats_;
  std::atomic<int> phase_{0};                   // progress thread: idle, run, stop, quit
  std::thread thread_;
};

/// Throws InputError if the MPI library does not provide MPI_THREAD_MULTIPLE (MPI_Query_thread);
/// `what` names the feature that needs it in the message.
void require_thread_multiple(const char* what);

}  // namespace desync::comm
