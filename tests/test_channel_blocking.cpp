// Channel::send() blocks while all R slots are unacknowledged. Two ends that both block in send()
// without calling recv() must not deadlock: channel.hpp defines acknowledged as "the receiving end
// has matched the message ... not that the application has read it", and send() keeps receiving
// while it waits "so two ends that both wait cannot deadlock" (channel.cpp).
//
// A separate program because the failure mode is a hang: ctest's timeout reports it without
// hiding the results of the other channel tests.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>

#include "desync/communication/channel.hpp"
#include "desync/communication/request_ledger.hpp"
#include "channel_transport.hpp"
#include "test_util.hpp"

using desync::comm::Channel;
using desync::comm::ChannelConfig;
using desync::comm::ChannelMode;

namespace {
class BothBlocked : public ::testing::TestWithParam<ChannelMode> {};
}  // namespace

TEST_P(BothBlocked, SendsOfBothEndsComplete) {
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  const bool paired = (rank ^ 1) < size;
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, paired ? rank / 2 : MPI_UNDEFINED, rank, &pair);
  if (!paired) GTEST_SKIP() << "no partner rank";
  int me = 0;
  MPI_Comm_rank(pair, &me);
  {
    ChannelConfig c;
    c.peer = 1 - me;
    c.message_size = 8;
    c.transport.max_in_flight = 1;
    c.mode = GetParam();
    desync_test::apply_transport(c);
    Channel ch(pair, c);
    const int messages = 4;  // R preposted slots at the peer, then R unmatched, then blocking
    for (int m = 1; m <= messages; ++m) {
      for (int e = 0; e < 8; ++e) ch.send_buffer()[e] = m * 1000.0 + e;
      ch.send(m);  // hangs here if the two ends wait for each other
    }
    EXPECT_EQ(ch.stats().messages_sent, messages);
    EXPECT_GT(ch.stats().blocked_sends, 0) << "the test did not make send() block";
    // Everything sent arrives; the newest message is delivered.
    EXPECT_TRUE(desync_test::poll_until([&] {
      ch.recv();
      return ch.time_level() == messages;
    }));
    ch.close();
  }
  MPI_Comm_free(&pair);
  EXPECT_EQ(desync::comm::RequestLedger::outstanding(), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, BothBlocked, ::testing::Values(ChannelMode::async, ChannelMode::racy),
                         [](const ::testing::TestParamInfo<ChannelMode>& info) {
                           return std::string(info.param == ChannelMode::async ? "async" : "racy");
                         });
