// Global sums: blocking allreduce, MPI_Iallreduce and the asynchronous binary tree. Values are
// integer-valued doubles, so the sum is exact whatever the order of additions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <stdexcept>
#include <vector>

#include "desync/communication/reduction.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/communication/sparse_alltoall.hpp"
#include "desync/core/error.hpp"
#include "test_util.hpp"

using desync::comm::make_reduction;
using desync::comm::NonblockingReduction;
using desync::comm::ReductionKind;
using desync::comm::RequestLedger;

namespace {

constexpr int count = 4;

/// Rank r's contribution in round k.
std::vector<double> contribution(int r, int k) {
  return {static_cast<double>(r + 1 + k), static_cast<double>((r * 7 + k) % 5), 1e6 * r - 3.0 * k,
          static_cast<double>(k % 2 ? -r : r * r)};
}

std::vector<double> expected_sum(int size, int k) {
  std::vector<double> s(count, 0.0);
  for (int r = 0; r < size; ++r) {
    auto c = contribution(r, k);
    for (int i = 0; i < count; ++i) s[static_cast<std::size_t>(i)] += c[static_cast<std::size_t>(i)];
  }
  return s;
}

/// Spins for about `micro` microseconds (ranks reach test() at different times).
void busy(int micro) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micro);
  while (std::chrono::steady_clock::now() < until) {
  }
}

class Reduction : public ::testing::TestWithParam<ReductionKind> {};

}  // namespace

TEST_P(Reduction, ConsecutiveRoundsGiveExactSumOnEveryRank) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  const int rounds = 25;
  {
    auto red = make_reduction(GetParam(), comm, count);
    ASSERT_NE(red, nullptr);
    EXPECT_STREQ(red->name(), desync::comm::to_string(GetParam()));
    EXPECT_FALSE(red->active());
    EXPECT_FALSE(red->test()) << "test() with nothing started";
    EXPECT_EQ(red->completed(), 0);
    std::vector<double> all_results;
    for (int k = 0; k < rounds; ++k) {
      red->start(contribution(rank, k));
      EXPECT_TRUE(red->active());
      long tests = 0;
      const bool done = desync_test::poll_until([&] {
        ++tests;
        busy(((rank + k) % 3) * 50);  // "compute" between tests, unevenly over ranks
        return red->test();
      });
      ASSERT_TRUE(done) << "round " << k << " did not complete";
      EXPECT_FALSE(red->active());
      EXPECT_EQ(red->completed(), k + 1);
      const auto want = expected_sum(size, k);
      ASSERT_EQ(red->result().size(), static_cast<std::size_t>(count));
      for (int i = 0; i < count; ++i)
        EXPECT_EQ(red->result()[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)])
            << "round " << k << " entry " << i;
      all_results.insert(all_results.end(), red->result().begin(), red->result().end());
    }
    // Identical on every rank (bitwise): compare with rank 0's.
    std::vector<double> root = all_results;
    MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_DOUBLE, 0, comm);
    EXPECT_EQ(root, all_results);
    red->finish();
    EXPECT_EQ(RequestLedger::outstanding(), 0) << "after finish()";
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

// Rounds started immediately, with no work between the tests; the destructor finishes.
TEST_P(Reduction, BackToBackRoundsAndDestructorFinishes) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  {
    auto red = make_reduction(GetParam(), comm, count);
    for (int k = 0; k < 100; ++k) {
      red->start(contribution(rank, k));
      ASSERT_TRUE(desync_test::poll_until([&] { return red->test(); })) << "round " << k;
      const auto want = expected_sum(size, k);
      for (int i = 0; i < count; ++i)
        EXPECT_EQ(red->result()[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)]) << "round " << k;
    }
    EXPECT_EQ(red->completed(), 100);
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

// The input is copied by start(): changing the caller's vector afterwards does not change the sum.
TEST_P(Reduction, StartCopiesItsInput) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  auto red = make_reduction(GetParam(), comm, count);
  std::vector<double> v = contribution(rank, 3);
  red->start(v);
  std::fill(v.begin(), v.end(), -12345.0);
  ASSERT_TRUE(desync_test::poll_until([&] { return red->test(); }));
  const auto want = expected_sum(size, 3);
  for (int i = 0; i < count; ++i) EXPECT_EQ(red->result()[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)]);
  red->finish();
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

