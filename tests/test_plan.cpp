// Halo plans and the plan exchange, over the transport ctest selects (channel_transport.hpp).
//
//  * Structured plans (width 2 with edges and corners, width 1 faces only, zero width in z for a 2D
//    grid; periodic axes or not): every owned cell holds f(global x, y, z); after an exchange every
//    halo cell must hold f of the cell it mirrors (periodic axes wrapped), and every halo cell with
//    no neighbour (the global boundary of a non-periodic axis, edges and corners of a faces-only
//    plan) must keep its sentinel. Modes sync, async and racy; progress none and test.
//  * Assembled plans: GhostExchange over channels (engine p2p, the transport under test), the
//    neighbourhood collective and the blocking engine give exactly what an MPI_Alltoallv of the
//    same lists gives, also with unequal counts in the two directions and on a periodic Cartesian
//    grid of one or two ranks per dimension.
//  * CG: the same iterates, bitwise, whatever the transport (and engine).
//  * Offsets as runs (IndexRuns, the pack and unpack of every plan exchange): the copies equal the
//    offset loops bitwise, for structured faces (long runs, strided and contiguous) and lists
//    without regularity (kept as offsets), threaded or not.
//  * Bad input: widths larger than a block, negative widths, malformed plans.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <cstdint>
#include <string>
#include <vector>

#include "channel_transport.hpp"  // the transport under test (ctest runs every one)
#include "desync/communication/ghost_exchange.hpp"
#include "desync/communication/halo_plan.hpp"
#include "desync/communication/index_runs.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/solvers/cg/cg.hpp"
#include "test_util.hpp"

using namespace desync::decomposition;
using desync::InputError;
using namespace desync::comm;
using desync_test::TestComm;

