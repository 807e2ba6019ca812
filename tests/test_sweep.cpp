// The Jacobi sweep kernel against the element-by-element reference, and hand-checked cases.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "desync/decomposition/field.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/solvers/jacobi/sweep.hpp"
#include "jacobi_reference.hpp"

using desync::decomposition::Field;
using desync::decomposition::Index3;
using namespace desync::solvers;

namespace {

/// Random values over the whole storage (halo included), with exact zeros and negative values.
Field random_field(Index3 n, unsigned seed) {
  Field u(n);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-3.0, 5.0);
  for (std::size_t s = 0; s < u.storage_size(); ++s) {
    const auto pick = gen() % 7;
    u.data()[s] = pick == 0 ? 0.0 : pick == 1 ? -0.0 : dist(gen);
  }
  return u;
}

/// Number of non-interior storage cells that are not `value`.
long halo_cells_not(const Field& a, double value) {
  const auto& n = a.extent();
  long bad = 0;
  for (int k = -1; k <= n[2]; ++k)
    for (int j = -1; j <= n[1]; ++j)
      for (int i = -1; i <= n[0]; ++i) {
        const bool inside = i >= 0 && i < n[0] && j >= 0 && j < n[1] && k >= 0 && k < n[2];
        if (!inside && a(i, j, k) != value) ++bad;
      }
  return bad;
}

std::string str(const Index3& n) {
  return std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]);
}

// Extents around SIMD widths and odd sizes, including single-cell axes.
const Index3 extents[] = {{1, 1, 1}, {2, 3, 4},  {3, 3, 3},  {7, 5, 4},   {8, 8, 8},
                          {9, 2, 5}, {17, 3, 2}, {1, 9, 7},  {33, 4, 3},  {12, 12, 12}};

}  // namespace

TEST(Sweep, OptimisedKernelEqualsReferenceBitwise) {
  unsigned seed = 1;
  for (const auto& n : extents) {
    const Field u = random_field(n, seed++);
    const double sentinel = 123.25;
    Field fast(n, sentinel), ref(n, sentinel), fused(n, sentinel);
    jacobi_sweep(u, fast);
    jacobi_sweep_ref(u, ref);
    const double r_fused = jacobi_sweep_residual(u, fused);
    EXPECT_EQ(desync_test::differing_cells(fast, ref), 0) << str(n);
    EXPECT_EQ(desync_test::differing_cells(fused, ref), 0) << str(n);
    // u_new's halo is left untouched.
    EXPECT_EQ(halo_cells_not(fast, sentinel), 0) << str(n);
    EXPECT_EQ(halo_cells_not(fused, sentinel), 0) << str(n);
    EXPECT_EQ(halo_cells_not(ref, sentinel), 0) << str(n);
    // The fused residual is the residual of u (the input), not of u_new.
    const double r_ref = jacobi_residual_sq_ref(u);
    ASSERT_GT(r_ref, 0.0);
    EXPECT_NEAR(r_fused, r_ref, 1e-12 * r_ref) << str(n);
    EXPECT_NEAR(desync::problems::laplace_residual_sq(u), r_ref, 1e-12 * r_ref) << str(n);
  }
}

// Software prefetch only moves loads earlier: the prefetching kernels give bitwise the reference's
// u_new, the same residual as without prefetch, leave u_new's halo alone, and stay inside the
// fields on blocks whose plane k + 2 is the halo or beyond (1 and 2 planes).
TEST(Sweep, PrefetchingKernelsEqualReferenceBitwise) {
  unsigned seed = 40;
  std::vector<Index3> cases(std::begin(extents), std::end(extents));
  // Planes large enough for the prefetch distances to fall inside the block: 152^2 doubles (185 KiB,
  // 3 planes ahead in u, 2 in u_new) and 303 x 143 (339 KiB, 2 and 1), both with k + distance
  // reaching the halo plane and beyond.
  cases.push_back({150, 150, 6});
  cases.push_back({301, 141, 4});
  for (const auto& n : cases) {
    const Field u = random_field(n, seed++);
    const double sentinel = -7.5;
    Field ref(n, sentinel), plain(n, sentinel), pf(n, sentinel), pf_fused(n, sentinel), pf_planes(n, sentinel);
    jacobi_sweep_ref(u, ref);
    const double r_plain = jacobi_sweep_residual(u, plain, SweepPrefetch::off);
    jacobi_sweep(u, pf, SweepPrefetch::on);
    const double r_pf = jacobi_sweep_residual(u, pf_fused, SweepPrefetch::on);
    // Slab by slab, as the OpenMP solver sweeps: planes [0, h) then [h, n).
    const int h = n[2] / 2;
    double r_planes = jacobi_sweep_residual_planes(u, pf_planes, 0, h, SweepPrefetch::on);
    r_planes += jacobi_sweep_residual_planes(u, pf_planes, h, n[2], SweepPrefetch::on);
    EXPECT_EQ(desync_test::differing_cells(pf, ref), 0) << str(n);
    EXPECT_EQ(desync_test::differing_cells(pf_fused, ref), 0) << str(n);
    EXPECT_EQ(desync_test::differing_cells(pf_planes, ref), 0) << str(n);
    EXPECT_EQ(halo_cells_not(pf, sentinel), 0) << str(n);
    EXPECT_EQ(halo_cells_not(pf_planes, sentinel), 0) << str(n);
    EXPECT_EQ(r_pf, r_plain) << str(n);  // same accumulation order
    const double r_ref = jacobi_residual_sq_ref(u);
    EXPECT_NEAR(r_planes, r_ref, 1e-12 * r_ref) << str(n);
  }
}

