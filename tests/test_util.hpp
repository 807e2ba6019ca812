#pragma once
// Small helpers shared by the MPI test programs.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

namespace desync_test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// Cholesky factorisation of the m x m row-major symmetric matrix `a` (its lower triangle read):
/// returns the first pivot that is not positive (m if every one is: `a` is positive definite).
inline std::size_t first_nonpositive_pivot(std::vector<double> l, std::size_t m) {
  for (std::size_t k = 0; k < m; ++k) {
    for (std::size_t j = 0; j < k; ++j) l[k * m + k] -= l[k * m + j] * l[k * m + j];
    if (!(l[k * m + k] > 0.0)) return k;
    l[k * m + k] = std::sqrt(l[k * m + k]);
    for (std::size_t i = k + 1; i < m; ++i) {
      for (std::size_t j = 0; j < k; ++j) l[i * m + k] -= l[i * m + j] * l[k * m + j];
      l[i * m + k] /= l[k * m + k];
    }
  }
  return m;
}

/// A private duplicate of MPI_COMM_WORLD per test, so no test's traffic can match another's.
class TestComm {
 public:
  TestComm() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }
  ~TestComm() { MPI_Comm_free(&comm_); }
  TestComm(const TestComm&) = delete;
  TestComm& operator=(const TestComm&) = delete;
  MPI_Comm get() const { return comm_; }
  operator MPI_Comm() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

/// Calls step() until it returns true or `seconds` pass; yields the core between calls (the test
/// machine runs more ranks than cores). Returns whether step() succeeded.
template <class Step>
bool poll_until(Step&& step, double seconds = 30.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (step()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
}

/// Calls step() repeatedly for `seconds` (it keeps the channel progressing), then returns.
template <class Step>
void keep_calling(Step&& step, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    step();
    std::this_thread::yield();
  }
}

/// True on every rank iff `ok` is true on every rank.
inline bool all_ranks(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

inline long long sum_over_ranks(long long v, MPI_Comm comm = MPI_COMM_WORLD) {
  long long s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return s;
}

/// True on every rank iff `v` has the same value on every rank.
inline bool same_on_all_ranks(MPI_Comm comm, long long v) {
  long long lo = v, hi = v;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_LONG_LONG, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_LONG_LONG, MPI_MAX, comm);
  return lo == hi;
}

}  // namespace desync_test
