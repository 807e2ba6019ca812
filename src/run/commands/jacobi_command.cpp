// `desync jacobi`: Jacobi's method on the 3D Laplace problem, synchronous, asynchronous and racy
// (Bethune, Bull, Dingle and Higham, sections 3.1 and 3.3), or on a user's assembled matrix (point or
// block Jacobi, solvers/jacobi/matrix_jacobi.hpp; docs/matrices.md). The command's options and their
// checks, its run, and its section of the run record (docs/output.md).
//
//   mpirun -np 2 desync jacobi --mode async --local 50 --polish
//   mpirun -np 4 desync jacobi --matrix A.petsc --partition metis --variant block --mode async
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../option_parsing.hpp"
#include "../report_common.hpp"
#include "../system_input.hpp"
#include "driven_run.hpp"
#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/record.hpp"
#include "desync/run/command_registry.hpp"
#include "desync/run/run_end.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"
#include "desync/solvers/jacobi/matrix_jacobi.hpp"

namespace desync::run {

// A named namespace around the file-local one: the run layer builds as one unity translation unit.
namespace jacobi_command {
namespace {

/// --idle's policies a sweep takes (skip would stop a block converging on its own).
constexpr std::initializer_list<core::IdlePolicy> jacobi_idle = {core::IdlePolicy::yield, core::IdlePolicy::spin};

class JacobiCommand final : public SolverCommand {
 public:
  void add_options(CLI::App& app) override;
  void finalise(MPI_Comm comm) override;
  void prepare(MPI_Comm) override { comm::init_transport(solver.transport.kind); }
  int run(MPI_Comm comm) override;

 private:
  /// Effective values, for the JSON record.
  std::vector<std::pair<std::string, std::string>> effective() const;
  /// --matrix: point or block Jacobi on the user's system.
  int run_matrix(MPI_Comm comm);
  /// --export-system: the grid problem as an assembled system, then no solve.
  int export_grid_system(MPI_Comm comm);

  std::string local;                // --local: cells per rank (weak scaling)
  std::string global;               // --global: total cells (strong scaling)
  std::string dims = "0x0x0";       // --dims: process grid, 0 = chosen by choose_dims
  std::string mode = "sync";        // --mode
  std::string reduction = "iallreduce";
  std::string idle = "yield";       // --idle: spin | yield (skip does not apply to a sweep)
  detail::IterationCli iteration_cli;  // --tol, --max-iters, ..., the noise group
  detail::TransportCli transport_cli;  // --transport, --rma-sync, --shmem-sync, --inflight
  std::string prefetch = "auto";    // --prefetch: auto | on | off (sweep kernel software prefetch)
  problems::Laplace3D problem;
  solvers::JacobiOptions solver;
  detail::OutputCli output;         // --json, --save, --quiet
  bool threads_given = false;       // --threads was given (solver.threads: 0 = plain MPI solver)
  detail::SystemCli system_cli;     // --matrix, --rhs, --partition, --partition-seed
  std::string variant = "point";    // --variant (with --matrix)
  int spectral_steps = 30;          // --spectral-steps (with --matrix)
  std::string export_dir;           // --export-system
  std::vector<CLI::Option*> grid_options_;  // apply to the built-in problem only
  std::vector<CLI::Option*> matrix_options_;  // apply to --matrix only

