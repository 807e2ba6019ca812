#include "desync/communication/channel.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "desync/communication/request_ledger.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/run/error.hpp"

namespace desync::comm {
namespace {
constexpr int max_channel_tag = 4096;
// Each channel tag t owns four MPI tags: data, handshake, close counts, spare.
int data_tag(int t) { return 4 * t; }
int handshake_tag(int t) { return 4 * t + 1; }
int close_tag(int t) { return 4 * t + 2; }
constexpr std::size_t npos = static_cast<std::size_t>(-1);
}  // namespace

Channel::Channel(MPI_Comm comm, const ChannelConfig& config) : Channel(comm, config, true) {
  post_handshake();
  MPI_Waitall(2, control_requests_, MPI_STATUSES_IGNORE);
  RequestLedger::retired(2);
  finish_handshake();
}

Channel::Channel(MPI_Comm comm, const ChannelConfig& config, bool) : comm_(comm), config_(config) {
  if (config.peer == MPI_PROC_NULL || config.peer < 0) throw InputError("channel: invalid peer rank");
  if (config.message_size == 0) throw InputError("channel: message size must be positive");
  if (config.max_in_flight < 1) throw InputError("channel: max_in_flight must be >= 1");
  if (config.tag < 0 || config.tag >= max_channel_tag) throw InputError("channel: tag out of range");
  send_tag_ = config.tag;
  recv_tag_ = config.recv_tag < 0 ? config.tag : config.recv_tag;
  if (recv_tag_ >= max_channel_tag) throw InputError("channel: recv_tag out of range");

  int chunks = 1;
  if (config.mode == ChannelMode::racy) {
    if (config.racy_chunks < 1) throw InputError("channel: racy_chunks must be >= 1");
    chunks = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(config.racy_chunks),
                                                    config.message_size));
  }
  config_.racy_chunks = chunks;
  pieces_per_message_ = static_cast<std::size_t>(chunks);
  const int n = static_cast<int>(config.message_size);
  chunk_begin_.resize(pieces_per_message_ + 1);
  for (int c = 0; c <= chunks; ++c)
    chunk_begin_[static_cast<std::size_t>(c)] =
        c == chunks ? config.message_size : static_cast<std::size_t>(decomposition::block_start(n, chunks, c));
  chunk_level_.assign(pieces_per_message_, -1);

  staging_.assign(config.message_size, 0.0);
  image_.assign(config.message_size, 0.0);
  const auto R = static_cast<std::size_t>(config.max_in_flight);
  send_slots_.assign(R, std::vector<double>(config.message_size + header_doubles * pieces_per_message_));
  send_requests_.assign(R * pieces_per_message_, MPI_REQUEST_NULL);
  recv_slots_.assign(R * pieces_per_message_, std::vector<double>(piece_capacity()));
  recv_requests_.assign(recv_slots_.size(), MPI_REQUEST_NULL);
  newest_.assign(config.message_size, 0.0);
  previous_.assign(config.message_size, 0.0);
  completed_indices_.resize(std::max(recv_requests_.size(), send_requests_.size()));
}

std::size_t Channel::piece_capacity() const {
  std::size_t largest = 0;
  for (std::size_t c = 0; c < pieces_per_message_; ++c)
    largest = std::max(largest, chunk_begin_[c + 1] - chunk_begin_[c]);
  return largest + header_doubles;
}

void Channel::post_handshake() {
  handshake_out_[0] = static_cast<std::int64_t>(config_.message_size);
  handshake_out_[1] = config_.max_in_flight;
  handshake_out_[2] = config_.mode == ChannelMode::racy ? 1 : 0;
  handshake_out_[3] = config_.racy_chunks;
  MPI_Irecv(handshake_in_, 4, MPI_INT64_T, config_.peer, handshake_tag(recv_tag_), comm_, &control_requests_[0]);
  MPI_Isend(handshake_out_, 4, MPI_INT64_T, config_.peer, handshake_tag(send_tag_), comm_, &control_requests_[1]);
  RequestLedger::posted(2);
}

void Channel::finish_handshake() {
  control_requests_[0] = control_requests_[1] = MPI_REQUEST_NULL;
  if (!std::equal(std::begin(handshake_in_), std::end(handshake_in_), std::begin(handshake_out_))) {
    state_ = State::closed;
    throw InputError("channel to rank " + std::to_string(config_.peer) +
                     ": the two ends disagree on message size, max_in_flight, mode or chunks");
  }
  for (std::size_t s = 0; s < recv_slots_.size(); ++s) post_receive(s);
}

