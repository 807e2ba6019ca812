#pragma once
// Explicit time stepping of periodic PDEs with halo data up to L steps old: the traditional-
// synchronous and the weakly-synchronous algorithms with asynchrony-tolerant (AT) finite differences
// of Aditya, Gysi, Kranzlmüller and Hoefler (2019).
//
// Problems (the physics in the problems layer: initial field, right-hand side and its forward Euler
// step, stability limit), periodic, second-order central differences in space, forward Euler in time:
//   advection_diffusion1d   problems/advection_diffusion1d.hpp: u_t + c u_x = ν u_xx on [0, 2π),
//                           N points, Δx = 2π/N, the exact solution (their section 3.2, Figure 2)
//   burgers3d               problems/burgers3d.hpp: their Equation 4 on a periodic box of whole 2π
//                           periods (the cube, or p_x x p_y x p_z periods), the same Δx on every axis
//
// Algorithms (section 5):
//   sync      Algorithm 1: every step sends the boundary values of level n and waits for the
//             neighbours' level n (staleness 0).
//   bounded   Algorithm 2: every step sends level n and consumes whatever levels have arrived,
//             waiting only while a neighbour's newest level is more than L behind (comm::PlanExchange
//             in HaloMode::bounded: a ring of T = 2L + 2 levels, a synchronous start while the ring
//             fills). The halo values are then approximated from the two newest levels held
//             (the AT "halo approximation phase"), and the unchanged standard stencil runs.
//
// The AT halo approximation, for a neighbour whose newest level is n - k (delay k):
//     f̂ = (k + 1) f^{n-k} - k f^{n-k-1}
// (linear extrapolation in time to level n); the central stencil with f̂ in its halo is exactly
// their Equations 1-2. k = 0 gives f^n: the standard scheme. scheme = standard uses f^{n-k} as if
// current (their second configuration).
//
// A seeded delay model (DelayModel::uniform, max) replaces real asynchrony for reproducible
// verification: the data travels synchronously, each rank keeps the last L levels of every
// neighbour and, each step and for each neighbour, uses the level n - k with k drawn from 0..L-1.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/core/cache.hpp"
#include "desync/core/names.hpp"
#include "desync/core/noise.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/problems/advection_diffusion1d.hpp"
#include "desync/problems/burgers3d.hpp"

