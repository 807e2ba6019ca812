#pragma once
// A distributed linear operator y = A x, as the Krylov solvers see it.
//
// Vectors are this rank's owned entries (see csr.hpp for the distribution). apply() is collective
// among neighbouring ranks: it exchanges ghost values through the communication layer, hiding the
// exchange behind the rows that need no ghost value where the engine allows (paper 002, Listings
// 3-5): start the exchange, compute the interior rows, finish the exchange, compute the boundary
// rows. Every engine gives bitwise the same y (each row is summed in the same order).
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "desync/linalg/csr.hpp"

namespace desync::linalg {

/// How ghost values travel during apply().
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

struct SpmvConfig {
  ExchangeEngine engine = ExchangeEngine::p2p;
  Progress progress = Progress::none;
  int test_interval = 1024;  ///< rows between MPI_Test calls with Progress::test
};
/// MPI thread level apply() needs with `cfg`: MPI_THREAD_MULTIPLE for Progress::thread (unless the
/// engine is blocking), MPI_THREAD_FUNNELED otherwise. The operators check it with MPI_Query_thread
/// and throw desync::InputError when the library provides less.
int required_thread_level(const SpmvConfig& cfg);

/// Time and traffic of apply() on this rank, accumulated over calls.
struct SpmvStats {
  long applications = 0;
  double interior_seconds = 0;  ///< rows that need no ghost value
  double boundary_seconds = 0;  ///< rows that do
  double wait_seconds = 0;      ///< starting and finishing the exchange (blocked in MPI)
  long messages_sent = 0;
  long messages_received = 0;
  double bytes_sent = 0;
};

class Operator {
 public:
  virtual ~Operator() = default;
  virtual MPI_Comm comm() const = 0;
  /// Entries of a vector owned by this rank.
  virtual std::int64_t local_size() const = 0;
  virtual std::int64_t global_size() const = 0;
  /// y = A x on the owned entries; x and y have local_size() entries and must not overlap.
  virtual void apply(std::span<const double> x, std::span<double> y) = 0;
  /// Diagonal entries of the owned rows.
  virtual std::vector<double> diagonal() const = 0;
  /// Owned rows restricted to owned columns (local indices), scalar CSR.
  virtual LocalCsr diagonal_block() const = 0;
  virtual const SpmvStats& stats() const = 0;
  virtual void reset_stats() = 0;
  /// e.g. "poisson3d matrix-free", "csr", "bcsr3".
  virtual std::string name() const = 0;
};

}  // namespace desync::linalg
