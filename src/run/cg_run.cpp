// `desync cg`: problem set-up, solve, report.
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "desync/communication/request_ledger.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/matrix_market.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/run/cg_options.hpp"
#include "desync/run/cg_report.hpp"
#include "desync/run/error.hpp"
#include "desync/run/options.hpp"

namespace desync::run {

int run_cg(CgCommand& cmd) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);

  std::unique_ptr<decomposition::CartGrid> grid;
  std::unique_ptr<linalg::Operator> A;
  std::vector<double> b;
  if (cmd.from_matrix) {
    const linalg::DistributedCsr M = linalg::read_matrix_market(world, cmd.matrix_path);
    A = linalg::make_csr_operator(M, cmd.spmv);
    if (!cmd.rhs_path.empty()) {
      b = linalg::read_matrix_market_vector(world, cmd.rhs_path, M);
    } else {  // b = A * 1
      const std::vector<double> ones(static_cast<std::size_t>(A->local_size()), 1.0);
      b.assign(ones.size(), 0.0);
      A->apply(ones, b);
    }
  } else {
    grid = std::make_unique<decomposition::CartGrid>(world, cmd.global_points, cmd.process_grid);
    if (cmd.problem == "poisson3d") {
      if (cmd.operator_kind == "csr")
        A = linalg::make_csr_operator(problems::assemble_poisson3d(*grid), cmd.spmv);
      else
        A = problems::make_poisson3d_operator(*grid, cmd.spmv);
      b = problems::poisson3d_rhs(*grid);
    } else {
      problems::ElasticityParams p;
      p.E = cmd.young;
      p.nu = cmd.poisson_ratio;
      p.load = cmd.load;
      auto sys = problems::assemble_elasticity3d(*grid, p);
      A = linalg::make_csr_operator(sys.A, cmd.spmv);
      b = std::move(sys.b);
    }
  }
  std::vector<double> x(static_cast<std::size_t>(A->local_size()), 0.0);
  const solvers::CgResult result = solvers::solve_cg(*A, b, x, cmd.solver);

  CgReport report;
  report.method = solvers::to_string(cmd.solver.method);
  report.pc = solvers::to_string(cmd.solver.pc);
  const bool overlapping = cmd.solver.method == solvers::CgMethod::pipecg ||
                           cmd.solver.method == solvers::CgMethod::groppcg;
  report.reduction = overlapping && cmd.solver.nonblocking ? "iallreduce" : "allreduce";
  report.engine = cmd.engine;
  report.progress = cmd.progress;
  report.problem = cmd.problem;
  report.operator_name = A->name();
  report.mpi_library = mpi_library_version();
  report.ranks = size;
  report.grid = !cmd.from_matrix;
  if (grid) {
    report.dims = grid->dims();
    report.global = grid->global();
  }
  report.unknowns = A->global_size();
  report.options = cmd.effective();
  report.rtol = cmd.solver.rtol;
  report.converged = result.converged;
  report.stop_reason = solvers::to_string(result.stop);
  report.message = result.message;
  report.true_residual = result.true_residual;
  report.recursive_residual = result.recursive_residual;
  report.b_norm = result.b_norm;
  report.iterations = result.iterations;
  report.history = result.history;
  double wall = result.stats.time.total;
  MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, world);
  report.wall_time = wall;
  long outstanding = comm::RequestLedger::outstanding();
  MPI_Allreduce(MPI_IN_PLACE, &outstanding, 1, MPI_LONG, MPI_MAX, world);
  report.outstanding_requests = outstanding;
  report.per_rank = solvers::gather_cg_stats(world, result.stats);

  if (rank == 0 && !cmd.quiet) {
    std::fputs(format_cg_summary(report).c_str(), stdout);
    std::fflush(stdout);
  }
  std::string io_error;
  if (rank == 0 && !cmd.json_path.empty()) {
    try {
      write_cg_json(report, cmd.json_path);
    } catch (const std::exception& e) {
      io_error = e.what();
    }
  }
  int io_failed = io_error.empty() ? 0 : 1;
  MPI_Bcast(&io_failed, 1, MPI_INT, 0, world);
  if (io_failed) {
    if (rank == 0) std::fprintf(stderr, "desync: error: %s\n", io_error.c_str());
    return exit_internal;
  }
  if (outstanding != 0) {
    if (rank == 0)
      std::fprintf(stderr, "desync: error: %ld MPI request(s) still pending after the run\n", outstanding);
    return exit_internal;
  }
  if (solvers::is_numerical_failure(result.stop)) {
    if (rank == 0) std::fprintf(stderr, "desync: error: %s\n", result.message.c_str());
    return exit_numerical;
  }
  return result.converged ? exit_converged : exit_not_converged;
}

}  // namespace desync::run
