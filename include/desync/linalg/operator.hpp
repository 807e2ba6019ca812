#pragma once
// A distributed linear operator y = A x, as the Krylov solvers see it.
//
// Vectors are this rank's owned entries (see csr.hpp for the distribution). apply() is collective
// among neighbouring ranks: it exchanges ghost values through the communication layer, hiding the
// exchange behind the rows that need no ghost value where the engine allows (Hoefler et al., 2007, Listings
// 3-5): start the exchange, compute the interior rows, finish the exchange, compute the boundary
// rows. Every engine gives bitwise the same y (each row is summed in the same order).
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/exchange_engine.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/linalg/csr.hpp"

namespace desync::linalg {

// The exchange engines and progress modes belong to the communication layer; the operators name them
// as linalg:: too.
using comm::ExchangeEngine;
using comm::parse_exchange_engine;
using comm::parse_progress;
using comm::Progress;
using comm::to_string;

struct SpmvConfig {
  ExchangeEngine engine = ExchangeEngine::p2p;
  Progress progress = Progress::none;
  int test_interval = 1024;  ///< rows between progress polls with Progress::test
  /// Engine p2p: how the exchange's channels move data (comm::Channel); neighbor and blocking
  /// ignore it. Every transport gives bitwise the same y.
  comm::TransportConfig transport;
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
  comm::ExchangeStats exchange;  ///< the ghost exchange's traffic
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
