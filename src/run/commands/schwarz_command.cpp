// `desync schwarz`: optimized Schwarz domain decomposition for the 2D Poisson problem (and Jacobi's
// 3D Laplace problem), synchronous
// over two-sided MPI or asynchronous over any channel transport (Yamazaki, Chow, Bouteiller and
// Dongarra, 2019). The command's options and their checks, its run, and its section of the record.
//
// On a user's assembled matrix (--matrix) it runs the algebraic restricted additive Schwarz method
// (solvers/schwarz/algebraic.hpp; docs/matrices.md), optimized by --robin.
//
//   mpirun -np 4 desync schwarz --local 64 --mode async --transport rma
//   mpirun -np 4 desync schwarz --matrix A.petsc --partition metis --overlap 2 --mode async
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../coarse_record.hpp"
#include "../option_parsing.hpp"
#include "../report_common.hpp"
#include "../system_input.hpp"
#include "driven_run.hpp"
#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/linalg/partition.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/record.hpp"
#include "desync/run/command_registry.hpp"
#include "desync/run/run_end.hpp"
#include "desync/problems/poisson2d.hpp"
#include "desync/solvers/schwarz/algebraic.hpp"
#include "desync/solvers/schwarz/schwarz.hpp"

namespace desync::run {

// A named namespace around the file-local one: the run layer builds as one unity translation unit.
namespace schwarz_command {
namespace {

/// --termination: how the ranks agree that every one is converged, or none (no test at all).
enum class Termination { allreduce, tree, iallreduce, none };
constexpr core::Named<Termination> terminations[] = {
    {Termination::allreduce, "allreduce", "sync, every iteration"},
    {Termination::tree, "tree",
     "async default: each rank's flag up a binary tree over the transport, the decision pushed down"},
    {Termination::iallreduce, "iallreduce", "async: repeated non-blocking votes"},
    {Termination::none, "none",
     "sync or async: no convergence test and no termination detection, each rank iterates until --time-limit "
     "or --max-iters (Yamazaki et al., 2019, Table 4; needs one of them)"},
};
/// --sync-wait: how a synchronous exchange waits for its neighbours.
constexpr core::Named<bool> sync_waits[] = {
    {false, "one", "one wait per neighbour in turn"},
    {true, "all", "wait for every neighbour together, MPI_Waitall"},
};

class SchwarzCommand final : public SolverCommand {
 public:
  void add_options(CLI::App& app) override;
  void finalise(MPI_Comm comm) override;
  void prepare(MPI_Comm) override { comm::init_transport(solver.transport.kind); }
  int run(MPI_Comm comm) override;

 private:
  std::vector<std::pair<std::string, std::string>> effective() const;
  int run_matrix(MPI_Comm comm, const detail::LoadedSystem& sys, bool builtin);
  /// The matrix run's options from the command's (builtin: the grid's alpha as robin).
  solvers::SchwarzOptions matrix_options(MPI_Comm comm, const detail::LoadedSystem& sys, bool builtin) const;
  /// The record's part that the grid and the matrix runs share: the run, the driver's figures, the
  /// per-rank fields and histories; on rank 0 the iteration rate, the headline (after `kind`), the
  /// termination note and the shared details (the factorisation over the ranks, termination, wait,
  /// transport, the ranks' iterations). Collective.
  RunRecord shared_record(MPI_Comm comm, const solvers::SchwarzResult& result, const RankFields& fields,
                          const std::string& kind, nlohmann::json& details) const;
  detail::LoadedSystem builtin_system(MPI_Comm comm) const;
  int export_grid_system(MPI_Comm comm);

