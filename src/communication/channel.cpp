// Channel facade: configuration checks, handshake, the transport-independent semantics (newest
// message, racy pieces, wait_recv) and the dispatch to the transport backend.
#include "desync/communication/channel.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "desync/communication/request_ledger.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/waiting.hpp"
#include "transport_backend.hpp"

namespace desync::comm {
namespace {
constexpr int max_channel_tag = 4096;
// Each channel tag t owns four MPI tags: data, handshake, close counts, spare (see transport_p2p.cpp).
int handshake_tag(int t) { return 4 * t + 1; }

// A piece's header (ChannelCore::header_doubles doubles): its time level, its index, and the two
// round tags of the data (Channel::set_round_tags): the sender's version and its echo.
struct Header {
  std::int64_t time_level;
  std::int64_t chunk;
  std::int64_t version;
  std::int64_t echo;
};
static_assert(sizeof(Header) == detail::ChannelCore::header_doubles * sizeof(double));
}  // namespace

// ----------------------------------------------------------------------------------------------
// Names and parsing.

bool transport_built(Transport t) { return t != Transport::shmem || detail::shmem_built(); }

void init_transport(Transport t) {
  if (t != Transport::shmem) return;
  if (!detail::shmem_built()) throw InputError("--transport shmem: desync was built without OpenSHMEM");
  detail::shmem_start();
}

void finalize_transports() { detail::shmem_stop(); }

void finalize_transports_and_mpi() {
  finalize_transports();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// ----------------------------------------------------------------------------------------------
// ChannelCore: the semantics every transport shares.

namespace detail {

void ChannelCore::pack(double* out, std::int64_t time_level) const {
  for (std::size_t c = 0; c < pieces(); ++c) {
    const Header h{time_level, static_cast<std::int64_t>(c), out_version, out_echo};
    std::memcpy(out, &h, sizeof h);
    std::memcpy(out + header_doubles, staging.data() + chunk_begin[c], piece_size(c) * sizeof(double));
    out += piece_size(c) + header_doubles;
  }
}

void ChannelCore::pack_header(double* out, std::int64_t time_level) const {
  const Header h{time_level, 0, out_version, out_echo};
  std::memcpy(out, &h, sizeof h);
}

void ChannelCore::arrived_message(const double* packed) {
  for (std::size_t c = 0; c < pieces(); ++c) {
    arrived_piece(packed);
    packed += piece_size(c) + header_doubles;
  }
}

void ChannelCore::arrived_piece(const double* piece) {
  core::charge_deferred("halo.message", 1.0);  // simulated cluster: taking the message in (see Channel::send)
  Header h;
  std::memcpy(&h, piece, sizeof h);
  const double* payload = piece + header_doubles;
  if (config.mode == ChannelMode::racy) {
    const auto c = static_cast<std::size_t>(h.chunk);
    ++stats.pieces_arrived;
    if (h.time_level <= chunk_level[c]) {  // an older piece overtaken by a newer one
      ++stats.pieces_discarded;
    } else {
      for (std::size_t m = chunk_begin[c]; m < chunk_begin[c + 1]; ++m)
        std::atomic_ref<double>(image[m]).store(payload[m - chunk_begin[c]], std::memory_order_relaxed);
      chunk_level[c] = h.time_level;
      chunk_version[c] = h.version;
      chunk_echo[c] = h.echo;
      level = std::max(level, h.time_level);
    }
    stats.messages_arrived = stats.pieces_arrived / static_cast<long>(pieces());
    stats.messages_discarded = stats.pieces_discarded / static_cast<long>(pieces());
    return;
  }
  const std::size_t victim = take_arrival(h.time_level);
  if (victim != static_cast<std::size_t>(-1)) {
    std::memcpy(ring[victim].data.data(), &h, sizeof h);  // the header too: the tags are read on delivery
    std::memcpy(ring[victim].data.data() + header_doubles, payload, config.message_size * sizeof(double));
  }
}

std::array<std::int64_t, 2> ChannelCore::tags_in() const {
  if (config.mode == ChannelMode::racy) {  // the oldest of the pieces held
    std::array<std::int64_t, 2> t{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()};
    for (std::size_t c = 0; c < pieces(); ++c) {
      t[0] = std::min(t[0], chunk_version[c]);
      t[1] = std::min(t[1], chunk_echo[c]);
    }
    return t;
  }
  if (level < 0) return {-1, -1};
  Header h;
  std::memcpy(&h, ring[delivered].data.data(), sizeof h);
  return {h.version, h.echo};
}

void ChannelCore::arrived_in_place(std::vector<double>& packed) {
  core::charge_deferred("halo.message", 1.0);  // simulated cluster: taking the message in (see Channel::send)
  Header h;
  std::memcpy(&h, packed.data(), sizeof h);
  const std::size_t victim = take_arrival(h.time_level);
  if (victim != static_cast<std::size_t>(-1)) std::swap(ring[victim].data, packed);
}

std::size_t ChannelCore::take_arrival(std::int64_t lv) {
  constexpr auto none = static_cast<std::size_t>(-1);
  ++stats.messages_arrived;
  if (lv <= level) {  // older than what was delivered: never deliverable
    ++stats.messages_discarded;
    return none;
  }
  // The victim. Bounded mode: an entry below what the reader may still ask for (delivered level -
  // retain_behind; recv_bounded() never goes back), the newest such: it was read last, so it is
  // likely still in cache, and a reader in step with its peer cycles through retain_behind + 2
  // entries instead of T + 1. Otherwise (and in async mode) the entry, other than the receive
  // image, holding the oldest level.
  std::size_t victim = ring.size();
  if (config.mode == ChannelMode::bounded && level >= 0) {
    const std::int64_t reachable = level - config.retain_behind;
    for (std::size_t e = 0; e < ring.size(); ++e)
      if (e != delivered && ring[e].level < reachable && (victim == ring.size() || ring[e].level > ring[victim].level))
        victim = e;
  }
  if (victim == ring.size())
    for (std::size_t e = 0; e < ring.size(); ++e)
      if (e != delivered && (victim == ring.size() || ring[e].level < ring[victim].level)) victim = e;
  if (ring[victim].level >= lv) {  // older than all T retained arrivals
    ++stats.messages_discarded;
    return none;
  }
  if (ring[victim].level > level) ++stats.messages_discarded;  // undelivered, pushed out of the ring
  ring[victim].level = lv;
  newest_level = std::max(newest_level, lv);
  return victim;
}

std::size_t ChannelCore::find(std::int64_t lv) const {
  if (lv < 0) return static_cast<std::size_t>(-1);
  for (std::size_t e = 0; e < ring.size(); ++e)
    if (ring[e].level == lv) return e;
  return static_cast<std::size_t>(-1);
}

void ChannelCore::deliver(std::size_t e) {
  // Retained arrivals between the old and the new delivered level are never delivered now.
  for (std::size_t k = 0; k < ring.size(); ++k)
    if (k != e && k != delivered && ring[k].level > level && ring[k].level < ring[e].level) ++stats.messages_discarded;
  delivered = e;  // the old image stays retained (its data is intact) and becomes replaceable
  level = ring[e].level;
  ++stats.messages_delivered;
}

void ChannelCore::deliver_newest() {
  if (newest_level <= level) return;
  deliver(find(newest_level));
}

}  // namespace detail

// ----------------------------------------------------------------------------------------------
// Channel.

Channel::Channel(MPI_Comm comm, const ChannelConfig& config) : comm_(comm) {
  configure(config);
  std::vector<detail::TransportBackend*> rma;
  if (core_.config.transport.kind == Transport::rma) rma.push_back(backend_.get());
  detail::rma_assign_regions(rma);
  post_handshake();
  core::WaitScope waiting("the other end of a new channel", core_.config.peer);
  MPI_Waitall(2, control_requests_, MPI_STATUSES_IGNORE);
  RequestLedger::retired(2);
  finish_handshake();
  backend_->connect(handshake_in_[5]);
  if (!rma.empty()) detail::rma_create_window(comm_, rma);
}

Channel::Channel(MPI_Comm comm) : comm_(comm), state_(State::closed) {}

void Channel::configure(const ChannelConfig& config) {
  if (config.peer == MPI_PROC_NULL || config.peer < 0) throw InputError("channel: invalid peer rank");
  if (config.message_size == 0) throw InputError("channel: message size must be positive");
  if (config.transport.max_in_flight < 1) throw InputError("channel: max_in_flight must be >= 1");
  if (config.tag < 0 || config.tag >= max_channel_tag) throw InputError("channel: tag out of range");
  if (!transport_built(config.transport.kind))
    throw InputError("channel: transport shmem: desync was built without OpenSHMEM");
  MPI_Comm_rank(comm_, &rank_);
  send_tag_ = config.tag;
  recv_tag_ = config.recv_tag < 0 ? config.tag : config.recv_tag;
  if (recv_tag_ >= max_channel_tag) throw InputError("channel: recv_tag out of range");

  auto& c = core_;
  c.config = config;
  int chunks = 1;
  if (config.mode == ChannelMode::racy) {
    if (config.racy_chunks < 1) throw InputError("channel: racy_chunks must be >= 1");
    chunks = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(config.racy_chunks),
                                                    config.message_size));
  }
  c.config.racy_chunks = chunks;
  if (config.history < 0) throw InputError("channel: history must be >= 0 (0: automatic)");
  if (config.transport.posted_receives < 0) throw InputError("channel: posted_receives must be >= 0 (0: max_in_flight)");
  if (config.mode == ChannelMode::bounded) {
    const int L = config.max_delay;
    if (L < 0) throw InputError("channel: max_delay must be >= 0");
    if (config.history == 0) c.config.history = 2 * L + 2;
    if (c.config.history < L + 2)
      throw InputError("channel: bounded mode needs history >= max_delay + 2 (history " +
                       std::to_string(config.history) + ", max_delay " + std::to_string(L) + ")");
    if (config.retain_behind < -1)
      throw InputError("channel: retain_behind must be >= 0 (-1: max_delay)");
    c.config.retain_behind = config.retain_behind < 0 ? L : std::min(config.retain_behind, L);
    // A peer keeping the bound sends at most levels tr - L + 1 .. tr + L + 1 beyond what this end
    // took in during its last recv_bounded(tr): 2 L + 1 messages in flight (docs/channel.md).
    c.config.transport.max_in_flight = std::max(config.transport.max_in_flight, 2 * L + 1);
  } else if (config.history == 0) {
    c.config.history = 2;  // the newest and the previous arrival
  }
  const int n = static_cast<int>(config.message_size);
  c.chunk_begin.resize(static_cast<std::size_t>(chunks) + 1);
  for (int k = 0; k <= chunks; ++k)
    c.chunk_begin[static_cast<std::size_t>(k)] =
        k == chunks ? config.message_size : static_cast<std::size_t>(decomposition::block_start(n, chunks, k));
  c.chunk_level.assign(static_cast<std::size_t>(chunks), -1);
  c.chunk_version.assign(static_cast<std::size_t>(chunks), -1);
  c.chunk_echo.assign(static_cast<std::size_t>(chunks), -1);
  c.staging.assign(config.message_size, 0.0);
  if (config.mode == ChannelMode::racy) {
    c.image.assign(config.message_size, 0.0);
  } else {
    // T + 1 entries: the receive image (zeros, level -1, until the first delivery) and T arrivals.
    c.ring.assign(static_cast<std::size_t>(c.config.history) + 1,
                  {-1, std::vector<double>(config.message_size + detail::ChannelCore::header_doubles, 0.0)});
    c.delivered = 0;
  }

