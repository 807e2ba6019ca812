#pragma once
// How a synchronous halo (ghost) exchange moves data, and how it is pushed forward while the caller
// computes the rows that need no halo value (Hoefler et al., 2007, Listings 3-5).
#include <string>

namespace desync::comm {

/// How ghost values travel during a split-phase exchange.
enum class ExchangeEngine {
  p2p,       ///< MPI_Isend / MPI_Irecv, overlapped with the interior rows
  neighbor,  ///< MPI_Ineighbor_alltoallv on a topology communicator, overlapped
  blocking,  ///< exchange completed before any row is computed (reference, no overlap)
};
/// How the exchange is pushed forward while the interior rows are computed.
enum class Progress {
  none,    ///< rely on the MPI library (no calls between start and wait)
  test,    ///< MPI_Test every `test_interval` interior rows
  thread,  ///< a progress thread calls MPI_Test while the interior is computed (MPI_THREAD_MULTIPLE)
};
const char* to_string(ExchangeEngine e);
const char* to_string(Progress p);
/// "p2p", "neighbor", "blocking"; throws desync::InputError naming the choices otherwise.
ExchangeEngine parse_exchange_engine(const std::string& text);
/// "none", "test", "thread"; throws desync::InputError naming the choices otherwise.
Progress parse_progress(const std::string& text);

}  // namespace desync::comm
