// Explicit time stepping with asynchrony-tolerant finite differences, synchronous (Algorithm 1) and
// weakly synchronous (Algorithm 2) of Aditya et al. (2019); see include/desync/solvers/pde/pde.hpp.
#include "desync/solvers/pde/pde.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>
#include <random>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "desync/communication/halo_plan.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/core/simulation.hpp"

namespace desync::solvers {

using decomposition::Field;
using decomposition::Index3;

const char* to_string(PdeProblem p) {
  return p == PdeProblem::advection_diffusion1d ? "advection-diffusion1d" : "burgers3d";
}

const char* to_string(PdeStores s) { return s == PdeStores::streaming ? "streaming" : "regular"; }

const char* to_string(DelayModel m) {
  switch (m) {
    case DelayModel::none: return "none";
    case DelayModel::uniform: return "uniform";
    case DelayModel::max: return "max";
  }
  return "?";
}

namespace {

constexpr double two_pi = 2.0 * std::numbers::pi;
constexpr int delay_bins = 64;
// A bound of |u1| + |u2| + |u3| of the initial Burgers field (the advective stability limit's U).
constexpr double burgers_speed_bound = 1.75 * 2.5;

int variables(const PdeOptions& o) { return o.problem == PdeProblem::advection_diffusion1d ? 1 : 3 + o.scalars; }

double diffusivity(const PdeOptions& o, int q) {
  if (o.problem == PdeProblem::advection_diffusion1d || q < 3) return o.viscosity;
  const auto k = static_cast<std::size_t>(q - 3);
  return k < o.diffusivity.size() ? o.diffusivity[k] : o.viscosity / static_cast<double>(k + 1);
}

// The multi-scale sinusoidal initial field of Burgers' turbulence: modes m = 1, 2, 4 with
// amplitudes 1/m (velocity), and scalars shifted in phase.
double burgers_initial(int q, int scalars, double x, double y, double z) {
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

}  // namespace

double pde_stable_dt(const PdeOptions& o, double dx) {
  const int dim = o.problem == PdeProblem::advection_diffusion1d ? 1 : 3;
  double dmax = 0, dmin = HUGE_VAL;
  for (int q = 0; q < variables(o); ++q) {
    dmax = std::max(dmax, diffusivity(o, q));
    dmin = std::min(dmin, diffusivity(o, q));
  }
  const double speed = o.problem == PdeProblem::advection_diffusion1d ? std::abs(o.velocity) : burgers_speed_bound;
  double limit = dmax > 0 ? dx * dx / (2.0 * dim * dmax) : HUGE_VAL;
  if (speed > 0) limit = std::min(limit, 2.0 * dmin / (speed * speed));
  return limit;
}

void pde_advection_diffusion_step(const Field& layout, const double* in, double* out, double c, double nu, double dt,
                                  double dx) {
  const double inv2dx = 1.0 / (2.0 * dx), invdx2 = 1.0 / (dx * dx);
  const double* u = in + layout.index(0, 0, 0);
  double* o = out + layout.index(0, 0, 0);
  const int n = layout.extent()[0];
  // u^{n+1}_i = u_i + dt (-c (u_{i+1} - u_{i-1}) / 2dx + nu (u_{i+1} - 2 u_i + u_{i-1}) / dx^2)
  for (int i = 0; i < n; ++i)
    o[i] = u[i] + dt * (-c * (u[i + 1] - u[i - 1]) * inv2dx + nu * (u[i + 1] - 2.0 * u[i] + u[i - 1]) * invdx2);
}

void pde_burgers_step_reference(const Field& layout, const double* in, double* out, int variables,
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

bool pde_streaming_available() { return streaming_stores_available; }

PdeStores pde_stores_for(const Field& layout, int variables, int ranks_on_node, int threads_per_rank,
                         core::CacheInfo cache) {
  const double states = 2.0 * variables * static_cast<double>(layout.storage_size()) * sizeof(double);
  return pde_streaming_available() && core::exceeds_cache_share(states, ranks_on_node, threads_per_rank, cache)
             ? PdeStores::streaming
             : PdeStores::regular;
}

void pde_burgers_step(const Field& layout, const double* in, double* out, int variables, const double* diffusivity,
                      double dt, double dx, int threads, PdeStores stores) {
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
  if (stores == PdeStores::streaming && pde_streaming_available()) {
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

double pde_at_factor(const PdeOptions& o) {
  return std::min(1.0, 4.0 / (2.0 * o.max_delay + 1.0));
}

namespace {

class PdeRun {
 public:
  PdeRun(const decomposition::CartGrid& grid, const PdeOptions& o) : grid_(grid), opt_(o), vars_(variables(o)) {
    const bool one_d = o.problem == PdeProblem::advection_diffusion1d;
    const Index3 width = one_d ? Index3{1, 0, 0} : Index3{1, 1, 1};
    layout_ = Field(grid.local(), width);
    storage_ = layout_.storage_size();
    points_ = static_cast<double>(grid.local()[0]) * grid.local()[1] * grid.local()[2];
    dx_ = two_pi / grid.global()[0];
    // One plan for all variables: variable q lives at q * storage_ in the state vector.
    const comm::HaloPlan base = comm::make_structured_plan(grid, {width, /*corners=*/false});
    plan_ = base;
    for (auto& nb : plan_.neighbours) {
      nb.send.clear();
      nb.recv.clear();
    }
    for (std::size_t n = 0; n < base.neighbours.size(); ++n)
      for (int q = 0; q < vars_; ++q) {
        const auto shift = static_cast<std::int32_t>(static_cast<std::size_t>(q) * storage_);
        for (auto s : base.neighbours[n].send) plan_.neighbours[n].send.push_back(s + shift);
        for (auto r : base.neighbours[n].recv) plan_.neighbours[n].recv.push_back(r + shift);
      }
    state_.assign(static_cast<std::size_t>(vars_) * storage_, 0.0);
    next_ = state_;
    for (int q = 0; q < vars_; ++q) diffusivities_.push_back(diffusivity(o, q));
    if (o.problem == PdeProblem::burgers3d)  // streaming stores when the states stream from memory
      stores_ = o.stores ? (pde_streaming_available() ? *o.stores : PdeStores::regular)
                         : pde_stores_for(layout_, vars_, core::ranks_on_node(grid.comm()), std::max(1, o.threads));
    initialise();
  }

  PdeResult run() {
    PdeResult r;
    const double limit = pde_stable_dt(opt_, dx_);
    double dt = opt_.dt > 0 ? opt_.dt : opt_.safety * pde_at_factor(opt_) * limit;
    std::int64_t total = opt_.warmup + opt_.steps;
    if (opt_.end_time > 0) {
      total = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(opt_.end_time / dt - 1e-9)));
      dt = opt_.end_time / static_cast<double>(total);
    }
    const std::int64_t warmup = std::min(opt_.warmup, total);
    r.dt = dt;
    r.dx = dx_;
    r.steps = total;
    r.timed_steps = total - warmup;
    r.end_time = dt * static_cast<double>(total);

    const bool model = opt_.mode == PdeMode::bounded && opt_.delay_model != DelayModel::none;
    exchange_.emplace(grid_.comm(), plan_,
                      exchange_config(opt_.mode == PdeMode::bounded && !model ? comm::HaloMode::bounded
                                                                              : comm::HaloMode::sync));
    const std::size_t nn = plan_.neighbours.size();
    r.faces.resize(nn);
    for (std::size_t n = 0; n < nn; ++n) {
      r.faces[n].direction = plan_.neighbours[n].direction;
      r.faces[n].histogram.assign(delay_bins, 0);
    }
    if (model) setup_model();
    core::Noise noise(opt_.noise, grid_.rank());
    // --jitter-basis step: the warm-up steps run without jitter and give this rank's step time, the
    // median of their whole steps (send, consume, approximation, update); the timed steps' pauses
    // are multiples of it.
    const bool step_basis = opt_.noise.jitter && opt_.noise.jitter_basis == core::JitterBasis::step;
    std::vector<double> warmup_steps;
    double step_time = 0;

    if (opt_.save_every > 0) save(0);
    MPI_Barrier(grid_.comm());
    core::Stopwatch clock;
    for (std::int64_t n = 0; n < total; ++n) {
      if (n == warmup) {  // the timed part starts here, on each rank's own clock
        // (No barrier: a rank blocked in a collective makes no channel progress, and a neighbour may
        // be waiting for a one-sided completion this rank deferred.)
        clock = core::Stopwatch{};
        r.times = PdeTimes{};
      }
      core::Stopwatch t_send;
      exchange_->start(state_.data(), n);  // Algorithm 1/2, lines 1-8: send level n
      const double send_s = t_send.seconds();
      core::Stopwatch t_consume;
      // Lines 9-31: consume; wait only beyond the bound. The halos are written by approximate(),
      // once, from the level each neighbour is at.
      exchange_->finish(model ? state_.data() : nullptr, n);
      const double consume_s = t_consume.seconds();
      core::Stopwatch t_approx;
      install_s_ = 0;
      approximate(n, model, r);  // lines 32-34: the halo approximation phase
      const double approx_s = t_approx.seconds() - install_s_;
      core::Stopwatch t_compute;
      update(dt);  // the unchanged standard stencil, then forward Euler
      core::charge(opt_.problem == PdeProblem::burgers3d ? "pde.burgers3d.update" : "pde.advection_diffusion1d.update",
                   points_ * vars_);  // simulated cluster: the update's cost per point and variable
      const double compute_s = t_compute.seconds();
      const double jitter_step = n < warmup ? 0.0 : step_time;  // none during the warm-up
      if (step_basis && n < warmup) {
        warmup_steps.push_back(send_s + consume_s + t_approx.seconds() + compute_s);
        if (n + 1 == warmup) {
          const auto middle = warmup_steps.begin() + static_cast<std::ptrdiff_t>(warmup_steps.size() / 2);
          std::nth_element(warmup_steps.begin(), middle, warmup_steps.end());
          step_time = *middle;
          r.jitter_step_seconds = step_time;
        }
      }
      const double noise_s = noise.after_sweep(compute_s, jitter_step);
      r.times.send += send_s;
      r.times.consume += consume_s + install_s_;
      r.times.approximate += approx_s;
      r.times.compute += compute_s;
      r.times.noise += noise_s;
      if (opt_.save_every > 0 && (n + 1) % opt_.save_every == 0 && n + 1 < total) save(n + 1);
      if (opt_.on_step) opt_.on_step(n + 1, total);
    }
    r.times.total = clock.seconds();
    r.noise_pauses = noise.pauses();
    for (std::size_t n = 0; n < nn; ++n)
      if (const auto* cs = exchange_->channel_stats(n)) {
        r.faces[n].forced_waits = cs->forced_waits;
        r.faces[n].levels_consumed = cs->levels_consumed;
      }
    r.messages_sent = exchange_->stats().messages_sent;
    r.pending_at_fallbacks = fallbacks_;
    r.stores = stores_;
    exchange_->close();
    exchange_.reset();
    save(total);
    finish_quantities(r);
    r.u = first_variable();
    return r;
  }

 private:
  void initialise() {
    const auto& off = grid_.offset();
    const auto& n = grid_.local();
    for (int q = 0; q < vars_; ++q)
      for (int k = 0; k < n[2]; ++k)
        for (int j = 0; j < n[1]; ++j)
          for (int i = 0; i < n[0]; ++i) {
            const double x = (off[0] + i) * dx_, y = (off[1] + j) * dx_, z = (off[2] + k) * dx_;
            at(q, i, j, k) = opt_.problem == PdeProblem::advection_diffusion1d
                                 ? std::sin(x)
                                 : burgers_initial(q, opt_.scalars, x, y, z);
          }
  }

  double& at(int q, int i, int j, int k) {
    return state_[static_cast<std::size_t>(q) * storage_ + layout_.index(i, j, k)];
  }

  // The seeded delay model: a ring of the last L + 1 levels of every neighbour's halo data.
  void setup_model() {
    const std::size_t nn = plan_.neighbours.size();
    ring_.assign(nn, {});
    for (std::size_t n = 0; n < nn; ++n)
      ring_[n].assign(static_cast<std::size_t>(opt_.max_delay) + 1,
                      std::vector<double>(plan_.neighbours[n].recv.size(), 0.0));
    rng_.seed(opt_.delay_seed * 1000003ULL + static_cast<std::uint64_t>(grid_.rank()));
  }

  void record(FaceStats& f, std::int64_t k) {
    ++f.histogram[static_cast<std::size_t>(std::clamp<std::int64_t>(k, 0, delay_bins - 1))];
    ++f.count;
    f.sum += static_cast<double>(k);
    f.sum_sq += static_cast<double>(k) * static_cast<double>(k);
    f.max = std::max(f.max, k);
  }

  void approximate(std::int64_t n, bool model, PdeResult& r) {
    const std::size_t nn = plan_.neighbours.size();
    for (std::size_t b = 0; b < nn; ++b) {
      const auto& nb = plan_.neighbours[b];
      const std::int32_t* idx = nb.recv.data();
      const std::size_t m = nb.recv.size();
      if (m == 0) continue;
      if (model) {
        // Keep level n (just received synchronously), then use level n - k, k drawn from 0..L-1
        // (and at most n - 1, so that level n - k - 1 exists when k > 0).
        const auto slots = static_cast<std::int64_t>(ring_[b].size());
        auto& cur = ring_[b][static_cast<std::size_t>(n % slots)];
        for (std::size_t e = 0; e < m; ++e) cur[e] = state_[static_cast<std::size_t>(idx[e])];
        std::int64_t k = 0;
        if (opt_.max_delay > 1 && n > 0) {
          const std::int64_t top = opt_.max_delay - 1;
          k = opt_.delay_model == DelayModel::max ? top
                                                  : std::uniform_int_distribution<std::int64_t>(0, top)(rng_);
          k = std::min(k, n - 1);
        }
        record(r.faces[b], k);
        const auto& a = ring_[b][static_cast<std::size_t>((n - k) % slots)];
        if (k == 0 || opt_.scheme == PdeScheme::standard) {
          for (std::size_t e = 0; e < m; ++e) state_[static_cast<std::size_t>(idx[e])] = a[e];
        } else {
          const auto& p = ring_[b][static_cast<std::size_t>((n - k - 1) % slots)];
          for (std::size_t e = 0; e < m; ++e) state_[static_cast<std::size_t>(idx[e])] = at_halo_value(a[e], p[e], k);
        }
        core::charge("pde.at.element", static_cast<double>(m));  // simulated cluster: the phase's cost
        continue;
      }
      const std::int64_t level = exchange_->time_level(b);
      const std::int64_t k = n - level;
      record(r.faces[b], k);
      const double* a = k > 0 && opt_.scheme == PdeScheme::at ? exchange_->level_data(b, level) : nullptr;
      const double* p = a ? exchange_->level_data(b, level - 1) : nullptr;
      if (!a || !p) {  // level n - k as it is: k = 0, the standard scheme, or (counted) no older level
        if (k > 0 && opt_.scheme == PdeScheme::at) ++fallbacks_;
        core::Stopwatch t_install;  // unpacking is communication (the time split's consume)
        exchange_->install_neighbour(b, state_.data());
        install_s_ += t_install.seconds();
        continue;
      }
      // Equations 1-2 through the halo approximation, (k + 1) f^{n-k} - k f^{n-k-1}, written run by
      // run (a face is rows or strided columns of halo cells).
      const int threads = opt_.threads;
      double* s = state_.data();
      exchange_->recv_runs(b).for_each_run(
          [&](std::int64_t first, std::int64_t start, std::int64_t stride, std::int64_t count) {
            const double* an = a + first;
            const double* pn = p + first;
            double* out = s + start;
            for (std::int64_t e = 0; e < count; ++e) out[e * stride] = at_halo_value(an[e], pn[e], k);
          },
          threads);
      core::charge("pde.at.element", static_cast<double>(m));  // simulated cluster: the approximation's cost
    }
  }

  // Forward Euler with second-order central differences (pde_*_step), then the buffers swap.
  void update(double dt) {
    if (opt_.problem == PdeProblem::advection_diffusion1d) {
      pde_advection_diffusion_step(layout_, state_.data(), next_.data(), opt_.velocity, opt_.viscosity, dt, dx_);
    } else {
      pde_burgers_step(layout_, state_.data(), next_.data(), vars_, diffusivities_.data(), dt, dx_, opt_.threads,
                       stores_);
    }
    std::swap(state_, next_);
  }

  Field first_variable() const {
    Field f(grid_.local());
    const auto& n = grid_.local();
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) f(i, j, k) = state_[layout_.index(i, j, k)];
    return f;
  }

  /// The halo exchange of the run (bounded or sync) and of the final quantities (sync).
  comm::PlanExchangeConfig exchange_config(comm::HaloMode mode) const {
    comm::PlanExchangeConfig c;
    c.mode = mode;
    c.transport = opt_.transport;
    // Section 5: the weakly-synchronous NB variant pre-posts receives for the L levels of the bound.
    c.transport.posted_receives = pde_p2p_receives(opt_);
    c.max_delay = opt_.max_delay;
    c.retain_behind = 1;  // the halo approximation reads levels n - k and n - k - 1 only
    c.round_robin = true;  // section 5.2: no directional bias
    c.threads = opt_.threads;  // section 5.1: pack loops threaded
    return c;
  }

  void save(std::int64_t step) {
    if (opt_.on_save) opt_.on_save(step, first_variable());
  }

  // Errors against the exact solution (1D) and the second central moments of u1 and du1/dx1,
  // with the final halos exchanged synchronously.
  void finish_quantities(PdeResult& r) {
    {
      comm::PlanExchange ex(grid_.comm(), plan_, exchange_config(comm::HaloMode::sync));
      ex.start(state_.data(), 0);
      ex.finish(state_.data(), 0);
      ex.close();
    }
    const auto& n = grid_.local();
    const auto& off = grid_.offset();
    const double t = r.end_time;
    double sums[5] = {0, 0, 0, 0, 0};  // u, u^2, dudx, dudx^2, |error|
    double emax = 0;
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) {
          const double u = state_[layout_.index(i, j, k)];
          const double dudx = (state_[layout_.index(i + 1, j, k)] - state_[layout_.index(i - 1, j, k)]) / (2.0 * dx_);
          sums[0] += u;
          sums[1] += u * u;
          sums[2] += dudx;
          sums[3] += dudx * dudx;
          if (opt_.problem == PdeProblem::advection_diffusion1d) {
            const double x = (off[0] + i) * dx_;
            const double e = std::abs(u - std::exp(-opt_.viscosity * t) * std::sin(x - opt_.velocity * t));
            sums[4] += e;
            emax = std::max(emax, e);
          }
        }
    MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_DOUBLE, MPI_SUM, grid_.comm());
    MPI_Allreduce(MPI_IN_PLACE, &emax, 1, MPI_DOUBLE, MPI_MAX, grid_.comm());
    const auto& g = grid_.global();
    const double points = static_cast<double>(g[0]) * g[1] * g[2];
    const double mu = sums[0] / points, md = sums[2] / points;
    r.moment_u = sums[1] / points - mu * mu;
    r.moment_dudx = sums[3] / points - md * md;
    r.error_mean = sums[4] / points;
    r.error_max = emax;
  }

