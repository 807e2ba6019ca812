#pragma once
// How halo and interface messages travel: the transport, its completion scheme and the messages
// kept in flight. One TransportConfig is embedded in every configuration that opens channels
// (ChannelConfig, PlanExchangeConfig, linalg::SpmvConfig) and in every solver's options; the
// command line fills it with one group of options (src/run/option_parsing.hpp).
#include <string>

#include "desync/core/names.hpp"

namespace desync::comm {

/// How messages travel (see channel.hpp and docs/channel.md).
enum class Transport { p2p, rma, shmem };
inline constexpr core::Named<Transport> transport_names[] = {
    {Transport::p2p, "p2p", "MPI two-sided"},
    {Transport::rma, "rma", "MPI one-sided, passive target"},
    {Transport::shmem, "shmem", "OpenSHMEM"},
};

/// rma: when a put is completed and its arrival notified.
///   flush          MPI_Win_flush right after the put, then the notification: visible when send() returns.
///   flush_local    MPI_Win_flush_local right after the put (the send slot is free at once); the
///                  remote flush and the notification follow at the next call on this channel.
///   overlap        the put only; flush and notification just before the next put on this channel
///                  (its next can_send() or send()), or as soon as this process is idle in the
///                  channel layer (waits, or finds nothing new to receive).
///   overlap_local  the put only; flush and notification at the next call on this channel.
enum class RmaSync { flush, flush_local, overlap, overlap_local };
inline constexpr core::Named<RmaSync> rma_sync_names[] = {
    {RmaSync::flush, "flush"},
    {RmaSync::flush_local, "flush-local"},
    {RmaSync::overlap, "overlap"},
    {RmaSync::overlap_local, "overlap-local"},
};

/// shmem: put = shmem_fence and flag right after the data put; put_overlap = just before the next
/// put on this channel (or as soon as this process blocks in the channel layer).
enum class ShmemSync { put, put_overlap };
inline constexpr core::Named<ShmemSync> shmem_sync_names[] = {
    {ShmemSync::put, "put"},
    {ShmemSync::put_overlap, "put-overlap"},
};

inline const char* to_string(Transport t) { return core::name_of(transport_names, t); }
inline const char* to_string(RmaSync s) { return core::name_of(rma_sync_names, s); }
inline const char* to_string(ShmemSync s) { return core::name_of(shmem_sync_names, s); }
/// The command-line spellings; desync::InputError naming `option` on anything else.
inline Transport parse_transport(const std::string& text, const std::string& option = "--transport") {
  return core::parse_named(transport_names, text, option, "transport");
}
inline RmaSync parse_rma_sync(const std::string& text, const std::string& option = "--rma-sync") {
  return core::parse_named(rma_sync_names, text, option, "scheme");
}
inline ShmemSync parse_shmem_sync(const std::string& text, const std::string& option = "--shmem-sync") {
  return core::parse_named(shmem_sync_names, text, option, "scheme");
}

/// The transport settings of a channel, an exchange or a solver.
struct TransportConfig {
  Transport kind = Transport::p2p;
  RmaSync rma_sync = RmaSync::flush;      ///< rma only; each end of a channel may choose its own
  ShmemSync shmem_sync = ShmemSync::put;  ///< shmem only; each end may choose its own
  /// R: unacknowledged messages allowed per neighbour and direction (>= 1; async, racy; a
  /// synchronous exchange keeps one, a bounded one at least 2 L + 1).
  int max_in_flight = 1;
  /// p2p with a reader that takes every message in order (synchronous and bounded exchanges):
  /// receives kept posted per neighbour (0: one per message in flight). Ignored elsewhere.
  int posted_receives = 0;
};

/// The transport with its completion scheme, as summaries show it: "p2p", "rma (flush)".
inline std::string describe(const TransportConfig& t) {
  std::string text = to_string(t.kind);
  if (t.kind == Transport::rma) text += std::string(" (") + to_string(t.rma_sync) + ")";
  if (t.kind == Transport::shmem) text += std::string(" (") + to_string(t.shmem_sync) + ")";
  return text;
}

}  // namespace desync::comm
