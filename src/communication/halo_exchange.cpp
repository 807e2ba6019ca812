#include "desync/communication/halo_exchange.hpp"

#include <algorithm>
#include <limits>

namespace desync::comm {

using decomposition::Field;
using decomposition::num_faces;
using decomposition::opposite_face;

const char* to_string(HaloMode mode) {
  switch (mode) {
    case HaloMode::sync: return "sync";
    case HaloMode::async: return "async";
    case HaloMode::racy: return "racy";
  }
  return "?";
}

void DelayStats::record(std::int64_t age) {
  min = count == 0 ? age : std::min(min, age);
  max = count == 0 ? age : std::max(max, age);
  ++count;
  sum += static_cast<double>(age);
  if (age < 0) ++ahead;
  ++histogram[static_cast<std::size_t>(std::clamp<std::int64_t>(age, 0, bins - 1))];
}

HaloExchange::HaloExchange(const decomposition::CartGrid& grid, HaloConfig config)
    : config_(config) {
  if (config_.mode == HaloMode::sync) config_.max_in_flight = 1;
  const Field shape(grid.local());
  std::vector<ChannelConfig> configs;
  for (int f = 0; f < num_faces; ++f) {
    if (grid.on_global_boundary(f)) continue;
    ChannelConfig c;
    c.peer = grid.neighbour(f);
    c.message_size = shape.face_size(f);
    c.max_in_flight = config_.max_in_flight;
    c.mode = config_.mode == HaloMode::racy ? ChannelMode::racy : ChannelMode::async;
    c.racy_chunks = config_.racy_chunks;
    c.transport = config_.transport;
    c.rma_sync = config_.rma_sync;
    c.shmem_sync = config_.shmem_sync;
    // Traffic leaving through face f is received through the peer's opposite face.
    c.tag = config_.tag_base + f;
    c.recv_tag = config_.tag_base + opposite_face(f);
    configs.push_back(c);
    faces_.push_back(f);
  }
  channels_ = Channel::connect(grid.comm(), configs);
}

HaloExchange::~HaloExchange() { close(); }

void HaloExchange::close() {
  if (closed_) return;
  std::vector<Channel*> all;
  for (auto& ch : channels_) all.push_back(ch.get());
  Channel::close_all(all);
  closed_ = true;
}

void HaloExchange::exchange(Field& u, std::int64_t time_level) {
  for (std::size_t n = 0; n < faces_.size(); ++n) {
    Channel& ch = *channels_[n];
    u.pack_boundary(faces_[n], ch.send_buffer());
    ch.send(time_level);
    ++stats_.messages_sent;
  }
  for (std::size_t n = 0; n < faces_.size(); ++n) {
    Channel& ch = *channels_[n];
    const int face = faces_[n];
    stats_.delay.record(time_level - ch.wait_recv(time_level));
    u.unpack_halo(face, ch.recv_buffer());
    ++stats_.messages_received;
  }
}

void HaloExchange::push(const Field& u, std::int64_t time_level) {
  for (std::size_t n = 0; n < faces_.size(); ++n) {
    Channel& ch = *channels_[n];
    if (!ch.can_send()) {
      ++stats_.sends_skipped;
      continue;
    }
    u.pack_boundary(faces_[n], ch.send_buffer());
    ch.send(time_level);
    ++stats_.messages_sent;
  }
}

void HaloExchange::pull(Field& u, std::int64_t own_level) {
  for (std::size_t n = 0; n < faces_.size(); ++n) {
    Channel& ch = *channels_[n];
    if (config_.mode == HaloMode::racy) {
      ch.recv();
      for (int c = 0; c < ch.chunks(); ++c)
        if (ch.chunk_level(c) >= 0) stats_.delay.record(own_level - ch.chunk_level(c));
    } else {
      const long before = ch.stats().messages_delivered;
      ch.recv();
      stats_.messages_received += ch.stats().messages_delivered - before;
      if (ch.time_level() >= 0) stats_.delay.record(own_level - ch.time_level());
    }
    install(u, n);
  }
  long discarded = 0, arrived = 0;
  for (auto& ch : channels_) {
    discarded += ch->stats().messages_discarded;
    arrived += ch->stats().messages_arrived;
  }
  stats_.messages_discarded = discarded;
  if (config_.mode == HaloMode::racy) stats_.messages_received = arrived;
}

void HaloExchange::install(Field& u, std::size_t n) const {
  const Channel& ch = *channels_[n];
  const int face = faces_[n];
  if (config_.mode != HaloMode::racy) {
    // Nothing received yet: keep the halo the field was initialised with.
    if (ch.time_level() >= 0) u.unpack_halo(face, ch.recv_buffer());
    return;
  }
  double* d = u.data();
  int c = 0;
  u.for_each_halo(face, [&](std::size_t m, std::size_t idx) {
    while (m >= ch.chunk_end(c)) ++c;
    if (ch.chunk_level(c) >= 0) d[idx] = ch.read_racy(m);
  });
}

void HaloExchange::refresh(Field& u) const {
  for (std::size_t n = 0; n < faces_.size(); ++n) install(u, n);
}

std::int64_t HaloExchange::halo_level(int face) const {
  for (std::size_t n = 0; n < faces_.size(); ++n) {
    if (faces_[n] != face) continue;
    const Channel& ch = *channels_[n];
    if (config_.mode != HaloMode::racy) return ch.time_level();
    std::int64_t oldest = std::numeric_limits<std::int64_t>::max();
    for (int c = 0; c < ch.chunks(); ++c) oldest = std::min(oldest, ch.chunk_level(c));
    return oldest;
  }
  return -1;
}

void exchange_halos_blocking(const decomposition::CartGrid& grid, Field& u) {
  constexpr int tag = 30000;
  for (int axis = 0; axis < 3; ++axis) {
    for (int dir = 0; dir < 2; ++dir) {
      // Send through face f, receive through the opposite face.
      const int send_face = 2 * axis + dir;
      const int recv_face = opposite_face(send_face);
      const std::size_t n = u.face_size(send_face);
      std::vector<double> out(n), in(n);
      u.pack_boundary(send_face, out.data());
      MPI_Sendrecv(out.data(), static_cast<int>(n), MPI_DOUBLE, grid.neighbour(send_face), tag + send_face,
                   in.data(), static_cast<int>(n), MPI_DOUBLE, grid.neighbour(recv_face), tag + send_face,
                   grid.comm(), MPI_STATUS_IGNORE);
      if (!grid.on_global_boundary(recv_face)) u.unpack_halo(recv_face, in.data());
    }
  }
}

}  // namespace desync::comm