namespace {

constexpr double level_scale = 1e6;

double f(int x, int y, int z, std::int64_t level) {
  return 1.0 + x + 100.0 * y + 10000.0 * z + level_scale * static_cast<double>(level);
}
double sentinel(std::size_t storage_index) { return -1.0 - static_cast<double>(storage_index); }

bool thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

struct Case {
  const char* name;
  Index3 global;
  Index3 dims_hint;
  Periodic3 periodic;
  StructuredHalo halo;
};

std::string describe(const Case& c, HaloMode mode, Progress p) {
  return std::string(c.name) + " mode " + desync::comm::to_string(mode) + " progress " +
         desync::comm::to_string(p) + " transport " + desync::comm::to_string(desync_test::test_transport());
}

// Fills the owned cells with f(global, level) and the halo with sentinels.
void fill(const CartGrid& grid, Field& u, std::int64_t level) {
  const Index3& n = u.extent();
  const Index3& w = u.halo_width();
  for (int k = -w[2]; k < n[2] + w[2]; ++k)
    for (int j = -w[1]; j < n[1] + w[1]; ++j)
      for (int i = -w[0]; i < n[0] + w[0]; ++i) {
        const bool inside = i >= 0 && i < n[0] && j >= 0 && j < n[1] && k >= 0 && k < n[2];
        const auto& o = grid.offset();
        u(i, j, k) = inside ? f(o[0] + i, o[1] + j, o[2] + k, level) : sentinel(u.index(i, j, k));
      }
}

// Every storage cell against the serial reference; returns the number of mismatches (reports a few).
int check(const CartGrid& grid, const Field& u, const StructuredHalo& halo, std::int64_t level, const std::string& what) {
  const Index3& n = u.extent();
  const Index3& w = u.halo_width();
  const Index3& g = grid.global();
  int bad = 0;
  for (int k = -w[2]; k < n[2] + w[2]; ++k)
    for (int j = -w[1]; j < n[1] + w[1]; ++j)
      for (int i = -w[0]; i < n[0] + w[0]; ++i) {
        const int local[3] = {i, j, k};
        int global[3];
        int outside = 0;
        bool exists = true;
        for (int a = 0; a < 3; ++a) {
          if (local[a] < 0 || local[a] >= n[a]) ++outside;
          global[a] = grid.offset()[a] + local[a];
          if (grid.periodic()[a])
            global[a] = ((global[a] % g[a]) + g[a]) % g[a];
          else if (global[a] < 0 || global[a] >= g[a])
            exists = false;
        }
        if (!halo.corners && outside >= 2) exists = false;
        const double want = outside == 0 || exists ? f(global[0], global[1], global[2], level) : sentinel(u.index(i, j, k));
        if (u(i, j, k) != want && ++bad <= 3)
          ADD_FAILURE() << what << ": rank " << grid.rank() << " cell (" << i << ", " << j << ", " << k << ") holds "
                        << u(i, j, k) << ", expected " << want;
      }
  return bad;
}

std::vector<Case> cases() {
  const Periodic3 none{false, false, false}, all{true, true, true}, xy{true, true, false};
  return {
      {"3D width 2 corners", {6, 5, 4}, {0, 0, 0}, none, {{2, 2, 2}, true}},
      {"3D width 2 corners periodic", {6, 5, 4}, {0, 0, 0}, all, {{2, 2, 2}, true}},
      {"3D width 1 faces", {5, 4, 3}, {0, 0, 0}, none, {{1, 1, 1}, false}},
      {"3D width 1 faces periodic", {5, 4, 3}, {0, 0, 0}, all, {{1, 1, 1}, false}},
      {"3D widths (2, 1, 1) corners, x periodic", {8, 4, 3}, {0, 0, 0}, {true, false, false}, {{2, 1, 1}, true}},
      {"2D width 2 corners", {9, 8, 1}, {0, 0, 1}, none, {{2, 2, 0}, true}},
      {"2D width 2 corners periodic", {9, 8, 1}, {0, 0, 1}, xy, {{2, 2, 0}, true}},
      {"2D width 1 faces periodic", {7, 6, 1}, {0, 0, 1}, xy, {{1, 1, 0}, false}},
      {"1D width 2 periodic", {12, 1, 1}, {0, 1, 1}, {true, false, false}, {{2, 0, 0}, true}},
  };
}

// One exchange of level `level` in `mode` with `progress`; returns when every halo holds it.
void exchange_once(PlanExchange& ex, Field& u, std::int64_t level, HaloMode mode, Progress progress) {
  ex.start(u.data(), level);
  if (progress == Progress::test) {
    EXPECT_TRUE(desync_test::poll_until([&] { return ex.poll(); }));
  }
  if (mode == HaloMode::sync) {
    ex.finish(u.data(), level);
    return;
  }
  // async, racy: pull until every neighbour's data (every piece) is of this level.
  const bool arrived = desync_test::poll_until([&] {
    ex.finish(u.data(), level);
    for (std::size_t n = 0; n < ex.plan().neighbours.size(); ++n)
      if (ex.time_level(n) != level) return false;
    return true;
  });
  EXPECT_TRUE(arrived);
  // A rank that stops calling the channel layer leaves its last put unannounced under the overlap
  // schemes; a pull that finds nothing new completes it (docs/channel.md, completion schemes).
  ex.finish(u.data(), level);
  // No rank sends the next level before every rank holds this one (it would overtake it).
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

TEST(StructuredPlan, DeliversTheSerialReference) {
  TestComm comm;
  const int size = desync_test::world_size();
  std::vector<Progress> progresses{Progress::none, Progress::test};
  if (thread_multiple()) progresses.push_back(Progress::thread);
  int ran = 0;
  for (const Case& c : cases()) {
    const Index3 dims = choose_dims(size, c.dims_hint);
    if (!check_split(c.global, dims).empty()) continue;
    bool fits = true;
    for (int a = 0; a < 3; ++a) fits = fits && c.halo.width[a] <= c.global[a] / dims[a];
    if (!fits) continue;  // this rank count makes blocks thinner than the halo (tested below)
    CartGrid grid(comm, c.global, dims, c.periodic);
    ++ran;
    for (HaloMode mode : {HaloMode::sync, HaloMode::async, HaloMode::racy}) {
      for (Progress progress : progresses) {
        const std::string what = describe(c, mode, progress);
        const long before = desync::comm::RequestLedger::outstanding();
        {
          PlanExchangeConfig cfg;
          cfg.mode = mode;
          cfg.transport.max_in_flight = 2;
          cfg.racy_chunks = 3;
          cfg.progress = progress;
          desync_test::apply_transport(cfg);
          PlanExchange ex(grid.comm(), desync::comm::make_structured_plan(grid, c.halo), cfg);
          Field u(grid.local(), c.halo.width);
          for (std::int64_t level = 0; level < 3; ++level) {
            fill(grid, u, level);
            exchange_once(ex, u, level, mode, progress);
            EXPECT_EQ(check(grid, u, c.halo, level, what + " level " + std::to_string(level)), 0);
          }
          // The halo last taken goes into any buffer of the same layout.
          Field v(grid.local(), c.halo.width);
          fill(grid, v, 2);
          ex.install(v.data());
          EXPECT_EQ(check(grid, v, c.halo, 2, what + " install"), 0);
          ex.close();
        }
        EXPECT_EQ(desync::comm::RequestLedger::outstanding(), before) << what;
      }
    }
  }
  EXPECT_GE(ran, 7);  // at most two cases have blocks too thin for their halo at 1-4 ranks
}

namespace {

// The offset loops IndexRuns replaces: out[e] = x[idx[e]], and x[idx[e]] = in[e] in list order.
void gather_by_offsets(const std::vector<std::int32_t>& idx, const std::vector<double>& x, std::vector<double>& out) {
  for (std::size_t e = 0; e < idx.size(); ++e) out[e] = x[static_cast<std::size_t>(idx[e])];
}
void scatter_by_offsets(const std::vector<std::int32_t>& idx, const std::vector<double>& in, std::vector<double>& x) {
  for (std::size_t e = 0; e < idx.size(); ++e) x[static_cast<std::size_t>(idx[e])] = in[e];
}

// Gathers and scatters `idx` both ways over an array of `n` distinct values; 0 when they agree.
int runs_disagree(const std::vector<std::int32_t>& idx, std::size_t n, int threads) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = 0.5 + static_cast<double>(i) * 1.25;
  const desync::comm::IndexRuns runs(idx);
  std::vector<double> a(idx.size(), -1.0), b(idx.size(), -2.0);
  gather_by_offsets(idx, x, a);
  runs.gather(x.data(), b.data(), threads);
  int bad = a == b ? 0 : 1;
  std::vector<double> in(idx.size());
  for (std::size_t e = 0; e < in.size(); ++e) in[e] = -3.0 - static_cast<double>(e);
  std::vector<double> ya(x), yb(x);
  scatter_by_offsets(idx, in, ya);
  runs.scatter(in.data(), yb.data(), threads);
  return bad + (ya == yb ? 0 : 1);
}

}  // namespace

TEST(IndexRuns, StructuredFacesBecomeFewRunsAndCopyBitwise) {
  // One rank's view of a 12 x 10 x 9 block with halo width 1 on every (periodic) axis, over
  // MPI_COMM_SELF: all six faces are local copies, their offsets the plan's.
  CartGrid grid(MPI_COMM_SELF, {12, 10, 9}, {1, 1, 1}, {true, true, true});
  const auto plan = desync::comm::make_structured_plan(grid, {{1, 1, 1}, /*corners=*/false});
  Field u(grid.local(), {1, 1, 1});
  const std::int64_t row = u.index(0, 1, 0) - u.index(0, 0, 0);
  ASSERT_EQ(plan.neighbours.size(), 6U);
  for (const auto& nb : plan.neighbours) {
    for (const auto* list : {&nb.send, &nb.recv}) {
      const desync::comm::IndexRuns runs(*list);
      EXPECT_TRUE(runs.by_runs());
      EXPECT_EQ(runs.size(), list->size());
      // x-faces: one run per z-plane at the row's stride; y- and z-faces: rows, stride 1.
      const bool x_face = nb.direction[0] != 0;
      EXPECT_EQ(runs.runs().size(), x_face ? 9U : nb.direction[1] != 0 ? 9U : 10U);
      for (const auto& r : runs.runs()) EXPECT_EQ(r.stride, x_face ? row : 1);
      for (int threads : {1, 2}) EXPECT_EQ(runs_disagree(*list, u.storage_size(), threads), 0);
    }
  }
}

TEST(IndexRuns, IrregularListsKeepTheirOffsets) {
  // An assembled matrix's ghost columns: no regularity, so the plain offsets are used.
  std::vector<std::int32_t> scattered{17, 3, 40, 8, 8, 25, 1, 33, 12, 39, 0, 21};
  EXPECT_FALSE(desync::comm::IndexRuns(scattered).by_runs());
  EXPECT_EQ(runs_disagree(scattered, 41, 1), 0);
  // Descending, repeated (stride 0) and mixed runs, with a run too short at the end; long enough
  // on average to go by runs. Large enough to be threaded.
  std::vector<std::int32_t> mixed;
  for (int i = 60; i > 40; --i) mixed.push_back(i);                    // stride -1
  for (int i = 0; i < 6; ++i) mixed.push_back(7);                     // stride 0: the last write wins
  for (int i = 0; i < 5000; ++i) mixed.push_back(100 + 3 * i);        // stride 3
  for (int i = 0; i < 64; ++i) mixed.push_back(20000 + i);            // stride 1
  mixed.push_back(5);
  const desync::comm::IndexRuns runs(mixed);
  EXPECT_TRUE(runs.by_runs());
  EXPECT_EQ(runs.runs().size(), 5U);
  for (int threads : {1, 2}) EXPECT_EQ(runs_disagree(mixed, 20100, threads), 0);
  // Empty and single-entry lists.
  EXPECT_EQ(desync::comm::IndexRuns(std::vector<std::int32_t>{}).size(), 0U);
  EXPECT_EQ(runs_disagree({}, 4, 1), 0);
  EXPECT_EQ(runs_disagree({3}, 4, 1), 0);
}

TEST(StructuredPlan, DirectionsAndTags) {
  TestComm comm;
  // One rank per periodic dimension: every direction is this rank itself (26 local copies).
  if (desync_test::world_size() != 1) GTEST_SKIP() << "one-rank layout";
  CartGrid grid(comm, {4, 4, 4}, {1, 1, 1}, {true, true, true});
  const auto plan = desync::comm::make_structured_plan(grid, {{2, 2, 2}, true});
  ASSERT_EQ(plan.neighbours.size(), 26u);
  for (std::size_t n = 0; n < plan.neighbours.size(); ++n) {
    const auto& nb = plan.neighbours[n];
    EXPECT_TRUE(plan.is_local(n));
    EXPECT_EQ(nb.send_tag + nb.recv_tag, 26);
    EXPECT_EQ(nb.send.size(), nb.recv.size());
  }
  // Faces first: x-, x+, y-, y+, z-, z+; a face of width 2 on a 4x4 block has 2 * 16 cells.
  EXPECT_EQ(plan.neighbours[0].direction, (std::array<int, 3>{-1, 0, 0}));
  EXPECT_EQ(plan.neighbours[5].direction, (std::array<int, 3>{0, 0, 1}));
  EXPECT_EQ(plan.neighbours[0].send.size(), 32u);
  EXPECT_EQ(plan.neighbours[6].send.size() + 0, plan.neighbours[6].recv.size());
  // Faces only, no halo in z (a 2D block): 4 directions.
  CartGrid flat(comm, {4, 4, 1}, {1, 1, 1}, {true, true, false});
  EXPECT_EQ(desync::comm::make_structured_plan(flat, {{1, 1, 0}, false}).neighbours.size(), 4u);
  EXPECT_EQ(desync::comm::make_structured_plan(flat, {{1, 1, 0}, true}).neighbours.size(), 8u);
}

TEST(StructuredPlan, WidthLargerThanABlockIsAnInputError) {
  TestComm comm;
  const int size = desync_test::world_size();
  CartGrid grid(comm, {3 * size, 3, 3}, {size, 1, 1});
  try {
    desync::comm::make_structured_plan(grid, {{4, 1, 1}, true});
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "halo width 4 along x is larger than the smallest block (3 cells)");
  }
  EXPECT_THROW(desync::comm::make_structured_plan(grid, {{1, -1, 1}, true}), InputError);
  EXPECT_NO_THROW(desync::comm::make_structured_plan(grid, {{3, 3, 3}, true}));
}

