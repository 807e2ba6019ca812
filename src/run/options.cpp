#include "desync/run/options.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>

#include "desync/core/error.hpp"
#include "desync/run/field_io.hpp"
#include "option_parsing.hpp"

namespace desync::run {

void JacobiCommand::add_options(CLI::App& app) {
  auto& s = solver;
  s.check_every = 0;  // 0: the mode's default, resolved in finalise()
  app.add_option("--local", local, "Cells per rank, N or NXxNYxNZ (weak scaling; default 50)");
  app.add_option("--global", global, "Total cells, N or NXxNYxNZ (strong scaling)");
  app.add_option("--dims", dims, "Process grid PXxPYxPZ; 0 entries are chosen by MPI_Dims_create")
      ->capture_default_str();
  app.add_option("--mode", mode, "sync | async | racy")->capture_default_str();
  app.add_option("--tol", s.tol, "Tolerance on ||b - Au|| / ||s|| (s: the source part of b)")->capture_default_str();
  app.add_option("--check-every", s.check_every,
                 "Iterations between convergence tests (default 100). sync: a blocking test every N; "
                 "async/racy: a new non-blocking test starts N iterations after the previous one started, "
                 "or when it completes if that is later (1: as soon as it completes, paper 000 3.1.2); "
                 "with --threads, async/racy threads update the shared residual every N sweeps, and every sweep "
                 "once a thread has seen it at or below --tol");
  app.add_option("--halo-period", s.halo_period, "Swap halos every N iterations")->capture_default_str();
  app.add_option("--inflight", s.inflight, "async/racy: halo messages in flight per neighbour (R)")
      ->capture_default_str();
  app.add_option("--racy-chunks", s.racy_chunks, "racy: pieces each halo message travels in")
      ->capture_default_str();
  app.add_option("--reduction", reduction, "async/racy convergence test: iallreduce | tree")
      ->capture_default_str();
  app.add_option("--transport", transport, "Halo channel transport: p2p (MPI two-sided) | rma (MPI one-sided) | "
                 "shmem (OpenSHMEM; see docs/channel.md)")->capture_default_str();
  app.add_option("--rma-sync", rma_sync, "rma completion scheme: flush | flush-local | overlap | overlap-local")
      ->capture_default_str();
  app.add_option("--shmem-sync", shmem_sync, "shmem completion scheme: put | put-overlap")->capture_default_str();
  app.add_flag("--polish", s.polish,
               "If the final true residual is above --tol, continue with synchronous sweeps until it is not");
  app.add_option("--max-iters", s.max_iters, "Stop after this many iterations")->capture_default_str();
  app.add_option("--time-limit", s.time_limit, "Stop after this many seconds (0: no limit)")->capture_default_str();
  app.add_option("--offset", problem.offset, "Added to every boundary and initial value (paper 000, 6.1)")
      ->capture_default_str();
  app.add_option("--source-radius", problem.source_radius, "Radius of the source disc on z = 0")
      ->capture_default_str();
  app.add_option("--slow-rank", s.noise.slow_rank, "Rank whose sweeps are slowed (-1: none)")->capture_default_str();
  app.add_option("--slow-factor", s.noise.slow_factor, "Slow rank's sweeps take this many times as long")
      ->capture_default_str();
  app.add_option("--perturb-rank", s.noise.perturb_rank, "Rank that overwrites a cell (-1: none)")
      ->capture_default_str();
  app.add_option("--perturb-iter", s.noise.perturb_iteration, "Iteration at which it does")->capture_default_str();
  app.add_option("--perturb-value", s.noise.perturb_value, "Value written (nan, inf, 1e300, ...)");
  app.add_option("--json", json_path, "Write the run's statistics as JSON to this file");
  app.add_option("--save", save_path, "Write the solution field (.npy or .vti)");
  app.add_option_function<int>(
      "--threads",
      [this](int t) {
        solver.threads = t;
        threads_given = true;
      },
      "OpenMP threads per rank, each sweeping a slab of the rank's block along z (paper 000, 3.3); "
      "omitted: the plain MPI solver");
  app.add_option("--prefetch", prefetch,
                 "Software prefetch in the sweep kernel: auto (on for a rank whose two fields exceed its share "
                 "of the last-level cache) | on | off")
      ->capture_default_str();
  app.add_flag("--monitor", s.monitor, "Print each convergence test on rank 0");
  app.add_flag("--quiet", quiet, "Print no summary");
}

void JacobiCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  auto& s = solver;
  if (mode == "sync")
    s.mode = comm::HaloMode::sync;
  else if (mode == "async")
    s.mode = comm::HaloMode::async;
  else if (mode == "racy")
    s.mode = comm::HaloMode::racy;
  else
    throw InputError("--mode '" + mode + "': unknown mode (expected sync, async or racy)");
  s.reduction = comm::parse_reduction(reduction);
  s.transport = comm::parse_transport(transport);
  s.rma_sync = comm::parse_rma_sync(rma_sync);
  s.shmem_sync = comm::parse_shmem_sync(shmem_sync);
  if (prefetch == "on")
    s.prefetch = solvers::SweepPrefetch::on;
  else if (prefetch == "off")
    s.prefetch = solvers::SweepPrefetch::off;
  else if (prefetch == "auto")
    s.prefetch.reset();
  else
    throw InputError("--prefetch '" + prefetch + "': expected auto, on or off");
  if (!comm::transport_built(s.transport)) throw InputError("--transport shmem: desync was built without OpenSHMEM");
  if (!(s.tol > 0) || !std::isfinite(s.tol)) throw InputError(fmt::format("--tol {}: must be > 0", s.tol));
  // Every mode tests every 100 iterations by default (paper 000, Figure 1); --check-every 1 is the
  // paper's cadence for the asynchronous tests (3.1.2, 3.3.2). docs/benchmarks.md has both.
  if (s.check_every == 0) s.check_every = 100;
  if (s.check_every < 1) throw InputError("--check-every must be >= 1");
  if (s.halo_period < 1) throw InputError("--halo-period must be >= 1");
  if (s.inflight < 1) throw InputError(fmt::format("--inflight {}: R must be >= 1", s.inflight));
  if (s.racy_chunks < 1) throw InputError("--racy-chunks must be >= 1");
  if (s.max_iters < 0) throw InputError("--max-iters must be >= 0");
  if (!(s.time_limit >= 0)) throw InputError("--time-limit must be >= 0 seconds");
  if (!std::isfinite(problem.offset)) throw InputError("--offset must be finite");
  if (!(problem.source_radius >= 0)) throw InputError("--source-radius must be >= 0");
  if (s.noise.slow_rank < -1 || s.noise.slow_rank >= nranks)
    throw InputError(fmt::format("--slow-rank {}: no such rank in a run of {}", s.noise.slow_rank, nranks));
  if (!(s.noise.slow_factor >= 1.0) || !std::isfinite(s.noise.slow_factor))
    throw InputError("--slow-factor must be >= 1");
  if (s.noise.perturb_rank < -1 || s.noise.perturb_rank >= nranks)
    throw InputError(fmt::format("--perturb-rank {}: no such rank in a run of {}", s.noise.perturb_rank, nranks));
  if ((s.noise.perturb_rank >= 0) != (s.noise.perturb_iteration >= 0))
    throw InputError("--perturb-rank and --perturb-iter go together");
  if (!local.empty() && !global.empty()) throw InputError("give either --local or --global, not both");
  if (threads_given && s.threads < 1) throw InputError(fmt::format("--threads {}: must be >= 1", s.threads));

