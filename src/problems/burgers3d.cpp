// Burgers' equation with passive scalars, Equation 4 of Aditya et al. (2019): the initial field, the
// stability limit and the forward Euler step of the central-difference right-hand side; see
// include/desync/problems/burgers3d.hpp.
#include "desync/problems/burgers3d.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace desync::problems {

using decomposition::Field;

const char* to_string(BurgersStores s) { return s == BurgersStores::streaming ? "streaming" : "regular"; }

double Burgers3D::diffusivity_of(int q) const {
  if (q < 3) return viscosity;
  const auto k = static_cast<std::size_t>(q - 3);
  return k < diffusivity.size() ? diffusivity[k] : viscosity / static_cast<double>(k + 1);
}

double Burgers3D::initial(int q, double x, double y, double z) const {
  constexpr double two_pi = 2.0 * std::numbers::pi;
  double v = 0;
  for (int m : {1, 2, 4}) {
    const double a = 1.0 / m;
    switch (q) {
      case 0: v += a * std::sin(m * x) * std::cos(m * y) * std::cos(m * z); break;
      case 1: v -= a * std::cos(m * x) * std::sin(m * y) * std::cos(m * z); break;
      case 2: v += 0.5 * a * std::cos(m * x) * std::cos(m * y) * std::sin(m * z); break;
      default: {
        const double shift = two_pi * (q - 3) / std::max(scalars, 1);
        v += a * std::sin(m * (x + shift)) * std::cos(m * y + shift) * std::cos(m * z);
      }
    }
  }
  return v;
}

double Burgers3D::stable_dt(double h) const {
  double dmax = 0, dmin = HUGE_VAL;
  for (int q = 0; q < variables(); ++q) {
    dmax = std::max(dmax, diffusivity_of(q));
    dmin = std::min(dmin, diffusivity_of(q));
  }
  // min(h² / (2 d D_max), 2 D_min / U²), d = 3
  double limit = dmax > 0 ? h * h / (2.0 * 3 * dmax) : HUGE_VAL;
  limit = std::min(limit, 2.0 * dmin / (speed_bound * speed_bound));
  return limit;
}

void burgers_step_reference(const Field& layout, const double* in, double* out, int variables,
                            const double* diffusivity, double dt, double dx) {
  const auto& n = layout.extent();
  const std::size_t S = layout.storage_size();
  const auto sx = static_cast<std::ptrdiff_t>(1), sy = static_cast<std::ptrdiff_t>(layout.stride_y()),
             sz = static_cast<std::ptrdiff_t>(layout.stride_z());
  // Equation 4: q^{n+1} = q + dt (-(u1 q_x + u2 q_y + u3 q_z) + D_q lap q), second-order central
  // differences, written as it reads.
  for (int q = 0; q < variables; ++q)
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) {
          const std::size_t c = layout.index(i, j, k);
          const double* f = in + static_cast<std::size_t>(q) * S + c;
          const double u1 = in[c], u2 = in[S + c], u3 = in[2 * S + c];
          const double fx = (f[sx] - f[-sx]) / (2.0 * dx), fy = (f[sy] - f[-sy]) / (2.0 * dx),
                       fz = (f[sz] - f[-sz]) / (2.0 * dx);
          const double lap = (f[sx] + f[-sx] + f[sy] + f[-sy] + f[sz] + f[-sz] - 6.0 * f[0]) / (dx * dx);
          out[static_cast<std::size_t>(q) * S + c] = f[0] + dt * (-(u1 * fx + u2 * fy + u3 * fz) + diffusivity[q] * lap);
        }
}