  decomposition::Index3 global_cells{0, 0, 0};
  decomposition::Index3 process_grid{1, 1, 1};
};

void JacobiCommand::add_options(CLI::App& app) {
  auto& s = solver;
  grid_options_.push_back(app.add_option("--local", local, "Cells per rank, N or NXxNYxNZ (weak scaling; default 50)"));
  grid_options_.push_back(app.add_option("--global", global, "Total cells, N or NXxNYxNZ (strong scaling)"));
  grid_options_.push_back(app.add_option("--dims", dims, "Process grid PXxPYxPZ; 0 entries: the most balanced grid")
      ->capture_default_str());
  system_cli.add(app, "Run Jacobi on this matrix's system");
  matrix_options_.push_back(
      app.add_option("--variant", variant, "With --matrix: " + core::named_help(solvers::jacobi_variant_names))
          ->capture_default_str());
  matrix_options_.push_back(
      app.add_option("--spectral-steps", spectral_steps,
                     "With --matrix: power-iteration steps estimating the spectral radius of the iteration matrix "
                     "before the run; an estimate >= 1 stops the run as diverged (0: no estimate)")
          ->capture_default_str());
  grid_options_.push_back(app.add_option(
      "--export-system", export_dir,
      "Write the grid problem as an assembled system (DIR/A.petsc, DIR/b.petsc, DIR/partition.txt: the boundary "
      "values as identity rows, so that point Jacobi on it repeats this solver's arithmetic) and exit"));
  app.add_option("--mode", mode, core::named_help(solvers::jacobi_modes))->capture_default_str();
  detail::IterationCliSpec spec;
  spec.tol_help = "Tolerance on ||b - Au|| / ||s|| (s: the source part of b)";
  spec.check_help = "Iterations between convergence tests. sync: a blocking test every N; async/racy: a new "
                    "non-blocking test starts N iterations after the previous one started, or when it completes if "
                    "that is later (1: as soon as it completes, Bethune et al., 2011, 3.1.2); with --threads, "
                    "async/racy threads update the shared residual every N sweeps, and every sweep once a thread has "
                    "seen it at or below --tol";
  spec.perturb = true;
  iteration_cli.add(app, s.iteration, spec);
  app.add_option("--halo-period", s.halo_period, "Swap halos every N iterations")->capture_default_str();
  app.add_option("--racy-chunks", s.racy_chunks, "racy: pieces each halo message travels in")
      ->capture_default_str();
  app.add_option("--idle", idle,
                 "async/racy, a sweep after which no new halo value has arrived: " +
                     core::named_help(core::among(core::idle_policy_names, jacobi_idle)))
      ->capture_default_str();
  app.add_option("--reduction", reduction,
                 "async/racy convergence test: " + core::named_help(core::among(comm::reduction_names, comm::nonblocking_reductions)))
      ->capture_default_str();
  transport_cli.add(app, s.transport, "", /*inflight=*/true);
  grid_options_.push_back(
      app.add_option("--offset", problem.offset, "Added to every boundary and initial value (Bethune et al., 2011, 6.1)")
          ->capture_default_str());
  grid_options_.push_back(
      app.add_option("--source-radius", problem.source_radius, "Radius of the source disc on z = 0")
          ->capture_default_str());
  output.add(app, "Write the solution: the field (.npy or .vti); with --matrix the vector in the file's row order "
                  "(.npy, .mtx, PETSc binary .petsc/.bin/.dat)");
  app.add_option_function<int>(
      "--threads",
      [this](int t) {
        solver.threads = t;
        threads_given = true;
      },
      "OpenMP threads per rank, each sweeping a slab of the rank's block along z (Bethune et al., 2011, 3.3); "
      "omitted: the plain MPI solver");
  grid_options_.push_back(app.add_option("--prefetch", prefetch,
                 "Software prefetch in the sweep kernel: auto (on for a rank whose two fields exceed its share "
                 "of the last-level cache) | on | off")
      ->capture_default_str());
}

void JacobiCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  auto& s = solver;
  s.mode = core::parse_named(solvers::jacobi_modes, mode, "--mode", "mode");
  s.reduction = comm::parse_reduction(reduction);
  s.idle = core::parse_idle_policy(idle);
  if (s.idle == core::IdlePolicy::skip)
    throw InputError("--idle skip: a Jacobi sweep keeps converging its block without new halo values (expected " +
                     core::name_list(core::among(core::idle_policy_names, jacobi_idle)) + "; skip is for desync schwarz)");
  transport_cli.apply(s.transport);
  s.prefetch = detail::parse_auto_choice<solvers::SweepPrefetch>(
      "--prefetch", prefetch, {{"on", solvers::SweepPrefetch::on}, {"off", solvers::SweepPrefetch::off}});
  // Every mode tests every 100 iterations by default (Bethune et al., 2011, Figure 1); --check-every 1 is the
  // paper's cadence for the asynchronous tests (3.1.2, 3.3.2).
  iteration_cli.apply(s.iteration, nranks);
  if (s.halo_period < 1) throw InputError("--halo-period must be >= 1");
  if (s.racy_chunks < 1) throw InputError("--racy-chunks must be >= 1");
  if (!std::isfinite(problem.offset)) throw InputError("--offset must be finite");
  if (!(problem.source_radius >= 0)) throw InputError("--source-radius must be >= 0");
  if (!local.empty() && !global.empty()) throw InputError("give either --local or --global, not both");
  if (threads_given && s.threads < 1) throw InputError(fmt::format("--threads {}: must be >= 1", s.threads));
  system_cli.check();
  if (system_cli.given()) {
    for (const CLI::Option* o : grid_options_)
      if (o->count() > 0) throw InputError(o->get_name() + " applies to the built-in problem, not to --matrix");
    if (threads_given) throw InputError("--threads applies to the built-in problem, not to --matrix");
    solvers::parse_jacobi_variant(variant);
    if (spectral_steps < 0 || spectral_steps == 1)
      throw InputError(fmt::format("--spectral-steps {}: must be 0 (no estimate) or >= 2", spectral_steps));
    if (!output.save_path.empty()) detail::check_vector_path(comm, output.save_path, "--save");
    output.check(comm, /*field=*/false);
    return;
  }
  for (const CLI::Option* o : matrix_options_)
    if (o->count() > 0) throw InputError(o->get_name() + " goes with --matrix");