  std::string problem = "poisson2d";
  std::string local, global, dims;
  std::string mode = "sync";
  std::string alpha = "auto";
  std::string termination;          // --termination: allreduce (sync) | tree (async default) | iallreduce
  std::string sync_wait = "one";    // --sync-wait: one | all (sync)
  std::string idle = "skip";        // --idle: skip | yield | spin (async)
  detail::IterationCli iteration_cli;  // --tol, --max-iters, ..., the noise group
  detail::TransportCli transport_cli;  // --transport, --rma-sync, --shmem-sync, --inflight (async)
  solvers::SchwarzOptions solver;
  CLI::Option* max_iters_option = nullptr;  // given or not: --termination none needs a limit
  detail::OutputCli output;  // --json, --save, --quiet
  decomposition::Index3 global_points{0, 0, 1};
  decomposition::Index3 process_grid{1, 1, 1};
  detail::SystemCli system_cli;     // --matrix, --rhs, --partition, --partition-seed
  std::string export_dir;           // --export-system
  int coarse_reuse = 1;             // --coarse-reuse (async)
  std::string coarse_fan_in_text = "8";  // --coarse-fan-in (async)
  int coarse_fan_in = 8;            // its value (0: auto, from the model)
  std::string coarse_form = "galerkin";  // --coarse-form (sync)
  CLI::Option* form_opt_ = nullptr;
  detail::SubdomainCli subdomain_cli;  // --overlap, --robin, --local-solver, --coarse, --coarse-ranks, --near-kernel
  CLI::Option* fan_in_opt_ = nullptr;
  CLI::Option* reuse_opt_ = nullptr;
  CLI::Option* alpha_opt_ = nullptr;
  std::vector<CLI::Option*> grid_options_, matrix_options_;
};

void SchwarzCommand::add_options(CLI::App& app) {
  auto& s = solver;
  grid_options_.push_back(app.add_option("--problem", problem, core::named_help(solvers::schwarz_problems))->capture_default_str());
  grid_options_.push_back(app.add_option("--local", local, "Points per rank, M or MxN (laplace3d: M or MxNxP; weak scaling; default 32, "
                                   "laplace3d 16)"));
  grid_options_.push_back(app.add_option("--global", global, "Interior points of the domain, M or MxN (laplace3d: MxNxP) (strong scaling)"));
  grid_options_.push_back(app.add_option("--dims", dims, "Process grid PXxPY (laplace3d: PXxPYxPZ); 0 entries: the most balanced grid"));
  system_cli.add(app, "Run restricted additive Schwarz on this matrix's system");
  app.add_option("--mode", mode, core::named_help(solvers::schwarz_modes))->capture_default_str();
  grid_options_.push_back(alpha_opt_ = app.add_option("--alpha", alpha,
                 "Robin parameter of the interface condition du/dn + alpha u (OO0): a number > 0, inf (classical "
                 "Schwarz, Dirichlet interface) or auto (the OO0 optimum for the overlap and mesh, Gander 2006)")
      ->capture_default_str());
  subdomain_cli.add(app, s.subdomains,
                    "gamma: points each subdomain extends into its neighbours (>= 1); with --matrix, delta: layers "
                    "of graph distance in A + A^T (>= 0; 0 is block Jacobi)",
                    "With --matrix", "With --matrix", "With --matrix or poisson2d",
                 " (sync: the hybrid iteration, a coarse correction before each round of local solves; async: the "
                 "ranks' residuals are summed up a tree to rank 0, which solves the coarse problem, A0 factored there "
                 "alone, --coarse-ranks 0 or 1, and sends the corrections down, Glusa et al., 2020; Gbikpi-Benissan "
                 "and Magoulès, 2023; poisson2d runs on its assembled 5-point matrix: graph-distance overlap, robin "
                 "1/(1 + alpha h), --alpha inf unless given)");
  matrix_options_.push_back(subdomain_cli.robin_option());
  matrix_options_.push_back(subdomain_cli.local_solver_option());
  matrix_options_.push_back(subdomain_cli.relax_option());
  matrix_options_.push_back(subdomain_cli.pieces_option());
  matrix_options_.push_back(subdomain_cli.near_kernel_option());
  reuse_opt_ = app.add_option("--coarse-reuse", coarse_reuse,
                 "async with --coarse: the most local solves a rank makes on one coarse solution before it waits "
                 "for the next; its residual sum follows the last, so each correction lands on the iterate it was "
                 "computed from (0: never waits, the corrections add to the local solves' progress: may diverge)")
      ->capture_default_str();
  fan_in_opt_ = app.add_option("--coarse-fan-in", coarse_fan_in_text,
                 "async with --coarse: the fan-in K of the tree (rank 0 its root, contiguous rank ranges its "
                 "subtrees) that sums the residuals up and sends the corrections down: rank 0 exchanges with K "
                 "ranks, a cycle takes about 2 log_K P hops; K >= P - 1: rank 0 with every rank; auto: the K "
                 "that minimises the model's cycle, 2 height (latency + poll wait + K per-message cost), the costs "
                 "measured at set-up (a ping-pong, up to 32 messages to rank 0 at once, half a trial pass: a halo exchange and a local solve)")
      ->capture_default_str();
  form_opt_ = app.add_option("--coarse-form", coarse_form,
                              "with --coarse: the coarse problem, " + core::named_help(solvers::coarse_form_names))
                   ->capture_default_str();
  grid_options_.push_back(app.add_option(
      "--export-system", export_dir,
      "Write the poisson2d problem as an assembled system (DIR/A.petsc, DIR/b.petsc, DIR/partition.txt: the "
      "grid's own blocks) and exit"));
  detail::IterationCliSpec spec;
  spec.tol_help = "Local criterion on every rank: ||r_p|| < tol ||b_p|| on its own points";
  spec.check_help = "Iterations between convergence votes (async: the least)";
  iteration_cli.add(app, s.iteration, spec);
  app.add_option("--termination", termination, "Global termination: " + core::named_help(terminations));
  max_iters_option = app.get_option("--max-iters");
  app.add_option("--sync-wait", sync_wait, "sync: " + core::named_help(sync_waits))->capture_default_str();
  app.add_option("--idle", idle,
                 "async, a pass in which no new interface value has arrived (the local solve would repeat its "
                 "iterate): " +
                     core::named_help(core::among(core::idle_policy_names, {core::IdlePolicy::skip, core::IdlePolicy::yield,
                                                                            core::IdlePolicy::spin})))
      ->capture_default_str();
  transport_cli.add(app, s.transport, "async mode; sync exchanges are two-sided", /*inflight=*/true);
  output.add(app, "Write the solution (.npy: shape (nz, ny, nx), nz = 1 in 2D, or .vti; with --matrix the vector in "
                  "the file's row order: .npy, .mtx, PETSc binary .petsc/.bin/.dat)");
}

void SchwarzCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  auto& s = solver;
  s.mode = core::parse_named(solvers::schwarz_modes, mode, "--mode", "mode");
  const bool async = s.asynchronous();
  if (termination.empty()) termination = async ? "tree" : "allreduce";
  const Termination t = core::parse_named(terminations, termination, "--termination", "termination");
  if (t != Termination::none && (t == Termination::allreduce) == async)
    throw InputError("--termination " + termination + " goes with --mode " + (async ? "sync" : "async"));
  s.tree_termination = t == Termination::tree;
  s.detect_termination = t != Termination::none;
  s.wait_all = core::parse_named(sync_waits, sync_wait, "--sync-wait", "wait");
  if (s.wait_all && async) throw InputError("--sync-wait all goes with --mode sync");
  s.idle = core::parse_idle_policy(idle);
  transport_cli.apply(s.transport);
  iteration_cli.apply(s.iteration, nranks);
  if (t == Termination::none && !(s.iteration.time_limit > 0) && max_iters_option->count() == 0)
    throw InputError("--termination none: give --time-limit or --max-iters (nothing else stops the run)");
  subdomain_cli.apply(s.subdomains);
  const std::string coarse_kind = s.subdomains.coarse.kind;
  const int coarse_ranks = s.subdomains.coarse.coarse_ranks;
  if (coarse_reuse < 0) throw InputError(fmt::format("--coarse-reuse {}: must be >= 0", coarse_reuse));
  if (reuse_opt_->count() > 0 && (coarse_kind == solvers::no_coarse || !async))
    throw InputError("--coarse-reuse goes with --mode async and --coarse " + solvers::coarse_space_names("|"));
  if (coarse_kind == solvers::no_coarse || !async) coarse_reuse = 0;  // the record: nothing held
  if (coarse_fan_in_text == "auto") {
    coarse_fan_in = 0;
  } else {
    const auto k = detail::parse_number<int>(coarse_fan_in_text);
    if (!k) throw InputError(fmt::format("--coarse-fan-in {}: an integer >= 1 or auto", coarse_fan_in_text));
    coarse_fan_in = *k;
    if (coarse_fan_in < 1) throw InputError(fmt::format("--coarse-fan-in {}: must be >= 1 or auto", coarse_fan_in));
  }
  s.coarse_form = core::parse_named(solvers::coarse_form_names, coarse_form, "--coarse-form", "coarse form");
  if (form_opt_->count() > 0 && coarse_kind == solvers::no_coarse)
    throw InputError("--coarse-form goes with --coarse " + solvers::coarse_space_names("|"));
  if (fan_in_opt_->count() > 0 && (coarse_kind == solvers::no_coarse || !async))
    throw InputError("--coarse-fan-in goes with --mode async and --coarse " + solvers::coarse_space_names("|"));
  if (async && coarse_ranks > 1)
    throw InputError(fmt::format("--coarse-ranks {} with --mode async: the asynchronous coarse solve runs on rank 0 "
                                 "alone (--coarse-ranks 0 or 1)",
                                 coarse_ranks));
  subdomain_cli.check_ranks(nranks);
  system_cli.check();
  if (coarse_kind != solvers::no_coarse && !system_cli.given()) {
    if (problem != "poisson2d")
      throw InputError("--coarse with a built-in problem runs poisson2d (laplace3d: write its system with desync jacobi "
                       "--export-system and run it with --matrix)");
    if (!export_dir.empty()) throw InputError("--coarse goes with a solve, not with --export-system");
    if (!output.save_path.empty())
      throw InputError("--save with --coarse on the built-in problem: write the system with --export-system and run "
                       "it with --matrix to save the solution");
  }
  if (system_cli.given()) {
    for (const CLI::Option* o : grid_options_)
      if (o->count() > 0) throw InputError(o->get_name() + " applies to the built-in problems, not to --matrix");
    if (s.subdomains.overlap < 0) throw InputError(fmt::format("--overlap {}: must be >= 0", s.subdomains.overlap));
    if (!output.save_path.empty()) detail::check_vector_path(comm, output.save_path, "--save");
    output.check(comm, /*field=*/false);
    return;
  }
  for (const CLI::Option* o : matrix_options_)
    if (o->count() > 0) throw InputError(o->get_name() + " goes with --matrix");
  if (s.subdomains.overlap < 1) throw InputError(fmt::format("--overlap {}: must be >= 1", s.subdomains.overlap));
  if (!local.empty() && !global.empty()) throw InputError("give either --local or --global, not both");