namespace desync::solvers {

enum class PdeProblem { advection_diffusion1d, burgers3d };
inline constexpr core::Named<PdeProblem> pde_problems[] = {
    {PdeProblem::advection_diffusion1d, "advection-diffusion1d", "the verification problem, exact solution"},
    {PdeProblem::burgers3d, "burgers3d", "Burgers' equation with passive scalars, Aditya et al. 2019, Eq. 4"},
};
enum class PdeMode { sync, bounded };
/// The modes of `desync pde` (--mode, the JSON "method"). async is refused: time stepping needs a
/// bound on the delay.
inline constexpr core::Named<PdeMode> pde_modes[] = {
    {PdeMode::sync, "sync", "traditional synchronous: every step waits for the neighbours' values of that step"},
    {PdeMode::bounded, "bounded",
     "weakly synchronous: halo values up to --max-delay steps old, asynchrony-tolerant stencils"},
};
enum class PdeScheme { at, standard };
inline constexpr core::Named<PdeScheme> pde_schemes[] = {
    {PdeScheme::at, "at", "asynchrony-tolerant: halo values extrapolated from the two newest levels"},
    {PdeScheme::standard, "standard", "the newest level used as if current"},
};
enum class DelayModel { none, uniform, max };
inline constexpr core::Named<DelayModel> delay_models[] = {
    {DelayModel::none, "none", "real asynchrony"},
    {DelayModel::uniform, "uniform",
     "seeded delays drawn from 0..L-1 each step and neighbour, data moved synchronously"},
    {DelayModel::max, "max", "always L-1"},
};

inline const char* to_string(PdeProblem p) { return core::name_of(pde_problems, p); }
inline const char* to_string(DelayModel m) { return core::name_of(delay_models, m); }

/// The AT halo value from the newest level held (`newest`, delay k) and the one before it.
inline double at_halo_value(double newest, double previous, std::int64_t k) {
  return static_cast<double>(k + 1) * newest - static_cast<double>(k) * previous;
}

/// How the burgers3d update writes the new state (problems::BurgersStores).
using PdeStores = problems::BurgersStores;
using problems::to_string;

struct PdeOptions {
  PdeProblem problem = PdeProblem::advection_diffusion1d;
  PdeMode mode = PdeMode::sync;
  PdeScheme scheme = PdeScheme::at;
  int max_delay = 10;                       ///< L (bounded), >= 0
  DelayModel delay_model = DelayModel::none;
  std::uint64_t delay_seed = 1;
  std::int64_t steps = 1000;                ///< timed steps after the warm-up (end_time == 0)
  std::int64_t warmup = 30;                 ///< untimed steps first
  double end_time = 0;                      ///< > 0: run to this time instead (warm-up included)
  double dt = 0;                            ///< 0: pde_default_dt
  double safety = 0.5;
  double velocity = 1.0;                    ///< c (advection_diffusion1d)
  double viscosity = 0.1;                   ///< ν
  int scalars = 2;                          ///< K (burgers3d)
  std::vector<double> diffusivity;          ///< α_k (empty: ν / (k + 1))
  /// The periodic box in whole periods 2π of the initial field along x, y, z: [0, 2π p_x) x ...
  /// (advection_diffusion1d: p_x only). The grid spacing is 2π p_x / N_x, and burgers3d needs the same
  /// on every axis (N_a proportional to p_a). {1, 1, 1}: the cube of Aditya et al. (2019).
  decomposition::Index3 periods{1, 1, 1};
  /// How halo levels travel. posted_receives, bounded over p2p: receives kept posted per
  /// neighbour, 1 .. 2 L + 1 (0: L, at least 1, as Aditya et al., 2019, section 5, pre-post for the
  /// L levels of the bound). max_in_flight does not apply (a bounded exchange keeps 2 L + 1).
  comm::TransportConfig transport;
  core::NoiseOptions noise;
  int threads = 0;                          ///< OpenMP threads for the pack, approximation and update loops
  std::optional<PdeStores> stores;          ///< burgers3d update; unset: problems::burgers_stores_for() per rank
  /// Called on every rank at the end, and with save_every > 0 also at step 0 and every save_every
  /// steps, with the step and this rank's block of the first variable (u, or u1). Collective.
  std::function<void(std::int64_t, const decomposition::Field&)> on_save;
  std::int64_t save_every = 0;
  /// Called after every step with (steps done, steps in all): progress reports.
  std::function<void(std::int64_t, std::int64_t)> on_step;
};

/// The receives a bounded exchange over p2p keeps posted per neighbour: transport.posted_receives, or L (at least
/// 1) when it is 0.
inline int pde_p2p_receives(const PdeOptions& o) {
  return o.transport.posted_receives > 0 ? o.transport.posted_receives : std::max(o.max_delay, 1);
}


/// The options' problem as the problems layer takes it.
problems::Burgers3D pde_burgers(const PdeOptions& o);
problems::AdvectionDiffusion1D pde_advection_diffusion(const PdeOptions& o);
/// The grid spacing Δx = 2π p_x / N_x on a grid of `global` points (the same on every axis).
double pde_spacing(const PdeOptions& o, const decomposition::Index3& global);
/// The stability limit of forward Euler with central differences on the options' problem and grid
/// spacing: min(Δx² / (2 d D_max), 2 D_min / U²) with d the dimension, D the diffusivities and U the
/// largest advection speed (the initial velocity's maximum for Burgers).
double pde_stable_dt(const PdeOptions& o, double dx);
/// The asynchrony-tolerant extrapolation (k + 1) f^{n-k} - k f^{n-k-1} amplifies what changes from
/// step to step by up to 2k + 1, and forward Euler with it is stable only for a smaller step: the
/// factor min(1, 4 / (2L + 1)) of the stability limit (measured: stable for delays up to L - 1 every
/// step, L = 2..20, on the 1D problem).
double pde_at_factor(int max_delay);
/// The step a run takes when dt == 0, from what applies to its mode only: synchronous, safety x
/// pde_stable_dt; bounded, safety x pde_at_factor(L) x pde_stable_dt, whatever the scheme and the
/// delay model (so that the AT and standard runs of one bounded comparison take the same steps).
/// A comparison across modes that needs equal steps passes one dt to every run (desync pde --paired
/// gives the synchronous reference the bounded run's step).
double pde_default_dt(const PdeOptions& o, double dx);

/// Per-neighbour (face) statistics of the delays actually used.
struct FaceStats {
  std::array<int, 3> direction{};
  std::vector<long> histogram;  ///< delays 0..bins-1 (the last bin counts larger ones)
  long count = 0;
  double sum = 0, sum_sq = 0;
  std::int64_t max = 0;
  long forced_waits = 0;        ///< bounded: waits the bound forced
  long levels_consumed = 0;     ///< bounded: notifications (levels) consumed
  double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
  double mean_sq() const { return count ? sum_sq / static_cast<double>(count) : 0.0; }
};

struct PdeTimes {
  double compute = 0;      ///< the stencil update
  double send = 0;         ///< packing and sending (start)
  double consume = 0;      ///< consuming notifications, forced waits included (finish)
  double approximate = 0;  ///< the AT halo approximation phase
  double noise = 0;
  double total = 0;        ///< the timed steps
};

struct PdeResult {
  double dt = 0, dx = 0;
  std::int64_t steps = 0;        ///< all steps, warm-up included
  std::int64_t timed_steps = 0;
  double end_time = 0;
  std::vector<FaceStats> faces;  ///< this rank's neighbours in plan order
  PdeTimes times;
  long messages_sent = 0;
  long noise_pauses = 0;          ///< jitter pauses and periodic interruptions taken (warm-up included)
  double jitter_step_seconds = 0;  ///< --jitter-basis step: this rank's step time the pauses multiply
  long pending_at_fallbacks = 0;  ///< AT wanted a level no longer held: the standard value was used
  PdeStores stores = PdeStores::regular;  ///< how the burgers3d update wrote (regular for the 1D problem)
  // Global quantities (the same on every rank):
  double error_mean = 0, error_max = 0;  ///< against the exact solution (advection_diffusion1d)
  double moment_u = 0, moment_dudx = 0;  ///< second central moments of u1 and ∂u1/∂x1
  decomposition::Field u;                ///< this rank's block of the first variable at the end
};

/// Runs the problem on `grid` (periodic along the problem's axes: 1D grids {N,1,1}, 3D grids with
/// N_a proportional to options.periods[a], {N,N,N} for the cube).
/// Collective. Throws InputError for bad options (on every rank alike).
PdeResult solve_pde(const decomposition::CartGrid& grid, const PdeOptions& options);

/// The difference of two runs' first variables over the whole grid: mean and max |a - b|
/// (collective; blocks as given by two results on the same grid).
std::array<double, 2> pde_field_difference(const decomposition::CartGrid& grid, const decomposition::Field& a,
                                           const decomposition::Field& b);

}  // namespace desync::solvers
