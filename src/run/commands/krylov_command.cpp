// `desync krylov` and `desync cg`: the Krylov family (its registered methods, solvers/cg/cg.hpp,
// and their traits: which need a symmetric positive definite matrix, which restart) on poisson3d, elasticity3d or a Matrix Market matrix. One
// command registered under two names (krylov_solver, cg_solver), the same options and record, whose
// "solver" is the name it ran under. The command's options and their checks, its run, and its
// section of the run record (docs/output.md).
//
//   mpirun -np 4 desync krylov --method pipecg --pc jacobi --global 64
//   mpirun -np 4 desync cg --pc jacobi --global 64
//   mpirun -np 4 desync krylov --method <method> ...     (the method files, src/solvers/cg/, show each)
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../coarse_record.hpp"
#include "../option_parsing.hpp"
#include "../report_common.hpp"
#include "../system_input.hpp"
#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/linalg/system_io.hpp"
#include "desync/linalg/operator.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/record.hpp"
#include "desync/run/command_registry.hpp"
#include "desync/run/run_end.hpp"
#include "desync/solvers/cg/cg.hpp"

namespace desync::run {

// A named namespace around the file-local one: the run layer builds as one unity translation unit.
namespace cg_command {
namespace {

/// --reduction's kinds a Krylov method's dot products take (the tree is the stationary solvers').
constexpr std::initializer_list<comm::ReductionKind> krylov_reductions = {
    comm::ReductionKind::blocking, comm::ReductionKind::iallreduce, comm::ReductionKind::doubling};

/// The methods, from the CG family's registry.
std::vector<MethodInfo> methods() {
  std::vector<MethodInfo> m;
  for (const auto& info : solvers::cg_method_registry().methods())
    m.push_back({info.name, info.description, {info.vector_cost}});
  return m;
}

/// The names of the methods that run in restart cycles, for --restart's help and check.
std::string restarting_methods() {
  std::string names;
  for (const auto& info : solvers::cg_method_registry().methods())
    if (info.restarts) names += (names.empty() ? "" : ", ") + info.name;
  return names;
}

/// The names of the methods that overlap their reductions, for --reduction's help.
std::string overlapping_methods() {
  std::string names;
  for (const auto& info : solvers::cg_method_registry().methods())
    if (info.overlaps_reduction) names += (names.empty() ? "" : ", ") + info.name;
  return names;
}

/// The CG methods need a symmetric matrix (a non-symmetric one would be solved wrongly, not
/// refused) with a positive diagonal (a diagonal entry <= 0 rules out positive definiteness);
/// InputError on every rank naming the methods that take any matrix. Collective.
void check_matrix_for_method(MPI_Comm comm, const detail::LoadedSystem& loaded, const std::string& source,
                             const std::string& method) {
  if (!solvers::find_cg_method(method).positive_definite) return;
  agree_or_throw(comm, linalg::is_symmetric(loaded.system.A),
                 fmt::format("{}: the matrix is not symmetric, and --method {} needs a symmetric positive definite "
                             "matrix: use --method {}",
                             source, method, solvers::general_cg_methods()));
  const auto& M = loaded.system.A;
  std::int64_t bad = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t i = 0; i < M.local_rows() && bad == std::numeric_limits<std::int64_t>::max(); ++i) {
    double d = 0;
    for (auto p = M.row_ptr[static_cast<std::size_t>(i)]; p < M.row_ptr[static_cast<std::size_t>(i) + 1]; ++p)
      if (M.col[static_cast<std::size_t>(p)] == M.first_block_row() + i) d = M.val[static_cast<std::size_t>(p)];
    if (!(d > 0)) bad = loaded.system.original_row[static_cast<std::size_t>(i)];
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_MIN, comm);
  agree_or_throw(comm, bad == std::numeric_limits<std::int64_t>::max(),
                 fmt::format("{}: row {} (0-based) has a diagonal entry <= 0, so the matrix is not positive "
                             "definite, which --method {} needs: use --method {}",
                             source, bad, method, solvers::general_cg_methods()));
}

class CgCommand final : public SolverCommand {
 public:
  /// `name`: the command it runs as (the JSON "solver"), "krylov" or "cg".
  explicit CgCommand(std::string name) : name_(std::move(name)) {}
  void add_options(CLI::App& app) override;
  /// `--progress thread` runs a progress thread that calls MPI while the interior rows are computed:
  /// MPI_THREAD_MULTIPLE (linalg::required_thread_level), requested only then.
  int thread_level() const override {
    linalg::SpmvConfig c;
    try {
      c.engine = linalg::parse_exchange_engine(engine);
      c.progress = linalg::parse_progress(progress);
    } catch (const InputError&) {
      return MPI_THREAD_FUNNELED;  // finalise() reports it
    }
    return linalg::required_thread_level(c);
  }
  void finalise(MPI_Comm comm) override;
  int run(MPI_Comm comm) override;

