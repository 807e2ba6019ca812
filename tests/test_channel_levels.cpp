// comm::Channel time levels: the ring of retained levels (level_data, newest_level), bounded
// staleness (recv_bounded, max_delay L; the weakly-synchronous exchange, Algorithm 2, lines 9-31),
// L = 0 against the synchronous exchange, and a stress test of the notified puts under the one-sided
// transports. ctest runs it once per transport and completion scheme (channel_transport.hpp).
//
// Message contents encode their level: element m of the message sent at level L by pair rank r is
// pattern(r, L, m), so every value read can be traced back to the message it came from.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"
#include "channel_pair.hpp"
#include "channel_transport.hpp"
#include "test_util.hpp"

using desync::InputError;
using namespace desync::comm;
using desync_test::poll_until;

namespace {

double pattern(int sender, std::int64_t level, std::size_t m) {
  return static_cast<double>(sender + 1) * 1e9 + static_cast<double>(level) * 1e5 + static_cast<double>(m % 100000);
}

void fill(Channel& ch, int sender, std::int64_t level) {
  for (std::size_t m = 0; m < ch.config().message_size; ++m) ch.send_buffer()[m] = pattern(sender, level, m);
}

/// "" if data holds exactly the message `sender` sent at `level`.
std::string check(const double* data, std::size_t n, int sender, std::int64_t level) {
  if (!data) return "level " + std::to_string(level) + " not retained";
  for (std::size_t m = 0; m < n; ++m)
    if (data[m] != pattern(sender, level, m))
      return "level " + std::to_string(level) + " element " + std::to_string(m) + " is " + std::to_string(data[m]) +
             ", want " + std::to_string(pattern(sender, level, m));
  return "";
}

using desync_test::Pair;  // channel_pair.hpp

ChannelConfig config(int peer, std::size_t size, int inflight, ChannelMode mode, int history = 0, int max_delay = 0) {
  ChannelConfig c = desync_test::pair_config(peer, size, inflight, mode, 11);
  c.history = history;
  c.max_delay = max_delay;
  return c;
}

}  // namespace