  s.problem = core::parse_named(solvers::schwarz_problems, problem, "--problem", "problem");
  const bool three = s.problem == solvers::SchwarzProblem::laplace3d;
  if (three) {
    // 3D: extents M or MxNxP, the process grid PXxPYxPZ.
    process_grid = decomposition::choose_dims(nranks, detail::parse_dims(dims.empty() ? "0x0x0" : dims));
    if (!global.empty()) {
      global_points = decomposition::parse_extent(global, "--global");
    } else {
      const auto l = decomposition::parse_extent(local.empty() ? "16" : local, "--local");
      global_points = {l[0] * process_grid[0], l[1] * process_grid[1], l[2] * process_grid[2]};
    }
  } else {
    // 2D: extents MxN (or M), the process grid PXxPY, one point along z.
    auto to3 = [](const std::string& t) { return std::count(t.begin(), t.end(), 'x') == 1 ? t + "x1" : t; };
    const auto d = detail::parse_dims(to3(dims.empty() ? "0x0" : dims));
    if (d[2] > 1)
      throw InputError("--dims '" + dims + "': the 2D problem's process grid is PXxPY (laplace3d takes PXxPYxPZ)");
    process_grid = decomposition::choose_dims(nranks, {d[0], d[1], 1});
    auto extent = [&](const std::string& t, const char* what) {
      auto e = decomposition::parse_extent(std::count(t.begin(), t.end(), 'x') == 1 ? t + "x1" : t + "x" + t + "x1", what);
      if (e[2] != 1) throw InputError(std::string(what) + " '" + t + "': give M or MxN points (2D problem)");
      return e;
    };
    if (!global.empty()) {
      global_points = extent(global, "--global");
    } else {
      const auto l = extent(local.empty() ? "32" : local, "--local");
      global_points = {l[0] * process_grid[0], l[1] * process_grid[1], 1};
    }
  }
  const std::string split = decomposition::check_split(global_points, process_grid);
  if (!split.empty()) throw InputError(split);
  int smallest = std::min(global_points[0] / process_grid[0], global_points[1] / process_grid[1]);
  if (three) smallest = std::min(smallest, global_points[2] / process_grid[2]);
  if (nranks > 1 && s.subdomains.overlap >= smallest)
    throw InputError(fmt::format("--overlap {}: must be smaller than the smallest subdomain ({} points)", s.subdomains.overlap,
                                 smallest));
  const double h = 1.0 / (std::max({global_points[0], global_points[1], three ? global_points[2] : 1}) + 1);
  // Two levels: classical Schwarz unless --alpha is given. The Galerkin coarse correction composed
  // with the optimized (Robin) local solves can diverge (docs/matrices.md).
  if (coarse_kind != solvers::no_coarse && alpha_opt_->count() == 0) alpha = "inf";
  if (alpha == "auto") {
    s.alpha = solvers::schwarz_auto_alpha(s.subdomains.overlap, h);
  } else if (alpha == "inf") {
    s.alpha = solvers::schwarz_classical;
  } else {
    const auto a = detail::parse_number<double>(alpha);
    if (!a) throw InputError("--alpha '" + alpha + "': expected a number, inf or auto");
    s.alpha = *a;
    if (!(s.alpha > 0))
      throw InputError("--alpha " + alpha + ": must be > 0 (the local problem of an interior subdomain would be singular)");
  }
  output.check(comm);
}

std::vector<std::pair<std::string, std::string>> SchwarzCommand::effective() const {
  const auto& s = solver;
  const bool three = s.problem == solvers::SchwarzProblem::laplace3d;
  std::vector<std::pair<std::string, std::string>> out = {
      {"problem", problem},
      {"mode", mode},
      {"global", three ? fmt::format("{}x{}x{}", global_points[0], global_points[1], global_points[2])
                       : fmt::format("{}x{}", global_points[0], global_points[1])},
      {"local", local},
      {"dims", three ? fmt::format("{}x{}x{}", process_grid[0], process_grid[1], process_grid[2])
                     : fmt::format("{}x{}", process_grid[0], process_grid[1])},
      {"alpha", alpha},
      {"termination", termination},
      {"sync-wait", sync_wait},
      {"idle", idle},
      {"coarse-reuse", std::to_string(coarse_reuse)},
      {"coarse-fan-in", coarse_fan_in_text},
      {"coarse-form", coarse_form},
  };
  subdomain_cli.effective(out, s.subdomains);
  for (auto& [k, v] : out)
    if ((system_cli.given() && (k == "problem" || k == "global" || k == "dims" || k == "alpha")) ||
        (!system_cli.given() && k == "robin"))
      v = "";
  output.effective(out);
  iteration_cli.effective(out, s.iteration);
  transport_cli.effective(out);
  system_cli.effective(out);
  return out;
}

RankFields rank_fields(const solvers::SchwarzResult& r) {
  const auto& s = r.run.stats;
  RankFields f;
  // The delays: the age in iterations of the neighbour values each update used (0: the neighbour's
  // values of the same iteration, as sync uses), over every neighbour and iteration.
  detail::driven_rank_fields(f, s)
      .integers("coords", {s.coords[0], s.coords[1]})
      .integer("factor_nonzeros", r.factor_nonzeros)
      .number("factor_seconds", r.factor_seconds)
      .number("source_share", r.run.source_share);
  detail::exchange_open_fields(f);
  // Yamazaki et al.'s Figure 9 categories: Reduce, P2P, SpMV (the local residual), Update (the
  // interface part of the right-hand side), Solve (the subdomain solve).
  f.time_part("reduce", s.time.reduction)
      .time_part("p2p", s.time.halo)
      .time_part("spmv", r.spmv_seconds)
      .time_part("update", r.update_seconds)
      .time_part("solve", r.solve_seconds)
      .time_part("noise", s.time.noise)
      .time_part("polish", s.time.polish)
      .time_part("finish", s.time.finish);
  f.total_time = s.time.total;
  return f;
}

RunRecord SchwarzCommand::shared_record(MPI_Comm comm, const solvers::SchwarzResult& result, const RankFields& fields,
                                        const std::string& kind, nlohmann::json& details) const {
  RunRecord r;
  r.solver = "schwarz";
  r.method = mode;
  MPI_Comm_size(comm, &r.ranks);
  r.mpi_library = mpi_library_version();
  r.options = effective();
  r.tolerance = solver.iteration.tol;
  detail::fill_from_driver(r, comm, result.run);
  r.per_rank = gather_rank_fields(comm, fields);
  detail::gather_rank_histories(r, comm, result.run, solver.asynchronous());
  if (core::rank_of(comm) != 0) return r;
  const auto it = summarise_iterations(r.per_rank);
  r.iteration_rate = r.wall_time > 0 ? it.mean / r.wall_time : 0.0;
  std::int64_t nnz = 0;
  double factor_s = 0;
  for (const auto& p : r.per_rank) {
    nnz += static_cast<std::int64_t>(p.value("factor_nonzeros"));
    factor_s = std::max(factor_s, p.value("factor_seconds"));
  }
  const std::string transport_text = solver.asynchronous() ? comm::describe(solver.transport) : "p2p (two-sided)";
  r.headline = fmt::format("{}mode {}, transport {}, termination {}", kind, mode, transport_text, termination);
  // --termination none tests nothing: the recorded tested residual is no test's (it stays 0).
  if (termination == "none") r.residual_note = " (none tested: --termination none)";
  details["termination"] = termination;
  details["sync_wait"] = solver.asynchronous() ? nlohmann::json(nullptr) : nlohmann::json(sync_wait);
  details["transport"] = solver.asynchronous() ? transport_cli.kind() : "p2p";
  details["factor_nonzeros"] = nnz;
  details["factor_seconds"] = factor_s;
  details["iterations_local"] = {{"min", it.min}, {"max", it.max}};
  return r;
}

int SchwarzCommand::run(MPI_Comm comm) {
  if (system_cli.given()) return run_matrix(comm, detail::load_system(comm, system_cli), false);
  if (subdomain_cli.two_level()) return run_matrix(comm, builtin_system(comm), true);
  if (!export_dir.empty()) return export_grid_system(comm);
  const int rank = core::rank_of(comm);
  decomposition::CartGrid grid(comm, global_points, process_grid);
  std::vector<double> u;
  const solvers::SchwarzResult result = solvers::solve_schwarz(grid, solver, u);

  nlohmann::json details;
  RunRecord r = shared_record(comm, result, rank_fields(result), "", details);
  r.process_grid = grid.dims();
  r.global_size = grid.global();
  r.unknowns = static_cast<long long>(global_points[0]) * global_points[1] * global_points[2];
  if (rank == 0) {
    const std::string alpha_text = std::isinf(solver.alpha) ? "inf (classical)" : fmt::format("{:.6g}", solver.alpha);
    const bool three = solver.problem == solvers::SchwarzProblem::laplace3d;
    const std::string points = three ? fmt::format("3D Laplace, {}x{}x{} points", global_points[0], global_points[1],
                                                   global_points[2])
                                     : fmt::format("2D Poisson, {}x{} points", global_points[0], global_points[1]);
    r.setup_lines.push_back({"problem", fmt::format("{}, overlap {}, alpha {}{}", points, solver.subdomains.overlap, alpha_text,
                                                    alpha == "auto" ? " (auto)" : "")});
    r.setup_lines.push_back({"factorisation", fmt::format("CHOLMOD, {} nonzeros in the factors (all ranks), {:.4f} s "
                                                          "(slowest rank)", details["factor_nonzeros"].get<std::int64_t>(),
                                                          details["factor_seconds"].get<double>())});
    if (!std::isnan(result.error_max))
      r.performance_lines.push_back({"error", fmt::format("max |u - u_exact| = {:.3e} (discretisation and algebraic)",
                                                          result.error_max)});
    details["alpha"] = std::isinf(solver.alpha) ? nlohmann::json("inf") : nlohmann::json(solver.alpha);
    details["alpha_option"] = alpha;
    details["overlap"] = solver.subdomains.overlap;
    details["problem"] = problem;
    details["error_max"] = std::isnan(result.error_max) ? nlohmann::json(nullptr) : nlohmann::json(result.error_max);
    r.details = details.dump();
  }

  const std::string io_error = output.save_path.empty() ? "" : detail::output_error(rank, [&] {
    decomposition::Field f(grid.local());
    for (int k = 0, p = 0; k < grid.local()[2]; ++k)
      for (int j = 0; j < grid.local()[1]; ++j)
        for (int i = 0; i < grid.local()[0]; ++i, ++p) f(i, j, k) = u[static_cast<std::size_t>(p)];
    save_field(grid, f, output.save_path);
  });
  return finish_run(comm, r, output.quiet, output.json_path, io_error);
}

int SchwarzCommand::export_grid_system(MPI_Comm comm) {
  if (solver.problem != solvers::SchwarzProblem::poisson2d)
    throw InputError("--export-system writes the poisson2d problem (desync jacobi --export-system writes the 3D "
                     "Laplace problem)");
  const auto sys = problems::poisson2d_matrix_system(comm, global_points, process_grid);
  detail::export_system(comm, export_dir, sys.A, sys.b, sys.part);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0 && !output.quiet)
    fmt::print("desync schwarz: wrote {0}/A.petsc ({1}x{2} points, natural order), {0}/b.petsc and {0}/partition.txt "
               "(process grid {3}x{4})\n",
               export_dir, global_points[0], global_points[1], process_grid[0], process_grid[1]);
  return exit_converged;
}

/// Strings of every rank, on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      displs[static_cast<std::size_t>(r)] = displs[static_cast<std::size_t>(r) - 1] + counts[static_cast<std::size_t>(r) - 1];
    all.resize(static_cast<std::size_t>(displs.back() + counts.back()));
  }
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
  return out;
}