 private:
  /// The built-in problem (poisson3d or elasticity3d) on a process grid: its operator, right-hand
  /// side and, for a csr operator, the assembled matrix; with --export-system it writes the system
  /// instead and returns true. Collective.
  bool build_builtin(MPI_Comm comm, std::unique_ptr<decomposition::CartGrid>& grid,
                     std::unique_ptr<linalg::Operator>& A, std::vector<double>& b, linalg::DistributedCsr& assembled);
  /// Effective values, for the JSON record.
  std::vector<std::pair<std::string, std::string>> effective() const;

  std::string name_;                      // the command: krylov | cg
  std::string method = solvers::CgOptions{}.method;  // --method (CgOptions's default)
  int restart = solvers::CgOptions{}.restart;        // --restart (the restarting methods)
  std::string pc = "none";                // --pc
  std::string reduction = "iallreduce";   // --reduction (the methods that overlap their reductions)
  std::string problem = "poisson3d";      // --problem: poisson3d | elasticity3d
  detail::SystemCli system_cli;           // --matrix, --rhs, --partition, --partition-seed
  detail::SubdomainCli subdomain_cli;     // --overlap, --robin, --local-solver, --coarse, ... (asm, ras)
  std::string export_dir;                 // --export-system
  std::string local;                      // --local: points (nodes) per rank
  std::string global;                     // --global: total points (nodes)
  std::string dims = "0x0x0";             // --dims
  std::string operator_kind;              // --operator: matrix-free | csr (poisson3d)
  std::string engine = "p2p";             // --engine
  std::string progress = "none";          // --progress
  int test_interval = 1024;               // --test-interval
  detail::TransportCli transport_cli;     // --transport, --rma-sync, --shmem-sync (engine p2p)
  double young = 1.0;                     // --young (elasticity3d)
  double poisson_ratio = 0.3;             // --poisson-ratio (elasticity3d)
  double load = 1.0;                      // --load (elasticity3d)
  detail::IterationCli iteration_cli;     // --rtol, --max-iters, --time-limit, --monitor, --monitor-every
  int replace_every = 0;                  // --replace-every
  detail::OutputCli output;               // --json, --quiet

  // Resolved by finalise().
  bool from_matrix = false;                         ///< --matrix given
  decomposition::Index3 global_points{0, 0, 0};     ///< grid problems
  decomposition::Index3 process_grid{1, 1, 1};
  linalg::SpmvConfig spmv;
  solvers::CgOptions solver;