// wait() blocks until the sum is there (the tree and recursive doubling wait on each message they
// need), after none, some or many test() calls that differ between ranks; the sums stay exact.
TEST_P(Reduction, WaitCompletesAfterAnyNumberOfTests) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  {
    auto red = make_reduction(GetParam(), comm, count);
    red->wait();  // nothing in flight: returns at once
    EXPECT_EQ(red->completed(), 0);
    for (int k = 0; k < 30; ++k) {
      red->start(contribution(rank, k));
      for (int t = 0; t < (rank + k) % 4; ++t) {
        busy(20);
        if (red->test()) break;
      }
      red->wait();
      EXPECT_FALSE(red->active());
      EXPECT_EQ(red->completed(), k + 1);
      const auto want = expected_sum(size, k);
      for (int i = 0; i < count; ++i)
        EXPECT_EQ(red->result()[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)]) << "round " << k;
    }
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Reduction, ::testing::Values(ReductionKind::iallreduce, ReductionKind::tree,
                                                                      ReductionKind::doubling),
                         [](const ::testing::TestParamInfo<ReductionKind>& info) {
                           return std::string(desync::comm::to_string(info.param));
                         });

TEST(Reduction, TwoReductionsInterleaved) {
  // The solver's tree and iallreduce never share traffic: both on the same communicator at once.
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  auto a = make_reduction(ReductionKind::tree, comm, count);
  auto b = make_reduction(ReductionKind::iallreduce, comm, count);
  for (int k = 0; k < 10; ++k) {
    a->start(contribution(rank, k));
    b->start(contribution(rank, k + 1));
    bool da = false, db = false;
    ASSERT_TRUE(desync_test::poll_until([&] {
      da = da || a->test();
      db = db || b->test();
      return da && db;
    }));
    const auto wa = expected_sum(size, k), wb = expected_sum(size, k + 1);
    for (int i = 0; i < count; ++i) {
      EXPECT_EQ(a->result()[static_cast<std::size_t>(i)], wa[static_cast<std::size_t>(i)]);
      EXPECT_EQ(b->result()[static_cast<std::size_t>(i)], wb[static_cast<std::size_t>(i)]);
    }
  }
  a->finish();
  b->finish();
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

TEST(Reduction, BlockingAllreduceSum) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  auto v = contribution(rank, 7);
  desync::comm::allreduce_sum(comm, v);
  EXPECT_EQ(v, expected_sum(size, 7));
}

TEST(Reduction, ParseAndNames) {
  EXPECT_EQ(desync::comm::parse_reduction("iallreduce"), ReductionKind::iallreduce);
  EXPECT_EQ(desync::comm::parse_reduction("tree"), ReductionKind::tree);
  EXPECT_THROW(desync::comm::parse_reduction("bogus"), desync::InputError);
  EXPECT_THROW(desync::comm::parse_reduction(""), desync::InputError);
  EXPECT_THROW(desync::comm::parse_reduction("Tree"), desync::InputError);
  // blocking is in --reduction's vocabulary but is no non-blocking reduction: refused, the others named.
  try {
    desync::comm::parse_reduction("blocking");
    ADD_FAILURE() << "blocking taken";
  } catch (const desync::InputError& e) {
    EXPECT_STREQ(e.what(), "--reduction 'blocking': not taken here (expected iallreduce, tree or doubling)");
  }
  EXPECT_THROW(desync::comm::make_reduction(ReductionKind::blocking, MPI_COMM_SELF, 1), std::logic_error);
  EXPECT_STREQ(desync::comm::to_string(ReductionKind::tree), "tree");
  EXPECT_STREQ(desync::comm::to_string(ReductionKind::iallreduce), "iallreduce");
  EXPECT_EQ(desync::comm::parse_reduction("doubling"), ReductionKind::doubling);
  EXPECT_STREQ(desync::comm::to_string(ReductionKind::doubling), "doubling");
}

TEST(Reduction, ExclusivePrefixSum) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank();
  // Rank r contributes 10 r + 3: the ranks below r sum to 10 r (r - 1) / 2 + 3 r; rank 0 gets 0.
  const std::int64_t got = desync::comm::exclusive_prefix_sum(comm, 10 * rank + 3);
  EXPECT_EQ(got, static_cast<std::int64_t>(10 * rank * (rank - 1) / 2 + 3 * rank));
  EXPECT_EQ(desync::comm::exclusive_prefix_sum(comm, 0), 0);
}