// The built-in poisson2d problem as an assembled system (problems::poisson2d_matrix_system),
// partitioned as the grid solver's blocks, for the two-level method. Collective.
detail::LoadedSystem SchwarzCommand::builtin_system(MPI_Comm comm) const {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  core::Stopwatch t;
  const auto p = problems::poisson2d_matrix_system(comm, global_points, process_grid);
  linalg::PartitionOptions po;
  po.method = linalg::PartitionMethod::file;
  po.file = "the grid's blocks";
  po.parts_given = true;
  const int mine = static_cast<int>(p.part.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  if (rank == 0) {
    for (int q = 1; q < size; ++q)
      displs[static_cast<std::size_t>(q)] = displs[static_cast<std::size_t>(q) - 1] + counts[static_cast<std::size_t>(q) - 1];
    po.parts.resize(static_cast<std::size_t>(displs.back() + counts.back()));
  }
  MPI_Gatherv(p.part.data(), mine, MPI_INT, po.parts.data(), counts.data(), displs.data(), MPI_INT, 0, comm);
  detail::LoadedSystem sys;
  sys.system = linalg::partition_system(p.A, po);
  sys.b = sys.system.to_partitioned(comm, p.b);
  sys.rows = static_cast<std::int64_t>(global_points[0]) * global_points[1];
  std::int64_t nnz = static_cast<std::int64_t>(p.A.col.size());
  MPI_Allreduce(MPI_IN_PLACE, &nnz, 1, MPI_INT64_T, MPI_SUM, comm);
  sys.nonzeros = nnz;
  sys.read_seconds = t.seconds();
  return sys;
}

solvers::SchwarzOptions SchwarzCommand::matrix_options(MPI_Comm comm, const detail::LoadedSystem& sys,
                                                       bool builtin) const {
  solvers::SchwarzOptions o = solver;  // the loop's settings and the overlap, the grid run's
  // The grid's Robin condition on the 5-point matrix: beta = 1/(1 + alpha h) (algebraic.hpp).
  const double h = 1.0 / (std::max(global_points[0], global_points[1]) + 1);
  if (builtin) o.subdomains.robin = std::isinf(solver.alpha) ? 0.0 : 1.0 / (1.0 + solver.alpha * h);
  o.subdomains.coarse.near_kernel = detail::near_kernel_of(comm, sys, subdomain_cli.near_kernel(), subdomain_cli.two_level());
  // async: rank 0 alone solves the coarse problem, so A0 is factored there only.
  if (solver.asynchronous()) o.subdomains.coarse.coarse_ranks = 1;
  o.coarse_reuse = coarse_reuse;
  o.coarse_fan_in = coarse_fan_in;
  o.coarse_form = solver.coarse_form;
  return o;
}

/// The per-rank fields of a matrix run: the grid run's (rank_fields, of the results' shared part), the subdomain's size and
/// set-up, and with a coarse level its work on this rank: corrections applied, coarse solves made
/// here (async: rank 0), residual sums made (one per coarse cycle), passes held back by
/// --coarse-reuse, its seconds, and the delays (this rank's iterations between its sum and the
/// correction built from it).
RankFields matrix_rank_fields(const solvers::SchwarzResult& result, bool two_level) {
  RankFields fields = rank_fields(result);  // the grid run's fields
  fields.integer("extended_rows", result.extended_rows).number("setup_seconds", result.setup_seconds);
  if (two_level) detail::coarse_iteration_fields(detail::coarse_level_fields(fields, result.coarse_level), result.coarse);
  return fields;
}

/// "cholmod-simplicial (3 ranks), umfpack (1 rank)": the ranks' local solvers, counted by kind.
std::string local_solver_counts(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& n : names) {
    auto f = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == n; });
    if (f == counts.end()) counts.push_back({n, 1}); else ++f->second;
  }
  std::string list;
  for (const auto& [n, c] : counts) list += fmt::format("{}{} ({} rank{})", list.empty() ? "" : ", ", n, c, c == 1 ? "" : "s");
  return list;
}