  CLI::Option* problem_opt_ = nullptr;
  CLI::Option* operator_opt_ = nullptr;
  CLI::Option* dims_opt_ = nullptr;
  CLI::Option* restart_opt_ = nullptr;
};

void CgCommand::add_options(CLI::App& app) {
  app.add_option("--method", method, detail::method_help(methods()))->capture_default_str();
  app.add_option("--pc", pc,
                 "Preconditioner (" + solvers::subdomain_pcs(" and ") +
                     " need an assembled matrix: --matrix, --operator csr or elasticity3d), " + solvers::pc_help())
      ->capture_default_str();
  const std::string subdomain_pcs = "--pc " + solvers::subdomain_pcs(", ");
  subdomain_cli.add(app, solver.pc_subdomains,
                    subdomain_pcs + ": layers of graph distance each subdomain extends by (>= 0)", subdomain_pcs,
                    subdomain_pcs, subdomain_pcs, " (additive)");
  restart_opt_ = app.add_option("--restart", restart,
                                restarting_methods() + " only: the restart length m, Arnoldi steps (iterations) per cycle, >= 1")
                     ->capture_default_str();
  app.add_option("--reduction", reduction,
                 "Methods that overlap their reductions (" + overlapping_methods() +
                     "): how their dot products are summed, overlapped with the preconditioner and the matrix-vector "
                     "product unless blocking (doubling's rounds advance in the ghost exchanges and --progress test's "
                     "polls; nonblocking: iallreduce's former name), " +
                     core::named_help(core::among(comm::reduction_names, krylov_reductions)))
      ->capture_default_str();
  problem_opt_ = app.add_option("--problem", problem, "poisson3d | elasticity3d")->capture_default_str();
  system_cli.add(app, "Solve this matrix's system (symmetric positive definite for the CG methods; " +
                          solvers::general_cg_methods() + " takes any)");
  app.add_option("--export-system", export_dir,
                 "Write the built-in problem's assembled system (DIR/A.petsc, DIR/b.petsc in this run's rank-major "
                 "order, DIR/partition.txt: each row's rank) and exit");
  app.add_option("--local", local,
                 "Grid points (elasticity3d: nodes) per rank, N or NXxNYxNZ (weak scaling; default 50, "
                 "elasticity3d 16)");
  app.add_option("--global", global, "Total grid points (elasticity3d: nodes), N or NXxNYxNZ (strong scaling)");
  dims_opt_ = app.add_option("--dims", dims, "Process grid PXxPYxPZ; 0 entries: the most balanced grid")
      ->capture_default_str();
  operator_opt_ = app.add_option("--operator", operator_kind,
                                 "poisson3d: matrix-free stencil or the assembled csr matrix (default matrix-free)");
  app.add_option("--engine", engine, "Ghost exchange: " + core::named_help(comm::exchange_engine_names))
      ->capture_default_str();
  app.add_option("--progress", progress,
                 "Exchange progress during the interior rows: " + core::named_help(comm::progress_names))
      ->capture_default_str();
  app.add_option("--test-interval", test_interval, "--progress test: rows between MPI_Test calls")
      ->capture_default_str();
  transport_cli.add(app, spmv.transport, "--engine p2p");
  app.add_option("--young", young, "elasticity3d: Young's modulus E")->capture_default_str();
  app.add_option("--poisson-ratio", poisson_ratio, "elasticity3d: Poisson's ratio nu")->capture_default_str();
  app.add_option("--load", load, "elasticity3d: total traction on the face z = 1")->capture_default_str();
  // The Krylov methods test every iteration and have no polish phase or injected noise (cg.hpp).
  detail::IterationCliSpec spec;
  spec.tol_help = "Stop when ||r|| <= rtol ||b|| (r: the unpreconditioned residual); --tol is the same";
  spec.tol_names = "--rtol,--tol";
  spec.tol_below_one = true;
  spec.polish = false;
  spec.noise = false;
  spec.monitor_every = true;
  iteration_cli.add(app, solver.iteration, spec);
  app.add_option("--replace-every", replace_every,
                 "Recompute r = b - Ax and the vectors derived from it every K iterations (0: never)")
      ->capture_default_str();
  output.add(app, "With --matrix: write the solution vector in the file's row order (.npy, .mtx, PETSc binary .petsc/.bin/.dat)");
}

void CgCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  auto& s = solver;
  s.method = solvers::find_cg_method(method).name;
  if (restart < 1) throw InputError(fmt::format("--restart {}: must be >= 1", restart));
  if (restart_opt_ && restart_opt_->count() > 0 && !solvers::find_cg_method(s.method).restarts)
    throw InputError("--restart applies to --method " + restarting_methods() + " only");
  s.restart = restart;
  s.pc = solvers::find_pc(pc).name;
  if (reduction == "nonblocking") reduction = "iallreduce";  // the former name, still taken
  const auto kind = core::parse_named_among(comm::reduction_names, krylov_reductions, reduction, "--reduction", "reduction");
  s.nonblocking = kind != comm::ReductionKind::blocking;
  s.doubling = kind == comm::ReductionKind::doubling;
  iteration_cli.apply(s.iteration, nranks);
  if (replace_every < 0) throw InputError("--replace-every must be >= 0 (0: never)");
  s.replace_every = replace_every;
  s.monitor_every = s.iteration.monitor ? iteration_cli.monitor_every() : 0;

