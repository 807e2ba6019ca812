#pragma once
// Global sums for convergence tests: blocking, non-blocking with MPI_Iallreduce, and the paper's
// asynchronous binary-tree reduction over point-to-point messages (paper 000, section 3.1.2).
#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace desync::comm {

/// Blocking global sum in place (MPI_Allreduce). Collective.
void allreduce_sum(MPI_Comm comm, std::span<double> values);

/// A non-blocking global sum of a short vector, restarted as soon as it completes.
///
/// Contract: start() begins a reduction of `values` (copied); between start() and the test() that
/// returns true the caller may compute freely but must not call start() again. After test() returns
/// true, result() holds the global sum, identical on every rank. Every rank must take part in the
/// same sequence of reductions. finish() completes any traffic still outstanding (collective); the
/// destructor calls it.
class NonblockingReduction {
 public:
  virtual ~NonblockingReduction() = default;
  virtual void start(std::span<const double> values) = 0;
  virtual bool test() = 0;
  virtual void finish() = 0;
  bool active() const { return active_; }
  std::span<const double> result() const { return result_; }
  long completed() const { return completed_; }
  virtual const char* name() const = 0;

 protected:
  bool active_ = false;
  long completed_ = 0;
  std::vector<double> result_;
};

enum class ReductionKind { iallreduce, tree };
ReductionKind parse_reduction(const std::string& name);  // throws InputError
const char* to_string(ReductionKind kind);

/// Creates a reduction of `count` doubles over a duplicate of `comm` (collective).
std::unique_ptr<NonblockingReduction> make_reduction(ReductionKind kind, MPI_Comm comm, int count);

}  // namespace desync::comm
