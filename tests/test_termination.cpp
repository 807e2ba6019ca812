// Binary-tree asynchronous termination detection (communication/termination.hpp): the decision
// carries every rank's votes, arrives on every rank, and never comes before the last rank has voted,
// whichever rank is late (a leaf, an inner rank, the root). Runs over the transport chosen by the
// environment (channel_transport.hpp). Vote values are integers: the sums are exact.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>
#include <vector>

#include "channel_transport.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/communication/termination.hpp"
#include "desync/core/timer.hpp"
#include "test_util.hpp"

using desync::comm::TreeTermination;

namespace {

desync::comm::TransportConfig transport() { return desync_test::with_transport(desync::comm::ChannelConfig{}).transport; }

std::vector<double> votes_of(int r) { return {static_cast<double>(r + 1), static_cast<double>(r * r), 1.0}; }

}  // namespace

TEST(TreeTermination, DecisionHoldsEveryRanksVotes) {
  desync_test::TestComm comm;
  const int size = desync_test::world_size(), rank = desync_test::world_rank();
  const long pending_before = desync::comm::RequestLedger::outstanding();
  {
    TreeTermination t(comm, 3, transport());
    EXPECT_FALSE(t.test()) << "no decision before any vote";
    t.vote(votes_of(rank));
    EXPECT_THROW(t.vote(votes_of(rank)), std::logic_error);
    while (!t.test()) {
    }
    EXPECT_TRUE(t.decided());
    EXPECT_EQ(t.voters(), size);
    double s0 = 0, s1 = 0;
    for (int r = 0; r < size; ++r) {
      s0 += r + 1;
      s1 += r * r;
    }
    ASSERT_EQ(t.result().size(), 3u);
    EXPECT_EQ(t.result()[0], s0);
    EXPECT_EQ(t.result()[1], s1);
    EXPECT_EQ(t.result()[2], size);
    // A rank sends one report up (the root none) and the decision to each child.
    const int children = (2 * rank + 1 < size) + (2 * rank + 2 < size);
    EXPECT_EQ(t.messages_sent(), (rank > 0 ? 1 : 0) + children);
    t.close();
  }
  EXPECT_EQ(desync::comm::RequestLedger::outstanding(), pending_before) << "requests left pending";
}

// Every rank in turn is late: it votes only after 0.25 s, while the others vote at once and keep
// testing. No rank may see the decision before the late rank's vote (0.25 s after a common barrier),
// and the decision carries every rank's vote.
TEST(TreeTermination, NoDecisionBeforeTheLateRankVotes) {
  desync_test::TestComm comm;
  const int size = desync_test::world_size(), rank = desync_test::world_rank();
  const double delay = 0.25;
  for (int late = 0; late < size; ++late) {
    TreeTermination t(comm, 3, transport());
    MPI_Barrier(comm);
    const double start = desync::core::wall_time();
    // The late rank's vote, on the node's clock (the ranks share one node): core::wall_time, the steady
    // clock, is one clock for every process on a node; MPI_Wtime is not (Open MPI counts from each
    // process's own start, and a rank started 3 ms late seemed to decide before the vote it waited for).
    double vote_time = 0;
    long early_tests = 0;
    while (!t.test()) {
      if (!t.voted() && (rank != late || desync::core::wall_time() - start >= delay)) {
        if (rank == late) vote_time = desync::core::wall_time();
        t.vote(votes_of(rank));
      }
      if (!t.voted() || rank != late) ++early_tests;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const double decided_at = desync::core::wall_time();
    // (Each rank leaves the barrier at its own moment: comparing with the late rank's own vote time,
    // not with this rank's start plus the delay, keeps scheduling skew out of the check.)
    t.close();  // complete the tree's traffic before anything else communicates
    MPI_Bcast(&vote_time, 1, MPI_DOUBLE, late, comm);
    EXPECT_GE(decided_at, vote_time) << "rank " << rank << " saw the decision before rank " << late << " voted";
    EXPECT_EQ(t.voters(), size);
    EXPECT_EQ(t.result()[2], size);
    if (rank != late) {
      EXPECT_GT(early_tests, 10) << "the other ranks kept testing while waiting";
    }
  }
}

// The decision reaches a rank that never tests again after deciding at the root: close() completes
// the traffic (a one-sided completion deferred to the next call is flushed there).
TEST(TreeTermination, CloseRightAfterTheDecision) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank();
  for (int round = 0; round < 3; ++round) {
    TreeTermination t(comm, 1, transport());
    const double v = rank;
    t.vote({&v, 1});
    while (!t.test()) {
    }
    t.close();
    EXPECT_TRUE(t.decided());
  }
}
