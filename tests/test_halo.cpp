// Halo exchange: every halo cell with a neighbour receives exactly that neighbour's boundary value;
// halos on the global boundary (and the unused edge/corner cells) are never written.
//
// Interior cells hold value(global index, level) = global_index + 1 + level * 1e6, so a halo value
// identifies both the cell it came from and the time level it was sent at. Halo cells start with
// a unique negative sentinel.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "desync/communication/halo_exchange.hpp"
#include "desync/communication/request_ledger.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "channel_transport.hpp"  // the transport under test (ctest runs every one)
#include "test_util.hpp"

using namespace desync::decomposition;
using namespace desync::comm;
using desync_test::TestComm;

namespace {

constexpr double level_scale = 1e6;

double value(long long gidx, std::int64_t level) {
  return static_cast<double>(gidx + 1) + static_cast<double>(level) * level_scale;
}
double sentinel(std::size_t storage_index) { return -1.0 - static_cast<double>(storage_index); }

long long global_index_of(const CartGrid& grid, int i, int j, int k) {
  const auto& g = grid.global();
  const auto& o = grid.offset();
  return (static_cast<long long>(o[2] + k) * g[1] + (o[1] + j)) * g[0] + (o[0] + i);
}

/// Interior: value(global index, level); everything else (halo, edges, corners): sentinel.
void fill(const CartGrid& grid, Field& u, std::int64_t level) {
  const auto& n = u.extent();
  for (int k = -1; k <= n[2]; ++k)
    for (int j = -1; j <= n[1]; ++j)
      for (int i = -1; i <= n[0]; ++i) {
        const bool inside = i >= 0 && i < n[0] && j >= 0 && j < n[1] && k >= 0 && k < n[2];
        u(i, j, k) = inside ? value(global_index_of(grid, i, j, k), level) : sentinel(u.index(i, j, k));
      }
}

/// Which face's halo (i, j, k) belongs to: -1 for interior, -2 for edge/corner cells.
int halo_face(const Index3& n, int i, int j, int k) {
  const int c[3] = {i, j, k};
  int face = -1, outside = 0;
  for (int a = 0; a < 3; ++a) {
    if (c[a] < 0) face = 2 * a, ++outside;
    if (c[a] >= n[a]) face = 2 * a + 1, ++outside;
  }
  return outside == 0 ? -1 : outside == 1 ? face : -2;
}

/// How a halo across a face with a neighbour may be filled.
enum class Expect {
  exact_level,  // every cell: value(gidx, level[f])
  per_element,  // each cell from one level in [level[f], max_level] (racy)
};

/// Checks the whole storage of u; returns "" or a description of the first mismatches.
std::string check_field(const CartGrid& grid, const Field& u, std::int64_t own_level,
                        const std::int64_t* face_level, std::int64_t max_level, Expect how) {
  const auto& n = u.extent();
  std::ostringstream err;
  int bad = 0;
  auto report = [&](int i, int j, int k, double got, const std::string& want) {
    if (bad++ < 8)
      err << "  cell (" << i << "," << j << "," << k << "): got " << got << ", want " << want << "\n";
  };
  for (int k = -1; k <= n[2]; ++k)
    for (int j = -1; j <= n[1]; ++j)
      for (int i = -1; i <= n[0]; ++i) {
        const double got = u(i, j, k);
        const int f = halo_face(n, i, j, k);
        if (f == -1) {
          const double want = value(global_index_of(grid, i, j, k), own_level);
          if (got != want) report(i, j, k, got, "interior " + std::to_string(want));
        } else if (f == -2 || grid.on_global_boundary(f)) {
          const double want = sentinel(u.index(i, j, k));
          if (got != want) report(i, j, k, got, "untouched " + std::to_string(want));
        } else {
          const long long gidx = global_index_of(grid, i, j, k);  // lies in the neighbour's block
          if (how == Expect::exact_level) {
            const double want = value(gidx, face_level[f]);
            if (got != want) report(i, j, k, got, std::string("neighbour value ") + std::to_string(want));
          } else {
            const double lv = std::floor(got / level_scale);
            const bool ok = got == value(gidx, static_cast<std::int64_t>(lv)) && lv >= face_level[f] &&
                            lv <= static_cast<double>(max_level);
            if (!ok)
              report(i, j, k, got,
                     "value(" + std::to_string(gidx) + ", level in [" + std::to_string(face_level[f]) + ", " +
                         std::to_string(max_level) + "])");
          }
        }
      }
  if (bad == 0) return "";
  std::ostringstream out;
  out << "rank " << grid.rank() << ": " << bad << " wrong cell(s)\n" << err.str();
  return out.str();
}

struct Case {
  Index3 global;
  Index3 hint;
};

// Uneven local sizes; 1D, 2D and 3D process grids.
const Case cases[] = {
    {{7, 5, 6}, {0, 0, 0}},
    {{9, 4, 3}, {0, 1, 1}},
    {{5, 7, 11}, {1, 0, 0}},
    {{6, 9, 5}, {0, 0, 1}},
};

std::string name(const Case& c) {
  return std::to_string(c.global[0]) + "x" + std::to_string(c.global[1]) + "x" + std::to_string(c.global[2]) +
         " hint " + std::to_string(c.hint[0]) + "," + std::to_string(c.hint[1]) + "," + std::to_string(c.hint[2]);
}

class Halo : public ::testing::TestWithParam<int> {
 protected:
  const Case& c() const { return cases[GetParam()]; }
  Index3 dims() const { return choose_dims(desync_test::world_size(), c().hint); }
};

std::vector<std::int64_t> face_levels(const HaloExchange& h) {
  std::vector<std::int64_t> lv(num_faces);
  for (int f = 0; f < num_faces; ++f) lv[static_cast<std::size_t>(f)] = h.halo_level(f);
  return lv;
}

/// async / racy: every rank pushes level `level` until each of its halos holds level >= `level`.
bool push_pull_until(const CartGrid& grid, HaloExchange& h, Field& u, std::int64_t level) {
  return desync_test::poll_until([&] {
    h.push(u, level);
    h.pull(u, level);
    for (int f = 0; f < num_faces; ++f)
      if (!grid.on_global_boundary(f) && h.halo_level(f) < level) return false;
    return true;
  });
}

void run_async_rounds(const CartGrid& grid, HaloMode mode, int inflight, int chunks) {
  const long before = RequestLedger::outstanding();
  {
    PlanExchangeConfig config;
    config.mode = mode;
    config.transport.max_in_flight = inflight;
    config.racy_chunks = chunks;
    HaloExchange h(grid, desync_test::with_transport(config));
    EXPECT_EQ(h.neighbours(), grid.num_neighbours());
    Field u(grid.local());
    const int rounds = 6;
    for (int level = 1; level <= rounds; ++level) {
      fill(grid, u, level);
      ASSERT_TRUE(push_pull_until(grid, h, u, level)) << "rank " << grid.rank() << ": level " << level
                                                      << " did not arrive within the time limit";
      auto lv = face_levels(h);
      for (int f = 0; f < num_faces; ++f) {
        if (grid.on_global_boundary(f)) {
          EXPECT_EQ(lv[static_cast<std::size_t>(f)], -1) << face_name(f);
        } else {
          // A neighbour can be at most one round ahead.
          EXPECT_GE(lv[static_cast<std::size_t>(f)], level) << face_name(f);
          EXPECT_LE(lv[static_cast<std::size_t>(f)], level + 1) << face_name(f);
        }
      }
      // async: whole messages, so exactly the level reported for the face; racy: element-wise,
      // each element from one level between the face's oldest and the newest one sent.
      const Expect how = mode == HaloMode::racy ? Expect::per_element : Expect::exact_level;
      EXPECT_EQ(check_field(grid, u, level, lv.data(), level + 1, how), "") << "level " << level;
    }
    // A rank may have met its condition without its own last message having left (push skips
    // faces without a free slot): keep pushing the last level until every rank is done. Nobody
    // sends beyond the last round, so afterwards every halo holds exactly that level.
    MPI_Request done = MPI_REQUEST_NULL;
    MPI_Ibarrier(grid.comm(), &done);
    ASSERT_TRUE(desync_test::poll_until([&] {
      h.push(u, rounds);
      h.pull(u, rounds);
      int flag = 0;
      MPI_Test(&done, &flag, MPI_STATUS_IGNORE);
      return flag != 0;
    })) << "final round did not complete";
    auto lv = face_levels(h);
    for (int f = 0; f < num_faces; ++f) {
      if (!grid.on_global_boundary(f)) {
        EXPECT_EQ(lv[static_cast<std::size_t>(f)], rounds) << face_name(f);
      }
    }
    EXPECT_EQ(check_field(grid, u, rounds, lv.data(), rounds, Expect::exact_level), "");

    // Halo data also installs into a second buffer (the solver's other field).
    Field w(grid.local());
    fill(grid, w, rounds);
    h.refresh(w);
    EXPECT_EQ(check_field(grid, w, rounds, lv.data(), rounds, Expect::exact_level), "");

    const auto& st = h.stats();
    // Every push either sends or skips (no free slot) each face; with one message in flight a
    // round's send may be skipped, so only the sum is bounded.
    EXPECT_GE(st.messages_sent + st.sends_skipped, static_cast<long>(rounds) * h.neighbours());
    EXPECT_GE(st.messages_sent, static_cast<long>(h.neighbours()));
    h.close();
    h.close();  // idempotent
  }
  EXPECT_EQ(RequestLedger::outstanding(), before);
}

}  // namespace