  process_grid = decomposition::choose_dims(nranks, detail::parse_dims(dims));
  global_cells = detail::global_size(local, global, "50", process_grid);
  const std::string split = decomposition::check_split(global_cells, process_grid);
  if (!split.empty()) throw InputError(split);
  if (s.threads > global_cells[2] / process_grid[2])
    throw InputError(fmt::format("--threads {}: more threads than planes along z ({} in the smallest block)",
                                 s.threads, global_cells[2] / process_grid[2]));
  output.check(comm);
}

std::vector<std::pair<std::string, std::string>> JacobiCommand::effective() const {
  const auto& s = solver;
  const bool grid = !system_cli.given();
  std::vector<std::pair<std::string, std::string>> out = {
      {"mode", mode},
      {"global", grid ? fmt::format("{}x{}x{}", global_cells[0], global_cells[1], global_cells[2]) : ""},
      {"local", grid ? (local.empty() && global.empty() ? "50" : local) : ""},
      {"dims", grid ? fmt::format("{}x{}x{}", process_grid[0], process_grid[1], process_grid[2]) : ""},
      {"variant", grid ? "" : variant},
      {"spectral-steps", grid ? "" : std::to_string(spectral_steps)},
      {"halo-period", std::to_string(s.halo_period)},
      {"racy-chunks", std::to_string(s.racy_chunks)},
      {"reduction", reduction},
      {"idle", idle},
      {"offset", fmt::format("{}", problem.offset)},
      {"source-radius", fmt::format("{}", problem.source_radius)},
      {"threads", std::to_string(s.threads)},
      {"prefetch", prefetch},
  };
  output.effective(out);
  iteration_cli.effective(out, s.iteration);
  transport_cli.effective(out);
  system_cli.effective(out);
  return out;
}

// ---- the run and its section of the record -----------------------------------------------------

/// One rank's statistics by name (the JSON per_rank entry; docs/output.md).
RankFields rank_fields(const solvers::RankStats& s) {
  RankFields f;
  detail::driven_rank_fields(f, s)
      .integers("coords", {s.coords[0], s.coords[1], s.coords[2]})
      .integer("threads", s.threads)
      .integer("thread_iterations_min", s.thread_iterations_min)
      .integer("thread_iterations_max", s.thread_iterations_max)
      .flag("prefetch", s.prefetch)
      .integer("delay_ahead", s.halo.delay.ahead);
  detail::exchange_open_fields(f);
  f.time_part("compute", s.time.compute)
      .time_part("halo", s.time.halo)
      .time_part("reduction", s.time.reduction)
      .time_part("noise", s.time.noise)
      .time_part("polish", s.time.polish)
      .time_part("finish", s.time.finish);
  f.total_time = s.time.total;
  return f;
}

/// Jacobi's section of the record, from the gathered per-rank fields (rank 0).
void fill_section(RunRecord& r, const std::string& transport_text, const std::string& reduction,
                  const solvers::JacobiOptions& solver, nlohmann::json details = nlohmann::json::object()) {
  using nlohmann::json;
  const auto& ranks = r.per_rank;
  const double n = std::max<double>(1.0, static_cast<double>(ranks.size()));
  double sent = 0, received = 0, skipped = 0, delay_sum = 0;
  std::int64_t delay_count = 0, delay_min = 0, delay_max = 0, delay_ahead = 0, polish = 0, thread_lo = 0,
               thread_hi = 0;
  std::vector<std::int64_t> histogram(comm::DelayStats::bins, 0);
  bool any_delay = false;
  long prefetching = 0;
  for (const auto& p : ranks) {
    const double its = std::max(1.0, p.value("iterations"));
    sent += p.value("messages_sent") / its;
    received += p.value("messages_received") / its;
    skipped += p.value("sends_skipped") / its;
    const auto count = static_cast<std::int64_t>(p.value("delay_count"));
    delay_count += count;
    delay_sum += p.value("delay_mean") * static_cast<double>(count);
    if (count > 0) {
      const auto lo = static_cast<std::int64_t>(p.value("delay_min"));
      const auto hi = static_cast<std::int64_t>(p.value("delay_max"));
      delay_min = any_delay ? std::min(delay_min, lo) : lo;
      delay_max = any_delay ? std::max(delay_max, hi) : hi;
      any_delay = true;
    }
    delay_ahead += static_cast<std::int64_t>(p.value("delay_ahead"));
    const auto& h = p.find("delay_histogram")->values;
    for (std::size_t b = 0; b < histogram.size() && b < h.size(); ++b) histogram[b] += static_cast<std::int64_t>(h[b]);
    polish = std::max(polish, static_cast<std::int64_t>(p.value("polish_iterations")));
    const auto tlo = static_cast<std::int64_t>(p.value("thread_iterations_min"));
    const auto thi = static_cast<std::int64_t>(p.value("thread_iterations_max"));
    thread_lo = &p == &ranks[0] ? tlo : std::min(thread_lo, tlo);
    thread_hi = &p == &ranks[0] ? thi : std::max(thread_hi, thi);
    prefetching += p.value("prefetch") != 0.0 ? 1 : 0;
  }
  sent /= n;
  received /= n;
  skipped /= n;
  const double delay_mean = delay_count ? delay_sum / static_cast<double>(delay_count) : 0.0;
  const int threads = ranks.empty() ? 0 : static_cast<int>(ranks[0].value("threads"));

  // Iterations per second of the main (sync or async) phase: mean iterations over the mean time
  // spent in that phase (polish and the final drain / true residual excluded).
  const auto it = summarise_iterations(ranks);
  double main_phase = 0;
  for (const auto& p : mean_time_split(ranks))
    if (p.name == "total")
      main_phase += p.seconds;
    else if (p.name == "polish" || p.name == "finish")
      main_phase -= p.seconds;
  r.iteration_rate = main_phase > 0 ? it.mean / main_phase : 0.0;

  if (r.headline.empty())
    r.headline = fmt::format("mode {}, transport {}{}", r.method, transport_text,
                             solver.mode == comm::HaloMode::sync ? "" : ", reduction " + reduction);
  if (r.global_size) {
    const auto& g = *r.global_size;
    r.setup_lines.push_back({"global size", fmt::format("{}x{}x{} cells, local {}", g[0], g[1], g[2],
                                                        detail::local_sizes(g, *r.process_grid))});
  }
  if (polish > 0) r.iterations_note = fmt::format("  (+{} synchronous polish)", polish);
  if (threads > 0)
    r.performance_lines.push_back(
        {"threads", fmt::format("{} OpenMP threads per rank (slabs along z), iterations per thread min {}  max {}",
                                threads, thread_lo, thread_hi)});
  if (prefetching > 0)
    r.performance_lines.push_back(
        {"sweep prefetch", fmt::format("on for {} of {} ranks (block beyond its share of the last-level cache, or "
                                       "--prefetch on)",
                                       prefetching, ranks.size())});
  r.performance_lines.push_back(
      {"messages/iter", fmt::format("sent {:.3f}  received {:.3f}  sends skipped {:.3f}  (per rank)", sent, received,
                                    skipped)});
  if (solver.mode != comm::HaloMode::sync)
    r.performance_lines.push_back(
        {"halo delay", fmt::format("mean {:.2f}  min {}  max {} iterations (own iteration - sender's)", delay_mean,
                                   delay_min, delay_max)});

  details["transport"] = comm::to_string(solver.transport.kind);
  details["reduction"] = reduction;
  details["threads"] = threads;
  details["polish_iterations"] = polish;
  details["messages_per_iteration"] = {{"sent", sent}, {"received", received}, {"skipped", skipped}};
  details["delay"] = {{"mean", delay_mean}, {"min", delay_min}, {"max", delay_max}, {"ahead", delay_ahead},
                      {"histogram", histogram}};
  r.details = details.dump();
}

int JacobiCommand::run(MPI_Comm comm) {
  if (system_cli.given()) return run_matrix(comm);
  if (!export_dir.empty()) return export_grid_system(comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  decomposition::CartGrid grid(comm, global_cells, process_grid);
  decomposition::Field u(grid.local());
  problem.initialise(grid, u);
  const solvers::IterationResult result = solvers::solve_jacobi(grid, problem, solver, u);

  RunRecord r;
  r.solver = "jacobi";
  r.method = mode;
  r.ranks = size;
  r.mpi_library = mpi_library_version();
  r.process_grid = grid.dims();
  r.global_size = grid.global();
  r.unknowns = grid.global_cells();
  r.options = effective();
  r.tolerance = solver.iteration.tol;
  detail::fill_from_driver(r, comm, result);
  r.per_rank = gather_rank_fields(comm, rank_fields(result.stats));
  if (rank == 0) {
    const std::string transport_text = comm::describe(solver.transport);  // with its scheme, e.g. "rma (flush)"
    const std::string red = solver.mode == comm::HaloMode::sync ? "allreduce" : reduction;
    fill_section(r, transport_text, red, solver);
  }

  const std::string io_error =
      output.save_path.empty() ? "" : detail::output_error(rank, [&] { save_field(grid, u, output.save_path); });
  return finish_run(comm, r, output.quiet, output.json_path, io_error);
}

int JacobiCommand::export_grid_system(MPI_Comm comm) {
  const auto sys = problems::laplace3d_matrix_system(comm, global_cells, problem);
  std::vector<int> part;
  for (std::int64_t row = sys.A.first_block_row(); row < sys.A.first_block_row() + sys.A.local_block_rows(); ++row)
    part.push_back(problems::laplace3d_node_rank(global_cells, process_grid, row));
  detail::export_system(comm, export_dir, sys.A, sys.b, part);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0 && !output.quiet)
    fmt::print("desync jacobi: wrote {0}/A.petsc ({1} rows: the {2}x{3}x{4} cells and their boundary nodes), "
               "{0}/b.petsc and {0}/partition.txt (process grid {5}x{6}x{7})\n",
               export_dir, sys.A.global_rows(), global_cells[0], global_cells[1], global_cells[2], process_grid[0],
               process_grid[1], process_grid[2]);
  return exit_converged;
}

int JacobiCommand::run_matrix(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const detail::LoadedSystem sys = detail::load_system(comm, system_cli);
  if (!sys.near_kernel.empty()) throw InputError("near-kernel vectors go with a coarse level: jacobi has none");
  solvers::MatrixJacobiOptions o;
  o.variant = solvers::parse_jacobi_variant(variant);
  static_cast<solvers::JacobiLoopOptions&>(o) = solver;  // the loop's settings, the grid run's
  o.spectral_steps = spectral_steps;
  std::vector<double> x(sys.b.size(), 0.0);
  // The rows' indices in the file are the order keys: point Jacobi sums each row in the same order
  // whatever the partition (matrix_jacobi.hpp).
  const solvers::MatrixJacobiResult result =
      solvers::solve_matrix_jacobi(sys.system.A, sys.b, x, o, sys.system.original_row);

  RunRecord r;
  r.solver = "jacobi";
  r.method = mode;
  r.ranks = size;
  r.mpi_library = mpi_library_version();
  r.unknowns = sys.rows;
  r.options = effective();
  r.tolerance = solver.iteration.tol;
  detail::fill_from_driver(r, comm, result.run);
  r.per_rank = gather_rank_fields(comm, rank_fields(result.run.stats));
  if (rank == 0) {
    const std::string transport_text = comm::describe(solver.transport);
    const std::string red = solver.mode == comm::HaloMode::sync ? "allreduce" : reduction;
    nlohmann::json details;
    detail::describe_system(r, details, sys, system_cli);
    details["variant"] = variant;
    details["spectral_radius"] = std::isnan(result.spectral_radius) ? nlohmann::json() : nlohmann::json(result.spectral_radius);
    details["spectral_bound"] = result.spectral_bound;
    details["spectral_steps"] = result.spectral_steps;
    details["spectral_seconds"] = result.spectral_seconds;
    details["setup_seconds"] = result.setup_seconds;
    std::vector<std::string> kinds;
    for (auto k : result.local_solvers) kinds.push_back(linalg::to_string(k));
    details["local_solvers"] = kinds;
    details["factor_seconds"] = result.factor_seconds;
    details["factor_nonzeros"] = result.factor_nonzeros;
    r.headline = fmt::format("{} Jacobi, mode {}, transport {}{}", variant, mode, transport_text,
                             solver.mode == comm::HaloMode::sync ? "" : ", reduction " + red);
    if (result.spectral_steps > 0)
      r.setup_lines.push_back({"spectral radius", fmt::format("about {:.6f} (iteration matrix I - M^-1 A, {} power steps in {}, "
                                                              "{:.3f} s)",
                                                              result.spectral_radius, result.spectral_steps,
                                                              result.spectral_bound ? "M's norm: a lower bound"
                                                                                    : "the 2-norm: A not symmetric or M "
                                                                                      "not positive definite, not a bound",
                                                              result.spectral_seconds)});
    if (!kinds.empty()) {
      std::string list;
      for (std::size_t k = 0; k < kinds.size(); ++k) list += (k ? ", " : "") + kinds[k];
      r.setup_lines.push_back({"local solves", fmt::format("{} (by rank), factored in {:.3f} s", list, result.factor_seconds)});
    }
    fill_section(r, transport_text, red, solver, details);
  }
  const std::string io_error = detail::deliver_solution(comm, sys, x, output.save_path);
  return finish_run(comm, r, output.quiet, output.json_path, io_error);
}

}  // namespace
}  // namespace jacobi_command

SolverInfo jacobi_solver() {
  return {"jacobi", "Jacobi's method on the 3D Laplace problem or a matrix, sync, async or racy (Bethune et al.)", "--mode",
          detail::method_list(solvers::jacobi_modes), &create_command<jacobi_command::JacobiCommand>,
          {"jacobi.update", "jacobi.update_residual"}};  // a sweep, with or without the residual, per point
}

}  // namespace desync::run