namespace {

// One row of the fused Burgers update: the three velocities (when Velocities, with the diffusivity
// of variable 0) and K further variables from `first`, all from one pass over the row. The update of Equation 4 regrouped by neighbour:
//   q' = (1 - 6 d_q) q + sum over axes a of (d_q - w_a) q_{+a} + (d_q + w_a) q_{-a},
//   d_q = dt D_q / dx^2,  w_a = dt u_a / (2 dx),
// so the advection weights w_a are formed once per point for every variable (7 multiply-adds a
// variable instead of 14 operations), and the velocities are loaded once.
struct BurgersRow {
  const double* in;
  std::size_t S;        // one variable's storage
  std::ptrdiff_t sy, sz;
  double half_dt_dx;    // dt / (2 dx)
  const double* d;      // d_q = dt D_q / dx^2 for every variable
};

// Reads the row starting at `row` of every variable; writes variable q's n0 new values to
// out + q * ostride (the state itself, or a row buffer).
template <bool Velocities, int K>
void burgers_row(const BurgersRow& c, std::size_t row, int n0, int first, double* out, std::size_t ostride) {
  const std::ptrdiff_t sy = c.sy, sz = c.sz;
  const double h = c.half_dt_dx;
  const double* __restrict u1 = c.in + row;
  const double* __restrict u2 = c.in + c.S + row;
  const double* __restrict u3 = c.in + 2 * c.S + row;
  double* __restrict o1 = out;
  double* __restrict o2 = out + ostride;
  double* __restrict o3 = out + 2 * ostride;
  const double dv = c.d[0], cv = 1.0 - 6.0 * dv;
  const double* __restrict f[K > 0 ? K : 1];
  double* __restrict o[K > 0 ? K : 1];
  double ds[K > 0 ? K : 1], cs[K > 0 ? K : 1];
  for (int s = 0; s < K; ++s) {
    const auto q = static_cast<std::size_t>(first + s);
    f[s] = c.in + q * c.S + row;
    o[s] = out + q * ostride;
    ds[s] = c.d[q];
    cs[s] = 1.0 - 6.0 * ds[s];
  }
#pragma omp simd
  for (int i = 0; i < n0; ++i) {
    const double w1 = h * u1[i], w2 = h * u2[i], w3 = h * u3[i];
    if constexpr (Velocities) {
      const double p1 = dv - w1, m1 = dv + w1, p2 = dv - w2, m2 = dv + w2, p3 = dv - w3, m3 = dv + w3;
      o1[i] = cv * u1[i] + p1 * u1[i + 1] + m1 * u1[i - 1] + p2 * u1[i + sy] + m2 * u1[i - sy] + p3 * u1[i + sz] +
              m3 * u1[i - sz];
      o2[i] = cv * u2[i] + p1 * u2[i + 1] + m1 * u2[i - 1] + p2 * u2[i + sy] + m2 * u2[i - sy] + p3 * u2[i + sz] +
              m3 * u2[i - sz];
      o3[i] = cv * u3[i] + p1 * u3[i + 1] + m1 * u3[i - 1] + p2 * u3[i + sy] + m2 * u3[i - sy] + p3 * u3[i + sz] +
              m3 * u3[i - sz];
    }
    for (int s = 0; s < K; ++s) {
      const double* __restrict g = f[s];
      const double e = ds[s];
      o[s][i] = cs[s] * g[i] + (e - w1) * g[i + 1] + (e + w1) * g[i - 1] + (e - w2) * g[i + sy] +
                (e + w2) * g[i - sy] + (e - w3) * g[i + sz] + (e + w3) * g[i - sz];
    }
  }
}

template <bool Velocities>
void burgers_row_scalars(const BurgersRow& c, std::size_t row, int n0, int first, int count, double* out,
                         std::size_t ostride) {
  switch (count) {
    case 0: burgers_row<Velocities, 0>(c, row, n0, first, out, ostride); break;
    case 1: burgers_row<Velocities, 1>(c, row, n0, first, out, ostride); break;
    case 2: burgers_row<Velocities, 2>(c, row, n0, first, out, ostride); break;
    case 3: burgers_row<Velocities, 3>(c, row, n0, first, out, ostride); break;
    default: burgers_row<Velocities, 4>(c, row, n0, first, out, ostride); break;
  }
}

// Every variable of one row: the velocities with up to 4 scalars in one pass when they share a
// viscosity, each further group of 4 scalars in its own pass.
void burgers_row_all(const BurgersRow& c, std::size_t row, int n0, int variables, bool shared, double* out,
                     std::size_t ostride) {
  const int scalars = variables - 3;
  if (shared) {
    burgers_row_scalars<true>(c, row, n0, 3, std::min(scalars, 4), out, ostride);
    for (int s = 4; s < scalars; s += 4)
      burgers_row_scalars<false>(c, row, n0, 3 + s, std::min(scalars - s, 4), out, ostride);
  } else {
    for (int q = 0; q < variables; q += 4)
      burgers_row_scalars<false>(c, row, n0, q, std::min(variables - q, 4), out, ostride);
  }
}

// Streaming (non-temporal) stores write to memory without first reading the line (no
// write-allocate: 16 B of traffic per point and variable instead of 24) and without evicting the
// planes the stencils still read. The update writes a row of every variable into a small buffer
// (it stays in the first-level cache) and then streams the buffer out, rather than streaming from
// the update itself: a load whose address matches that of a pending streaming store in its low 12
// bits waits for the store, and the update's loads and stores, at fixed distances in seven planes
// of five variables, hit that in some layouts (measured: 5 to 8 times slower); the buffer is placed
// half a page from the row it is copied to, so the copy's loads never do.
#if defined(__x86_64__)
constexpr bool streaming_stores_available = true;

// dst[0..n) = src[0..n) with streaming stores: one value at a time up to dst's 32-byte boundary
// and after the last whole vector, four at a time in between.
void stream_copy(const double* src, double* dst, int n) {
  long long bits;
  const auto misaligned = reinterpret_cast<std::uintptr_t>(dst) % 32;
  const int head = std::min(n, static_cast<int>((32 - misaligned) % 32 / sizeof(double)));
  int i = 0;
  for (; i < head; ++i) {
    std::memcpy(&bits, src + i, sizeof bits);
    _mm_stream_si64(reinterpret_cast<long long*>(dst + i), bits);
  }
  for (; i + 4 <= n; i += 4) {
#if defined(__AVX__)
    _mm256_stream_pd(dst + i, _mm256_loadu_pd(src + i));
#else
    _mm_stream_pd(dst + i, _mm_loadu_pd(src + i));
    _mm_stream_pd(dst + i + 2, _mm_loadu_pd(src + i + 2));
#endif
  }
  for (; i < n; ++i) {
    std::memcpy(&bits, src + i, sizeof bits);
    _mm_stream_si64(reinterpret_cast<long long*>(dst + i), bits);
  }
}
void streaming_fence() { _mm_sfence(); }
#else
constexpr bool streaming_stores_available = false;
void stream_copy(const double* src, double* dst, int n) { std::copy(src, src + n, dst); }
void streaming_fence() {}
#endif

// A thread's row buffer: `variables` rows of n0 + 2 values (a row with its two x-halo cells), as far
// apart modulo a page (4 KiB) as the state's variables (a stride W >= n0 + 2 with W = S modulo 512
// doubles), its start chosen per row 2 KiB from the destination modulo a page.
class RowBuffer {
 public:
  RowBuffer(std::size_t S, int n0, int variables) {
    constexpr std::size_t page = 4096 / sizeof(double);
    stride_ = S % page;
    while (stride_ < static_cast<std::size_t>(n0) + 2) stride_ += page;
    data_.resize(stride_ * static_cast<std::size_t>(variables) + page);
  }
  std::size_t stride() const { return stride_; }
  double* for_row(const double* destination) {
    constexpr std::uintptr_t page = 4096;
    const auto want = (reinterpret_cast<std::uintptr_t>(destination) + page / 2) % page;
    const auto have = reinterpret_cast<std::uintptr_t>(data_.data()) % page;
    return data_.data() + (want + page - have) % page / sizeof(double);
  }

