#pragma once
// The transport the channel and halo test programs run over, chosen per ctest entry through the
// environment (tests/CMakeLists.txt registers each suite once per transport and scheme):
//   DESYNC_TEST_TRANSPORT  p2p (default) | rma | shmem
//   DESYNC_TEST_SYNC       rma: flush | flush-local | overlap | overlap-local; shmem: put | put-overlap
// A test program that includes this header starts the transport (shmem: shmem_init and the
// symmetric arena) before its tests, through a GoogleTest environment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "desync/communication/channel.hpp"
#include "desync/communication/halo_exchange.hpp"

namespace desync_test {

inline desync::comm::Transport test_transport() {
  const char* t = std::getenv("DESYNC_TEST_TRANSPORT");
  return desync::comm::parse_transport(t ? t : "p2p", "DESYNC_TEST_TRANSPORT");
}
inline std::string test_sync() {
  const char* s = std::getenv("DESYNC_TEST_SYNC");
  return s ? s : "";
}
inline bool one_sided() { return test_transport() != desync::comm::Transport::p2p; }

/// Sets the kind and completion scheme of `t` from the environment.
inline void apply_transport(desync::comm::TransportConfig& t) {
  t.kind = test_transport();
  if (t.kind == desync::comm::Transport::rma && !test_sync().empty())
    t.rma_sync = desync::comm::parse_rma_sync(test_sync(), "DESYNC_TEST_SYNC");
  if (t.kind == desync::comm::Transport::shmem && !test_sync().empty())
    t.shmem_sync = desync::comm::parse_shmem_sync(test_sync(), "DESYNC_TEST_SYNC");
}
/// The same for the comm::TransportConfig `c.transport` of a channel, exchange or solver config.
template <class Config>
void apply_transport(Config& c) {
  apply_transport(c.transport);
}

template <class Config>
Config with_transport(Config c) {
  apply_transport(c);
  return c;
}

/// Starts the transport before the first test (collective over MPI_COMM_WORLD).
class TransportEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { desync::comm::init_transport(test_transport()); }
};

inline const bool transport_environment_registered =
    (::testing::AddGlobalTestEnvironment(new TransportEnvironment), true);

}  // namespace desync_test
