#pragma once
// desync's commands run inside a process that already runs MPI (the Python bindings, python/): the
// same parsing, checks, solvers and run record as `desync <solver> ...`, on any communicator, with
// the system handed over in memory instead of read from --matrix, and the record and the solution
// handed back instead of printed and saved. Nothing here calls MPI_Init, MPI_Abort or exit: bad
// input is an InputError thrown on every rank of the communicator.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace desync::run {

/// A sparse system in memory, as --matrix and --rhs would read it (docs/python.md). Scalar CSR with
/// global column indices. Either the whole matrix on rank 0 (`on_root`; the other ranks' arrays are
/// ignored) and moved from there by `partition`, or each rank's own block of consecutive rows
/// (`on_root` false: rank r's rows follow rank r-1's, and the partition is that one).
struct SuppliedSystem {
  bool on_root = true;
  bool has_matrix = true;        ///< false: this rank passed no matrix (an error unless on_root)
  std::int64_t rows = 0;         ///< rows held here (on_root: rank 0's = all rows)
  std::int64_t cols = 0;         ///< columns (= the global number of rows for a square matrix)
  std::vector<std::int64_t> row_ptr, col;  ///< rows + 1 offsets, global columns (any order, duplicates summed)
  std::vector<double> val;
  bool has_rhs = false;          ///< false: b = A 1, as the command line's default
  std::vector<double> b;         ///< the rows held here
  /// The coarse level's near-kernel, as --near-kernel would read it: `near_kernel_vectors` vectors
  /// of the rows held here, one after another (0: none, the command's default). On rank 0 only
  /// with `on_root`; every rank the same count otherwise.
  int near_kernel_vectors = 0;
  std::vector<double> near_kernel;
  /// on_root: "rows" (balanced consecutive blocks, as a file is read), "metis", "ptscotch" or
  /// "array" (rank 0's `parts`: the rank of every row). Ignored otherwise.
  std::string partition = "rows";
  std::vector<int> parts;
  std::string description = "a matrix in memory";  ///< the record's matrix "path"
};

/// What a run hands back. The record and the exit code on every rank; the solution where the run
/// solved a matrix system (SuppliedSystem or --matrix).
struct InvokeResult {
  int exit_code = 0;          ///< core/error.hpp: 0 converged, 1 not converged, 3 numerical failure, 4 internal
  std::string record_json;    ///< the run record (the JSON document of --json), on every rank
  bool has_solution = false;
  std::vector<double> x;             ///< this rank's rows of the solution as the partition gave them
  std::vector<std::int64_t> rows;    ///< their indices in the matrix's own numbering
};

/// Runs `args` (the command line after `desync`: the solver's name, then its options) on `comm`:
/// parses with the registered command's options, checks, prepares, runs. `system`: the matrix for
/// solvers that take --matrix (nullptr: none). MPI must be initialised at the thread level the
/// command needs. Collective over `comm`; every rank must pass the same args. Throws InputError
/// (on every rank) for bad options or a bad system; other exceptions are internal errors.
InvokeResult invoke(MPI_Comm comm, const std::vector<std::string>& args,
                    std::shared_ptr<const SuppliedSystem> system = nullptr);

/// `desync <solver> --help`'s text. InputError for an unknown solver.
std::string command_help(const std::string& solver);

/// Every registered solver's options as JSON: {"solvers": [{"name", "description", "method_option",
/// "methods": [{"name", "description"}], "options": [{"name", "names", "type", "default", "flag", "help"}]}]}
/// (names: every long name, e.g. rtol and tol).
/// python/ generates its type stubs from it.
std::string options_json();

}  // namespace desync::run
