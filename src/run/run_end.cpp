#include "desync/run/run_end.hpp"

#include <cstdio>

#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"
#include "invocation.hpp"

namespace desync::run {

double max_over_ranks(MPI_Comm comm, double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
  return v;
}

long pending_requests(MPI_Comm comm) {
  long outstanding = comm::RequestLedger::outstanding();
  MPI_Allreduce(MPI_IN_PLACE, &outstanding, 1, MPI_LONG, MPI_MAX, comm);
  return outstanding;
}

int exit_code(MPI_Comm comm, const RunEnd& end) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int io_failed = end.io_error.empty() ? 0 : 1;
  MPI_Bcast(&io_failed, 1, MPI_INT, 0, comm);
  if (io_failed) {
    if (rank == 0) std::fprintf(stderr, "desync: error: %s\n", end.io_error.c_str());
    return exit_internal;
  }
  if (end.pending_requests != 0) {
    if (rank == 0)
      std::fprintf(stderr, "desync: error: %ld MPI request(s) still pending after the run\n", end.pending_requests);
    return exit_internal;
  }
  if (end.numerical_failure) {
    // (in Python, desync.run/solve raise NumericalError with the record's message instead)
    if (rank == 0 && !detail::current_invocation()) std::fprintf(stderr, "desync: error: %s\n", end.message.c_str());
    return exit_numerical;
  }
  return end.converged ? exit_converged : exit_not_converged;
}

}  // namespace desync::run