  if (core::simulated_build && config.transport.kind != Transport::p2p)
    throw InputError(std::string("--transport ") + to_string(config.transport.kind) +
                     " is not available on a simulated cluster: SimGrid's SMPI 3.32 does not implement "
                     "MPI_Win_sync and makes no passive-target progress (use --transport p2p)");
  switch (config.transport.kind) {
    case Transport::p2p: backend_ = detail::make_p2p_backend(core_, comm_, send_tag_, recv_tag_); break;
    case Transport::rma: backend_ = detail::make_rma_backend(core_, comm_); break;
    case Transport::shmem: backend_ = detail::make_shmem_backend(core_, comm_); break;
  }
  state_ = State::open;
}

std::array<int, 4> Channel::order_key() const {
  // (lower rank, higher rank, tag of the lower->higher traffic, tag of the higher->lower traffic):
  // both ends of one channel compute the same key.
  const int peer = core_.config.peer;
  if (rank_ < peer) return {rank_, peer, send_tag_, recv_tag_};
  return {peer, rank_, recv_tag_, send_tag_};
}

void Channel::post_handshake() {
  const auto& c = core_.config;
  handshake_out_[0] = static_cast<std::int64_t>(c.message_size);
  handshake_out_[1] = c.transport.max_in_flight;
  handshake_out_[2] = static_cast<std::int64_t>(c.mode);
  handshake_out_[3] = c.racy_chunks;
  handshake_out_[4] = static_cast<std::int64_t>(c.transport.kind);
  handshake_out_[5] = backend_->handshake_value();  // not compared
  MPI_Irecv(handshake_in_, 6, MPI_INT64_T, c.peer, handshake_tag(recv_tag_), comm_, &control_requests_[0]);
  MPI_Isend(handshake_out_, 6, MPI_INT64_T, c.peer, handshake_tag(send_tag_), comm_, &control_requests_[1]);
  RequestLedger::posted(2);
}

