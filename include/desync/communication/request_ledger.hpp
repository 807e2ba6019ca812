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
};

/// MPI_Test that retires the request in the ledger when it completes.
bool test_request(MPI_Request& request, MPI_Status* status = MPI_STATUS_IGNORE);
/// MPI_Wait that retires the request (no-op on MPI_REQUEST_NULL).
void wait_request(MPI_Request& request, MPI_Status* status = MPI_STATUS_IGNORE);
/// Cancels a pending receive and completes it; returns true if it was cancelled rather than matched.
bool cancel_request(MPI_Request& request);

/// Receives tested in a polling loop, on a simulated cluster. SimGrid 3.32 keeps every request that
/// MPI_Test completes in the rank's list of activities for the rest of the run and scans that list
/// at each later computation and wait, so a polling loop's host time grows with the square of the
/// messages it receives (docs/simulation.md); a request completed by MPI_Wait leaves nothing there.
/// SimGrid copies a message into its receive buffer when the transfer ends, before any test, so on
/// a simulated cluster a receive whose buffer no longer holds the mark written before it was posted
/// has completed, and MPI_Wait completes it at once. The mark is only a hint: a message whose first
/// 8 bytes equal it completes by MPI_Test, as before. In a real MPI, which forbids reading a buffer
/// a pending receive may write, mark_unreceived does nothing and test_receive is test_request.
///
/// Writes the mark into the first 8 bytes of a receive buffer (simulated builds only), before the
/// receive is posted.
void mark_unreceived(void* buffer);
/// Simulated builds: whether a marked receive buffer has been written (false elsewhere).
bool marked_buffer_written(const void* buffer);
/// test_request for a receive into a buffer marked by mark_unreceived.
bool test_receive(MPI_Request& request, const void* buffer, MPI_Status* status = MPI_STATUS_IGNORE);

}  // namespace desync::comm
