#pragma once
// Command-line options of `desync jacobi`. One name for one thing: the option keys here are the
// keys of the JSON "options" object and of docs/usage.md.
#include <string>
#include <utility>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/solvers/jacobi/jacobi.hpp"

namespace CLI {
class App;
}

namespace desync::run {

struct JacobiCommand {
  std::string local;                // --local: cells per rank (weak scaling)
  std::string global;               // --global: total cells (strong scaling)
  std::string dims = "0x0x0";       // --dims: process grid, 0 = chosen by MPI_Dims_create
  std::string mode = "sync";        // --mode
  std::string reduction = "iallreduce";
  std::string transport = "p2p";    // --transport: p2p | rma | shmem
  std::string rma_sync = "flush";   // --rma-sync (see docs/channel.md for why flush is the default)
  std::string shmem_sync = "put";   // --shmem-sync
  std::string prefetch = "auto";    // --prefetch: auto | on | off (sweep kernel software prefetch)
  problems::Laplace3D problem;
  solvers::JacobiOptions solver;
  std::string json_path;            // --json
  std::string save_path;            // --save
  bool quiet = false;               // --quiet: no summary
  bool threads_given = false;       // --threads was given (solver.threads: 0 = plain MPI solver)

  /// Registers the options on a CLI11 subcommand.
  void add_options(CLI::App& app);
  /// Checks values and combinations after parsing; resolves the global size and process grid.
  /// Collective (output paths are checked on rank 0). Throws InputError with a clear message.
  void finalise(MPI_Comm comm);
  /// Effective values, for the JSON record.
  std::vector<std::pair<std::string, std::string>> effective() const;

  decomposition::Index3 global_cells{0, 0, 0};
  decomposition::Index3 process_grid{1, 1, 1};
};

/// Name and version of the MPI library in use.
std::string mpi_library_version();

}  // namespace desync::run