TEST(PlanExchange, MalformedPlanIsAnInputErrorOnEveryRank) {
  TestComm comm;
  desync::comm::HaloPlan plan;
  MPI_Comm_rank(comm, &plan.rank);
  if (plan.rank == 0) {
    desync::comm::PlanNeighbour nb;
    nb.peer = desync_test::world_size();  // no such rank
    nb.send = {0};
    nb.recv = {1};
    plan.neighbours.push_back(nb);
  }
  EXPECT_THROW(PlanExchange(comm, plan, PlanExchangeConfig{}), InputError);
}

// A rare sender's last message must arrive although the sender never sends again: under the
// overlap completion schemes a put is announced at the next call on its channel, so a sender
// that calls progress() once and then makes no channel call (it waits in a barrier, as the
// asynchronous coarse level's root closed) must still have delivered it. Without progress() the
// receiver waits forever (the livelock of two-level Schwarz over rma overlap-local); here it
// gives up after 10 s and the test fails.
TEST(PlanExchange, ProgressAnnouncesARareSendersLastMessage) {
  TestComm comm;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  desync::comm::HaloPlan plan;
  plan.rank = rank;
  desync::comm::PlanNeighbour nb;
  if (rank == 0) {
    nb.peer = 1;
    nb.send = {0, 1};
    plan.neighbours.push_back(nb);
  } else if (rank == 1) {
    nb.peer = 0;
    nb.recv = {0, 1};
    plan.neighbours.push_back(nb);
  }
  PlanExchangeConfig cfg;
  cfg.mode = HaloMode::async;
  desync_test::apply_transport(cfg);
  PlanExchange ex(comm, plan, cfg);
  std::vector<double> x = {3.0, 4.0};
  std::vector<double> got = {0.0, 0.0};
  int arrived = 1;
  if (rank == 0) {
    ex.start(x.data(), 7);
    ex.progress();  // no further call on the exchange until every rank is past the barrier
  } else if (rank == 1) {
    arrived = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!arrived && std::chrono::steady_clock::now() < until) {
      ex.finish(got.data(), 7);
      arrived = ex.time_level(0) == 7 ? 1 : 0;
      if (!arrived) std::this_thread::yield();
    }
  }
  MPI_Barrier(comm);
  ex.close();
  if (rank == 1) {
    EXPECT_EQ(arrived, 1) << "the sender's only message never arrived";
    EXPECT_EQ(got, x);
  }
}