// The automatic choice: on exactly when the two fields exceed the rank's share of the cache.
TEST(Sweep, PrefetchChoiceFollowsCacheShare) {
  const CacheInfo l3{32u << 20, 2};  // 32 MiB shared by 2 CPUs, as on the development machine
  const Field small({50, 50, 50}), mid({100, 100, 100}), big({200, 200, 200});
  // 2 x 52^3 doubles = 2.1 MiB; 2 x 102^3 = 16.2 MiB; 2 x 202^3 = 126 MiB.
  EXPECT_EQ(sweep_prefetch_for(small, 1, 1, l3), SweepPrefetch::off);
  EXPECT_EQ(sweep_prefetch_for(mid, 1, 1, l3), SweepPrefetch::off);    // the whole 32 MiB
  EXPECT_EQ(sweep_prefetch_for(mid, 2, 1, l3), SweepPrefetch::on);     // 16 MiB each
  EXPECT_EQ(sweep_prefetch_for(mid, 8, 1, l3), SweepPrefetch::on);     // sharers capped at 2 CPUs
  EXPECT_EQ(sweep_prefetch_for(mid, 1, 2, l3), SweepPrefetch::off);    // one rank, two threads
  EXPECT_EQ(sweep_prefetch_for(big, 1, 1, l3), SweepPrefetch::on);
  EXPECT_EQ(sweep_prefetch_for(small, 64, 1, CacheInfo{32u << 20, 8}), SweepPrefetch::off);  // 4 MiB share
  EXPECT_EQ(sweep_prefetch_for(big, 1, 1, CacheInfo{}), SweepPrefetch::off);  // unknown cache
  // The machine's own answer is either unknown or a plausible cache.
  const CacheInfo here = last_level_cache();
  if (here.bytes != 0) {
    EXPECT_GE(here.bytes, 64u * 1024);
    EXPECT_GE(here.shared_by, 1);
  }
}

TEST(Sweep, InputIsNotModified) {
  const Field u = random_field({7, 5, 4}, 99);
  Field copy = u, out({7, 5, 4});
  jacobi_sweep(copy, out);
  jacobi_sweep_residual(copy, out);
  EXPECT_EQ(std::memcmp(copy.data(), u.data(), u.storage_size() * sizeof(double)), 0);
}

TEST(Sweep, SingleCellWithKnownHalo) {
  Field u({1, 1, 1}, 0.0);
  u(-1, 0, 0) = 1;
  u(1, 0, 0) = 2;
  u(0, -1, 0) = 3;
  u(0, 1, 0) = 4;
  u(0, 0, -1) = 5;
  u(0, 0, 1) = 6;
  u(0, 0, 0) = 7;
  Field a({1, 1, 1}), b({1, 1, 1}), c({1, 1, 1});
  jacobi_sweep(u, a);
  jacobi_sweep_ref(u, b);
  const double r = jacobi_sweep_residual(u, c);
  const double want = (1.0 + 2.0 + 3.0 + 4.0 + 5.0 + 6.0) * (1.0 / 6.0);
  EXPECT_EQ(a(0, 0, 0), want);
  EXPECT_EQ(b(0, 0, 0), want);
  EXPECT_EQ(c(0, 0, 0), want);
  EXPECT_NEAR(a(0, 0, 0), 3.5, 1e-15);
  EXPECT_EQ(r, 441.0);  // (21 - 6 * 7)^2
  EXPECT_EQ(jacobi_residual_sq_ref(u), 441.0);
}

// 3x3x3 interior, halos included, from f(i,j,k): the discrete Laplacian of a linear function is
// exactly 0, and of i^2 + j^2 + k^2 exactly 6 in every cell.
TEST(Sweep, PolynomialFieldsThreeCubed) {
  const Index3 n{3, 3, 3};
  Field lin(n), quad(n);
  for (int k = -1; k <= 3; ++k)
    for (int j = -1; j <= 3; ++j)
      for (int i = -1; i <= 3; ++i) {
        lin(i, j, k) = 1.0 * i + 10.0 * j + 100.0 * k + 1000.0;
        quad(i, j, k) = 1.0 * i * i + 1.0 * j * j + 1.0 * k * k;
      }
  Field out(n);
  EXPECT_EQ(jacobi_sweep_residual(lin, out), 0.0);
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(out(i, j, k), lin(i, j, k), 1e-12 * lin(i, j, k));
  EXPECT_EQ(jacobi_sweep_residual(quad, out), 27.0 * 36.0);
  EXPECT_EQ(jacobi_residual_sq_ref(quad), 27.0 * 36.0);
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(out(i, j, k), quad(i, j, k) + 1.0, 1e-13) << i << j << k;
}

TEST(Sweep, NonFiniteValuesPropagate) {
  Field u({4, 4, 4}, 1.0);
  u(2, 2, 2) = std::nan("");
  Field out({4, 4, 4});
  const double r = jacobi_sweep_residual(u, out);
  EXPECT_TRUE(std::isnan(r));
  EXPECT_TRUE(std::isnan(out(1, 2, 2)));
  EXPECT_FALSE(std::isnan(out(0, 0, 0)));
}