void Channel::finish_handshake() {
  control_requests_[0] = control_requests_[1] = MPI_REQUEST_NULL;
  if (!std::equal(handshake_in_, handshake_in_ + 5, handshake_out_)) {
    state_ = State::closed;
    throw InputError("channel to rank " + std::to_string(core_.config.peer) +
                     ": the two ends disagree on message size, max_in_flight, mode, chunks or transport");
  }
}

std::vector<std::unique_ptr<Channel>> Channel::connect(MPI_Comm comm, const std::vector<ChannelConfig>& configs) {
  std::vector<std::unique_ptr<Channel>> channels;
  channels.reserve(configs.size());
  for (const auto& c : configs) {
    channels.emplace_back(new Channel(comm));
    channels.back()->configure(c);
  }
  std::vector<detail::TransportBackend*> rma;
  for (auto& ch : channels)
    if (ch->core_.config.transport.kind == Transport::rma) rma.push_back(ch->backend_.get());
  detail::rma_assign_regions(rma);
  std::vector<MPI_Request> requests;
  for (auto& ch : channels) {
    ch->post_handshake();
    requests.push_back(ch->control_requests_[0]);
    requests.push_back(ch->control_requests_[1]);
  }
  {
    core::WaitScope waiting("the other ends of new channels (every neighbour must create its end)");
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  }
  RequestLedger::retired(static_cast<long>(requests.size()));
  for (auto& ch : channels) ch->finish_handshake();
  // Transport set-up that could block pairwise goes in increasing key order on every process: the
  // smallest pending pair always finds both ends ready, so this cannot deadlock.
  std::vector<Channel*> order;
  for (auto& ch : channels) order.push_back(ch.get());
  std::sort(order.begin(), order.end(), [](Channel* a, Channel* b) { return a->order_key() < b->order_key(); });
  for (Channel* ch : order) ch->backend_->connect(ch->handshake_in_[5]);
  if (!rma.empty()) detail::rma_create_window(comm, rma);  // collective over comm
  return channels;
}

