// desync: asynchronous and communication-hiding iterative solvers on MPI.
//
//   mpirun -np 2 desync jacobi --mode async --local 50
//   mpirun -np 4 desync jacobi --mode racy --global 200x100x80 --polish --json run.json
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <fmt/format.h>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "bench_comm.hpp"
#include "desync/run/cg_options.hpp"
#include "desync/run/cg_report.hpp"
#include "desync/core/error.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/options.hpp"
#include "desync/run/report.hpp"
#include "desync/run/run_end.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"

namespace {

using namespace desync;

int finish(int code) {
  comm::finalize_transports_and_mpi();  // shmem_finalize first when OpenSHMEM was started
  return code;
}

int run_jacobi(run::JacobiCommand& cmd, int rank, int size) {
  decomposition::CartGrid grid(MPI_COMM_WORLD, cmd.global_cells, cmd.process_grid);
  decomposition::Field u(grid.local());
  cmd.problem.initialise(grid, u);
  solvers::JacobiResult result = solvers::solve_jacobi(grid, cmd.problem, cmd.solver, u);

  run::RunReport report;
  report.mode = cmd.mode;
  report.transport = cmd.transport;
  report.reduction = cmd.solver.mode == comm::HaloMode::sync ? "allreduce" : cmd.reduction;
  report.mpi_library = run::mpi_library_version();
  report.ranks = size;
  report.dims = grid.dims();
  report.global = grid.global();
  report.options = cmd.effective();
  report.tolerance = cmd.solver.tol;
  report.converged = result.converged;
  report.stop_reason = solvers::to_string(result.stop);
  report.message = result.message;
  report.true_residual = result.true_residual;
  report.tested_residual = result.tested_residual;
  report.history = result.history;
  report.wall_time = run::max_over_ranks(MPI_COMM_WORLD, result.stats.time.total);
  report.outstanding_requests = run::pending_requests(MPI_COMM_WORLD);
  report.per_rank = run::gather_rank_stats(MPI_COMM_WORLD, result.stats);

  if (rank == 0 && !cmd.quiet) std::fputs(run::format_summary(report).c_str(), stdout);
  std::string io_error;
  run::write_on_rank0(rank, cmd.json_path, io_error, [&] { run::write_json(report, cmd.json_path); });
  if (!cmd.save_path.empty()) {
    try {
      run::save_field(grid, u, cmd.save_path);
    } catch (const std::exception& e) {
      if (rank == 0) io_error = e.what();
    }
  }
  const bool failed = result.stop == solvers::StopReason::non_finite || result.stop == solvers::StopReason::diverged;
  return run::exit_code(MPI_COMM_WORLD,
                        {io_error, report.outstanding_requests, failed, result.message, result.converged});
}

}  // namespace

int main(int argc, char** argv) {
  run::prepare_mpi_io_environment();
  int provided = 0;
  // `--progress thread` runs a progress thread that calls MPI while the interior rows are computed:
  // it needs MPI_THREAD_MULTIPLE, which is requested only then (the operators check the level).
  int required = MPI_THREAD_FUNNELED;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--progress=thread" || (arg == "--progress" && a + 1 < argc && std::string(argv[a + 1]) == "thread"))
      required = MPI_THREAD_MULTIPLE;
  }
  MPI_Init_thread(&argc, &argv, required, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  CLI::App app{"desync: asynchronous and communication-hiding iterative solvers on MPI.\n"
               "Example: mpirun -np 2 desync jacobi --mode async --local 50"};
  app.require_subcommand(1);
  run::JacobiCommand jacobi;
  CLI::App* jacobi_app = app.add_subcommand("jacobi", "Jacobi's method on the 3D Laplace problem (paper 000)");
  jacobi.add_options(*jacobi_app);
  run::CgCommand cg;
  CLI::App* cg_app = app.add_subcommand(
      "cg", "Conjugate gradients: cg, cg-cg, pipecg, groppcg (papers 002, 004) on poisson3d, elasticity3d or a matrix");
  cg.add_options(*cg_app);
  CLI::App* bench_app = app.add_subcommand("bench", "Benchmarks of this machine and MPI library");
  bench_app->require_subcommand(1);
  run::BenchCommCommand bench_comm;
  CLI::App* bench_comm_app = bench_app->add_subcommand(
      "comm", "Two-sided vs one-sided bandwidth, overlap with computation, allreduce latency (paper 001, section 6)");
  bench_comm.add_options(*bench_comm_app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const bool help = e.get_exit_code() == 0;  // --help and friends
    if (rank == 0) {
      if (help)
        app.exit(e);
      else
        std::fprintf(stderr, "desync: error: %s\nRun 'desync --help' or 'desync <command> --help' for the options.\n",
                     e.what());
    }
    return finish(help ? 0 : exit_bad_input);
  }

  try {
    if (cg_app->parsed()) {
      cg.finalise(MPI_COMM_WORLD);
      return finish(run::run_cg(cg));
    }
    if (bench_comm_app->parsed()) {
      bench_comm.finalise(MPI_COMM_WORLD);
      return finish(run::bench_comm_main(bench_comm, MPI_COMM_WORLD));
    }
    jacobi.finalise(MPI_COMM_WORLD);
    comm::init_transport(jacobi.solver.transport);
    return finish(run_jacobi(jacobi, rank, size));
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "desync: error: %s\n", e.what());
    return finish(exit_bad_input);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "desync: rank %d: internal error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, exit_internal);
  }
  return exit_internal;
}