// ---------------------------------------------------------------------------------------------
// Bounded staleness (the weakly-synchronous exchange).

namespace {

// One step of a width-2 smoothing stencil on the owned cells, reading the halo (bitwise-defined:
// the same operations in the same order whatever the exchange mode).
void smooth(const Field& u, Field& v) {
  const Index3& n = u.extent();
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i)
        v(i, j, k) = 0.25 * u(i, j, k) + 0.1 * (u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k)) +
                     0.05 * (u(i - 2, j, k) + u(i + 2, j, k) + u(i - 1, j - 1, k) + u(i + 1, j + 1, k) +
                             (n[2] > 1 ? u(i, j, k - 2) + u(i, j, k + 2) : 0.0));
}

// Runs `steps` of smooth() with the exchange in `mode` and returns the final owned cells.
std::vector<double> run_smoothing(const CartGrid& grid, const StructuredHalo& halo, HaloMode mode, int max_delay,
                                  int steps) {
  PlanExchangeConfig cfg;
  cfg.mode = mode;
  cfg.max_delay = max_delay;
  desync_test::apply_transport(cfg);
  PlanExchange ex(grid.comm(), desync::comm::make_structured_plan(grid, halo), cfg);
  Field u(grid.local(), halo.width), v(grid.local(), halo.width);
  fill(grid, u, 0);
  for (int t = 0; t < steps; ++t) {
    ex.start(u.data(), t);
    ex.finish(u.data(), t);
    smooth(u, v);
    std::swap(u, v);
  }
  ex.close();
  std::vector<double> out;
  const Index3& n = u.extent();
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) out.push_back(u(i, j, k));
  return out;
}