 private:
  std::size_t stride_ = 0;
  std::vector<double> data_;
};

}  // namespace

bool burgers_streaming_available() { return streaming_stores_available; }

BurgersStores burgers_stores_for(const Field& layout, int variables, int ranks_on_node, int threads_per_rank,
                         core::CacheInfo cache) {
  const double states = 2.0 * variables * static_cast<double>(layout.storage_size()) * sizeof(double);
  return burgers_streaming_available() && core::exceeds_cache_share(states, ranks_on_node, threads_per_rank, cache)
             ? BurgersStores::streaming
             : BurgersStores::regular;
}

void burgers_step(const Field& layout, const double* in, double* out, int variables, const double* diffusivity,
                      double dt, double dx, int threads, BurgersStores stores) {
  const auto& n = layout.extent();
  double d[64];
  std::vector<double> d_many;
  double* dq = d;
  if (variables > 64) {
    d_many.resize(static_cast<std::size_t>(variables));
    dq = d_many.data();
  }
  for (int q = 0; q < variables; ++q) dq[q] = dt * diffusivity[q] / (dx * dx);
  const std::size_t S = layout.storage_size();
  const BurgersRow c{in, S, static_cast<std::ptrdiff_t>(layout.stride_y()),
                     static_cast<std::ptrdiff_t>(layout.stride_z()), dt / (2.0 * dx), dq};
  const bool shared = dq[0] == dq[1] && dq[1] == dq[2];
  const int nthreads = threads > 0 ? threads : 1;
  if (stores == BurgersStores::streaming && burgers_streaming_available()) {
    // From memory to memory: whole planes in order, which the hardware prefetchers follow, threads
    // over slabs of planes; each row through the thread's row buffer, streamed out with its x-halo
    // cells (given the input's values, which the next exchange replaces before any stencil reads
    // them), so that every cache line inside a plane is written whole: lines written in part cost
    // the memory a read as well. Each thread fences its streaming stores before the values are read
    // by another thread or sent.
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
      RowBuffer buffer(S, n[0], variables);
#pragma omp for schedule(static)
      for (int k = 0; k < n[2]; ++k)
        for (int j = 0; j < n[1]; ++j) {
          const std::size_t row = layout.index(0, j, k);
          double* rows = buffer.for_row(out + row - 1);
          burgers_row_all(c, row, n[0], variables, shared, rows + 1, buffer.stride());
          for (int q = 0; q < variables; ++q) {
            double* r = rows + static_cast<std::size_t>(q) * buffer.stride();
            const double* src = in + static_cast<std::size_t>(q) * S + row;
            r[0] = src[-1];
            r[n[0] + 1] = src[n[0]];
            stream_copy(r, out + static_cast<std::size_t>(q) * S + row - 1, n[0] + 2);
          }
        }
      streaming_fence();
    }
    return;
  }
  // Tiles of rows along y, each swept through z: the three z-planes of every variable that a tile's
  // stencils read stay in cache (about 2048 points per plane of a tile), so every value comes from
  // memory once; the planes two ahead are prefetched so memory traffic overlaps the arithmetic.
  const int tile = std::max(1, std::min(n[1], 2048 / std::max(1, n[0])));
  const int tiles = (n[1] + tile - 1) / tile;
#pragma omp parallel for num_threads(nthreads) if (nthreads > 1) schedule(static)
  for (int t = 0; t < tiles; ++t)
    for (int k = 0; k < n[2]; ++k)
      for (int j = t * tile; j < std::min(n[1], (t + 1) * tile); ++j) {
        const std::size_t row = layout.index(0, j, k);
        if (k + 2 < n[2])
          for (int i = 0; i < n[0]; i += 8)
            for (int q = 0; q < variables; ++q) {
              __builtin_prefetch(in + static_cast<std::size_t>(q) * S + row + static_cast<std::size_t>(i + 2 * c.sz), 0, 1);
              __builtin_prefetch(out + static_cast<std::size_t>(q) * S + row + static_cast<std::size_t>(i + c.sz), 1, 1);
            }
        burgers_row_all(c, row, n[0], variables, shared, out + row, S);
      }
}

}  // namespace desync::problems