  const decomposition::CartGrid& grid_;
  const PdeOptions& opt_;
  int vars_;
  Field layout_;
  std::size_t storage_ = 0;
  double dx_ = 0;
  comm::HaloPlan plan_;
  std::vector<double> state_, next_;
  std::vector<double> diffusivities_;  // of every variable (burgers3d)
  PdeStores stores_ = PdeStores::regular;
  std::optional<comm::PlanExchange> exchange_;
  std::vector<std::vector<std::vector<double>>> ring_;  // delay model: [neighbour][slot][entry]
  std::mt19937_64 rng_;
  long fallbacks_ = 0;
  double install_s_ = 0;  // this step's halo installs (timed with consume)
  double points_ = 0;     // of this rank's block
};

void check(const decomposition::CartGrid& grid, const PdeOptions& o) {
  if (core::simulated_build && o.threads > 1)
    throw InputError("--threads is not available on a simulated cluster (run one rank per simulated core)");
  const auto& g = grid.global();
  const auto& d = grid.dims();
  const auto& p = grid.periodic();
  if (o.problem == PdeProblem::advection_diffusion1d) {
    if (g[1] != 1 || g[2] != 1 || !p[0])
      throw InputError("advection-diffusion1d needs a 1D grid (N x 1 x 1), periodic along x");
  } else {
    if (!(p[0] && p[1] && p[2])) throw InputError("burgers3d needs a grid periodic along every axis");
    if (g[0] != g[1] || g[1] != g[2]) throw InputError("burgers3d: the periodic cube needs N x N x N points");
    if (o.scalars < 0) throw InputError(fmt::format("--scalars {}: must be >= 0", o.scalars));
  }
  for (int a = 0; a < 3; ++a)
    if (g[a] > 1 && g[a] / d[a] < 2)
      throw InputError(fmt::format("{} points along {} for {} ranks: each rank needs at least 2 (the stencil's "
                                   "width on both sides)", g[a], "xyz"[a], d[a]));
  if (o.max_delay < 0) throw InputError(fmt::format("--max-delay {}: L must be >= 0", o.max_delay));
  if (o.mode == PdeMode::sync && o.delay_model != DelayModel::none)
    throw InputError("--delay-model goes with --mode bounded");
  if (o.steps < 0 || o.warmup < 0) throw InputError("--steps and --warmup must be >= 0");
  if (!(o.end_time >= 0)) throw InputError("--end-time must be >= 0");
  if (!(o.viscosity > 0)) throw InputError("--viscosity must be > 0");
  for (double a : o.diffusivity)
    if (!(a > 0)) throw InputError("--diffusivity: every scalar's diffusivity must be > 0");
  if (!(o.safety > 0 && o.safety <= 1)) throw InputError("--safety must be in (0, 1]");
  const double limit = pde_stable_dt(o, two_pi / g[0]);
  if (o.dt < 0) throw InputError("--dt must be > 0");
  if (o.dt > limit)
    throw InputError(fmt::format("--dt {}: above the stability limit {:.6g} of forward Euler on this grid "
                                 "(min(dx^2 / (2 d D_max), 2 D_min / U^2))", o.dt, limit));
}

}  // namespace

PdeResult solve_pde(const decomposition::CartGrid& grid, const PdeOptions& options) {
  check(grid, options);
  PdeRun run(grid, options);
  return run.run();
}

std::array<double, 2> pde_field_difference(const decomposition::CartGrid& grid, const Field& a, const Field& b) {
  const auto& n = grid.local();
  double sum = 0, mx = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        const double d = std::abs(a(i, j, k) - b(i, j, k));
        sum += d;
        mx = std::max(mx, d);
      }
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, grid.comm());
  MPI_Allreduce(MPI_IN_PLACE, &mx, 1, MPI_DOUBLE, MPI_MAX, grid.comm());
  const auto& g = grid.global();
  return {sum / (static_cast<double>(g[0]) * g[1] * g[2]), mx};
}

}  // namespace desync::solvers
