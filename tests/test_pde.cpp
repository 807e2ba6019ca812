// desync pde (Aditya et al., 2019): the asynchrony-tolerant halo approximation, the bounded
// algorithm against the synchronous one, the verification study with the seeded delay model, and
// real asynchrony within the bound. Runs over the transport the test variant names.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "channel_transport.hpp"
#include "test_util.hpp"
#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/problems/burgers3d.hpp"
#include "desync/solvers/pde/pde.hpp"

using namespace desync;
using solvers::DelayModel;
using solvers::PdeMode;
using solvers::PdeOptions;
using solvers::PdeProblem;
using solvers::PdeScheme;

namespace {

decomposition::CartGrid grid_1d(int n) {
  return decomposition::CartGrid(MPI_COMM_WORLD, {n, 1, 1}, {desync_test::world_size(), 1, 1}, {true, false, false});
}

decomposition::CartGrid grid_3d(int n) {
  return decomposition::CartGrid(MPI_COMM_WORLD, {n, n, n}, decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}),
                                 {true, true, true});
}

PdeOptions options(PdeProblem p) {
  PdeOptions o;
  o.problem = p;
  desync_test::apply_transport(o);
  return o;
}

bool bitwise_equal(const decomposition::Field& a, const decomposition::Field& b) {
  const auto& n = a.extent();
  int same = 1;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) same = same && a(i, j, k) == b(i, j, k);
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return same == 1;
}

// The default step of a bounded run with these options: what a synchronous run compared with it takes.
double bounded_step(PdeOptions o, const decomposition::CartGrid& grid) {
  o.mode = PdeMode::bounded;
  return solvers::pde_default_dt(o, solvers::pde_spacing(o, grid.global()));
}

// Least-squares slope of log(error) against log(points).
double slope(const std::vector<double>& n, const std::vector<double>& e) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double m = static_cast<double>(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double x = std::log(n[i]), y = std::log(e[i]);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  return (m * sxy - sx * sy) / (m * sxx - sx * sx);
}

}  // namespace

// With k = 0 the AT halo value is the newest level itself, bitwise; for a function linear in time
// the extrapolation to level n is exact for every k (integers: no rounding).
TEST(AtHalo, ZeroDelayIsTheStandardValueAndLinearInTimeIsExact) {
  for (double v : {0.1, -3.7, 1e300, 5e-324}) EXPECT_EQ(solvers::at_halo_value(v, 12345.678, 0), v);
  // f(t) = 7 + 3 t at levels t = n - k and n - k - 1, extrapolated to t = n = 40.
  for (std::int64_t k = 0; k <= 12; ++k) {
    const double newest = 7 + 3.0 * static_cast<double>(40 - k), previous = 7 + 3.0 * static_cast<double>(39 - k);
    EXPECT_EQ(solvers::at_halo_value(newest, previous, k), 7 + 3.0 * 40) << "k " << k;
  }
  // and the hand-checked case of Equation 1: k = 2, f^{n-2} = 5, f^{n-3} = 4: 3 * 5 - 2 * 4 = 7.
  EXPECT_EQ(solvers::at_halo_value(5, 4, 2), 7);
}

