#include "desync/communication/plan_exchange.hpp"

#include "collective_exchange.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "desync/core/waiting.hpp"

namespace desync::comm {

namespace {

enum Phase : int { idle = 0, run = 1, stop = 2, quit = 3 };

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

constexpr int max_channel_tag = 4096;  // Channel: 0 <= tag < 4096
static_assert(max_plan_tag <= max_channel_tag, "a plan's tags are its channels' tags");

}  // namespace

void DelayStats::record(std::int64_t age) {
  min = count == 0 ? age : std::min(min, age);
  max = count == 0 ? age : std::max(max, age);
  ++count;
  sum += static_cast<double>(age);
  if (age < 0) ++ahead;
  ++histogram[static_cast<std::size_t>(std::clamp<std::int64_t>(age, 0, bins - 1))];
}

void require_thread_multiple(const char* what) {
  if (core::simulated_build)
    throw InputError(std::string(what) + " is not available on a simulated cluster: SMPI's ranks are threads of "
                     "one simulator, and a second thread of a rank cannot call MPI");
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw InputError(std::string(what) + " needs MPI_THREAD_MULTIPLE, but MPI was initialised with " +
                     thread_level_name(provided));
}

namespace {
ExchangeOpenStats open_stats;  // this process's (a simulated rank's: globals are privatised)
}  // namespace

ExchangeOpenStats exchange_open_stats() { return open_stats; }

PlanExchange::PlanExchange(MPI_Comm comm, HaloPlan plan, PlanExchangeConfig config)
    : plan_(std::move(plan)), config_(config) {
  const core::Stopwatch opening;
  if (config_.mode == HaloMode::sync) config_.transport.max_in_flight = 1;
  if (config_.engine == ExchangeEngine::blocking) config_.progress = Progress::none;  // nothing is left to progress
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  std::string problem = plan_.rank == rank ? plan_.check(size) : "halo plan: made for another rank";
  if (problem.empty() && config_.engine != ExchangeEngine::p2p && config_.mode != HaloMode::sync)
    problem = std::string("plan exchange: engine ") + to_string(config_.engine) + " needs mode sync";
  if (problem.empty() && core::simulated_build && config_.engine == ExchangeEngine::neighbor)
    problem = "--engine neighbor is not available on a simulated cluster: SimGrid's SMPI 3.32 has no "
              "neighbourhood collectives or distributed-graph communicators (use --engine p2p)";
  if (problem.empty() && config_.transport.max_in_flight < 1) problem = "plan exchange: max_in_flight must be >= 1";
  if (problem.empty() && config_.mode == HaloMode::bounded && config_.max_delay < 0)
    problem = "bounded exchange: the maximum delay L must be >= 0 (got " + std::to_string(config_.max_delay) + ")";
  if (problem.empty() && config_.mode == HaloMode::bounded && config_.history != 0 &&
      config_.history < config_.max_delay + 2)
    problem = "bounded exchange: " + std::to_string(config_.history) + " retained levels are fewer than L + 2 = " +
              std::to_string(config_.max_delay + 2);
  if (problem.empty() && config_.transport.posted_receives < 0) problem = "plan exchange: posted_receives must be >= 0";
  if (problem.empty() && config_.mode == HaloMode::bounded && config_.retain_behind < -1)
    problem = "bounded exchange: retain_behind must be >= 0 (-1: L)";
  if (problem.empty() && config_.mode == HaloMode::racy && config_.racy_chunks < 1)
    problem = "plan exchange: racy_chunks must be >= 1";
  if (problem.empty() && config_.engine == ExchangeEngine::p2p && !transport_built(config_.transport.kind))
    problem = "--transport shmem: desync was built without OpenSHMEM";
  if (problem.empty() && config_.progress == Progress::thread) {
    try {
      require_thread_multiple("--progress thread (a progress thread polling the channels)");
    } catch (const InputError& e) {
      problem = e.what();
    }
  }
  agree_or_throw(comm, problem.empty(), problem);

  const std::size_t count = plan_.neighbours.size();
  channels_.resize(count);
  local_source_.assign(count, 0);
  loopback_.resize(count);
  loopback_level_.assign(count, -1);
  awaited_.assign(count, 0);
  used_version_.assign(count, -1);  // nothing read yet: the first messages (the initial iterate) echo -1
  send_runs_.reserve(count);
  recv_runs_.reserve(count);
  for (const auto& nb : plan_.neighbours) {
    send_runs_.emplace_back(nb.send);
    recv_runs_.emplace_back(nb.recv);
  }

  // Local neighbours: neighbour n installs what its partner m (m's send_tag == n's recv_tag) packed.
  bool remote = false;
  for (std::size_t n = 0; n < count; ++n) {
    const auto& nb = plan_.neighbours[n];
    if (!plan_.is_local(n)) {
      remote = true;
      continue;
    }
    loopback_[n].assign(nb.send.size(), 0.0);
    for (std::size_t m = 0; m < count; ++m)
      if (plan_.is_local(m) && plan_.neighbours[m].send_tag == nb.recv_tag) local_source_[n] = m;
  }

  if (config_.engine != ExchangeEngine::p2p) {
    collective_ = std::make_unique<detail::CollectiveExchange>(comm, plan_, config_.engine);
    remote = false;  // no channels, no channel communicator
  } else {
    // The channel communicator: the ranks with a remote neighbour, in the order of `comm`.
    MPI_Comm_split(comm, remote ? 0 : MPI_UNDEFINED, plan_.rank, &comm_);
  }
  if (remote) {
    MPI_Group from, to;
    MPI_Comm_group(comm, &from);
    MPI_Comm_group(comm_, &to);
    std::vector<ChannelConfig> configs;
    std::vector<std::size_t> which;
    for (std::size_t n = 0; n < count; ++n) {
      if (plan_.is_local(n)) continue;
      const auto& nb = plan_.neighbours[n];
      ChannelConfig c;
      MPI_Group_translate_ranks(from, 1, &nb.peer, to, &c.peer);
      // Both directions carry messages of one size (Channel): the larger of the two lists. The
      // peer computes the same (its send list is our receive list and vice versa).
      c.message_size = std::max<std::size_t>({nb.send.size(), nb.recv.size(), 1});
      c.transport = config_.transport;
      c.mode = config_.mode == HaloMode::racy      ? ChannelMode::racy
               : config_.mode == HaloMode::bounded ? ChannelMode::bounded
                                                   : ChannelMode::async;
      c.max_delay = config_.mode == HaloMode::bounded ? config_.max_delay : 0;
      c.sender_bounded = config_.mode == HaloMode::sync || config_.mode == HaloMode::bounded;
      c.history = config_.history;  // 0: the channel's default (2; bounded: 2 L + 2)
      c.retain_behind = config_.retain_behind;
      c.racy_chunks = config_.racy_chunks;
      c.tag = nb.send_tag;
      c.recv_tag = nb.recv_tag;
      configs.push_back(c);
      which.push_back(n);
    }
    MPI_Group_free(&from);
    MPI_Group_free(&to);
    auto connected = Channel::connect(comm_, configs);
    for (std::size_t q = 0; q < which.size(); ++q) channels_[which[q]] = std::move(connected[q]);
  }
  if (config_.progress == Progress::thread) thread_ = std::thread([this] { thread_main(); });
  // Simulated cluster: the host's time to open an exchange (MPI's communicator split and request
  // set-up, the channels' buffers), which SMPI does not charge; calibrate.py measures it.
  core::charge("halo.open", 1.0);
  ++open_stats.opens;
  open_stats.seconds += opening.seconds();
}

PlanExchange::~PlanExchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) close();
  if (thread_.joinable()) {
    phase_.store(quit, std::memory_order_release);
    phase_.notify_all();
    thread_.join();
  }
}