Channel::~Channel() {
  if (state_ != State::closed) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) close();
  }
}

int Channel::in_flight() const { return backend_->in_flight(); }

bool Channel::can_send() { return backend_->can_send(); }

double* Channel::send_buffer() {
  double* slot = backend_->send_payload();
  return slot ? slot : core_.staging.data();
}

void Channel::send(std::int64_t time_level) {
  if (core_.config.mode == ChannelMode::bounded) {
    // Bounded staleness needs every level, in order (the reader consumes them one by one).
    if (core_.last_sent >= 0 && time_level != core_.last_sent + 1)
      throw InputError("channel: bounded mode sends every level in order: level " + std::to_string(time_level) +
                       " after " + std::to_string(core_.last_sent));
    if (time_level < 0) throw InputError("channel: bounded mode levels start at 0 or above");
    core_.last_sent = time_level;
  }
  backend_->send(time_level);
  // Simulated cluster: this end's work on the message (the channel's and MPI's posting and
  // completing of its requests) beyond what the link's latency holds, one charge per MPI message
  // (LogP's send overhead; the receiving end's is charged as it arrives), executed with the next
  // charged work (core::charge_deferred: one execution per message slows the simulator).
  core::charge_deferred("halo.message", static_cast<double>(core_.pieces()));
  ++core_.stats.messages_sent;
}

void Channel::progress_receiving() {
  // A receive that finds nothing new means this process is idle on the channel layer: complete
  // every deferred put (overlap schemes) now rather than at the next put, so the last message of a
  // sender that stops sending still becomes visible. Not a wait, though (an asynchronous iteration
  // receives so every pass): atomic stores already issued are flushed by this channel's next such
  // receive at the latest (receive_idle), not all of them at every one.
  const long before = core_.stats.messages_arrived + core_.stats.pieces_arrived;
  backend_->progress(false);
  if (core_.stats.messages_arrived + core_.stats.pieces_arrived == before) {
    detail::complete_all_deferred(/*flush_atomics=*/false);
    backend_->receive_idle();
  }
}

bool Channel::can_recv() {
  progress_receiving();
  return core_.config.mode == ChannelMode::racy || core_.newest_level > core_.level;
}

const double* Channel::level_data(std::int64_t level) const {
  if (core_.config.mode == ChannelMode::racy) return nullptr;
  const std::size_t e = core_.find(level);
  return e == static_cast<std::size_t>(-1) ? nullptr : core_.ring[e].payload();
}

std::int64_t Channel::recv() {
  progress_receiving();
  if (core_.config.mode != ChannelMode::racy) core_.deliver_newest();
  return core_.level;
}

