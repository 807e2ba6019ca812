// `desync pde`: explicit time stepping of periodic PDEs, traditional synchronous or weakly
// synchronous with asynchrony-tolerant finite differences (Aditya, Gysi, Kranzlmüller and Hoefler,
// 2019). The command's options and their checks, its run, and its section of the record.
//
//   mpirun -np 8 desync pde --problem burgers3d --local 24 --mode bounded --max-delay 10 --transport rma
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../option_parsing.hpp"
#include "../report_common.hpp"
#include "driven_run.hpp"
#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/record.hpp"
#include "desync/run/command_registry.hpp"
#include "desync/run/run_end.hpp"
#include "desync/solvers/pde/pde.hpp"

namespace desync::run {

// A named namespace around the file-local one: the run layer builds as one unity translation unit.
namespace pde_command {
namespace {

const char* face_name(const std::array<int, 3>& d) {
  if (d[0] < 0) return "xm";
  if (d[0] > 0) return "xp";
  if (d[1] < 0) return "ym";
  if (d[1] > 0) return "yp";
  if (d[2] < 0) return "zm";
  return "zp";
}

class PdeCommand final : public SolverCommand {
 public:
  void add_options(CLI::App& app) override;
  void finalise(MPI_Comm comm) override;
  void prepare(MPI_Comm) override { comm::init_transport(solver.transport.kind); }
  int run(MPI_Comm comm) override;

 private:
  std::vector<std::pair<std::string, std::string>> effective() const;
  void fill_section(RunRecord& r, const solvers::PdeResult& result, const std::optional<solvers::PdeResult>& reference,
                    const std::array<double, 2>& diff, int bins) const;