  spmv.engine = linalg::parse_exchange_engine(engine);
  spmv.progress = linalg::parse_progress(progress);
  if (test_interval < 1) throw InputError("--test-interval must be >= 1");
  spmv.test_interval = test_interval;
  // The preconditioner polls too where a poll can advance something: the recursive doubling.
  s.pc_poll_interval = spmv.progress == linalg::Progress::test && s.doubling ? test_interval : 0;
  transport_cli.apply(spmv.transport);
  s.pc_transport = spmv.transport;  // the subdomain preconditioners' exchanges over the same transport

  system_cli.check();
  from_matrix = system_cli.given();
  if (s.pc_subdomains.overlap < 0)
    throw InputError(fmt::format("--overlap {}: must be >= 0", s.pc_subdomains.overlap));
  subdomain_cli.apply(s.pc_subdomains);
  subdomain_cli.check_ranks(nranks);
  if (!solvers::find_pc(s.pc).subdomains && subdomain_cli.given())
    throw InputError("--overlap, --robin, --local-solver, --subdomains-per-rank and --coarse go with --pc " + solvers::subdomain_pcs());
  if (!subdomain_cli.near_kernel().empty() && !system_cli.given())
    throw InputError("--near-kernel goes with --matrix (elasticity3d takes its rigid-body modes, poisson3d the constant)");
  if (solvers::find_pc(s.pc).subdomains && !from_matrix && problem == "poisson3d" && operator_opt_ && operator_opt_->count() == 0)
    operator_kind = "csr";  // the Schwarz preconditioners need the assembled matrix
  const bool problem_given = problem_opt_ && problem_opt_->count() > 0;
  const bool operator_given = operator_opt_ && operator_opt_->count() > 0;
  if (from_matrix) {
    if (problem_given) throw InputError("give either --problem or --matrix, not both");
    if (operator_given) throw InputError("--operator applies to --problem poisson3d only, not to --matrix");
    if (!local.empty() || !global.empty() || (dims_opt_ && dims_opt_->count() > 0))
      throw InputError("--local, --global and --dims apply to the generated problems, not to --matrix");
    if (!export_dir.empty()) throw InputError("--export-system writes a built-in problem, not --matrix");
    problem = "matrix";
    operator_kind = "csr";
  } else {
    if (!output.save_path.empty()) throw InputError("--save goes with --matrix");
    if (problem == "poisson3d") {
      if (operator_kind.empty()) operator_kind = "matrix-free";
      if (operator_kind != "matrix-free" && operator_kind != "csr")
        throw InputError("--operator '" + operator_kind + "': unknown operator (expected matrix-free or csr)");
      if (solvers::find_pc(s.pc).subdomains && operator_kind != "csr")
        throw InputError("--pc " + pc + " needs an assembled matrix: --operator csr, not matrix-free");
    } else if (problem == "elasticity3d") {
      if (operator_given) throw InputError("--operator applies to --problem poisson3d only");
      operator_kind = "csr";
      if (!(young > 0) || !std::isfinite(young)) throw InputError("--young must be > 0");
      if (!(poisson_ratio > -1 && poisson_ratio < 0.5)) throw InputError("--poisson-ratio must be in (-1, 0.5)");
      if (!std::isfinite(load)) throw InputError("--load must be finite");
    } else {
      throw InputError("--problem '" + problem + "': unknown problem (expected poisson3d or elasticity3d)");
    }
    if (!local.empty() && !global.empty()) throw InputError("give either --local or --global, not both");
    process_grid = decomposition::choose_dims(nranks, detail::parse_dims(dims));
    global_points = detail::global_size(local, global, problem == "elasticity3d" ? "16" : "50", process_grid);
    const std::string split = decomposition::check_split(global_points, process_grid);
    if (!split.empty()) throw InputError(split);
  }
  if (from_matrix && !output.save_path.empty()) detail::check_vector_path(comm, output.save_path, "--save");
  output.check(comm, /*field=*/false);
}

std::vector<std::pair<std::string, std::string>> CgCommand::effective() const {
  const auto& g = global_points;
  const auto& d = process_grid;
  const bool grid = !from_matrix;
  std::string local_eff = local;
  if (grid && local.empty() && global.empty()) local_eff = problem == "elasticity3d" ? "16" : "50";
  std::vector<std::pair<std::string, std::string>> out = {{"method", method},
          {"pc", pc},
          {"reduction", reduction},
          {"problem", problem},
          {"global", grid ? fmt::format("{}x{}x{}", g[0], g[1], g[2]) : ""},
          {"local", local_eff},
          {"dims", grid ? fmt::format("{}x{}x{}", d[0], d[1], d[2]) : ""},
          {"operator", operator_kind},
          {"engine", engine},
          {"progress", progress},
          {"test-interval", std::to_string(test_interval)},
          {"young", fmt::format("{}", young)},
          {"poisson-ratio", fmt::format("{}", poisson_ratio)},
          {"load", fmt::format("{}", load)},
          {"replace-every", std::to_string(replace_every)},
  };
  iteration_cli.effective(out, solver.iteration);
  // The restarting methods only, so that the CG methods' records stay as they were.
  if (solvers::find_cg_method(solver.method).restarts) out.emplace_back("restart", std::to_string(restart));
  output.effective(out);
  transport_cli.effective(out);
  system_cli.effective(out);
  if (solvers::find_pc(solver.pc).subdomains) subdomain_cli.effective(out, solver.pc_subdomains);
  return out;
}

// ---- the run and its section of the record -----------------------------------------------------

/// One rank's statistics by name (the JSON per_rank entry; docs/output.md).
RankFields rank_fields(const solvers::CgRankStats& s) {
  RankFields f;
  f.integer("rank", s.rank)
      .integer("local_rows", s.local_rows)
      .integer("iterations", s.iterations)
      .integer("reductions", s.reductions)
      .integer("spmvs", s.spmvs)
      .integer("pc_applications", s.pc_applications)
      .integer("pc_polls", s.pc_polls)
      .integer("replacements", s.replacements)
      .integer("messages_sent", s.spmv.exchange.messages_sent)
      .integer("messages_received", s.spmv.exchange.messages_received)
      .number("bytes_sent", s.spmv.exchange.bytes_sent);
  // halo_wait is part of spmv and reduction_wait part of reduction: shares, not counted again.
  f.time_part("spmv", s.time.spmv)
      .time_part("halo_wait", s.time.halo_wait, false)
      .time_part("pc", s.time.pc)
      .time_part("vector", s.time.vector)
      .time_part("reduction", s.time.reduction)
      .time_part("reduction_wait", s.time.reduction_wait, false)
      .time_part("setup", s.time.setup);
  f.total_time = s.time.total;
  return f;
}

bool CgCommand::build_builtin(MPI_Comm comm, std::unique_ptr<decomposition::CartGrid>& grid,
                             std::unique_ptr<linalg::Operator>& A, std::vector<double>& b,
                             linalg::DistributedCsr& assembled) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  grid = std::make_unique<decomposition::CartGrid>(comm, global_points, process_grid);
  if (problem == "poisson3d") {
    if (operator_kind == "csr") {
      assembled = problems::assemble_poisson3d(*grid);
      A = linalg::make_csr_operator(assembled, spmv);
    } else {
      A = problems::make_poisson3d_operator(*grid, spmv);
    }
    b = problems::poisson3d_rhs(*grid);
  } else {
    problems::ElasticityParams p;
    p.E = young;
    p.nu = poisson_ratio;
    p.load = load;
    auto sys = problems::assemble_elasticity3d(*grid, p);
    A = linalg::make_csr_operator(sys.A, spmv);
    b = std::move(sys.b);
    assembled = linalg::scalar_csr(sys.A);  // the Schwarz subdomains and the export work in scalar rows
    if (solver.pc_subdomains.coarse.two_level())
      solver.pc_subdomains.coarse.near_kernel = problems::elasticity3d_rigid_body_modes(*grid);  // in assembled's rows
  }
  if (!assembled.row_ptr.empty()) solver.pc_matrix = &assembled;
  if (!export_dir.empty()) {
    if (assembled.row_ptr.empty()) assembled = problems::assemble_poisson3d(*grid);
    const std::vector<int> part(static_cast<std::size_t>(assembled.local_rows()), rank);
    detail::export_system(comm, export_dir, assembled, b, part);
    if (rank == 0 && !output.quiet)
      fmt::print("desync {}: wrote {}/A.petsc ({} rows, rank-major order), b.petsc and partition.txt\n", name_,
                 export_dir, assembled.global_rows());
    return true;
  }
  return false;
}