std::int64_t Channel::wait_recv(std::int64_t min_level) {
  auto& c = core_;
  if (c.config.mode == ChannelMode::racy) throw InputError("channel: wait_recv() needs whole messages (not racy mode)");
  // A synchronous exchange: the peer may be waiting for what this process sent. Deferred completions
  // (overlap schemes) happen now, even if what we wait for is already here and we never block.
  detail::complete_all_deferred();
  if (c.newest_level < min_level) {
    core::WaitScope waiting("a halo message of the level it needs (synchronous exchange)", c.config.peer);
    while (c.newest_level < min_level) backend_->progress(true);
  }
  // No further progress here: it could replace the wanted level by the next one. Deliver the
  // oldest retained level >= min_level that is newer than the delivered one.
  std::size_t best = c.ring.size();
  for (std::size_t e = 0; e < c.ring.size(); ++e)
    if (e != c.delivered && c.ring[e].level >= min_level && c.ring[e].level > c.level &&
        (best == c.ring.size() || c.ring[e].level < c.ring[best].level))
      best = e;
  if (best != c.ring.size()) c.deliver(best);
  return c.level;
}

std::int64_t Channel::recv_bounded(std::int64_t own_level) {
  auto& c = core_;
  if (c.config.mode != ChannelMode::bounded) throw InputError("channel: recv_bounded() needs bounded mode");
  const std::int64_t L = c.config.max_delay;
  // Algorithm 2, lines 9-14: the time step constraint. The first T calls enforce synchrony (tc = ts)
  // so the ring fills; afterwards tc = ts - L enables asynchrony.
  const bool init = c.bounded_calls < c.config.history;
  ++c.bounded_calls;
  const std::int64_t tc = init ? own_level : own_level - L;
  // Line 11 (during init) and the late flush of line 1: a peer may wait for what we sent, so
  // deferred completions (overlap schemes) happen before anything else.
  if (init) detail::complete_all_deferred();
  // Lines 15-24: non-blocking consumption of the notifications in order: tr advances one level at a
  // time over levels that have arrived, and stops at the first missing one or at ts.
  std::int64_t tr = c.level;
  const auto advance = [&] {
    if (tr < 0) {  // nothing consumed yet: the run starts at the oldest retained arrival
      std::int64_t first = -1;
      for (std::size_t e = 0; e < c.ring.size(); ++e)
        if (c.ring[e].level >= 0 && (first < 0 || c.ring[e].level < first)) first = c.ring[e].level;
      if (first < 0 || first > own_level) return;
      tr = first;
      ++c.stats.levels_consumed;
    }
    while (tr < own_level && c.find(tr + 1) != static_cast<std::size_t>(-1)) {
      ++tr;  // line 22: tr <- tr + 1
      ++c.stats.levels_consumed;
    }
  };
  progress_receiving();
  advance();
  // Lines 25-30: block only while tc > tr.
  if (tr < tc) {
    ++c.stats.forced_waits;
    detail::complete_all_deferred();
    core::WaitScope waiting("a halo level within the delay bound L (bounded exchange)", c.config.peer);
    while (tr < tc) {
      backend_->progress(true);
      advance();
    }
  }
  if (tr > c.level) c.deliver(c.find(tr));  // lines 32-34 read the ring from here
  return c.level;
}

void Channel::begin_close() {
  if (state_ != State::open) return;
  state_ = State::closing;
  backend_->begin_close();
}

bool Channel::test_close() {
  if (state_ == State::closed) return true;
  return backend_->test_close();
}

void Channel::close() {
  Channel* self = this;
  close_all(std::span<Channel* const>(&self, 1));
}

void Channel::close_all(std::span<Channel* const> channels) {
  std::vector<Channel*> open;
  for (Channel* ch : channels)
    if (ch->state_ != State::closed) open.push_back(ch);
  for (Channel* ch : open) ch->begin_close();
  core::PollBackoff waiting;  // a simulated cluster's clock moves on while the peers catch up
  core::WaitScope closing("its neighbours to close their ends of its channels");
  for (;;) {
    bool all = true;
    for (Channel* ch : open) all = ch->test_close() && all;
    if (all) break;
    detail::complete_all_deferred();
    waiting.idle();
  }
  // Tear-down may block pairwise: the same agreed order as connect().
  std::sort(open.begin(), open.end(), [](Channel* a, Channel* b) { return a->order_key() < b->order_key(); });
  for (Channel* ch : open) {
    ch->backend_->disconnect();
    ch->state_ = State::closed;
  }
}

}  // namespace desync::comm
