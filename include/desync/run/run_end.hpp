#pragma once
// The end of a `desync` solver run, the same for every command: the slowest rank's time, the MPI
// requests left pending, the output files, and the exit code with its one error message.
#include <mpi.h>

#include <exception>
#include <string>

namespace desync::run {

/// The largest value of `v` over the ranks of `comm`. Collective.
double max_over_ranks(MPI_Comm comm, double v);

/// The most MPI requests still pending on any rank of `comm` (comm::RequestLedger). Collective.
long pending_requests(MPI_Comm comm);

/// Runs write() on rank 0 when `path` is not empty; an exception it throws becomes `io_error`.
template <class Write>
void write_on_rank0(int rank, const std::string& path, std::string& io_error, Write&& write) {
  if (rank != 0 || path.empty()) return;
  try {
    write();
  } catch (const std::exception& e) {
    io_error = e.what();
  }
}

/// How a solver run ended, as every rank sees it (io_error: rank 0's).
struct RunEnd {
  std::string io_error;            ///< an output file that could not be written ("" if none)
  long pending_requests = 0;       ///< max over ranks after the run (pending_requests())
  bool numerical_failure = false;  ///< NaN, Inf or divergence stopped the run
  std::string message;             ///< the solver's message on a numerical failure
  bool converged = false;
};

/// The exit code of a finished run (error.hpp), the reason of a failure printed once by rank 0:
/// an output error, then MPI requests left pending, then a numerical failure. Collective.
int exit_code(MPI_Comm comm, const RunEnd& end);

}  // namespace desync::run