// The fused, tiled update kernel against the plain one written as Equation 4 reads: equal up to
// rounding (the fused kernel regroups the sums), for scalar counts across its 4-at-a-time passes,
// block shapes with partial tiles, and threads.
// Both store paths: streaming rows start at every alignment (37 points a row, 39 doubles apart; 7^3,
// 729 doubles a variable, shifts the alignment from one variable to the next) and end in partial
// vectors.
TEST(Pde, BurgersKernelMatchesTheReference) {
  using problems::BurgersStores;
  for (int scalars : {0, 1, 2, 4, 5, 9})
    for (const decomposition::Index3 ext :
         {decomposition::Index3{8, 8, 8}, decomposition::Index3{37, 70, 5}, decomposition::Index3{7, 7, 7}})
      for (int threads : {0, 2})
        for (BurgersStores stores : {BurgersStores::regular, BurgersStores::streaming})
        for (bool one_viscosity : {true, false}) {  // the velocities' fused path, and the general one
        const decomposition::Field layout(ext, {1, 1, 1});
        const int vars = 3 + scalars;
        const std::size_t S = layout.storage_size();
        std::vector<double> in(static_cast<std::size_t>(vars) * S), fast(in.size(), -1), ref(in.size(), -1);
        for (std::size_t e = 0; e < in.size(); ++e) in[e] = std::sin(0.37 * static_cast<double>(e)) + 0.2;
        std::vector<double> D(static_cast<std::size_t>(vars));
        for (int q = 0; q < vars; ++q) D[static_cast<std::size_t>(q)] = one_viscosity && q < 3 ? 0.1 : 0.1 / (1 + q % 3);
        const double dt = 1e-3, dx = 0.05;
        problems::burgers_step(layout, in.data(), fast.data(), vars, D.data(), dt, dx, threads, stores);
        problems::burgers_step_reference(layout, in.data(), ref.data(), vars, D.data(), dt, dx);
        double worst = 0;
        for (int q = 0; q < vars; ++q)
          for (int k = 0; k < ext[2]; ++k)
            for (int j = 0; j < ext[1]; ++j)
              for (int i = 0; i < ext[0]; ++i) {
                const std::size_t e = static_cast<std::size_t>(q) * S + layout.index(i, j, k);
                worst = std::max(worst, std::abs(fast[e] - ref[e]) / (1 + std::abs(ref[e])));
              }
        EXPECT_LT(worst, 1e-14) << "scalars " << scalars << " block " << ext[0] << "x" << ext[1] << "x" << ext[2]
                                << (one_viscosity ? " one viscosity" : "") << " " << problems::to_string(stores);
        // Halos are not written, except by streaming rows, which write the x-halo cells at their ends
        // with the input's values (whole cache lines stream).
        const bool streamed = stores == BurgersStores::streaming && problems::burgers_streaming_available();
        EXPECT_EQ(fast[layout.index(-1, 0, 0)], streamed ? in[layout.index(-1, 0, 0)] : -1);
        EXPECT_EQ(fast[layout.index(ext[0], ext[1] - 1, ext[2] - 1)],
                  streamed ? in[layout.index(ext[0], ext[1] - 1, ext[2] - 1)] : -1);
        EXPECT_EQ(fast[layout.index(0, -1, 0)], -1);
        EXPECT_EQ(fast[layout.index(0, 0, ext[2])], -1);
      }
}

// The decomposition changes no bit: each rank's block of a synchronous burgers3d run over all ranks
// is the same block of the run on one rank (every face exchanged, against one block whose faces are
// all its own; 14 points a side, so that blocks of 7 end rows in the kernel's remainder loop), and
// the moments, which read the final x-halos, agree up to the sums' order.
TEST(Pde, DecompositionChangesNoBit) {
  const int n = 14;
  auto grid = grid_3d(n);
  decomposition::CartGrid one(MPI_COMM_SELF, {n, n, n}, {1, 1, 1}, {true, true, true});
  auto o = options(PdeProblem::burgers3d);
  o.steps = 8;
  o.warmup = 2;
  const auto all = solvers::solve_pde(grid, o);
  const auto single = solvers::solve_pde(one, o);
  const auto& ext = grid.local();
  const auto& off = grid.offset();
  int wrong = 0;
  for (int k = 0; k < ext[2]; ++k)
    for (int j = 0; j < ext[1]; ++j)
      for (int i = 0; i < ext[0]; ++i) wrong += all.u(i, j, k) != single.u(off[0] + i, off[1] + j, off[2] + k);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(wrong, 0);
  EXPECT_NEAR(all.moment_dudx, single.moment_dudx, 1e-12 * single.moment_dudx);
  EXPECT_NEAR(all.moment_u, single.moment_u, 1e-12 * single.moment_u);
}

// A synchronous run's default step is --safety x the stability limit whatever --max-delay says; a
// bounded run's is smaller by min(1, 4 / (2L + 1)), whatever the scheme.
TEST(Pde, DefaultStepDependsOnlyOnWhatAppliesToTheMode) {
  auto grid = grid_3d(8);
  auto o = options(PdeProblem::burgers3d);
  o.steps = 2;
  o.warmup = 0;
  const double dx = solvers::pde_spacing(o, grid.global()), limit = solvers::pde_stable_dt(o, dx);
  for (int L : {0, 3, 10}) {
    o.max_delay = L;
    o.mode = PdeMode::sync;
    EXPECT_EQ(solvers::pde_default_dt(o, dx), 0.5 * limit) << "L = " << L;
    EXPECT_EQ(solvers::solve_pde(grid, o).dt, 0.5 * limit) << "L = " << L;
    o.mode = PdeMode::bounded;
    const double at = 0.5 * std::min(1.0, 4.0 / (2.0 * L + 1.0)) * limit;
    EXPECT_EQ(solvers::pde_default_dt(o, dx), at) << "L = " << L;
    o.scheme = PdeScheme::standard;
    EXPECT_EQ(solvers::pde_default_dt(o, dx), at) << "L = " << L;
    o.scheme = PdeScheme::at;
  }
  o.mode = PdeMode::sync;
  o.max_delay = 10;
  o.dt = 1e-4;  // given: taken as it is in either mode
  EXPECT_EQ(solvers::solve_pde(grid, o).dt, 1e-4);
}