TEST_P(Halo, BlockingExchangeDeliversNeighbourBoundary) {
  TestComm comm;
  const Index3 d = dims();
  if (!check_split(c().global, d).empty()) GTEST_SKIP() << "too many ranks for " << name(c());
  CartGrid grid(comm, c().global, d);
  Field u(grid.local());
  fill(grid, u, 3);
  exchange_halos_blocking(grid, u);
  std::vector<std::int64_t> lv(num_faces, 3);
  EXPECT_EQ(check_field(grid, u, 3, lv.data(), 3, Expect::exact_level), "") << name(c());
  // A second exchange after the interior changed delivers the new values.
  fill(grid, u, 4);
  exchange_halos_blocking(grid, u);
  std::fill(lv.begin(), lv.end(), 4);
  EXPECT_EQ(check_field(grid, u, 4, lv.data(), 4, Expect::exact_level), "") << name(c());
}

TEST_P(Halo, SyncExchangeDeliversNeighbourBoundaryOfThatLevel) {
  TestComm comm;
  const Index3 d = dims();
  if (!check_split(c().global, d).empty()) GTEST_SKIP() << "too many ranks for " << name(c());
  CartGrid grid(comm, c().global, d);
  {
    PlanExchangeConfig config;
    config.racy_chunks = 1;
    HaloExchange h(grid, desync_test::with_transport(config));
    EXPECT_EQ(h.neighbours(), grid.num_neighbours());
    Field u(grid.local());
    for (int f = 0; f < num_faces; ++f) EXPECT_EQ(h.halo_level(f), -1) << "before any exchange";
    const int levels = 30;  // many back-to-back swaps: a neighbour running ahead shows up
    for (int level = 0; level < levels; ++level) {
      fill(grid, u, level);
      h.exchange(u, level);
      auto lv = face_levels(h);
      for (int f = 0; f < num_faces; ++f)
        EXPECT_EQ(lv[static_cast<std::size_t>(f)], grid.on_global_boundary(f) ? -1 : level) << face_name(f);
      std::vector<std::int64_t> want(num_faces, level);
      EXPECT_EQ(check_field(grid, u, level, want.data(), level, Expect::exact_level), "")
          << name(c()) << " level " << level;
    }
    EXPECT_EQ(h.stats().messages_sent, static_cast<long>(levels) * grid.num_neighbours());
    EXPECT_EQ(h.stats().messages_received, static_cast<long>(levels) * grid.num_neighbours());
    EXPECT_EQ(h.stats().sends_skipped, 0);
    // Staleness 0: every halo used was of the requested level.
    EXPECT_EQ(h.stats().delay.max, 0);
  }
  EXPECT_EQ(RequestLedger::outstanding(), 0);
}