int CgCommand::run(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  comm::init_transport(spmv.transport.kind);  // shmem: shmem_init and the symmetric arena
  std::unique_ptr<decomposition::CartGrid> grid;
  std::unique_ptr<linalg::Operator> A;
  std::vector<double> b;
  std::optional<detail::LoadedSystem> loaded;  // --matrix
  linalg::DistributedCsr assembled;              // the matrix of a csr operator (the subdomain preconditioners, --export-system)
  if (from_matrix) {
    loaded = detail::load_system(comm, system_cli);
    check_matrix_for_method(comm, *loaded, system_cli.source(), method);
    A = linalg::make_csr_operator(loaded->system.A, spmv);
    b = loaded->b;
    solver.pc_matrix = &loaded->system.A;
    solver.pc_subdomains.coarse.near_kernel =
        detail::near_kernel_of(comm, *loaded, subdomain_cli.near_kernel(), subdomain_cli.two_level());
  } else if (build_builtin(comm, grid, A, b, assembled)) {
    return exit_converged;  // --export-system wrote the system
  }
  std::vector<double> x(static_cast<std::size_t>(A->local_size()), 0.0);
  const solvers::CgResult result = solvers::solve_cg(*A, b, x, solver);

  RunRecord r;
  r.solver = name_;
  r.method = solver.method;
  r.ranks = size;
  r.mpi_library = mpi_library_version();
  if (grid) {
    r.process_grid = grid->dims();
    r.global_size = grid->global();
  }
  r.unknowns = A->global_size();
  r.options = effective();
  r.tolerance = solver.iteration.tol;
  r.converged = result.converged;
  r.stop_reason = result.stop;
  r.message = result.message;
  r.true_residual = result.true_residual;
  r.tested_residual = result.recursive_residual;
  r.history = result.history;
  r.wall_time = max_over_ranks(comm, result.stats.time.total);
  r.iteration_rate = r.wall_time > 0 ? static_cast<double>(result.iterations) / r.wall_time : 0.0;
  const std::string operator_name = A->name();
  A.reset();  // closes the exchange's channels (collective): no request may stay pending
  r.outstanding_requests = pending_requests(comm);
  RankFields fields = rank_fields(result.stats);
  if (result.coarse.functions > 0) detail::coarse_level_fields(fields, result.coarse);
  r.per_rank = gather_rank_fields(comm, fields);
  const double coarse_apply = max_over_ranks(comm, result.coarse_apply_seconds);

  if (rank == 0) {
    const bool overlapping = solvers::find_cg_method(solver.method).overlaps_reduction;
    const std::string red =
        overlapping && solver.nonblocking ? (solver.doubling ? "recursive doubling" : "iallreduce") : "allreduce";
    const std::string pc_name = solver.pc;
    double sent = 0, received = 0;
    std::int64_t replacements = 0;
    for (const auto& p : r.per_rank) {
      const double its = std::max(1.0, p.value("iterations"));
      sent += p.value("messages_sent") / its;
      received += p.value("messages_received") / its;
      replacements = std::max(replacements, static_cast<std::int64_t>(p.value("replacements")));
    }
    const double n = std::max<double>(1.0, static_cast<double>(r.per_rank.size()));
    const double per_it = result.iterations > 0 ? r.wall_time / static_cast<double>(result.iterations) : 0.0;

    const bool restarts = solvers::find_cg_method(solver.method).restarts;
    const std::string restart_note = restarts ? fmt::format(" (restart {})", solver.restart) : "";
    r.headline = fmt::format("method {}{}, pc {}, reduction {}", r.method, restart_note, pc_name, red);
    r.setup_lines.push_back({"problem", fmt::format("{}, operator {}, exchange {}{} (progress {})", problem, operator_name,
                                                    engine, engine == "p2p" ? " over " + transport_cli.kind() : std::string(),
                                                    progress)});
    if (grid) {
      const auto& g = grid->global();
      r.setup_lines.push_back({"global size", fmt::format("{}x{}x{} {}, {} unknowns, local {}", g[0], g[1], g[2],
                                                          problem == "elasticity3d" ? "nodes" : "points", r.unknowns,
                                                          detail::local_sizes(g, grid->dims()))});
    }
    if (!result.pc_description.empty() && solvers::find_pc(solver.pc).subdomains)
      r.setup_lines.push_back({"preconditioner", result.pc_description});
    nlohmann::json details;
    if (solvers::find_pc(solver.pc).subdomains) {
      detail::record_coarse_level(r, details, result.coarse,
                                  detail::near_kernel_label(loaded ? &*loaded : nullptr, subdomain_cli.near_kernel(),
                                                            problem == "elasticity3d" ? "rigid-body" : "constant"));
      if (result.coarse.functions > 0) details["coarse_apply_seconds"] = coarse_apply;
    }
    if (replacements > 0) r.iterations_note = fmt::format("  (residual replacements {})", replacements);
    r.performance_lines.push_back({"per iteration", fmt::format("{:.3f} ms (wall time / iterations)", 1e3 * per_it)});
    r.performance_lines.push_back(
        {"messages/iter", fmt::format("sent {:.3f}  received {:.3f}  (ghost exchange, per rank)", sent / n, received / n)});
    r.residual_note = fmt::format(" (recursive ||r||/||b||; ||b|| = {:.6e})", result.b_norm);

    if (loaded) detail::describe_system(r, details, *loaded, system_cli);
    details["pc"] = pc_name;
    details["pc_description"] = result.pc_description;
    details["reduction"] = red;
    details["engine"] = engine;
    details["transport"] = engine == "p2p" ? transport_cli.kind() : engine;
    details["progress"] = progress;
    details["problem"] = problem;
    details["operator"] = operator_name;
    details["b_norm"] = result.b_norm;
    details["replacements"] = replacements;
    if (restarts) details["restart"] = solver.restart;
    details["time_per_iteration"] = per_it;
    details["messages_per_iteration"] = {{"sent", sent / n}, {"received", received / n}};
    r.details = details.dump();
  }
  const std::string io_error = loaded ? detail::deliver_solution(comm, *loaded, x, output.save_path) : "";
  return finish_run(comm, r, output.quiet, output.json_path, io_error);
}

std::unique_ptr<SolverCommand> create_krylov() { return std::make_unique<CgCommand>("krylov"); }
std::unique_ptr<SolverCommand> create_cg() { return std::make_unique<CgCommand>("cg"); }

}  // namespace
}  // namespace cg_command

SolverInfo krylov_solver() {
  return {"krylov", "Krylov methods (the CG family, restarted GMRES) on poisson3d, elasticity3d or a matrix",
          "--method", cg_command::methods(), &cg_command::create_krylov, solvers::cg_cost_kinds()};
}

SolverInfo cg_solver() {
  return {"cg", "Conjugate gradients on poisson3d, elasticity3d or a matrix (the krylov command)", "--method",
          cg_command::methods(), &cg_command::create_cg, solvers::cg_cost_kinds()};
}

}  // namespace desync::run