// The ring: rank 0 sends levels 0..N; rank 1 only takes arrivals in (can_recv() delivers nothing)
// until all N + 1 have arrived. It then retains exactly the T newest levels, each with its own data,
// and nothing older. After recv() delivers N, the delivered level stays readable.
TEST(ChannelLevels, RingRetainsTheNewestTLevelsExactly) {
  Pair pair;
  if (!pair.active()) GTEST_SKIP() << "no partner rank";
  const int T = 5, R = 3;
  const std::int64_t N = 40;
  const std::size_t n = 23;
  {
    Channel ch(pair.comm(), config(pair.peer(), n, R, ChannelMode::async, T));
    EXPECT_EQ(ch.history(), T);
    EXPECT_EQ(ch.newest_level(), -1);
    EXPECT_EQ(ch.level_data(0), nullptr);
    if (pair.me() == 0) {
      std::int64_t sent = 0;
      EXPECT_TRUE(poll_until([&] {
        if (ch.can_send()) {
          fill(ch, 0, sent);
          ch.send(sent++);
        }
        return sent == N + 1;
      }));
      EXPECT_TRUE(poll_until([&] { return ch.can_send() && ch.in_flight() == 0; }));
    } else {
      std::string problem;
      EXPECT_TRUE(poll_until([&] {
        ch.can_recv();
        // While streaming: every retained level holds exactly its data.
        for (std::int64_t lv = std::max<std::int64_t>(0, ch.newest_level() - T + 1); lv <= ch.newest_level(); ++lv)
          if (const double* d = ch.level_data(lv); d && problem.empty()) problem = check(d, n, 0, lv);
        return ch.stats().messages_arrived == N + 1;
      })) << "arrived: " << ch.stats().messages_arrived;
      EXPECT_EQ(problem, "");
      EXPECT_EQ(ch.newest_level(), N);
      EXPECT_EQ(ch.time_level(), -1) << "can_recv() must not deliver";
      for (std::int64_t lv = 0; lv <= N; ++lv) {
        if (lv > N - T)
          EXPECT_EQ(check(ch.level_data(lv), n, 0, lv), "");
        else
          EXPECT_EQ(ch.level_data(lv), nullptr) << "level " << lv << " should no longer be retained";
      }
      EXPECT_EQ(ch.level_data(N + 1), nullptr);
      EXPECT_EQ(ch.level_data(-1), nullptr);
      EXPECT_EQ(ch.recv(), N);
      EXPECT_EQ(check(ch.recv_buffer(), n, 0, N), "");
      EXPECT_EQ(ch.recv_buffer(), ch.level_data(N)) << "the receive image is the retained level";
      for (std::int64_t lv = N - T + 1; lv <= N; ++lv) EXPECT_EQ(check(ch.level_data(lv), n, 0, lv), "");
    }
    pair.barrier();
    ch.close();
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

// Bounded mode: both ends send every level and call recv_bounded(own). Rank 1 sleeps once, after the
// synchronous start, for long enough that rank 0 must run into the bound. Every step: the returned
// level tr satisfies own - L <= tr <= own (tr == own during the first T steps), recv_buffer() holds
// level tr's data, levels tr - L .. tr are retained with their data, and a forced wait happens only
// if the newest level available just before the call was below the constraint. Rank 0 is forced to
// wait while rank 1 sleeps. Closing leaves no request pending. The second parameter, when not 0,
// is ChannelConfig::posted_receives with standard sends (sender_bounded, as the PDE stepper's
// exchange): over p2p fewer receives than messages in flight, the later ones waiting in MPI's queue.
namespace {
class Bounded : public ::testing::TestWithParam<std::pair<int, int>> {};
}  // namespace

TEST_P(Bounded, ReaderNeverMoreThanLBehindAndWaitsOnlyWhenNeeded) {
  const int L = GetParam().first;
  Pair pair;
  if (!pair.active()) GTEST_SKIP() << "no partner rank";
  const std::size_t n = 9;
  const std::int64_t steps = 60, sleep_at = 30;
  {
    ChannelConfig cc = config(pair.peer(), n, 1, ChannelMode::bounded, 0, L);
    if (GetParam().second > 0) {
      cc.sender_bounded = true;
      cc.transport.posted_receives = GetParam().second;
    }
    Channel ch(pair.comm(), cc);
    if (desync_test::test_transport() == desync::comm::Transport::p2p) {  // nothing sent yet: the posted receives
      EXPECT_EQ(RequestLedger::outstanding(), GetParam().second > 0 ? GetParam().second : ch.config().transport.max_in_flight);
    }
    const int T = ch.history();
    EXPECT_EQ(T, 2 * L + 2);
    EXPECT_GE(ch.config().transport.max_in_flight, 2 * L + 1);
    std::vector<std::string> problems;
    long waits_needed_probe = 0, waits_during_sleep = 0;
    double held_at_sleep = 0;
    for (std::int64_t own = 0; own < steps; ++own) {  // no ASSERT: the peer must not be left waiting
      if (pair.me() == 1 && own == sleep_at) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      fill(ch, pair.me(), own);
      ch.send(own);
      ch.can_recv();  // probe: what is available just before the call (it can only grow)
      const std::int64_t probe = ch.newest_level();
      const std::int64_t tc = own < T ? own : own - L;
      const long waits_before = ch.stats().forced_waits;
      const auto t0 = std::chrono::steady_clock::now();
      const std::int64_t tr = ch.recv_bounded(own);
      const double held = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const bool waited = ch.stats().forced_waits > waits_before;
      if (probe < tc) ++waits_needed_probe;
      if (waited && probe >= tc)
        problems.push_back("step " + std::to_string(own) + ": waited although level " + std::to_string(probe) +
                           " >= constraint " + std::to_string(tc) + " was available");
      if (tr > own || own - tr > L || (own < T && tr != own))
        problems.push_back("step " + std::to_string(own) + ": returned level " + std::to_string(tr));
      if (tr != ch.time_level()) problems.push_back("recv_bounded() and time_level() disagree");
      if (auto e = check(ch.recv_buffer(), n, pair.peer(), tr); !e.empty()) problems.push_back(e);
      for (std::int64_t lv = std::max<std::int64_t>(0, tr - L); lv <= tr; ++lv)
        if (auto e = check(ch.level_data(lv), n, pair.peer(), lv); !e.empty())
          problems.push_back("step " + std::to_string(own) + ": " + e);
      // Rank 1 sent sleep_at - 1 and sleeps: rank 0 needs level sleep_at at step sleep_at + L (one step
      // earlier under the overlap schemes, whose last notification waits for the next put).
      // Without asynchronous progress (MPICH rma) rank 0 may instead be held in send()'s flush, whose
      // target sleeps; so: a long block in recv_bounded() is always a counted forced wait.
      // (rma: a flush inside the non-blocking part also waits for a sleeping target under MPICH.)
      const bool flushes_wait = desync_test::test_transport() == desync::comm::Transport::rma;
      if (held > 0.2 && !waited && !flushes_wait) problems.push_back("step " + std::to_string(own) + ": blocked without a forced wait");
      if (pair.me() == 0 && held > 0.2 && own >= sleep_at + L - 1 && own <= sleep_at + L) ++waits_during_sleep;
      if (pair.me() == 0 && own >= sleep_at + L - 1 && own <= sleep_at + L) held_at_sleep += held;
    }
    if (problems.size() > 5) problems.resize(5);
    for (const auto& p : problems) ADD_FAILURE() << p;
    EXPECT_LE(ch.stats().forced_waits, waits_needed_probe);
    if (pair.me() == 0) {
      // Over p2p and with asynchronous progress the bound itself must hold rank 0 back.
      if (!desync_test::one_sided() || desync_test::test_transport() == desync::comm::Transport::shmem) {
        EXPECT_GE(waits_during_sleep, 1) << "rank 0 must block at step " << sleep_at + L << " while rank 1 sleeps ("
                                         << held_at_sleep << " s in recv_bounded)";
      }
    }
    EXPECT_EQ(ch.stats().levels_consumed, ch.time_level() + 1) << "levels 0 .. tr, each once";
    EXPECT_GE(ch.time_level(), steps - 1 - L);
    EXPECT_EQ(ch.stats().messages_sent, steps);
    ch.close();
    EXPECT_EQ(RequestLedger::outstanding(), 0);
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

INSTANTIATE_TEST_SUITE_P(ChannelLevels, Bounded,
                         ::testing::Values(std::pair{0, 0}, std::pair{1, 0}, std::pair{3, 0}, std::pair{3, 1},
                                           std::pair{3, 3}),
                         [](const ::testing::TestParamInfo<std::pair<int, int>>& info) {
                           return "L" + std::to_string(info.param.first) +
                                  (info.param.second ? "_posted" + std::to_string(info.param.second) : "");
                         });

// ChannelConfig::retain_behind: the reader may ask for levels tr - retain_behind .. tr, and an
// arrival reuses the newest entry below that. In strict lockstep (each level delivered before the
// peer sends the next) the ring then cycles through retain_behind + 2 entries, the receive image
// among them, instead of all T + 1 (the oldest-entry rule: 2 L + 3); with the default (L) through
// L + 2. Then rank 1 sleeps so that rank 0 reads behind: levels tr - retain_behind .. tr stay
// readable, each with its own data, at every step. The entries are counted by their buffers, which
// stay with their entries over the one-sided transports; p2p hands each received buffer to the ring
// and receives next into the entry's old one (ChannelCore::arrived_in_place), so there the buffers
// circulate and only the data is checked.
TEST(ChannelLevels, BoundedRetainBehindReusesFewEntries) {
  Pair pair;
  if (!pair.active()) GTEST_SKIP() << "no partner rank";
  const int L = 4;
  const std::size_t n = 11;
  auto run = [&](int retain) {
    auto c = config(pair.peer(), n, 1, ChannelMode::bounded, 0, L);
    c.retain_behind = retain;
    const int behind = retain < 0 ? L : retain;
    std::vector<const double*> entries;
    std::vector<std::string> problems;
    Channel ch(pair.comm(), c);
    const std::int64_t T = ch.history(), lockstep = 3 * T, steps = lockstep + 40;
    for (std::int64_t own = 0; own < steps; ++own) {  // no ASSERT: the peer must not be left waiting
      fill(ch, pair.me(), own);
      ch.send(own);
      if (own < lockstep) {
        if (!poll_until([&] { ch.can_recv(); return ch.newest_level() >= own; }))
          problems.push_back("level " + std::to_string(own) + " never arrived");
      }
      if (pair.me() == 1 && own == lockstep + 10) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const std::int64_t tr = ch.recv_bounded(own);
      if (own < lockstep && tr != own) problems.push_back("lockstep step " + std::to_string(own) + " delivered " + std::to_string(tr));
      if (own - tr > L) problems.push_back("step " + std::to_string(own) + " delivered " + std::to_string(tr));
      for (std::int64_t lv = std::max<std::int64_t>(0, tr - behind); lv <= tr; ++lv)
        if (auto e = check(ch.level_data(lv), n, pair.peer(), lv); !e.empty())
          problems.push_back("step " + std::to_string(own) + ": " + e);
      if (own >= T && own < lockstep &&
          std::find(entries.begin(), entries.end(), ch.recv_buffer()) == entries.end())
        entries.push_back(ch.recv_buffer());
      if (own < lockstep) pair.barrier();  // the peer sends own + 1 only after this delivery
    }
    if (problems.size() > 5) problems.resize(5);
    for (const auto& p : problems) ADD_FAILURE() << "retain_behind " << retain << ": " << p;
    ch.close();
    return entries.size();
  };
  const std::size_t one = run(1), all = run(-1);
  if (desync_test::one_sided()) {
    EXPECT_EQ(one, 3u) << "retain_behind 1: levels tr - 1 and tr, and the arrival";
    EXPECT_EQ(all, static_cast<std::size_t>(L + 2)) << "the default keeps L levels behind tr";
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

// L = 0 is the synchronous exchange: a small recurrence u <- u/2 + r/4 + own driven by the received
// r gives bitwise the same states and levels with recv_bounded(own) as with wait_recv(own).
TEST(ChannelLevels, BoundedWithZeroDelayIsTheSynchronousExchange) {
  Pair pair;
  if (!pair.active()) GTEST_SKIP() << "no partner rank";
  const std::size_t n = 13;
  const std::int64_t steps = 40;
  auto run = [&](bool bounded) {
    std::vector<double> u(n), trace;
    for (std::size_t m = 0; m < n; ++m) u[m] = pattern(pair.me(), 0, m) * 1e-9;
    Channel ch(pair.comm(), config(pair.peer(), n, 1, bounded ? ChannelMode::bounded : ChannelMode::async, 0, 0));
    for (std::int64_t own = 0; own < steps; ++own) {
      std::copy(u.begin(), u.end(), ch.send_buffer());
      ch.send(own);
      const std::int64_t got = bounded ? ch.recv_bounded(own) : ch.wait_recv(own);
      trace.push_back(static_cast<double>(got));
      const double* r = ch.recv_buffer();
      for (std::size_t m = 0; m < n; ++m) u[m] = 0.5 * u[m] + 0.25 * r[m] + static_cast<double>(own);
      trace.insert(trace.end(), u.begin(), u.end());
    }
    ch.close();
    return trace;
  };
  const auto sync = run(false);
  const auto bounded = run(true);
  ASSERT_EQ(sync.size(), bounded.size());
  EXPECT_EQ(std::memcmp(sync.data(), bounded.data(), sync.size() * sizeof(double)), 0);
  for (std::int64_t own = 0; own < steps; ++own)
    EXPECT_EQ(bounded[static_cast<std::size_t>(own) * (n + 1)], static_cast<double>(own));
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

TEST(ChannelLevels, BoundedModeRejectsBadInput) {
  desync_test::TestComm comm;
  auto bounded = [](int history, int max_delay) {
    return config(0, 5, 1, ChannelMode::bounded, history, max_delay);
  };
  EXPECT_THROW(Channel(comm, bounded(2, 1)), InputError);  // T < L + 2
  EXPECT_THROW(Channel(comm, bounded(0, -1)), InputError);
  EXPECT_THROW(Channel(comm, config(0, 5, 1, ChannelMode::async, -1)), InputError);
  auto behind = bounded(0, 1);
  behind.retain_behind = -2;
  EXPECT_THROW(Channel(comm, behind), InputError);
  EXPECT_EQ(RequestLedger::outstanding(), 0);
  Pair pair;
  if (!pair.active()) return;
  {
    // Levels must be consecutive; recv_bounded needs bounded mode.
    Channel ch(pair.comm(), config(pair.peer(), 5, 1, ChannelMode::bounded, 0, 1));
    fill(ch, pair.me(), 0);
    ch.send(0);
    EXPECT_THROW(ch.send(2), InputError);
    EXPECT_EQ(ch.recv_bounded(0), 0);
    ch.close();
    Channel a(pair.comm(), config(pair.peer(), 5, 1, ChannelMode::async));
    EXPECT_THROW(a.recv_bounded(0), InputError);
    a.close();
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

// Notified puts under stress: both ends stream hundreds of levels with R = T slots in flight, for
// small and large messages. On every call the receiver checks each newly observed level's whole
// message (copied out of its slot when its notification was seen): a notification that overtook
// its data would show a slot holding another level's data. No level may be missed.
namespace {
class NotifiedStress : public ::testing::TestWithParam<std::size_t> {};
}  // namespace

TEST_P(NotifiedStress, EveryNotificationFindsItsWholeMessage) {
  const std::size_t n = GetParam();
  Pair pair;
  if (!pair.active()) GTEST_SKIP() << "no partner rank";
  const int R = 8;
  const std::int64_t N = n > 100000 ? 120 : 400;
  {
    // can_send(), send() and can_recv() each take up to R arrivals in: retain 4 R between checks.
    Channel ch(pair.comm(), config(pair.peer(), n, R, ChannelMode::async, 4 * R));
    std::int64_t sent = 0, checked = 0;
    std::vector<char> seen(static_cast<std::size_t>(N), 0);
    std::string problem;
    // p2p completions may be reported out of order: check every retained level not checked yet.
    // No early exit on a problem: the peer must not be left waiting.
    const bool done = poll_until(
        [&] {
          if (sent < N && ch.can_send()) {
            fill(ch, pair.me(), sent);
            ch.send(sent++);
          }
          // After the last send, keep asking can_send(): that is where an overlap scheme completes
          // and announces its newest put. Leaving the loop with it deferred would leave the peer
          // waiting for it while this rank waits in the barrier (MPICH issues the put only at the
          // flush).
          if (sent == N) ch.can_send();
          ch.can_recv();
          for (std::int64_t lv = std::max<std::int64_t>(0, ch.newest_level() - ch.history()); lv <= ch.newest_level(); ++lv) {
            if (seen[static_cast<std::size_t>(lv)] || !ch.level_data(lv)) continue;
            seen[static_cast<std::size_t>(lv)] = 1;
            ++checked;
            if (auto e = check(ch.level_data(lv), n, pair.peer(), lv); !e.empty() && problem.empty()) problem = e;
          }
          return sent == N && ch.stats().messages_arrived == N;
        },
        90.0);
    EXPECT_TRUE(done) << "sent " << sent << ", arrived " << ch.stats().messages_arrived;
    EXPECT_EQ(problem, "");
    EXPECT_EQ(checked, N);
    EXPECT_EQ(ch.stats().messages_arrived, N);
    pair.barrier();
    ch.close();
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

INSTANTIATE_TEST_SUITE_P(ChannelLevels, NotifiedStress, ::testing::Values(1, 1000, 1u << 17));