int SchwarzCommand::run_matrix(MPI_Comm comm, const detail::LoadedSystem& sys, bool builtin) {
  const int rank = core::rank_of(comm);
  const solvers::SchwarzOptions o = matrix_options(comm, sys, builtin);
  std::vector<double> x(sys.b.size(), 0.0);
  const solvers::SchwarzResult result = solvers::solve_algebraic_schwarz(sys.system.A, sys.b, x, o);

  const bool two_level = o.subdomains.coarse.two_level();
  nlohmann::json details;
  RunRecord r = shared_record(comm, result, matrix_rank_fields(result, two_level),
                              (two_level ? fmt::format("two-level ({}) ", subdomain_cli.coarse_name()) : std::string()) +
                                  "restricted additive Schwarz, ",
                              details);
  r.unknowns = sys.rows;
  if (r.stop_reason == core::StopReason::diverged && o.mode == comm::HaloMode::async &&
      two_level && o.coarse_reuse == 0)
    r.message += " (--coarse-reuse 0 adds each coarse correction to the progress the local solves made since its "
                 "residual was taken, an additive two-level iteration that may diverge; --coarse-reuse 1, the "
                 "default, applies it to the iterate it was computed from)";
  const auto names = gather_strings(comm, result.local_solver_name);
  const auto reasons = gather_strings(comm, result.local_solver_reason);
  if (rank == 0) {
    std::int64_t ext_min = 0, ext_max = 0;
    double setup_s = 0;
    for (const auto& p : r.per_rank) {
      setup_s = std::max(setup_s, p.value("setup_seconds"));
      const auto e = static_cast<std::int64_t>(p.value("extended_rows"));
      ext_min = &p == &r.per_rank[0] ? e : std::min(ext_min, e);
      ext_max = std::max(ext_max, e);
    }
    if (builtin) {
      const std::string alpha_text = std::isinf(solver.alpha) ? "inf (classical)" : fmt::format("{:.6g}", solver.alpha);
      r.setup_lines.push_back({"problem", fmt::format("2D Poisson, {}x{} points, assembled (5-point), the grid's {}x{} "
                                                      "blocks; alpha {} (robin {:.6g})",
                                                      global_points[0], global_points[1], process_grid[0],
                                                      process_grid[1], alpha_text, o.subdomains.robin)});
      details["problem"] = problem;
      details["alpha"] = std::isinf(solver.alpha) ? nlohmann::json("inf") : nlohmann::json(solver.alpha);
    } else {
      detail::describe_system(r, details, sys, system_cli);
    }
    detail::record_coarse_level(r, details, result.coarse_level, detail::near_kernel_label(&sys, subdomain_cli.near_kernel(), "constant"));
    if (two_level)
      detail::record_coarse_iterations(r, details, {solver.asynchronous(), coarse_reuse, result.coarse.fan_in,
                                                    result.coarse.tree_height, coarse_form,
                                                    result.coarse.fan_in_model, coarse_fan_in == 0});
    const int pieces = solver.subdomains.subdomains_per_rank;
    r.setup_lines.push_back({"subdomains", fmt::format("overlap {} (graph distance), robin {}, {} to {} rows each{}",
                                                       solver.subdomains.overlap, o.subdomains.robin, ext_min,
                                                       ext_max,
                                                       pieces > 1 ? fmt::format("; {} subdomains per rank, each "
                                                                                "extended by the overlap and solved "
                                                                                "alone (one correction step per "
                                                                                "iteration)", pieces)
                                                                  : std::string())});
    r.setup_lines.push_back({"local solves", fmt::format("{}{}; {} nonzeros in the factors (all ranks), {:.4f} s (slowest rank)",
                                                         local_solver_counts(names),
                                                         solver.subdomains.ilu_relax != 0
                                                             ? fmt::format(", relaxed {}", solver.subdomains.ilu_relax)
                                                             : std::string(),
                                                         details["factor_nonzeros"].get<std::int64_t>(),
                                                         details["factor_seconds"].get<double>())});
    details["overlap"] = solver.subdomains.overlap;
    details["robin"] = o.subdomains.robin;  // the run's (the built-in problem's from --alpha)
    details["local_solver_option"] = linalg::to_string(solver.subdomains.local_solver);
    details["ilu_relax"] = solver.subdomains.ilu_relax;
    details["subdomains_per_rank"] = pieces;
    details["local_solvers"] = names;
    details["local_solver_reasons"] = reasons;
    details["setup_seconds"] = setup_s;
    details["extended_rows"] = {{"min", ext_min}, {"max", ext_max}};
    r.details = details.dump();
  }
  const std::string io_error = detail::deliver_solution(comm, sys, x, builtin ? std::string() : output.save_path);
  return finish_run(comm, r, output.quiet, output.json_path, io_error);
}

}  // namespace
}  // namespace schwarz_command

SolverInfo schwarz_solver() {
  return {"schwarz", "Optimized Schwarz domain decomposition (2D Poisson, 3D Laplace, or a matrix), sync or async (Yamazaki et al.)",
          "--mode", detail::method_list(solvers::schwarz_modes), &create_command<schwarz_command::SchwarzCommand>,
          {"schwarz.solve", "schwarz.residual"}};  // a subdomain solve, a residual, per unknown
}

}  // namespace desync::run
