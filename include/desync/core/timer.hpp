#pragma once
// Wall-clock timing for the per-rank time split every run reports. On a simulated cluster (a build
// for SimGrid's SMPI, core/simulation.hpp) every time is the rank's simulated clock, MPI_Wtime.
#include <chrono>

#ifdef DESYNC_SMPI
#include <mpi.h>
#endif

namespace desync::core {

/// Seconds on this rank's clock (an arbitrary origin): the steady clock, or MPI_Wtime under SMPI.
inline double wall_time() {
#ifdef DESYNC_SMPI
  return MPI_Wtime();
#else
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

/// Seconds since construction (wall_time()).
class Stopwatch {
 public:
  Stopwatch() : start_(wall_time()) {}
  double seconds() const { return wall_time() - start_; }

 private:
  double start_;
};

}  // namespace desync::core