void PlanExchange::close() {
  if (closed_) return;
  hand_back();
  // A started synchronous exchange is completed first: the peers wait for our part of it.
  if (collective_) collective_->wait();
  if (started_ && config_.mode == HaloMode::sync) {
    for (std::size_t n = 0; n < channels_.size(); ++n)
      if (channels_[n] && awaited_[n]) channels_[n]->wait_recv(started_level_);
  }
  started_ = false;
  std::vector<Channel*> all;
  for (auto& ch : channels_)
    if (ch) all.push_back(ch.get());
  Channel::close_all(all);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  closed_ = true;
}

void PlanExchange::start(const double* x, std::int64_t time_level) {
  hand_back();
  if (collective_) collective_->wait();  // a previous exchange never finished (its data is dropped)
  if (started_ && config_.mode == HaloMode::sync) {
    // A previous synchronous exchange never finished: complete it (its data is dropped).
    for (std::size_t n = 0; n < channels_.size(); ++n)
      if (channels_[n] && awaited_[n]) channels_[n]->wait_recv(started_level_);
  }
  ++stats_.exchanges;
  started_ = true;
  started_level_ = time_level;
  const std::size_t count = plan_.neighbours.size();
  rotation_ = config_.round_robin && count > 0 ? static_cast<std::size_t>(stats_.exchanges) % count : 0;
  for (std::size_t visit = 0; visit < count; ++visit) {
    const std::size_t n = (visit + rotation_) % count;
    const auto& nb = plan_.neighbours[n];
    const std::size_t m = nb.send.size();
    if (plan_.is_local(n)) {
      send_runs_[n].gather(x, loopback_[n].data(), config_.threads);
      core::charge("halo.element", static_cast<double>(m));
      loopback_level_[n] = time_level;
      continue;
    }
    if (collective_) continue;  // packed and posted below, in one go
    awaited_[n] = nb.recv.empty() ? 0 : 1;
    if (m == 0) continue;  // the peer expects nothing from here
    Channel& ch = *channels_[n];
    // Bounded mode sends every level (its receivers keep them in order); the channel's in-flight
    // allowance (>= 2 L + 1) makes that block only when a peer is more than L levels behind.
    if ((config_.mode == HaloMode::async || config_.mode == HaloMode::racy) && !ch.can_send()) {
      ++stats_.sends_skipped;
      continue;
    }
    // Round tags: this rank's version, and the version of n's data the iterate was made from (to a
    // neighbour that sends nothing here, any: the data never depended on it).
    ch.set_round_tags(stats_.rounds, nb.recv.empty() ? std::numeric_limits<std::int64_t>::max() : used_version_[n]);
    send_runs_[n].gather(x, ch.send_buffer(), config_.threads);  // the pack, threaded for large messages
    core::charge("halo.element", static_cast<double>(m));  // simulated cluster: the pack's cost
    ch.send(time_level);
    ++stats_.messages_sent;
    stats_.bytes_sent += static_cast<double>(m * sizeof(double));
  }
  if (collective_) collective_->start(x, stats_);
  if (config_.progress == Progress::thread) {
    phase_.store(run, std::memory_order_release);
    phase_.notify_all();
  }
}