  std::string problem = "burgers3d", mode = "sync", scheme = "at", delay_model = "none", stores = "auto";
  std::string jitter_basis = "step";
  CLI::Option* jitter_basis_option = nullptr;  // given explicitly: checked against --noise
  CLI::Option* p2p_receives_option = nullptr;  // given explicitly: checked against --mode/--transport
  std::string local, global, dims;
  detail::TransportCli transport_cli;  // --transport, --rma-sync, --shmem-sync
  detail::NoiseCli noise_cli;          // --slow-rank, --slow-factor, --noise and its parameters
  solvers::PdeOptions solver;
  detail::OutputCli output;  // --json, --save, --quiet
  bool monitor = false, paired = false;
  decomposition::Index3 global_points{0, 0, 0};
  decomposition::Index3 process_grid{1, 1, 1};
};

void PdeCommand::add_options(CLI::App& app) {
  auto& s = solver;
  app.add_option("--problem", problem, core::named_help(solvers::pde_problems))->capture_default_str();
  app.add_option("--mode", mode,
                 core::named_help(solvers::pde_modes) +
                     "\n  (async is refused: time stepping needs a bound on the delay; use bounded)")
      ->capture_default_str();
  app.add_option("--max-delay", s.max_delay, "bounded: L, the largest delay in steps a halo value may have")
      ->capture_default_str();
  p2p_receives_option =
      app.add_option("--p2p-receives", s.transport.posted_receives,
                     "bounded over p2p: receives kept posted per neighbour, 1 .. 2L+1 (default L, at least 1, as "
                     "Aditya et al. (2019) pre-post for the L levels; later levels wait in MPI's queue)");
  app.add_option("--scheme", scheme, core::named_help(solvers::pde_schemes))->capture_default_str();
  app.add_option("--delay-model", delay_model, "bounded: " + core::named_help(solvers::delay_models))
      ->capture_default_str();
  app.add_option("--delay-seed", s.delay_seed, "Seed of the delay model")->capture_default_str();
  app.add_option("--local", local, "Points per rank: M (1D) or M (an M^3 block, 3D; on a periodic box of whole 2pi "
                                   "periods along each axis in proportion to the ranks along it) (weak scaling; "
                                   "default 48 in 3D, 256 in 1D)");
  app.add_option("--global", global, "Points of the periodic domain per axis: N (strong scaling)");
  app.add_option("--dims", dims, "Process grid (3D: PXxPYxPZ); 0 entries: the most balanced grid");
  app.add_option("--steps", s.steps, "Timed steps after the warm-up")->capture_default_str();
  app.add_option("--warmup", s.warmup, "Untimed steps first (fill the rings of levels)")->capture_default_str();
  app.add_option("--end-time", s.end_time, "Run to this time instead of --steps (warm-up included; 0: off)")
      ->capture_default_str();
  app.add_option("--dt", s.dt,
                 "Time step (0: --safety x the stability limit, bounded also x min(1, 4/(2L+1)); give one --dt to "
                 "compare modes at equal steps)")
      ->capture_default_str();
  app.add_option("--safety", s.safety, "Fraction of the stability limit used when --dt is 0")->capture_default_str();
  app.add_option("--velocity", s.velocity, "advection-diffusion1d: the advection speed c")->capture_default_str();
  app.add_option("--viscosity", s.viscosity, "nu: viscosity (Burgers) or diffusivity (1D)")->capture_default_str();
  app.add_option("--scalars", s.scalars, "burgers3d: K passive scalars")->capture_default_str();
  app.add_option("--diffusivity", s.diffusivity, "burgers3d: the scalars' diffusivities alpha_k (default nu / k)");
  transport_cli.add(app, s.transport);
  app.add_option("--threads", s.threads, "OpenMP threads for the pack, approximation and update loops (0: none)")
      ->capture_default_str();
  app.add_option("--stores", stores,
                 "burgers3d update: auto (streaming for a rank whose two states exceed its share of the last-level "
                 "cache) | regular | streaming (non-temporal stores, no write-allocate)")
      ->capture_default_str();
  noise_cli.add(app, s.noise, "steps");
  jitter_basis_option =
      app.add_option("--jitter-basis", jitter_basis,
                     "jitter: what a pause is a multiple of: step (the rank's median whole step over the warm-up, "
                     "communication and approximation included; the warm-up then runs without jitter) | compute "
                     "(the step's update only, as desync's other solvers' sweep)")
          ->capture_default_str();
  app.add_flag("--paired", paired,
               "Also run the synchronous algorithm from the same start and report the difference of the fields");
  output.add(app, "Write u (u1 for Burgers) at the end (.npy or .vti)");
  app.add_option("--save-every", s.save_every, "Also at step 0 and every this many steps (files FILE_<step>.ext)")
      ->capture_default_str();
  app.add_flag("--monitor", monitor, "Print the progress on rank 0 every tenth of the run");
}

void PdeCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  auto& s = solver;
  s.problem = core::parse_named(solvers::pde_problems, problem, "--problem", "problem");
  if (mode == "async")
    throw InputError("--mode async: time stepping needs a bound on the delay (the error of the asynchrony-tolerant "
                     "schemes grows with it, and the ring of retained levels is finite): use --mode bounded "
                     "--max-delay L");
  s.mode = core::parse_named(solvers::pde_modes, mode, "--mode", "mode");
  s.scheme = core::parse_named(solvers::pde_schemes, scheme, "--scheme", "scheme");
  s.delay_model = core::parse_named(solvers::delay_models, delay_model, "--delay-model", "model");
  if (s.max_delay < 0) throw InputError(fmt::format("--max-delay {}: L must be >= 0", s.max_delay));
  if (p2p_receives_option->count() > 0) {
    if (mode != "bounded" || transport_cli.kind() != "p2p")
      throw InputError("--p2p-receives: applies to --mode bounded --transport p2p only");
    const int receives = s.transport.posted_receives;
    if (receives < 1 || receives > 2 * s.max_delay + 1)
      throw InputError(fmt::format("--p2p-receives {}: must be in 1 .. 2L+1 = {} (--max-delay {})", receives,
                                   2 * s.max_delay + 1, s.max_delay));
  }
  if (s.threads < 0) throw InputError("--threads must be >= 0");
  s.stores = detail::parse_auto_choice<solvers::PdeStores>(
      "--stores", stores, {{"regular", solvers::PdeStores::regular}, {"streaming", solvers::PdeStores::streaming}});
  if (s.save_every < 0) throw InputError("--save-every must be >= 0");
  if (s.save_every > 0 && output.save_path.empty()) throw InputError("--save-every needs --save FILE");
  transport_cli.apply(s.transport);
  noise_cli.apply(s.noise, nranks);
  if (jitter_basis == "compute")
    s.noise.jitter_basis = core::JitterBasis::sweep;
  else if (jitter_basis == "step")
    s.noise.jitter_basis = core::JitterBasis::step;
  else
    throw InputError("--jitter-basis '" + jitter_basis + "': unknown basis (expected compute or step)");
  if (jitter_basis_option->count() > 0 && !s.noise.jitter)
    throw InputError("--jitter-basis " + jitter_basis + ": applies to --noise jitter only");
  if (s.noise.jitter && s.noise.jitter_basis == core::JitterBasis::step && s.warmup < 5)
    throw InputError(fmt::format("--jitter-basis step (the default): the step time is the median of the warm-up "
                                 "steps; --warmup {} is fewer than 5 (or give --jitter-basis compute)",
                                 s.warmup));
  if (!local.empty() && !global.empty()) throw InputError("give either --local or --global, not both");