// A box of 2 x 1 x 1 periods holds the cube's solution twice: a synchronous run on {2n, n, n} points
// is, along x modulo n, the run on the cube of n^3 on one rank (up to the rounding of sin and cos at
// x and x + 2π), and its moments are the cube's.
TEST(Pde, BoxOfPeriodsRepeatsTheCube) {
  const int n = 8;
  decomposition::CartGrid box(MPI_COMM_WORLD, {2 * n, n, n},
                              decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}), {true, true, true});
  decomposition::CartGrid cube(MPI_COMM_SELF, {n, n, n}, {1, 1, 1}, {true, true, true});
  auto o = options(PdeProblem::burgers3d);
  o.steps = 10;
  o.warmup = 2;
  const auto single = solvers::solve_pde(cube, o);
  o.periods = {2, 1, 1};
  const auto tiled = solvers::solve_pde(box, o);
  EXPECT_EQ(tiled.dx, single.dx);
  EXPECT_EQ(tiled.dt, single.dt);
  const auto& ext = box.local();
  const auto& off = box.offset();
  double worst = 0;
  for (int k = 0; k < ext[2]; ++k)
    for (int j = 0; j < ext[1]; ++j)
      for (int i = 0; i < ext[0]; ++i)
        worst = std::max(worst, std::abs(tiled.u(i, j, k) - single.u((off[0] + i) % n, off[1] + j, off[2] + k)));
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LT(worst, 1e-13);
  EXPECT_NEAR(tiled.moment_u, single.moment_u, 1e-12 * single.moment_u);
  EXPECT_NEAR(tiled.moment_dudx, single.moment_dudx, 1e-12 * single.moment_dudx);
  // The points must follow the periods: the same spacing on every axis.
  o.periods = {1, 1, 1};
  EXPECT_THROW(solvers::solve_pde(box, o), InputError);
}

// Streaming stores when a rank's two states exceed its share of the last-level cache (as the Jacobi
// sweep's prefetch).
TEST(Pde, StoresChoice) {
  using problems::BurgersStores;
  const core::CacheInfo l3{32u << 20, 2};
  const decomposition::Field small({48, 48, 48}, {1, 1, 1});   // 2 x 5 x 50^3 doubles: 9.5 MiB
  const decomposition::Field large({96, 96, 96}, {1, 1, 1});   // 2 x 5 x 98^3 doubles: 71.8 MiB
  const BurgersStores streams =
      problems::burgers_streaming_available() ? BurgersStores::streaming : BurgersStores::regular;
  EXPECT_EQ(problems::burgers_stores_for(small, 5, 1, 1, l3), BurgersStores::regular);
  EXPECT_EQ(problems::burgers_stores_for(small, 5, 64, 1, core::CacheInfo{32u << 20, 16}), streams);  // a 2 MiB share
  EXPECT_EQ(problems::burgers_stores_for(small, 5, 2, 2, l3), BurgersStores::regular);  // 2 threads: the whole 32 MiB
  EXPECT_EQ(problems::burgers_stores_for(large, 5, 1, 1, l3), streams);
  EXPECT_EQ(problems::burgers_stores_for(large, 5, 1, 1, core::CacheInfo{}), BurgersStores::regular);  // unknown cache
}