bool PlanExchange::progress_pass() {
  ++stats_.polls;
  if (collective_) return collective_->test();
  bool all = true;
  for (std::size_t n = 0; n < channels_.size(); ++n) {
    if (!channels_[n] || !awaited_[n]) continue;
    // can_recv() takes in what has arrived (and completes deferred puts); in sync mode a message
    // newer than the delivered one is this exchange's.
    if (channels_[n]->can_recv() && config_.mode != HaloMode::racy)
      awaited_[n] = config_.mode == HaloMode::sync ? 2 : 0;  // sync: arrived, still to be delivered
    if (awaited_[n] == 1 && config_.mode != HaloMode::racy) all = false;
  }
  return all;
}

bool PlanExchange::poll() {
  if (config_.progress == Progress::thread || closed_) return false;
  return progress_pass();
}

void PlanExchange::progress() {
  if (collective_ || closed_ || phase_.load(std::memory_order_acquire) != idle) return;
  // can_recv() completes this channel's deferred sends (next_call), and every deferred send of this
  // process when nothing new arrived on it (a send-only channel: always).
  for (auto& ch : channels_)
    if (ch) ch->can_recv();
}

void PlanExchange::hand_back() {
  if (config_.progress != Progress::thread || phase_.load(std::memory_order_acquire) == idle) return;
  phase_.store(stop, std::memory_order_release);
  phase_.notify_all();
  for (int p = phase_.load(std::memory_order_acquire); p != idle; p = phase_.load(std::memory_order_acquire))
    phase_.wait(p, std::memory_order_acquire);
}

