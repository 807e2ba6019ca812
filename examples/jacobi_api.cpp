// Solving the paper-000 Laplace problem through the desync library API instead of the `desync`
// command-line tool: build a process grid, a field, the problem, and call solve_jacobi.
//
//   mpirun -np 2 ./jacobi_api            (asynchronous Jacobi, 40^3 cells in total)
#include <mpi.h>

#include <cstdio>

#include "desync/communication/request_ledger.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  {
    using namespace desync;
    // 40 x 40 x 40 cells over a process grid chosen by MPI_Dims_create (0 = let MPI choose).
    const decomposition::Index3 dims = decomposition::choose_dims(nranks, {0, 0, 0});
    decomposition::CartGrid grid(MPI_COMM_WORLD, {40, 40, 40}, dims);

    // The problem fills the initial guess and the Dirichlet halos; the field is this rank's block.
    problems::Laplace3D problem;  // offset 0, source radius 0.25
    decomposition::Field u(grid.local());
    problem.initialise(grid, u);

    solvers::JacobiOptions options;
    options.mode = comm::HaloMode::async;  // or sync, racy
    options.transport.max_in_flight = 100;  // R, halo messages in flight per neighbour
    options.iteration.tol = 1e-4;
    options.iteration.polish = true;        // synchronous sweeps until the true residual meets tol
    const solvers::IterationResult result = solvers::solve_jacobi(grid, problem, options, u);

    if (grid.rank() == 0)
      std::printf("stop %s, %s: true residual %.3e after %lld iterations (+%lld polish) on rank 0; "
                  "MPI requests pending: %ld\n",
                  solvers::to_string(result.stop), result.converged ? "converged" : "not converged",
                  result.true_residual, static_cast<long long>(result.stats.iterations),
                  static_cast<long long>(result.stats.polish_iterations), comm::RequestLedger::outstanding());
  }  // the grid frees its communicator before MPI_Finalize
  MPI_Finalize();
  return 0;
}