// The set-up exchanges (communication/sparse_alltoall.hpp, comm::exclusive_prefix_sums) against
// the MPI collectives they stand for: every rank sends to a few others (some blocks zero, some
// ranks nobody), values distinct per (sender, receiver, entry), so a misplaced block shows.
namespace {

std::int64_t block_value(int from, int to, int j) {
  // nonzero for the pairs to = from + 1 and from + 3 (mod P), and to = from for j = 0; else 0
  return 1000 * (from + 1) + 10 * (to + 1) + j;
}

bool sends(int from, int to, int size) {
  return to == (from + 1) % size || to == (from + 3) % size || to == from;
}

}  // namespace

TEST(SparseAlltoall, EqualsMpiAlltoallForOneAndSeveralValuesPerRank) {
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  for (const int k : {1, 3}) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(size * k), 0), got(out.size(), -1), want(out.size(), -1);
    for (int q = 0; q < size; ++q)
      for (int j = 0; j < k; ++j)
        if (sends(rank, q, size) && (q != rank || j == 0))
          out[static_cast<std::size_t>(q * k + j)] = block_value(rank, q, j);
    desync::comm::sparse_alltoall(out.data(), got.data(), MPI_COMM_WORLD, k);
    MPI_Alltoall(out.data(), k, MPI_INT64_T, want.data(), k, MPI_INT64_T, MPI_COMM_WORLD);
    EXPECT_EQ(got, want) << k << " values per rank";
    std::vector<int> small(static_cast<std::size_t>(size * k)), small_got(small.size(), -1), small_want(small.size());
    for (std::size_t e = 0; e < small.size(); ++e) small[e] = static_cast<int>(out[e]);
    desync::comm::sparse_alltoall(small.data(), small_got.data(), MPI_COMM_WORLD, k);
    MPI_Alltoall(small.data(), k, MPI_INT, small_want.data(), k, MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(small_got, small_want);
  }
}

TEST(SparseAlltoall, VEqualsMpiAlltoallv) {
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  const auto P = static_cast<std::size_t>(size);
  // rank r sends q (r + q) % 4 values when it sends to q at all: sometimes none
  std::vector<int> send_n(P, 0), recv_n(P, 0), send_d(P, 0), recv_d(P, 0);
  for (int q = 0; q < size; ++q) {
    if (sends(rank, q, size)) send_n[static_cast<std::size_t>(q)] = (rank + q) % 4;
    if (sends(q, rank, size)) recv_n[static_cast<std::size_t>(q)] = (rank + q) % 4;
  }
  for (std::size_t q = 1; q < P; ++q) {
    send_d[q] = send_d[q - 1] + send_n[q - 1];
    recv_d[q] = recv_d[q - 1] + recv_n[q - 1];
  }
  std::vector<double> out;
  for (int q = 0; q < size; ++q)
    for (int j = 0; j < send_n[static_cast<std::size_t>(q)]; ++j) out.push_back(0.5 * static_cast<double>(block_value(rank, q, j)));
  const auto total = static_cast<std::size_t>(recv_d[P - 1] + recv_n[P - 1]);
  std::vector<double> got(total, -1.0), want(total, -1.0);
  desync::comm::sparse_alltoallv(out.data(), send_n.data(), send_d.data(), MPI_DOUBLE, got.data(), recv_n.data(),
                                 recv_d.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Alltoallv(out.data(), send_n.data(), send_d.data(), MPI_DOUBLE, want.data(), recv_n.data(), recv_d.data(),
                MPI_DOUBLE, MPI_COMM_WORLD);
  EXPECT_EQ(got, want);
}

TEST(ExclusivePrefixSums, EqualMpiExscan) {
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  std::vector<std::int64_t> mine(5);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = (rank + 1) * 100 + static_cast<std::int64_t>(i * i) - 7 * rank;
  const std::vector<std::int64_t> got = desync::comm::exclusive_prefix_sums(MPI_COMM_WORLD, mine);
  std::vector<std::int64_t> want(mine.size(), 0);
  MPI_Exscan(mine.data(), want.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::fill(want.begin(), want.end(), 0);  // undefined there
  EXPECT_EQ(got, want);
  (void)size;
}