std::vector<std::unique_ptr<Channel>> Channel::connect(MPI_Comm comm, const std::vector<ChannelConfig>& configs) {
  std::vector<std::unique_ptr<Channel>> channels;
  channels.reserve(configs.size());
  for (const auto& c : configs) channels.emplace_back(new Channel(comm, c, true));
  std::vector<MPI_Request> requests;
  for (auto& ch : channels) {
    ch->post_handshake();
    requests.push_back(ch->control_requests_[0]);
    requests.push_back(ch->control_requests_[1]);
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  RequestLedger::retired(static_cast<long>(requests.size()));
  for (auto& ch : channels) ch->finish_handshake();
  return channels;
}

Channel::~Channel() {
  if (state_ != State::closed) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) close();
  }
}

void Channel::post_receive(std::size_t slot) {
  MPI_Irecv(recv_slots_[slot].data(), static_cast<int>(piece_capacity()), MPI_DOUBLE, config_.peer,
            data_tag(recv_tag_), comm_, &recv_requests_[slot]);
  RequestLedger::posted();
}

void Channel::progress_sends() {
  int count = 0;
  MPI_Testsome(static_cast<int>(send_requests_.size()), send_requests_.data(), &count,
               completed_indices_.data(), MPI_STATUSES_IGNORE);
  if (count != MPI_UNDEFINED && count > 0) RequestLedger::retired(count);
}

void Channel::apply_piece(const double* slot) {
  Header h;
  std::memcpy(&h, slot, sizeof h);
  const auto c = static_cast<std::size_t>(h.chunk);
  ++stats_.pieces_arrived;
  if (h.time_level <= chunk_level_[c]) {  // an older piece overtaken by a newer one
    ++stats_.pieces_discarded;
    return;
  }
  const double* payload = slot + header_doubles;
  for (std::size_t m = chunk_begin_[c]; m < chunk_begin_[c + 1]; ++m)
    std::atomic_ref<double>(image_[m]).store(payload[m - chunk_begin_[c]], std::memory_order_relaxed);
  chunk_level_[c] = h.time_level;
  level_ = std::max(level_, h.time_level);
}

void Channel::keep_if_newest(const double* slot) {
  Header h;
  std::memcpy(&h, slot, sizeof h);
  ++stats_.messages_arrived;
  const double* payload = slot + header_doubles;
  const std::size_t bytes = config_.message_size * sizeof(double);
  if (h.time_level > newest_level_) {
    if (previous_level_ > level_) ++stats_.messages_discarded;  // undelivered, now third newest
    previous_.swap(newest_);
    previous_level_ = newest_level_;
    std::memcpy(newest_.data(), payload, bytes);
    newest_level_ = h.time_level;
  } else if (h.time_level > previous_level_ && h.time_level > level_) {  // arrived out of order
    if (previous_level_ > level_) ++stats_.messages_discarded;
    std::memcpy(previous_.data(), payload, bytes);
    previous_level_ = h.time_level;
  } else {
    ++stats_.messages_discarded;  // older than what is held or delivered
  }
}

void Channel::progress_receives(bool block) {
  int count = 0;
  if (block)
    MPI_Waitsome(static_cast<int>(recv_requests_.size()), recv_requests_.data(), &count,
                 completed_indices_.data(), MPI_STATUSES_IGNORE);
  else
    MPI_Testsome(static_cast<int>(recv_requests_.size()), recv_requests_.data(), &count,
                 completed_indices_.data(), MPI_STATUSES_IGNORE);
  if (count == MPI_UNDEFINED || count == 0) return;
  RequestLedger::retired(count);
  pieces_received_ += count;
  for (int n = 0; n < count; ++n) {
    const auto s = static_cast<std::size_t>(completed_indices_[static_cast<std::size_t>(n)]);
    if (state_ != State::open) continue;  // draining: drop, the reposting policy is test_close's
    if (config_.mode == ChannelMode::racy) {
      apply_piece(recv_slots_[s].data());
    } else {
      keep_if_newest(recv_slots_[s].data());
    }
    post_receive(s);
  }
  if (config_.mode == ChannelMode::racy) {
    stats_.messages_arrived = stats_.pieces_arrived / static_cast<long>(pieces_per_message_);
    stats_.messages_discarded = stats_.pieces_discarded / static_cast<long>(pieces_per_message_);
  }
}

std::size_t Channel::free_send_slot() const {
  for (std::size_t s = 0; s < send_slots_.size(); ++s) {
    bool free = true;
    for (std::size_t p = 0; p < pieces_per_message_ && free; ++p)
      free = send_requests_[s * pieces_per_message_ + p] == MPI_REQUEST_NULL;
    if (free) return s;
  }
  return npos;
}

int Channel::in_flight() const {
  int busy = 0;
  for (std::size_t s = 0; s < send_slots_.size(); ++s) {
    bool any = false;
    for (std::size_t p = 0; p < pieces_per_message_; ++p)
      any = any || send_requests_[s * pieces_per_message_ + p] != MPI_REQUEST_NULL;
    busy += any ? 1 : 0;
  }
  return busy;
}

