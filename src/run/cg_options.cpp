#include "desync/run/cg_options.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>

#include "desync/core/error.hpp"
#include "desync/run/field_io.hpp"
#include "option_parsing.hpp"

namespace desync::run {

void CgCommand::add_options(CLI::App& app) {
  app.add_option("--method", method, "cg | cg-cg | pipecg | groppcg")->capture_default_str();
  app.add_option("--pc", pc, "Preconditioner: none | jacobi | bjacobi-ic0")->capture_default_str();
  app.add_option("--reduction", reduction,
                 "pipecg, groppcg: dot products by MPI_Iallreduce overlapped with the preconditioner and the "
                 "matrix-vector product (nonblocking) or by MPI_Allreduce (blocking)")
      ->capture_default_str();
  problem_opt_ = app.add_option("--problem", problem, "poisson3d | elasticity3d")->capture_default_str();
  app.add_option("--matrix", matrix_path, "Solve with this Matrix Market matrix (symmetric positive definite)");
  app.add_option("--rhs", rhs_path, "With --matrix: right-hand side as a Matrix Market vector (default A * 1)");
  app.add_option("--local", local,
                 "Grid points (elasticity3d: nodes) per rank, N or NXxNYxNZ (weak scaling; default 50, "
                 "elasticity3d 16)");
  app.add_option("--global", global, "Total grid points (elasticity3d: nodes), N or NXxNYxNZ (strong scaling)");
  dims_opt_ = app.add_option("--dims", dims, "Process grid PXxPYxPZ; 0 entries are chosen by MPI_Dims_create")
      ->capture_default_str();
  operator_opt_ = app.add_option("--operator", operator_kind,
                                 "poisson3d: matrix-free stencil or the assembled csr matrix (default matrix-free)");
  app.add_option("--engine", engine, "Ghost exchange: p2p | neighbor | blocking")->capture_default_str();
  app.add_option("--progress", progress, "Exchange progress during the interior rows: none | test | thread")
      ->capture_default_str();
  app.add_option("--test-interval", test_interval, "--progress test: rows between MPI_Test calls")
      ->capture_default_str();
  app.add_option("--transport", transport, "Ghost channel transport (--engine p2p): p2p (MPI two-sided) | rma (MPI one-sided) | "
                 "shmem (OpenSHMEM)")
      ->capture_default_str();
  app.add_option("--rma-sync", rma_sync, "rma completion scheme: flush | flush-local | overlap | overlap-local")
      ->capture_default_str();
  app.add_option("--shmem-sync", shmem_sync, "shmem completion scheme: put | put-overlap")->capture_default_str();
  app.add_option("--young", young, "elasticity3d: Young's modulus E")->capture_default_str();
  app.add_option("--poisson-ratio", poisson_ratio, "elasticity3d: Poisson's ratio nu")->capture_default_str();
  app.add_option("--load", load, "elasticity3d: total traction on the face z = 1")->capture_default_str();
  app.add_option("--rtol", rtol, "Stop when ||r|| <= rtol ||b|| (r: the unpreconditioned residual)")
      ->capture_default_str();
  app.add_option("--max-iters", max_iters, "Stop after this many iterations")->capture_default_str();
  app.add_option("--time-limit", time_limit, "Stop after this many seconds (0: no limit)")->capture_default_str();
  app.add_option("--replace-every", replace_every,
                 "Recompute r = b - Ax and the vectors derived from it every K iterations (0: never)")
      ->capture_default_str();
  app.add_flag("--monitor", monitor, "Print the residual on rank 0 every --monitor-every iterations");
  monitor_every_opt_ =
      app.add_option("--monitor-every", monitor_every, "Iterations between --monitor lines (implies --monitor)")
          ->capture_default_str();
  app.add_option("--json", json_path, "Write the run's statistics as JSON to this file");
  app.add_flag("--quiet", quiet, "Print no summary");
}

void CgCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  auto& s = solver;
  s.method = solvers::parse_cg_method(method);
  s.pc = solvers::parse_pc(pc);
  if (reduction == "nonblocking")
    s.nonblocking = true;
  else if (reduction == "blocking")
    s.nonblocking = false;
  else
    throw InputError("--reduction '" + reduction + "': unknown reduction (expected blocking or nonblocking)");
  if (!(rtol > 0) || !std::isfinite(rtol)) throw InputError(fmt::format("--rtol {}: must be > 0", rtol));
  if (!(rtol < 1)) throw InputError(fmt::format("--rtol {}: must be < 1", rtol));
  s.rtol = rtol;
  if (max_iters < 0) throw InputError("--max-iters must be >= 0");
  s.max_iters = max_iters;
  if (!(time_limit >= 0) || !std::isfinite(time_limit)) throw InputError("--time-limit must be >= 0 seconds");
  s.time_limit = time_limit;
  if (replace_every < 0) throw InputError("--replace-every must be >= 0 (0: never)");
  s.replace_every = replace_every;
  if (monitor_every < 1) throw InputError("--monitor-every must be >= 1");
  if (monitor_every_opt_ && monitor_every_opt_->count() > 0) monitor = true;
  s.monitor_every = monitor ? monitor_every : 0;