void PlanExchange::thread_main() {
  for (;;) {
    phase_.wait(idle, std::memory_order_acquire);
    const int p = phase_.load(std::memory_order_acquire);
    if (p == quit) return;
    if (p == run) {
      bool done = false;
      while (!done && phase_.load(std::memory_order_acquire) == run) {
        done = progress_pass();
        if (!done) std::this_thread::yield();
      }
      // Complete: sleep until the caller asks for the channels back.
      if (done) phase_.wait(run, std::memory_order_acquire);
    }
    // stop: hand the channels back to the caller.
    phase_.store(idle, std::memory_order_release);
    phase_.notify_all();
  }
}

// The pull path: takes neighbour n's data for a caller at time level own_level and records its age.
void PlanExchange::pull_neighbour(std::size_t n, std::int64_t own_level) {
  Channel& ch = *channels_[n];
  switch (config_.mode) {
    case HaloMode::sync:
      if (!awaited_[n]) {
        // Nothing comes from this peer, but what we sent it may still wait for its completion
        // (overlap schemes): a progress call that finds nothing new completes it.
        ch.can_recv();
        return;
      }
      stats_.delay.record(own_level - ch.wait_recv(own_level));
      ++stats_.messages_received;
      awaited_[n] = 0;
      return;
    case HaloMode::async: {
      const long before = ch.stats().messages_delivered;
      ch.recv();
      stats_.messages_received += ch.stats().messages_delivered - before;
      if (!plan_.neighbours[n].recv.empty() && ch.time_level() >= 0) stats_.delay.record(own_level - ch.time_level());
      return;
    }
    case HaloMode::bounded: {
      if (plan_.neighbours[n].recv.empty()) {
        ch.can_recv();  // nothing comes from this peer; complete what we sent (overlap schemes)
        return;
      }
      // Algorithm 2, lines 9-31: consume arrived levels in order, wait only while tr < own - L.
      const long before = ch.stats().levels_consumed;
      const std::int64_t level = ch.recv_bounded(own_level);
      stats_.messages_received += ch.stats().levels_consumed - before;
      stats_.delay.record(own_level - level);
      return;
    }
    case HaloMode::racy:
      ch.recv();
      if (plan_.neighbours[n].recv.empty()) return;
      for (int c = 0; c < ch.chunks(); ++c)
        if (ch.chunk_level(c) >= 0) stats_.delay.record(own_level - ch.chunk_level(c));
      return;
  }
}