// A run with streaming stores is bitwise the run with regular stores (the same expression per value;
// the x-halo cells a streaming row also writes are refilled before they are read), synchronous and
// with the seeded delay model's old levels.
TEST(Pde, StreamingStoresChangeNoBit) {
  auto grid = grid_3d(12);
  for (const bool delays : {false, true}) {
    auto o = options(PdeProblem::burgers3d);
    o.steps = 10;
    o.warmup = 2;
    if (delays) {
      o.mode = PdeMode::bounded;
      o.max_delay = 3;
      o.delay_model = DelayModel::uniform;
    }
    o.stores = solvers::PdeStores::regular;
    const auto regular = solvers::solve_pde(grid, o);
    o.stores = solvers::PdeStores::streaming;
    const auto streaming = solvers::solve_pde(grid, o);
    EXPECT_EQ(regular.stores, solvers::PdeStores::regular);
    EXPECT_EQ(streaming.stores,
              problems::burgers_streaming_available() ? solvers::PdeStores::streaming : solvers::PdeStores::regular);
    EXPECT_TRUE(bitwise_equal(regular.u, streaming.u)) << (delays ? "delay model" : "sync");
    EXPECT_EQ(regular.moment_u, streaming.moment_u);
  }
}

// --mode bounded --max-delay 0 waits for level n every step: bitwise the synchronous run.
TEST(Pde, BoundedWithZeroDelayIsSyncBitwise) {
  for (auto p : {PdeProblem::advection_diffusion1d, PdeProblem::burgers3d}) {
    const bool one_d = p == PdeProblem::advection_diffusion1d;
    auto grid = one_d ? grid_1d(16 * desync_test::world_size()) : grid_3d(8);
    auto o = options(p);
    o.steps = 20;
    o.warmup = 5;
    o.max_delay = 0;
    o.scalars = 1;
    const auto sync = solvers::solve_pde(grid, o);
    o.mode = PdeMode::bounded;
    const auto bounded = solvers::solve_pde(grid, o);
    EXPECT_TRUE(bitwise_equal(sync.u, bounded.u)) << solvers::to_string(p);
    EXPECT_EQ(sync.moment_u, bounded.moment_u);
    for (const auto& f : bounded.faces) EXPECT_EQ(f.max, 0);
  }
}

// Threads split the pack, approximation and update loops, each value computed by one thread from the
// same operands: bitwise the unthreaded run.
TEST(Pde, ThreadsGiveTheSameFieldBitwise) {
  auto grid = grid_3d(64);  // faces of 64^2 x 5 values: large enough for the threaded pack
  auto o = options(PdeProblem::burgers3d);
  o.steps = 4;
  o.warmup = 1;
  const auto plain = solvers::solve_pde(grid, o);
  o.threads = 2;
  const auto threaded = solvers::solve_pde(grid, o);
  EXPECT_TRUE(bitwise_equal(plain.u, threaded.u));
}

// The delay model with L = 1 draws k = 0 only: the synchronous run again, bitwise.
TEST(Pde, DelayModelWithoutDelayIsSyncBitwise) {
  auto grid = grid_1d(16 * desync_test::world_size());
  auto o = options(PdeProblem::advection_diffusion1d);
  o.max_delay = 1;
  o.steps = 30;
  const auto sync = solvers::solve_pde(grid, o);
  o.mode = PdeMode::bounded;
  o.delay_model = DelayModel::uniform;
  const auto model = solvers::solve_pde(grid, o);
  EXPECT_TRUE(bitwise_equal(sync.u, model.u));
}

// The verification study of their section 3.2 (Figure 2) with the seeded delay model (delays drawn
// from 0..9 every step at every process boundary): synchronous and AT errors fall with slope -2,
// the standard scheme with the same delays loses an order.
TEST(Pde, VerificationSlopesWithTheDelayModel) {
  const std::vector<double> points = {32, 64, 128};
  std::vector<double> e_sync, e_std, e_at;
  for (double n : points) {
    auto grid = grid_1d(static_cast<int>(n));
    auto o = options(PdeProblem::advection_diffusion1d);
    o.end_time = 0.25;
    o.dt = bounded_step(o, grid);  // the three configurations at one step
    e_sync.push_back(solvers::solve_pde(grid, o).error_mean);
    o.mode = PdeMode::bounded;
    o.delay_model = DelayModel::uniform;
    o.scheme = PdeScheme::standard;
    e_std.push_back(solvers::solve_pde(grid, o).error_mean);
    o.scheme = PdeScheme::at;
    e_at.push_back(solvers::solve_pde(grid, o).error_mean);
  }
  const double s_sync = slope(points, e_sync), s_at = slope(points, e_at), s_std = slope(points, e_std);
  EXPECT_NEAR(s_sync, -2.0, 0.2) << "sync errors " << e_sync[0] << " " << e_sync[1] << " " << e_sync[2];
  EXPECT_NEAR(s_at, -2.0, 0.2) << "AT errors " << e_at[0] << " " << e_at[1] << " " << e_at[2];
  EXPECT_GT(s_std, -1.3) << "standard errors " << e_std[0] << " " << e_std[1] << " " << e_std[2];
  EXPECT_GT(e_std.back(), 5 * e_sync.back());
  EXPECT_LT(e_at.back(), 1.5 * e_sync.back());
}