TEST_P(Halo, AsyncPushPullDeliversWholeMessages) {
  TestComm comm;
  const Index3 d = dims();
  if (!check_split(c().global, d).empty()) GTEST_SKIP() << "too many ranks for " << name(c());
  CartGrid grid(comm, c().global, d);
  run_async_rounds(grid, HaloMode::async, 2, 4);
}

TEST_P(Halo, AsyncPushPullWithOneMessageInFlight) {
  TestComm comm;
  const Index3 d = dims();
  if (!check_split(c().global, d).empty()) GTEST_SKIP() << "too many ranks for " << name(c());
  CartGrid grid(comm, c().global, d);
  run_async_rounds(grid, HaloMode::async, 1, 4);
}

TEST_P(Halo, RacyPushPullDeliversNeighbourValues) {
  TestComm comm;
  const Index3 d = dims();
  if (!check_split(c().global, d).empty()) GTEST_SKIP() << "too many ranks for " << name(c());
  CartGrid grid(comm, c().global, d);
  run_async_rounds(grid, HaloMode::racy, 2, 3);
}

TEST_P(Halo, RacyWithMoreChunksThanFaceCells) {
  TestComm comm;
  const Index3 d = dims();
  if (!check_split(c().global, d).empty()) GTEST_SKIP() << "too many ranks for " << name(c());
  CartGrid grid(comm, c().global, d);
  run_async_rounds(grid, HaloMode::racy, 3, 1000);
}