void PlanExchange::finish(double* dest, std::int64_t own_level) {
  hand_back();
  if (collective_ && started_) {
    collective_->wait();
    collective_level_ = started_level_;
  }
  if (config_.mode == HaloMode::sync && config_.wait_all && started_) {
    core::WaitScope waiting("every neighbour's halo message of the level it needs (synchronous exchange, wait-all)");
    while (!progress_pass()) {  // every neighbour at once, in the order they arrive
    }
  }
  const std::size_t count = plan_.neighbours.size();
  for (std::size_t visit = 0; visit < count; ++visit) {
    const std::size_t n = (visit + rotation_) % count;
    if (plan_.is_local(n)) {
      const std::int64_t level = loopback_level_[local_source_[n]];
      if (level >= 0) stats_.delay.record(own_level - level);
    } else if (collective_) {
      if (!plan_.neighbours[n].recv.empty()) stats_.delay.record(0);  // the level of this exchange
    } else {
      pull_neighbour(n, own_level);
      // The version of n's data the next update reads (ExchangeStats::rounds); its initial
      // values, before any message, count as version 0.
      if (!plan_.neighbours[n].recv.empty()) used_version_[n] = std::max<std::int64_t>(channels_[n]->tag_version(), 0);
    }
    if (dest) install_neighbour(n, dest);
  }
  started_ = false;
  long discarded = 0, arrived = 0;
  for (const auto& ch : channels_) {
    if (!ch) continue;
    discarded += ch->stats().messages_discarded;
    arrived += ch->stats().messages_arrived;
  }
  stats_.messages_discarded = discarded;
  if (config_.mode == HaloMode::racy) stats_.messages_received = arrived;
  // A round: every neighbour that sends here has sent data made from this rank's current version.
  bool all = true;
  for (std::size_t n = 0; n < channels_.size() && all; ++n)
    if (channels_[n] && !plan_.neighbours[n].recv.empty()) all = channels_[n]->tag_echo() >= stats_.rounds;
  if (all) ++stats_.rounds;
}

void PlanExchange::install_neighbour(std::size_t n, double* dest) const {
  const auto& nb = plan_.neighbours[n];
  const std::int32_t* idx = nb.recv.data();
  const std::size_t m = nb.recv.size();
  if (m == 0) return;
  if (plan_.is_local(n)) {
    const std::size_t src = local_source_[n];
    if (loopback_level_[src] < 0) return;
    recv_runs_[n].scatter(loopback_[src].data(), dest, config_.threads);
    core::charge("halo.element", static_cast<double>(m));
    return;
  }
  if (collective_) {
    if (collective_level_ < 0) return;  // nothing received yet: keep what dest holds
    recv_runs_[n].scatter(collective_->received(n), dest, config_.threads);
    core::charge("halo.element", static_cast<double>(m));  // simulated cluster: the unpack's cost
    return;
  }
  const Channel& ch = *channels_[n];
  if (config_.mode != HaloMode::racy) {
    if (ch.time_level() < 0) return;  // nothing received yet: keep what dest holds
    recv_runs_[n].scatter(ch.recv_buffer(), dest, config_.threads);
    core::charge("halo.element", static_cast<double>(m));  // simulated cluster: the unpack's cost
    return;
  }
  int c = 0;
  for (std::size_t e = 0; e < m; ++e) {
    while (e >= ch.chunk_end(c)) ++c;
    if (ch.chunk_level(c) >= 0) dest[idx[e]] = ch.read_racy(e);
  }
}

void PlanExchange::install(double* dest) const {
  for (std::size_t n = 0; n < plan_.neighbours.size(); ++n) install_neighbour(n, dest);
}

const double* PlanExchange::level_data(std::size_t n, std::int64_t level) const {
  if (plan_.is_local(n) || !channels_[n] || config_.mode == HaloMode::racy) return nullptr;
  return channels_[n]->level_data(level);
}

const ChannelStats* PlanExchange::channel_stats(std::size_t n) const {
  if (plan_.is_local(n) || !channels_[n]) return nullptr;
  return &channels_[n]->stats();
}

long PlanExchange::forced_waits() const {
  long waits = 0;
  for (const auto& ch : channels_)
    if (ch) waits += ch->stats().forced_waits;
  return waits;
}

std::int64_t PlanExchange::time_level(std::size_t n) const {
  if (plan_.is_local(n)) return loopback_level_[local_source_[n]];
  if (collective_) return collective_level_;
  const Channel& ch = *channels_[n];
  if (config_.mode != HaloMode::racy) return ch.time_level();
  std::int64_t oldest = std::numeric_limits<std::int64_t>::max();
  for (int c = 0; c < ch.chunks(); ++c) oldest = std::min(oldest, ch.chunk_level(c));
  return oldest;
}

}  // namespace desync::comm