bool Channel::can_send() {
  progress_sends();
  return free_send_slot() != npos;
}

void Channel::send(std::int64_t time_level) {
  progress_sends();
  std::size_t slot = free_send_slot();
  if (slot == npos) {
    ++stats_.blocked_sends;
    while (slot == npos) {
      // Keep receiving while blocked so two ends that both wait cannot deadlock.
      progress_receives(false);
      int index = 0;
      MPI_Waitany(static_cast<int>(send_requests_.size()), send_requests_.data(), &index, MPI_STATUS_IGNORE);
      if (index != MPI_UNDEFINED) RequestLedger::retired();
      slot = free_send_slot();
    }
  }
  double* out = send_slots_[slot].data();
  for (std::size_t c = 0; c < pieces_per_message_; ++c) {
    Header h{time_level, static_cast<std::int64_t>(c)};
    const std::size_t len = chunk_begin_[c + 1] - chunk_begin_[c];
    std::memcpy(out, &h, sizeof h);
    std::memcpy(out + header_doubles, staging_.data() + chunk_begin_[c], len * sizeof(double));
    MPI_Issend(out, static_cast<int>(len + header_doubles), MPI_DOUBLE, config_.peer, data_tag(send_tag_), comm_,
               &send_requests_[slot * pieces_per_message_ + c]);
    RequestLedger::posted();
    out += len + header_doubles;
  }
  ++stats_.messages_sent;
  pieces_sent_ += static_cast<long>(pieces_per_message_);
}

bool Channel::can_recv() {
  progress_receives(false);
  return config_.mode == ChannelMode::racy || newest_level_ > level_;
}

std::int64_t Channel::recv() {
  progress_receives(false);
  if (config_.mode == ChannelMode::async) deliver_newest();
  return level_;
}

void Channel::deliver_newest() {
  if (newest_level_ <= level_) return;
  if (previous_level_ > level_) ++stats_.messages_discarded;  // superseded, never delivered
  image_.swap(newest_);  // newest_ now holds stale data, but newest_level_ == level_ marks it read
  level_ = newest_level_;
  ++stats_.messages_delivered;
}

std::int64_t Channel::wait_recv(std::int64_t min_level) {
  while (newest_level_ < min_level) {
    progress_receives(true);
    progress_sends();
  }
  // No further progress here: it could replace the wanted level by the next one.
  if (previous_level_ >= min_level && previous_level_ > level_) {
    image_.swap(previous_);  // deliver the older one; the newest stays held for the next call
    level_ = previous_level_;
    ++stats_.messages_delivered;
    return level_;
  }
  deliver_newest();
  return level_;
}

void Channel::begin_close() {
  if (state_ != State::open) return;
  state_ = State::closing;
  // Messages that arrived but were never delivered are part of pieces_received_ already.
  close_out_ = pieces_sent_;
  MPI_Irecv(&close_in_, 1, MPI_INT64_T, config_.peer, close_tag(recv_tag_), comm_, &control_requests_[0]);
  MPI_Isend(&close_out_, 1, MPI_INT64_T, config_.peer, close_tag(send_tag_), comm_, &control_requests_[1]);
  RequestLedger::posted(2);
}

bool Channel::test_close() {
  if (state_ == State::closed) return true;
  progress_sends();
  test_request(control_requests_[1]);
  const bool know_peer = test_request(control_requests_[0]);
  progress_receives(false);
  if (!know_peer) return false;
  // Every piece the peer sent must be received; posted receives beyond that are never matched and
  // are cancelled. Receives match in posting order, so counting completions is enough.
  if (pieces_received_ < close_in_) {
    long pending = 0;
    for (auto r : recv_requests_) pending += r != MPI_REQUEST_NULL ? 1 : 0;
    for (std::size_t s = 0; s < recv_requests_.size() && pieces_received_ + pending < close_in_; ++s) {
      if (recv_requests_[s] == MPI_REQUEST_NULL) {
        post_receive(s);
        ++pending;
      }
    }
    return false;
  }
  for (auto& r : recv_requests_)
    if (r != MPI_REQUEST_NULL && !cancel_request(r)) ++pieces_received_;  // matched after all
  for (auto r : send_requests_)
    if (r != MPI_REQUEST_NULL) return false;
  if (control_requests_[1] != MPI_REQUEST_NULL) return false;
  state_ = State::closed;
  return true;
}

void Channel::close() {
  Channel* self = this;
  close_all(std::span<Channel* const>(&self, 1));
}

void Channel::close_all(std::span<Channel* const> channels) {
  for (Channel* ch : channels) ch->begin_close();
  for (;;) {
    bool all = true;
    for (Channel* ch : channels) all = ch->test_close() && all;
    if (all) return;
  }
}

}  // namespace desync::comm