  spmv.engine = linalg::parse_exchange_engine(engine);
  spmv.progress = linalg::parse_progress(progress);
  if (test_interval < 1) throw InputError("--test-interval must be >= 1");
  spmv.test_interval = test_interval;
  spmv.transport = comm::parse_transport(transport);
  spmv.rma_sync = comm::parse_rma_sync(rma_sync);
  spmv.shmem_sync = comm::parse_shmem_sync(shmem_sync);
  if (!comm::transport_built(spmv.transport)) throw InputError("--transport shmem: desync was built without OpenSHMEM");

  from_matrix = !matrix_path.empty();
  const bool problem_given = problem_opt_ && problem_opt_->count() > 0;
  const bool operator_given = operator_opt_ && operator_opt_->count() > 0;
  if (from_matrix) {
    if (problem_given) throw InputError("give either --problem or --matrix, not both");
    if (operator_given) throw InputError("--operator applies to --problem poisson3d only, not to --matrix");
    if (!local.empty() || !global.empty() || (dims_opt_ && dims_opt_->count() > 0))
      throw InputError("--local, --global and --dims apply to the generated problems, not to --matrix");
    problem = "matrix";
    operator_kind = "csr";
  } else {
    if (!rhs_path.empty()) throw InputError("--rhs goes with --matrix");
    if (problem == "poisson3d") {
      if (operator_kind.empty()) operator_kind = "matrix-free";
      if (operator_kind != "matrix-free" && operator_kind != "csr")
        throw InputError("--operator '" + operator_kind + "': unknown operator (expected matrix-free or csr)");
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
  if (!json_path.empty()) check_writable(comm, json_path, "--json");
}

std::vector<std::pair<std::string, std::string>> CgCommand::effective() const {
  const auto& g = global_points;
  const auto& d = process_grid;
  const bool grid = !from_matrix;
  std::string local_eff = local;
  if (grid && local.empty() && global.empty()) local_eff = problem == "elasticity3d" ? "16" : "50";
  return {{"method", method},
          {"pc", pc},
          {"reduction", reduction},
          {"problem", problem},
          {"matrix", matrix_path},
          {"rhs", rhs_path},
          {"global", grid ? fmt::format("{}x{}x{}", g[0], g[1], g[2]) : ""},
          {"local", local_eff},
          {"dims", grid ? fmt::format("{}x{}x{}", d[0], d[1], d[2]) : ""},
          {"operator", operator_kind},
          {"engine", engine},
          {"progress", progress},
          {"test-interval", std::to_string(test_interval)},
          {"transport", transport},
          {"rma-sync", rma_sync},
          {"shmem-sync", shmem_sync},
          {"young", fmt::format("{}", young)},
          {"poisson-ratio", fmt::format("{}", poisson_ratio)},
          {"load", fmt::format("{}", load)},
          {"rtol", fmt::format("{}", rtol)},
          {"max-iters", std::to_string(max_iters)},
          {"time-limit", fmt::format("{}", time_limit)},
          {"replace-every", std::to_string(replace_every)},
          {"monitor", monitor ? "true" : "false"},
          {"monitor-every", std::to_string(monitor_every)},
          {"quiet", quiet ? "true" : "false"},
          {"json", json_path}};
}

}  // namespace desync::run