  auto number = [](const std::string& t, const char* what) {
    const auto v = detail::parse_number<int>(t);
    if (!v || *v < 1) throw InputError(std::string(what) + " '" + t + "': expected a number of points >= 1");
    return *v;
  };
  if (s.problem == solvers::PdeProblem::advection_diffusion1d) {
    if (!dims.empty() && dims != std::to_string(nranks) && dims != fmt::format("{}x1x1", nranks))
      throw InputError("--dims '" + dims + "': the 1D problem splits x only");
    process_grid = {nranks, 1, 1};
    const int n = !global.empty() ? number(global, "--global") : number(local.empty() ? "256" : local, "--local") * nranks;
    global_points = {n, 1, 1};
  } else {
    process_grid = decomposition::choose_dims(nranks, detail::parse_dims(dims.empty() ? "0x0x0" : dims));
    if (!global.empty()) {
      const int n = number(global, "--global");
      global_points = {n, n, n};
    } else {
      // An M^3 block per rank on a periodic box of whole 2π periods with the same spacing on every
      // axis: p_a = P_a / gcd(P_x, P_y, P_z) periods along axis a, so the box is the cube of Aditya
      // et al. (2019) on a cubic process grid and grows along the axes with more ranks otherwise.
      const int m = number(local.empty() ? "48" : local, "--local");
      const int g = std::gcd(std::gcd(process_grid[0], process_grid[1]), process_grid[2]);
      s.periods = {process_grid[0] / g, process_grid[1] / g, process_grid[2] / g};
      global_points = {m * process_grid[0], m * process_grid[1], m * process_grid[2]};
    }
  }
  const std::string split = decomposition::check_split(global_points, process_grid);
  if (!split.empty()) throw InputError(split);
  output.check(comm);
}

std::vector<std::pair<std::string, std::string>> PdeCommand::effective() const {
  const auto& s = solver;
  std::string diff;
  for (double a : s.diffusivity) diff += (diff.empty() ? "" : ",") + fmt::format("{}", a);
  const bool cube = global_points[0] == global_points[1] && global_points[1] == global_points[2];
  std::vector<std::pair<std::string, std::string>> out = {{"problem", problem},
          {"mode", mode},
          {"max-delay", std::to_string(s.max_delay)},
          {"p2p-receives", mode == "bounded" && transport_cli.kind() == "p2p" ? std::to_string(solvers::pde_p2p_receives(s))
                                                                             : std::string("-")},
          {"scheme", scheme},
          {"delay-model", delay_model},
          {"delay-seed", std::to_string(s.delay_seed)},
          {"global", cube ? std::to_string(global_points[0])
                          : fmt::format("{}x{}x{}", global_points[0], global_points[1], global_points[2])},
          {"periods", fmt::format("{}x{}x{}", s.periods[0], s.periods[1], s.periods[2])},
          {"local", local},
          {"dims", fmt::format("{}x{}x{}", process_grid[0], process_grid[1], process_grid[2])},
          {"steps", std::to_string(s.steps)},
          {"warmup", std::to_string(s.warmup)},
          {"end-time", fmt::format("{}", s.end_time)},
          {"dt", fmt::format("{}", s.dt)},
          {"safety", fmt::format("{}", s.safety)},
          {"velocity", fmt::format("{}", s.velocity)},
          {"viscosity", fmt::format("{}", s.viscosity)},
          {"scalars", std::to_string(s.scalars)},
          {"diffusivity", diff},
          {"threads", std::to_string(s.threads)},
          {"stores", stores},
          {"paired", paired ? "true" : "false"},
          {"monitor", monitor ? "true" : "false"},
          {"save-every", std::to_string(s.save_every)}};
  output.effective(out);
  noise_cli.effective(out, s.noise);
  transport_cli.effective(out);
  out.push_back({"jitter-basis", jitter_basis});
  return out;
}

RankFields rank_fields(const decomposition::CartGrid& grid, const solvers::PdeResult& r, int bins) {
  RankFields f;
  f.integer("rank", grid.rank())
      .integers("coords", {grid.coords()[0], grid.coords()[1], grid.coords()[2]})
      .integers("local_size", {grid.local()[0], grid.local()[1], grid.local()[2]})
      .integer("iterations", r.timed_steps)
      .integer("messages_sent", r.messages_sent)
      .integer("noise_pauses", r.noise_pauses)
      .number("jitter_step_seconds", r.jitter_step_seconds)
      .integer("at_fallbacks", r.pending_at_fallbacks)
      .flag("streaming_stores", r.stores == solvers::PdeStores::streaming);
  detail::exchange_open_fields(f);
  // Per neighbour (face): the delays used (the paper's Figure 9), waits forced by the bound,
  // notifications (levels) consumed.
  for (const auto& face : r.faces) {
    const std::string n = face_name(face.direction);
    std::vector<std::int64_t> h(static_cast<std::size_t>(bins), 0);
    for (std::size_t b = 0; b < face.histogram.size(); ++b)
      h[std::min(b, h.size() - 1)] += face.histogram[b];
    f.number("delay_mean_" + n, face.mean())
        .number("delay_sq_mean_" + n, face.mean_sq())
        .integer("delay_max_" + n, face.max)
        .integer("forced_waits_" + n, face.forced_waits)
        .integer("notifications_" + n, face.levels_consumed)
        .integers("delay_histogram_" + n, h);
  }
  // Figure 7's categories: computation, communication (send, consume with the forced waits), and
  // the approximation phase.
  f.time_part("compute", r.times.compute)
      .time_part("send", r.times.send)
      .time_part("consume", r.times.consume)
      .time_part("approximate", r.times.approximate)
      .time_part("noise", r.times.noise);
  f.total_time = r.times.total;
  return f;
}

/// The command's section of the record, from the gathered per-rank fields (rank 0).
void PdeCommand::fill_section(RunRecord& r, const solvers::PdeResult& result,
                              const std::optional<solvers::PdeResult>& reference, const std::array<double, 2>& diff,
                              int bins) const {
  const bool one_d = solver.problem == solvers::PdeProblem::advection_diffusion1d;
  r.iteration_rate = r.wall_time > 0 ? static_cast<double>(result.timed_steps) / r.wall_time : 0.0;
  const double limit = solvers::pde_stable_dt(solver, result.dx);
  const bool cube = global_points[0] == global_points[1] && global_points[1] == global_points[2];
  r.headline = fmt::format("{}, mode {}{}, scheme {}, transport {}", problem, mode,
                           mode == "bounded" ? fmt::format(" (L = {})", solver.max_delay) : "", scheme,
                           comm::describe(solver.transport));
  r.setup_lines.push_back(
      {"problem", fmt::format("{} points{}, dt {:.4g} ({:.2f} of the stability limit {:.4g}), {} steps to t = {:.4g} "
                              "({} warm-up)",
                              one_d  ? std::to_string(global_points[0])
                              : cube ? fmt::format("{}^3", global_points[0])
                                     : fmt::format("{}x{}x{}", global_points[0], global_points[1], global_points[2]),
                              one_d  ? ""
                              : cube ? fmt::format(", {} scalars", solver.scalars)
                                     : fmt::format(" on a box of {}x{}x{} periods of 2π, {} scalars", solver.periods[0],
                                                   solver.periods[1], solver.periods[2], solver.scalars), result.dt, result.dt / limit,
                              limit, result.steps, result.end_time, result.steps - result.timed_steps)});
  if (delay_model != "none")
    r.setup_lines.push_back({"delays", fmt::format("seeded model '{}' on 0..{} (seed {})", delay_model,
                                                   std::max(0, solver.max_delay - 1), solver.delay_seed)});
  // Delays over all ranks and faces.
  double count = 0, sum = 0, sum_sq = 0, dmax = 0, waits = 0, consumed = 0;
  std::vector<std::int64_t> hist(static_cast<std::size_t>(bins), 0);
  for (const auto& p : r.per_rank)
    for (const auto& fld : p.fields) {
      const auto& nm = fld.name;
      if (nm.rfind("delay_histogram_", 0) == 0) {
        for (std::size_t b = 0; b < fld.values.size(); ++b) {
          hist[b] += static_cast<std::int64_t>(fld.values[b]);
          count += fld.values[b];
          sum += fld.values[b] * static_cast<double>(b);
          sum_sq += fld.values[b] * static_cast<double>(b * b);
        }
      } else if (nm.rfind("delay_max_", 0) == 0) {
        dmax = std::max(dmax, fld.values[0]);
      } else if (nm.rfind("forced_waits_", 0) == 0) {
        waits += fld.values[0];
      } else if (nm.rfind("notifications_", 0) == 0) {
        consumed += fld.values[0];
      }
    }
  const double mean = count > 0 ? sum / count : 0, mean_sq = count > 0 ? sum_sq / count : 0;
  r.performance_lines.push_back(
      {"delays", fmt::format("mean {:.3f}, mean of squares {:.3f}, max {} steps; {} waits forced by the bound, {} "
                             "notifications consumed",
                             mean, mean_sq, dmax, waits, consumed)});
  r.performance_lines.push_back({"moments", fmt::format("<u1'^2> = {:.8e}, <(du1/dx1)'^2> = {:.8e}", result.moment_u,
                                                        result.moment_dudx)});
  if (one_d)
    r.performance_lines.push_back(
        {"error", fmt::format("mean |u - u_exact| = {:.4e}, max {:.4e} at t = {:.4g}", result.error_mean,
                              result.error_max, result.end_time)});
  if (reference)
    r.performance_lines.push_back(
        {"paired", fmt::format("against the synchronous run at the same dt {:.4g}: mean |u1 - u1_sync| = {:.4e}, "
                               "max {:.4e}; its moments {:.8e}, {:.8e}",
                               reference->dt, diff[0], diff[1], reference->moment_u, reference->moment_dudx)});
  r.residual_note = one_d ? " (pde: the mean error against the exact solution)" : " (pde: no residual)";
  nlohmann::json d;
  d["problem"] = problem;
  d["scheme"] = scheme;
  d["max_delay"] = solver.max_delay;
  d["delay_model"] = delay_model;
  d["transport"] = transport_cli.kind();
  d["dt"] = result.dt;
  d["dx"] = result.dx;
  d["stability_limit"] = limit;
  d["periods"] = {solver.periods[0], solver.periods[1], solver.periods[2]};
  d["steps"] = result.steps;
  d["timed_steps"] = result.timed_steps;
  d["end_time"] = result.end_time;
  d["time_per_step"] = result.timed_steps > 0 ? r.wall_time / static_cast<double>(result.timed_steps) : 0.0;
  d["moments"] = {{"u1", result.moment_u}, {"du1dx1", result.moment_dudx}};
  d["error"] = one_d ? nlohmann::json{{"mean", result.error_mean}, {"max", result.error_max}} : nlohmann::json(nullptr);
  d["delay"] = {{"mean", mean}, {"mean_sq", mean_sq}, {"max", dmax}, {"histogram", hist}};
  d["forced_waits"] = waits;
  d["notifications"] = consumed;
  if (reference)
    d["paired"] = {{"dt", reference->dt},  // the same step as this run's
                   {"error_mean", diff[0]},
                   {"error_max", diff[1]},
                   {"moments", {{"u1", reference->moment_u}, {"du1dx1", reference->moment_dudx}}}};
  else
    d["paired"] = nullptr;
  r.details = d.dump();
}

int PdeCommand::run(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool one_d = solver.problem == solvers::PdeProblem::advection_diffusion1d;
  decomposition::CartGrid grid(comm, global_points, process_grid, {true, !one_d, !one_d});

  std::string io_error;
  auto opts = solver;
  if (!output.save_path.empty()) {
    opts.on_save = [&](std::int64_t step, const decomposition::Field& f) {
      std::string path = output.save_path;
      if (solver.save_every > 0) {
        const auto dot = path.find_last_of('.');
        path = path.substr(0, dot) + fmt::format("_{:06d}", step) + path.substr(dot);
      }
      const std::string error = detail::output_error(rank, [&] { save_field(grid, f, path); });
      if (io_error.empty()) io_error = error;
    };
  }
  if (monitor && rank == 0)
    opts.on_step = [](std::int64_t done, std::int64_t total) {
      if (done == total || done % std::max<std::int64_t>(1, total / 10) == 0)
        fmt::print("step {} / {}\n", done, total);
    };
  std::optional<solvers::PdeResult> reference;
  if (paired) {
    // The same problem, synchronous, nothing saved, and the same step as the run it is compared
    // with: the default step of a bounded run is smaller than a synchronous run's (pde_default_dt).
    auto sync_opts = solver;
    if (sync_opts.dt <= 0) sync_opts.dt = solvers::pde_default_dt(solver, solvers::pde_spacing(solver, global_points));
    sync_opts.mode = solvers::PdeMode::sync;
    sync_opts.delay_model = solvers::DelayModel::none;
    sync_opts.noise = core::NoiseOptions{};
    reference = solvers::solve_pde(grid, sync_opts);
  }
  const solvers::PdeResult result = solvers::solve_pde(grid, opts);

  RunRecord r;
  r.solver = "pde";
  r.method = mode;
  r.ranks = size;
  r.mpi_library = mpi_library_version();
  r.process_grid = grid.dims();
  r.global_size = grid.global();
  r.unknowns = static_cast<long long>(global_points[0]) * global_points[1] * global_points[2];
  r.options = effective();
  const bool finite = std::isfinite(result.moment_u) && std::isfinite(result.moment_dudx);
  r.converged = finite;
  r.stop_reason = finite ? core::StopReason::max_iters : core::StopReason::non_finite;
  if (!finite) r.message = "the solution became non-finite (an unstable time step?)";
  r.true_residual = one_d ? result.error_mean : 0.0;
  r.tested_residual = r.true_residual;
  r.wall_time = max_over_ranks(comm, result.times.total);
  r.outstanding_requests = pending_requests(comm);
  const int bins = std::min(64, solver.max_delay + 2);
  r.per_rank = gather_rank_fields(comm, rank_fields(grid, result, bins));
  std::array<double, 2> diff{0, 0};
  if (reference) diff = solvers::pde_field_difference(grid, result.u, reference->u);
  if (rank == 0) fill_section(r, result, reference, diff, bins);
  return finish_run(comm, r, output.quiet, output.json_path, io_error);
}

}  // namespace
}  // namespace pde_command

SolverInfo pde_solver() {
  return {"pde", "Explicit PDE time stepping, sync or weakly synchronous with asynchrony-tolerant stencils (Aditya et al.)",
          "--mode", detail::method_list(solvers::pde_modes), &create_command<pde_command::PdeCommand>,
          // each problem's update per point and variable; the halo approximation per value
          {"pde.burgers3d.update", "pde.advection_diffusion1d.update", "pde.at.element"}};
}

}  // namespace desync::run
