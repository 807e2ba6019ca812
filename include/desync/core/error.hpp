#pragma once
// Errors a run reports to its user. Every rank that throws one of these knows the same fact, so the
// command-line driver prints the message once (rank 0) and every rank exits with the same code.
#include <mpi.h>

#include <stdexcept>
#include <string>

namespace desync {

/// Exit codes of the `desync` executable.
enum ExitCode : int {
  exit_converged = 0,      // the run met its tolerance (true residual checked)
  exit_not_converged = 1,  // the final true residual is above the tolerance (limits reached, or an
                           // asynchronous test met it but the true residual did not: see --polish)
  exit_bad_input = 2,      // invalid option, size or combination; nothing was run
  exit_numerical = 3,      // NaN, Inf or runaway growth stopped the run
  exit_internal = 4,       // an MPI or I/O failure during the run
  exit_wait_limit = 5,     // a rank waited longer than DESYNC_WAIT_LIMIT for a peer (core/waiting.hpp)
};

/// Invalid user input, detected identically on every rank (or agreed on collectively).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws InputError on every rank of `comm` if `ok` is false on any rank; the message is the
/// one from the lowest failing rank. Collective.
void agree_or_throw(MPI_Comm comm, bool ok, const std::string& message);

}  // namespace desync
