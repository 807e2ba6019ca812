// Explicit time stepping with asynchrony-tolerant finite differences, synchronous (Algorithm 1) and
// weakly synchronous (Algorithm 2) of Aditya et al. (2019); see include/desync/solvers/pde/pde.hpp.
#include "desync/solvers/pde/pde.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <random>

#include "desync/communication/halo_plan.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/core/simulation.hpp"
#include "desync/problems/advection_diffusion1d.hpp"
#include "desync/problems/burgers3d.hpp"

namespace desync::solvers {

using decomposition::Field;
using decomposition::Index3;

namespace {

constexpr double two_pi = 2.0 * std::numbers::pi;
constexpr int delay_bins = 64;

}  // namespace

problems::Burgers3D pde_burgers(const PdeOptions& o) { return {o.viscosity, o.scalars, o.diffusivity}; }

problems::AdvectionDiffusion1D pde_advection_diffusion(const PdeOptions& o) { return {o.velocity, o.viscosity}; }

double pde_spacing(const PdeOptions& o, const Index3& global) { return two_pi * o.periods[0] / global[0]; }

double pde_stable_dt(const PdeOptions& o, double dx) {
  return o.problem == PdeProblem::advection_diffusion1d ? pde_advection_diffusion(o).stable_dt(dx)
                                                        : pde_burgers(o).stable_dt(dx);
}

double pde_at_factor(int max_delay) { return std::min(1.0, 4.0 / (2.0 * max_delay + 1.0)); }

double pde_default_dt(const PdeOptions& o, double dx) {
  // Δt = safety x (bounded: the AT factor of L) x the stability limit
  const double factor = o.mode == PdeMode::bounded ? pde_at_factor(o.max_delay) : 1.0;
  return o.safety * factor * pde_stable_dt(o, dx);
}

namespace {

class PdeRun {
 public:
  PdeRun(const decomposition::CartGrid& grid, const PdeOptions& o)
      : grid_(grid),
        opt_(o),
        burgers_(pde_burgers(o)),
        advection_(pde_advection_diffusion(o)),
        vars_(o.problem == PdeProblem::advection_diffusion1d ? 1 : burgers_.variables()) {
    const bool one_d = o.problem == PdeProblem::advection_diffusion1d;
    const Index3 width = one_d ? Index3{1, 0, 0} : Index3{1, 1, 1};
    layout_ = Field(grid.local(), width);
    storage_ = layout_.storage_size();
    points_ = static_cast<double>(grid.local()[0]) * grid.local()[1] * grid.local()[2];
    dx_ = pde_spacing(o, grid.global());
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
    for (int q = 0; q < vars_; ++q) diffusivities_.push_back(one_d ? o.viscosity : burgers_.diffusivity_of(q));
    if (o.problem == PdeProblem::burgers3d)  // streaming stores when the states stream from memory
      stores_ = o.stores ? (problems::burgers_streaming_available() ? *o.stores : PdeStores::regular)
                         : problems::burgers_stores_for(layout_, vars_, core::ranks_on_node(grid.comm()),
                                                        std::max(1, o.threads));
    initialise();
  }

  PdeResult run() {
    PdeResult r;
    double dt = opt_.dt > 0 ? opt_.dt : pde_default_dt(opt_, dx_);
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
            at(q, i, j, k) = opt_.problem == PdeProblem::advection_diffusion1d ? advection_.initial(x)
                                                                                : burgers_.initial(q, x, y, z);
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

  // Forward Euler with second-order central differences (the problem's step), then the buffers swap.
  void update(double dt) {
    if (opt_.problem == PdeProblem::advection_diffusion1d) {
      problems::advection_diffusion1d_step(layout_, state_.data(), next_.data(), advection_.velocity,
                                           advection_.viscosity, dt, dx_);
    } else {
      problems::burgers_step(layout_, state_.data(), next_.data(), vars_, diffusivities_.data(), dt, dx_,
                             opt_.threads, stores_);
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
            const double e = std::abs(u - advection_.exact(x, t));
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
  problems::Burgers3D burgers_;
  problems::AdvectionDiffusion1D advection_;
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
    const auto& per = o.periods;
    if (per[0] < 1 || per[1] < 1 || per[2] < 1)
      throw InputError(fmt::format("burgers3d: a box of {}x{}x{} periods: each must be >= 1", per[0], per[1], per[2]));
    // The same spacing 2π p_a / N_a on every axis.
    const bool equal_spacing = static_cast<long>(g[1]) * per[0] == static_cast<long>(g[0]) * per[1] &&
                               static_cast<long>(g[2]) * per[0] == static_cast<long>(g[0]) * per[2];
    if (!equal_spacing && per == Index3{1, 1, 1})
      throw InputError("burgers3d: the periodic cube needs N x N x N points");
    if (!equal_spacing)
      throw InputError(fmt::format("burgers3d: {}x{}x{} points on a box of {}x{}x{} periods: the points along each "
                                   "axis must be proportional to its periods (the same spacing on every axis)",
                                   g[0], g[1], g[2], per[0], per[1], per[2]));
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
  if (o.problem == PdeProblem::advection_diffusion1d && o.periods[0] < 1)
    throw InputError(fmt::format("advection-diffusion1d: a domain of {} periods: must be >= 1", o.periods[0]));
  const double limit = pde_stable_dt(o, pde_spacing(o, g));
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
