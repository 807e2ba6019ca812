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

template <class Config>
void apply_transport(Config& c) {
  c.transport = test_transport();
  if (c.transport == desync::comm::Transport::rma && !test_sync().empty())
    c.rma_sync = desync::comm::parse_rma_sync(test_sync(), "DESYNC_TEST_SYNC");
  if (c.transport == desync::comm::Transport::shmem && !test_sync().empty())
    c.shmem_sync = desync::comm::parse_shmem_sync(test_sync(), "DESYNC_TEST_SYNC");
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
