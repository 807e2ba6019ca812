#pragma once
// Book-keeping of the MPI requests desync posts. Every non-blocking operation the communication layer
// starts is counted here when posted and again when it completes or is cancelled, so a run can
// prove it ended clean: outstanding() == 0 before MPI_Finalize.
#include <mpi.h>

namespace desync::comm {

class RequestLedger {
 public:
  static void posted(long n = 1);
  static void retired(long n = 1);
  /// Requests posted and not yet completed, cancelled or freed on this process.
  static long outstanding();
  /// Total requests ever posted on this process.
  static long total_posted();
};

/// MPI_Test that retires the request in the ledger when it completes.
bool test_request(MPI_Request& request, MPI_Status* status = MPI_STATUS_IGNORE);
/// MPI_Wait that retires the request (no-op on MPI_REQUEST_NULL).
void wait_request(MPI_Request& request, MPI_Status* status = MPI_STATUS_IGNORE);
/// Cancels a pending receive and completes it; returns true if it was cancelled rather than matched.
bool cancel_request(MPI_Request& request);

}  // namespace desync::comm
