#pragma once
// Internal to the run layer: a user's assembled system, as the commands that accept --matrix read,
// partition, describe and save it (docs/matrices.md).
//
//   --matrix FILE        Matrix Market (.mtx) or PETSc binary (.petsc, .bin, .dat; or by content)
//   --rhs FILE           right-hand side (Matrix Market, PETSc binary Vec, .npy); default b = A 1
//   --partition P        rows (the file's own contiguous row blocks) | metis | ptscotch | FILE
//   --partition-seed N   the partitioner's seed (deterministic for a given seed)
//   --save FILE          the solution in the file's original row order (.npy, .mtx, PETSc binary)
//
// Reading gives contiguous balanced row blocks in the file's order; b = A 1 is formed there, so that
// it is the same vector whatever the partition; then the rows move to their parts
// (linalg::partition_system) and the solver works on the renumbered system. The record carries the
// matrix, the partition's quality (edge cut, rows and non-zeros per rank) and what each step cost.
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "desync/linalg/csr.hpp"
#include "desync/linalg/partition.hpp"
#include "desync/run/record.hpp"

namespace desync::run::detail {

/// The assembled-system options (see the top of this file).
class SystemCli {
 public:
  /// `what`: what the solver does with it, for --matrix's help ("Solve this matrix's system with Jacobi").
  void add(CLI::App& app, const std::string& what);
  /// --matrix, or a system handed over in memory (run::invoke, invocation.hpp).
  bool given() const;
  /// Where the matrix comes from, for messages and the record: the --matrix path, or the
  /// description of the system in memory.
  std::string source() const;
  /// After parsing: --rhs, --partition and --partition-seed need --matrix; the partition value.
  /// InputError otherwise.
  void check() const;
  void effective(std::vector<std::pair<std::string, std::string>>& out) const;

  std::string matrix, rhs, partition = "rows";
  int seed = 0;

 private:
  CLI::Option* partition_opt_ = nullptr;
  CLI::Option* seed_opt_ = nullptr;
};

/// A system ready to solve: the partitioned matrix, its right-hand side and where they came from.
struct LoadedSystem {
  linalg::PartitionedSystem system;  ///< system.A: the matrix the solver sees (rows at their parts)
  std::vector<double> b;             ///< distributed like system.A
  std::int64_t rows = 0, nonzeros = 0;
  double read_seconds = 0;           ///< reading matrix and right-hand side (max over ranks)
  /// Near-kernel vectors handed over in memory (SuppliedSystem), distributed like system.A; empty
  /// without (near_kernel_of).
  std::vector<std::vector<double>> near_kernel;
  bool rhs_is_a_times_one = true;
};

/// Reads, forms b, partitions. Collective; InputError on every rank for bad files or options.
LoadedSystem load_system(MPI_Comm comm, const SystemCli& cli);

/// The coarse level's near-kernel: --near-kernel FILE's vectors (linalg::read_vectors, read in the
/// file's row order and moved with the rows to their parts like b), or those handed over in memory
/// (s.near_kernel), or none (empty: the command's default). `two_level`: whether the run has a
/// coarse level; vectors without one, or from both places, are refused. Collective; InputError
/// (every rank) prefixed "--near-kernel ".
std::vector<std::vector<double>> near_kernel_of(MPI_Comm comm, const LoadedSystem& s, const std::string& path,
                                                bool two_level);

/// Where the near-kernel came from, for the record: "file:PATH", "given" (in memory) or `built_in`.
std::string near_kernel_label(const LoadedSystem* s, const std::string& path, const std::string& built_in);

/// The record's lines and JSON for the system (rank 0): setup lines "matrix" and "partition",
/// details["matrix"] and details["partition"] (docs/output.md).
void describe_system(RunRecord& r, nlohmann::json& details, const LoadedSystem& s, const SystemCli& cli);

/// --save with --matrix: a known vector format (.npy, .mtx, .petsc, .bin, .dat) that can be written.
/// Collective; InputError otherwise.
void check_vector_path(MPI_Comm comm, const std::string& path, const std::string& option);

/// Writes x (distributed like s.system.A) in the file's original row order. Collective; throws on
/// every rank if it cannot be written.
void save_solution(MPI_Comm comm, const LoadedSystem& s, std::span<const double> x, const std::string& path);

/// The end of a matrix run's solution: saved to `path` when not empty (save_solution; the error, on
/// rank 0, is returned for finish_run) and, in-process (run::invoke), handed back with its rows in
/// the matrix's own numbering. Collective.
std::string deliver_solution(MPI_Comm comm, const LoadedSystem& s, std::span<const double> x, const std::string& path);

/// --export-system DIR: writes a built-in problem's system as DIR/A.petsc, DIR/b.petsc and
/// DIR/partition.txt (the part of every row: the rank that owns it in the grid run), creating DIR.
/// `part` holds the parts of this rank's rows of A. Collective.
void export_system(MPI_Comm comm, const std::string& dir, const linalg::DistributedCsr& A, std::span<const double> b,
                   std::span<const int> part);

}  // namespace desync::run::detail