// The level a halo cell's value was packed at (fill() adds level_scale * level to f(x, y, z, 0)).
std::int64_t level_of(double value, int x, int y, int z) {
  return std::llround((value - f(x, y, z, 0)) / level_scale);
}

}  // namespace

TEST(BoundedPlan, ZeroDelayReproducesSyncBitwise) {
  TestComm comm;
  const int size = desync_test::world_size();
  const Periodic3 all{true, true, true};
  for (const Case& c : {Case{"3D width 2 corners periodic", {8, 6, 4}, {0, 0, 0}, all, {{2, 2, 2}, true}},
                        Case{"2D width 2 corners", {8, 8, 1}, {0, 0, 1}, {false, false, false}, {{2, 2, 0}, true}}}) {
    const Index3 dims = choose_dims(size, c.dims_hint);
    bool fits = check_split(c.global, dims).empty();
    for (int a = 0; a < 3; ++a) fits = fits && c.halo.width[a] <= c.global[a] / dims[a];
    if (!fits) continue;
    CartGrid grid(comm, c.global, dims, c.periodic);
    const long before = desync::comm::RequestLedger::outstanding();
    const auto sync = run_smoothing(grid, c.halo, HaloMode::sync, 0, 25);
    const auto bounded = run_smoothing(grid, c.halo, HaloMode::bounded, 0, 25);
    ASSERT_EQ(sync.size(), bounded.size());
    std::size_t differ = 0;
    for (std::size_t e = 0; e < sync.size(); ++e) differ += sync[e] != bounded[e];  // bitwise
    EXPECT_EQ(differ, 0u) << c.name;
    // A positive bound lets ranks run ahead, so the answer may differ; it must still be finite.
    const auto loose = run_smoothing(grid, c.halo, HaloMode::bounded, 2, 25);
    for (double x : loose) EXPECT_TRUE(std::isfinite(x));
    EXPECT_EQ(desync::comm::RequestLedger::outstanding(), before) << c.name;
  }
}