INSTANTIATE_TEST_SUITE_P(UnevenGrids, Halo, ::testing::Range(0, static_cast<int>(std::size(cases))));

TEST(Field, LayoutAndFaceOperations) {
  Field u({4, 3, 2}, 7.5);
  EXPECT_EQ(u.storage_size(), 6u * 5u * 4u);
  EXPECT_EQ(u.stride_y(), 6u);
  EXPECT_EQ(u.stride_z(), 30u);
  EXPECT_EQ(u.index(-1, -1, -1), 0u);
  EXPECT_EQ(u.index(0, 0, 0), 1u + 6u + 30u);
  EXPECT_EQ(u.index(3, 2, 1), 4u + 3u * 6u + 2u * 30u);
  for (std::size_t s = 0; s < u.storage_size(); ++s) EXPECT_EQ(u.data()[s], 7.5);
  EXPECT_EQ(u.face_size(x_lo), 6u);
  EXPECT_EQ(u.face_size(y_hi), 8u);
  EXPECT_EQ(u.face_size(z_lo), 12u);

  const Index3 n = u.extent();
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) u(i, j, k) = 100 * k + 10 * j + i;
  // pack_boundary: x fastest within the face, in the order for_each_boundary walks.
  std::vector<double> out(u.face_size(x_hi));
  u.pack_boundary(x_hi, out.data());
  const double want_xhi[] = {3, 13, 23, 103, 113, 123};
  for (std::size_t m = 0; m < out.size(); ++m) EXPECT_EQ(out[m], want_xhi[m]) << m;
  out.resize(u.face_size(z_lo));
  u.pack_boundary(z_lo, out.data());
  for (int j = 0; j < n[1]; ++j)
    for (int i = 0; i < n[0]; ++i) EXPECT_EQ(out[static_cast<std::size_t>(j * n[0] + i)], 10 * j + i);
  // unpack_halo writes exactly the halo layer of that face.
  std::vector<double> in(u.face_size(y_lo));
  for (std::size_t m = 0; m < in.size(); ++m) in[m] = -1.0 - static_cast<double>(m);
  Field before = u;
  u.unpack_halo(y_lo, in.data());
  std::size_t changed = 0;
  for (std::size_t s = 0; s < u.storage_size(); ++s) changed += u.data()[s] != before.data()[s] ? 1 : 0;
  EXPECT_EQ(changed, in.size());
  for (int k = 0; k < n[2]; ++k)
    for (int i = 0; i < n[0]; ++i) EXPECT_EQ(u(i, -1, k), -1.0 - (k * n[0] + i));
  // copy_halo copies that layer only.
  Field w({4, 3, 2}, 0.0);
  w.copy_halo(y_lo, u);
  for (int k = 0; k < n[2]; ++k)
    for (int i = 0; i < n[0]; ++i) EXPECT_EQ(w(i, -1, k), u(i, -1, k));
  EXPECT_EQ(w(0, 0, 0), 0.0);
  EXPECT_EQ(w(0, 3, 0), 0.0);
}
