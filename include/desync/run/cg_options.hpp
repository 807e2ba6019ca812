#pragma once
// Command-line options of `desync cg`. The option keys here are the keys of the JSON "options"
// object and of docs/usage.md.
#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/operator.hpp"
#include "desync/solvers/cg/cg.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace desync::run {

struct CgCommand {
  std::string method = "cg";              // --method
  std::string pc = "none";                // --pc
  std::string reduction = "nonblocking";  // --reduction (pipecg, groppcg)
  std::string problem = "poisson3d";      // --problem: poisson3d | elasticity3d
  std::string matrix_path;                // --matrix A.mtx (replaces --problem)
  std::string rhs_path;                   // --rhs b.mtx (with --matrix; default A * 1)
  std::string local;                      // --local: points (nodes) per rank
  std::string global;                     // --global: total points (nodes)
  std::string dims = "0x0x0";             // --dims
  std::string operator_kind;              // --operator: matrix-free | csr (poisson3d)
  std::string engine = "p2p";             // --engine
  std::string progress = "none";          // --progress
  int test_interval = 1024;               // --test-interval
  std::string transport = "p2p";          // --transport (engine p2p)
  std::string rma_sync = "flush";         // --rma-sync
  std::string shmem_sync = "put";         // --shmem-sync
  double young = 1.0;                     // --young (elasticity3d)
  double poisson_ratio = 0.3;             // --poisson-ratio (elasticity3d)
  double load = 1.0;                      // --load (elasticity3d)
  double rtol = 1e-6;                     // --rtol
  long long max_iters = 10000;            // --max-iters
  double time_limit = 0;                  // --time-limit
  int replace_every = 0;                  // --replace-every
  bool monitor = false;                   // --monitor
  int monitor_every = 1;                  // --monitor-every
  std::string json_path;                  // --json
  bool quiet = false;                     // --quiet

  /// Registers the options on a CLI11 subcommand.
  void add_options(CLI::App& app);
  /// Checks values and combinations after parsing; resolves the problem, sizes and process grid.
  /// Collective (output paths are checked on rank 0). Throws InputError with a clear message.
  void finalise(MPI_Comm comm);
  /// Effective values, for the JSON record.
  std::vector<std::pair<std::string, std::string>> effective() const;

  // Resolved by finalise().
  bool from_matrix = false;                         ///< --matrix given
  decomposition::Index3 global_points{0, 0, 0};     ///< grid problems
  decomposition::Index3 process_grid{1, 1, 1};
  linalg::SpmvConfig spmv;
  solvers::CgOptions solver;

 private:
  CLI::Option* problem_opt_ = nullptr;
  CLI::Option* operator_opt_ = nullptr;
  CLI::Option* dims_opt_ = nullptr;
  CLI::Option* monitor_every_opt_ = nullptr;
};

}  // namespace desync::run