TEST(BoundedPlan, DelayedNeighbourIsNeverMoreThanLBehind) {
  TestComm comm;
  const int size = desync_test::world_size();
  if (size < 2) GTEST_SKIP() << "needs a remote neighbour";
  const StructuredHalo halo{{1, 1, 1}, true};
  CartGrid grid(comm, {4 * size, 4, 4}, {size, 1, 1}, {true, false, false});
  for (int L : {0, 2, 4}) {
    const long before = desync::comm::RequestLedger::outstanding();
    PlanExchangeConfig cfg;
    cfg.mode = HaloMode::bounded;
    cfg.max_delay = L;
    desync_test::apply_transport(cfg);
    PlanExchange ex(grid.comm(), desync::comm::make_structured_plan(grid, halo), cfg);
    Field u(grid.local(), halo.width);
    const int steps = 60;
    const int history = 2 * L + 2;  // the channel's default ring for bounded mode
    int bad = 0;
    for (int t = 0; t < steps; ++t) {
      // Rank 1 falls behind for a while: 15 ms a step during steps 10..19.
      if (grid.rank() == 1 && t >= 10 && t < 20) std::this_thread::sleep_for(std::chrono::milliseconds(15));
      fill(grid, u, t);
      ex.start(u.data(), t);
      ex.finish(u.data(), t);
      const Index3& n = u.extent();
      const auto& o = grid.offset();
      const Index3& g = grid.global();
      // Every halo cell holds one level within the bound (exactly t while the ring fills up).
      for (int k = -1; k <= n[2]; ++k)
        for (int j = -1; j <= n[1]; ++j)
          for (int i = -1; i <= n[0]; ++i) {
            const bool halo_cell = i < 0 || i >= n[0] || j < 0 || j >= n[1] || k < 0 || k >= n[2];
            const int y = o[1] + j, z = o[2] + k;
            if (!halo_cell || y < 0 || y >= g[1] || z < 0 || z >= g[2]) continue;
            const int x = ((o[0] + i) % g[0] + g[0]) % g[0];
            const std::int64_t level = level_of(u(i, j, k), x, y, z);
            const bool ok = t < history ? level == t : level <= t && level >= t - L;
            if (!ok && ++bad <= 3)
              ADD_FAILURE() << "L " << L << " step " << t << " rank " << grid.rank() << " cell (" << i << ", " << j
                            << ", " << k << ") holds level " << level;
          }
      // The retained levels behind the installed one can be read back, each with its own data.
      for (std::size_t q = 0; q < ex.plan().neighbours.size(); ++q) {
        if (ex.plan().is_local(q)) continue;
        const std::int64_t held = ex.time_level(q);
        ASSERT_GE(held, t - L);
        for (std::int64_t l = std::max<std::int64_t>(0, held - L); l <= held; ++l) {
          const double* d = ex.level_data(q, l);
          ASSERT_NE(d, nullptr) << "level " << l << " of neighbour " << q << " not retained at step " << t;
          const auto& nb = ex.plan().neighbours[q];
          const std::int32_t cell = nb.recv.front();  // the first halo cell this neighbour fills
          const Index3 w = u.halo_width();
          const Index3 e{n[0] + 2 * w[0], n[1] + 2 * w[1], n[2] + 2 * w[2]};
          const int ci = cell % e[0] - w[0], cj = (cell / e[0]) % e[1] - w[1], ck = cell / (e[0] * e[1]) - w[2];
          const int x = ((o[0] + ci) % g[0] + g[0]) % g[0];
          EXPECT_EQ(level_of(d[0], x, o[1] + cj, o[2] + ck), l);
        }
      }
    }
    EXPECT_EQ(bad, 0);
    // Rank 1's neighbours ran ahead while it slept: with L below the 10 slow steps, they had to wait.
    long waits = ex.forced_waits();
    const bool next_to_slow = grid.rank() != 1 && (grid.rank() == 0 || grid.rank() == 2 % size);
    if (next_to_slow && !desync_test::one_sided()) {
      EXPECT_GT(waits, 0) << "L " << L;
    }
    ex.close();
    EXPECT_EQ(desync::comm::RequestLedger::outstanding(), before) << "L " << L;
  }
}

TEST(BoundedPlan, NegativeDelayIsAnInputError) {
  TestComm comm;
  CartGrid grid(comm, {4 * desync_test::world_size(), 4, 4}, {desync_test::world_size(), 1, 1});
  PlanExchangeConfig cfg;
  cfg.mode = HaloMode::bounded;
  cfg.max_delay = -1;
  EXPECT_THROW(PlanExchange(grid.comm(), desync::comm::make_structured_plan(grid, {{1, 1, 1}, false}), cfg), InputError);
}

// ---------------------------------------------------------------------------------------------
// Assembled plans.

namespace {

// Rank r sends count(r, q) entries to every other rank q: x[(r + q + e) % owned] for e = 0, 1, ...
// Counts differ in the two directions.
constexpr int owned = 5;
int count(int r, int q) { return 1 + (r + 2 * q) % 3; }

GhostPlanSpec all_to_all_spec(int rank, int size) {
  GhostPlanSpec s;
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    s.send_ranks.push_back(q);
    for (int e = 0; e < count(rank, q); ++e) s.send_index.push_back((rank + q + e) % owned);
    s.send_offsets.push_back(static_cast<int>(s.send_index.size()));
    s.recv_ranks.push_back(q);
    s.recv_offsets.push_back(s.recv_offsets.back() + count(q, rank));
  }
  return s;
}