  process_grid = decomposition::choose_dims(nranks, detail::parse_dims(dims));
  global_cells = detail::global_size(local, global, "50", process_grid);
  const std::string split = decomposition::check_split(global_cells, process_grid);
  if (!split.empty()) throw InputError(split);
  if (s.threads > global_cells[2] / process_grid[2])
    throw InputError(fmt::format("--threads {}: more threads than planes along z ({} in the smallest block)",
                                 s.threads, global_cells[2] / process_grid[2]));
  if (!save_path.empty()) {
    field_format_for(save_path);
    check_writable(comm, save_path, "--save");
  }
  if (!json_path.empty()) check_writable(comm, json_path, "--json");
}

std::vector<std::pair<std::string, std::string>> JacobiCommand::effective() const {
  const auto& s = solver;
  auto g = fmt::format("{}x{}x{}", global_cells[0], global_cells[1], global_cells[2]);
  return {{"mode", mode},
          {"global", g},
          {"local", local.empty() && global.empty() ? "50" : local},
          {"dims", fmt::format("{}x{}x{}", process_grid[0], process_grid[1], process_grid[2])},
          {"tol", fmt::format("{}", s.tol)},
          {"check-every", std::to_string(s.check_every)},
          {"halo-period", std::to_string(s.halo_period)},
          {"inflight", std::to_string(s.inflight)},
          {"racy-chunks", std::to_string(s.racy_chunks)},
          {"reduction", reduction},
          {"transport", transport},
          {"rma-sync", rma_sync},
          {"shmem-sync", shmem_sync},
          {"polish", s.polish ? "true" : "false"},
          {"max-iters", std::to_string(s.max_iters)},
          {"time-limit", fmt::format("{}", s.time_limit)},
          {"offset", fmt::format("{}", problem.offset)},
          {"source-radius", fmt::format("{}", problem.source_radius)},
          {"slow-rank", std::to_string(s.noise.slow_rank)},
          {"slow-factor", fmt::format("{}", s.noise.slow_factor)},
          {"perturb-rank", std::to_string(s.noise.perturb_rank)},
          {"perturb-iter", std::to_string(s.noise.perturb_iteration)},
          {"perturb-value", fmt::format("{}", s.noise.perturb_value)},
          {"threads", std::to_string(s.threads)},
          {"prefetch", prefetch},
          {"monitor", s.monitor ? "true" : "false"},
          {"quiet", quiet ? "true" : "false"},
          {"json", json_path},
          {"save", save_path}};
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string v(buf, static_cast<std::size_t>(len));
  for (char& c : v)
    if (c == '\t') c = ' ';
  const auto nl = v.find_first_of("\n,");
  return nl == std::string::npos ? v : v.substr(0, nl);
}

}  // namespace desync::run