// Real asynchrony: no delay ever exceeds L, and Burgers' moments stay close to the synchronous
// run's (their Figure 6: within 0.005 % at 240^3; here a few steps at 12^3).
// Also with a single receive posted per neighbour over p2p (--p2p-receives 1: later levels wait in
// MPI's queue), the rest being the default's L.
TEST(Pde, RealAsynchronyStaysWithinTheBound) {
  for (int receives : {0, 1}) {
    SCOPED_TRACE("p2p_receives " + std::to_string(receives));
    auto grid = grid_3d(12);
    auto o = options(PdeProblem::burgers3d);
    o.steps = 60;
    o.warmup = 30;
    o.max_delay = 3;
    o.dt = bounded_step(o, grid);  // the synchronous reference at the bounded run's step
    const auto sync = solvers::solve_pde(grid, o);
    o.mode = PdeMode::bounded;
    o.transport.posted_receives = receives;
    const auto ws = solvers::solve_pde(grid, o);
    long count = 0;
    for (const auto& f : ws.faces) {
      EXPECT_LE(f.max, o.max_delay);
      EXPECT_GE(f.mean(), 0.0);
      count += f.count;
    }
    EXPECT_EQ(count, static_cast<long>(ws.faces.size()) * ws.steps);  // one record per face and step
    EXPECT_EQ(ws.pending_at_fallbacks, 0);
    EXPECT_NEAR(ws.moment_u, sync.moment_u, 1e-4 * sync.moment_u);
    EXPECT_NEAR(ws.moment_dudx, sync.moment_dudx, 1e-3 * sync.moment_dudx);
    const auto d = solvers::pde_field_difference(grid, ws.u, sync.u);
    EXPECT_LT(d[1], 1e-3);
  }
}

// --jitter-basis step: the warm-up runs without jitter and gives each rank its step time (the median
// of its warm-up steps); every timed step then pauses twice that (probability 1 here). The default
// basis pauses after every step, warm-up included, twice the step's update.
TEST(Pde, JitterStepBasisPausesTwiceTheWarmupStep) {
  auto grid = grid_3d(8);
  auto o = options(PdeProblem::burgers3d);
  o.scalars = 1;
  o.warmup = 6;
  o.steps = 4;
  o.noise.jitter = true;
  o.noise.jitter_probability = 1.0;
  o.noise.jitter_factor = 2.0;
  const auto compute = solvers::solve_pde(grid, o);
  EXPECT_EQ(compute.noise_pauses, 10);
  EXPECT_EQ(compute.jitter_step_seconds, 0.0);
  o.noise.jitter_basis = core::JitterBasis::step;
  const auto step = solvers::solve_pde(grid, o);
  EXPECT_EQ(step.noise_pauses, 4);
  EXPECT_GT(step.jitter_step_seconds, 0.0);
  EXPECT_GE(step.times.noise, 4 * 2 * step.jitter_step_seconds * 0.999);
  // The step time holds the update and more: at least the update's share of a timed step.
  EXPECT_GE(step.jitter_step_seconds, 0.5 * step.times.compute / static_cast<double>(o.steps));
  EXPECT_TRUE(bitwise_equal(compute.u, step.u)) << "noise changes timing, never the numbers";
}

TEST(Pde, BadInputIsRefusedOnEveryRank) {
  auto grid = grid_1d(16 * desync_test::world_size());
  auto o = options(PdeProblem::advection_diffusion1d);
  o.max_delay = -1;
  EXPECT_THROW(solvers::solve_pde(grid, o), InputError);
  o.max_delay = 2;
  o.dt = 1.0;  // far above the limit
  EXPECT_THROW(solvers::solve_pde(grid, o), InputError);
  o.dt = 0;
  o.delay_model = DelayModel::uniform;  // sync mode
  EXPECT_THROW(solvers::solve_pde(grid, o), InputError);
  if (desync_test::world_size() > 1) {
    auto small = grid_1d(desync_test::world_size());  // one point per rank: the stencil needs two
    EXPECT_THROW(solvers::solve_pde(small, options(PdeProblem::advection_diffusion1d)), InputError);
  }
}