// The reference: MPI_Alltoallv of the same lists.
std::vector<double> alltoallv_reference(MPI_Comm comm, const GhostPlanSpec& s, const double* x) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> sc(static_cast<std::size_t>(size), 0), sd(sc), rc(sc), rd(sc);
  std::vector<double> out;
  for (std::size_t n = 0; n < s.send_ranks.size(); ++n) {
    const auto q = static_cast<std::size_t>(s.send_ranks[n]);
    sd[q] = static_cast<int>(out.size());
    for (int e = s.send_offsets[n]; e < s.send_offsets[n + 1]; ++e) out.push_back(x[s.send_index[static_cast<std::size_t>(e)]]);
    sc[q] = static_cast<int>(out.size()) - sd[q];
  }
  for (std::size_t n = 0; n < s.recv_ranks.size(); ++n) {
    const auto q = static_cast<std::size_t>(s.recv_ranks[n]);
    rd[q] = s.recv_offsets[n];
    rc[q] = s.recv_offsets[n + 1] - s.recv_offsets[n];
  }
  std::vector<double> in(static_cast<std::size_t>(s.recv_offsets.back()));
  MPI_Alltoallv(out.data(), sc.data(), sd.data(), MPI_DOUBLE, in.data(), rc.data(), rd.data(), MPI_DOUBLE, comm);
  return in;
}

}  // namespace

TEST(AssembledPlan, EveryEngineEqualsAlltoallv) {
  TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  const GhostPlanSpec spec = all_to_all_spec(rank, size);
  std::vector<Progress> progresses{Progress::none, Progress::test};
  if (thread_multiple()) progresses.push_back(Progress::thread);
  for (ExchangeEngine engine : {ExchangeEngine::p2p, ExchangeEngine::neighbor, ExchangeEngine::blocking}) {
    for (Progress progress : progresses) {
      desync::comm::TransportConfig t;
      desync_test::apply_transport(t);
      const long before = desync::comm::RequestLedger::outstanding();
      {
        GhostExchange ex(comm, spec, engine, progress, t);
        EXPECT_EQ(ex.neighbours(), size - 1);
        for (int round = 0; round < 3; ++round) {
          double x[owned];
          for (int e = 0; e < owned; ++e) x[e] = 1000.0 * rank + 10.0 * round + e;
          const std::vector<double> want = alltoallv_reference(comm, spec, x);
          ex.start(x);
          for (double& v : x) v = -1;  // x may change once start() returned
          if (progress == Progress::test) {
    EXPECT_TRUE(desync_test::poll_until([&] { return ex.poll(); }));
  }
          ex.finish();
          ASSERT_EQ(ex.ghost_count(), want.size());
          for (std::size_t g = 0; g < want.size(); ++g)
            EXPECT_EQ(ex.ghosts()[g], want[g]) << "engine " << desync::comm::to_string(engine) << " progress "
                                               << desync::comm::to_string(progress) << " ghost " << g;
        }
        EXPECT_EQ(ex.stats().exchanges, 3);
        const std::vector<double> zeros(owned, 0.0);
        ex.start(zeros.data());  // left unfinished: the destructor completes it
      }
      EXPECT_EQ(desync::comm::RequestLedger::outstanding(), before);
    }
  }
}

