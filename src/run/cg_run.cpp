// `desync cg`: problem set-up, solve, report.
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/matrix_market.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/run/cg_options.hpp"
#include "desync/run/cg_report.hpp"
#include "desync/core/error.hpp"
#include "desync/run/options.hpp"
#include "desync/run/run_end.hpp"

namespace desync::run {

int run_cg(CgCommand& cmd) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);

  comm::init_transport(cmd.spmv.transport);  // shmem: shmem_init and the symmetric arena
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
  report.wall_time = max_over_ranks(world, result.stats.time.total);
  A.reset();  // closes the exchange's channels (collective): no request may stay pending
  report.outstanding_requests = pending_requests(world);
  report.per_rank = solvers::gather_cg_stats(world, result.stats);

  if (rank == 0 && !cmd.quiet) {
    std::fputs(format_cg_summary(report).c_str(), stdout);
    std::fflush(stdout);
  }
  std::string io_error;
  write_on_rank0(rank, cmd.json_path, io_error, [&] { write_cg_json(report, cmd.json_path); });
  return exit_code(world, {io_error, report.outstanding_requests, solvers::is_numerical_failure(result.stop),
                           result.message, result.converged});
}

}  // namespace desync::run