// A Cartesian spec (the matrix-free Poisson operator's: the six faces in MPI's slot order) on a
// periodic grid: with one or two ranks along a dimension both slots name the same rank (or this
// one). Every engine must deliver the face each slot stands for.
TEST(AssembledPlan, PeriodicCartesianSpecInEveryEngine) {
  TestComm comm;
  const int size = desync_test::world_size();
  const Index3 n{3, 3, 3};
  const Index3 dims = choose_dims(size, {0, 0, 0});
  CartGrid grid(comm, {n[0] * dims[0], n[1] * dims[1], n[2] * dims[2]}, dims, {true, true, true});
  // Slot order: (z-, z+, y-, y+, x-, x+); send the owned layer next to the face, receive the halo.
  const int faces[6] = {Face::z_lo, Face::z_hi, Face::y_lo, Face::y_hi, Face::x_lo, Face::x_hi};
  Field shape(n);
  GhostPlanSpec spec;
  spec.cartesian = true;
  for (int f : faces) {
    spec.send_ranks.push_back(grid.neighbour(f));
    spec.recv_ranks.push_back(grid.neighbour(f));
    // Owned-index numbering: x fastest over the block.
    shape.for_each_boundary(f, [&](std::size_t, std::size_t idx) {
      const int i = static_cast<int>(idx % shape.stride_y()) - 1;
      const int j = static_cast<int>((idx / shape.stride_y()) % (static_cast<std::size_t>(n[1]) + 2)) - 1;
      const int k = static_cast<int>(idx / shape.stride_z()) - 1;
      spec.send_index.push_back((k * n[1] + j) * n[0] + i);
    });
    spec.send_offsets.push_back(static_cast<int>(spec.send_index.size()));
    spec.recv_offsets.push_back(spec.recv_offsets.back() + static_cast<int>(shape.face_size(f)));
  }
  std::vector<double> x(static_cast<std::size_t>(n[0] * n[1] * n[2]));
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i)
        x[static_cast<std::size_t>((k * n[1] + j) * n[0] + i)] =
            f(grid.offset()[0] + i, grid.offset()[1] + j, grid.offset()[2] + k, 0);
  for (ExchangeEngine engine : {ExchangeEngine::p2p, ExchangeEngine::neighbor, ExchangeEngine::blocking}) {
    desync::comm::TransportConfig t;
    desync_test::apply_transport(t);
    GhostExchange ex(grid.comm(), spec, engine, Progress::none, t);
    ex.start(x.data());
    ex.finish();
    // Slot s's ghosts are the halo across face faces[s], in Field's face order.
    std::size_t g = 0;
    for (int face : faces) {
      const int axis = face_axis(face);
      shape.for_each_halo(face, [&](std::size_t, std::size_t idx) {
        int c[3] = {static_cast<int>(idx % shape.stride_y()) - 1,
                    static_cast<int>((idx / shape.stride_y()) % (static_cast<std::size_t>(n[1]) + 2)) - 1,
                    static_cast<int>(idx / shape.stride_z()) - 1};
        int gl[3];
        for (int a = 0; a < 3; ++a) {
          const int G = grid.global()[a];
          gl[a] = ((grid.offset()[a] + c[a]) % G + G) % G;
        }
        EXPECT_EQ(ex.ghosts()[g], f(gl[0], gl[1], gl[2], 0))
            << "engine " << desync::comm::to_string(engine) << " face " << face_name(face) << " axis " << axis;
        ++g;
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// CG: the transport (and the engine) changes nothing in the iterates.

namespace {

struct Solve {
  std::vector<double> x;
  std::vector<double> residuals;
};

Solve solve(desync::linalg::Operator& A, const std::vector<double>& b) {
  desync::solvers::CgOptions o;
  o.iteration.tol = 1e-8;
  o.iteration.max_iters = 60;
  Solve s;
  s.x.assign(b.size(), 0.0);
  const auto r = desync::solvers::solve_cg(A, b, s.x, o);
  for (const auto& h : r.history) s.residuals.push_back(h.residual);
  return s;
}

}  // namespace

TEST(PlanCg, SameIteratesOverEveryTransportAndEngine) {
  TestComm comm;
  const int size = desync_test::world_size();
  CartGrid grid(comm, {6, 5, 4 * size}, choose_dims(size, {1, 1, 0}));
  const auto elasticity = desync::problems::assemble_elasticity3d(grid, {});
  const auto poisson_csr = desync::problems::assemble_poisson3d(grid);
  const auto poisson_b = desync::problems::poisson3d_rhs(grid);
  for (int problem = 0; problem < 3; ++problem) {
    auto make = [&](const desync::linalg::SpmvConfig& cfg) -> std::unique_ptr<desync::linalg::Operator> {
      if (problem == 0) return desync::problems::make_poisson3d_operator(grid, cfg);
      if (problem == 1) return desync::linalg::make_csr_operator(poisson_csr, cfg);
      return desync::linalg::make_csr_operator(elasticity.A, cfg);
    };
    const std::vector<double>& b = problem == 2 ? elasticity.b : poisson_b;
    desync::linalg::SpmvConfig reference;  // engine p2p over transport p2p
    Solve want;
    {
      auto A = make(reference);
      want = solve(*A, b);
    }
    ASSERT_GT(want.residuals.size(), 3u);
    for (ExchangeEngine engine : {ExchangeEngine::p2p, ExchangeEngine::neighbor, ExchangeEngine::blocking}) {
      desync::linalg::SpmvConfig cfg;
      cfg.engine = engine;
      desync_test::apply_transport(cfg);
      auto A = make(cfg);
      const Solve got = solve(*A, b);
      EXPECT_EQ(got.residuals, want.residuals) << "problem " << problem << " engine " << desync::comm::to_string(engine);
      EXPECT_EQ(got.x, want.x) << "problem " << problem << " engine " << desync::comm::to_string(engine);
    }
  }
}
