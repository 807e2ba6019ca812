#pragma once
// Global sums for convergence tests: blocking, non-blocking with MPI_Iallreduce, the paper's
// asynchronous binary-tree reduction over point-to-point messages (Bethune et al., 2011, section 3.1.2), and
// recursive doubling over point-to-point messages.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "desync/core/names.hpp"

namespace desync::comm {

/// Blocking global sum in place (MPI_Allreduce). Collective.
void allreduce_sum(MPI_Comm comm, std::span<double> values);

/// The sum of `value` over the ranks below this one (0 on rank 0): exclusive_prefix_sums of one
/// value. Collective.
std::int64_t exclusive_prefix_sum(MPI_Comm comm, std::int64_t value);

/// The element-wise sums of `values` over the ranks below this one (zeros on rank 0). Collective.
/// MPI_Exscan's result by a recursive-doubling scan over point-to-point messages (log2 P rounds; on
/// a simulated cluster SMPI 3.32's MPI_Exscan posts P^2 messages, one set-up took minutes of host time).
std::vector<std::int64_t> exclusive_prefix_sums(MPI_Comm comm, std::span<const std::int64_t> values);

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
  /// Blocks until the reduction in flight (if any) completes; then result() holds the sum. The tree
  /// and recursive doubling wait for each message they need (MPI_Wait), not by testing in a loop:
  /// on a simulated cluster a request completed by MPI_Test stays in SimGrid's activity list.
  virtual void wait() {
    while (active_ && !test()) {
    }
  }
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

/// How a global sum is carried out: --reduction's one vocabulary, each command taking the kinds that
/// apply to it (core::parse_named_among). blocking: MPI_Allreduce (no NonblockingReduction: the
/// callers sum at once); iallreduce: MPI_Iallreduce; tree: the asynchronous binary tree (Bethune et
/// al., 2011); doubling: recursive doubling over point-to-point messages, a round per test() (log2 p
/// rounds; for simulated clusters whose MPI_Iallreduce is all-to-all).
enum class ReductionKind { blocking, iallreduce, tree, doubling };
inline constexpr core::Named<ReductionKind> reduction_names[] = {
    {ReductionKind::blocking, "blocking", "MPI_Allreduce, waited for at once"},
    {ReductionKind::iallreduce, "iallreduce", "MPI_Iallreduce, overlapped with the work until its sum is needed"},
    {ReductionKind::tree, "tree", "an asynchronous binary tree over point-to-point messages (Bethune et al., 2011)"},
    {ReductionKind::doubling, "doubling",
     "recursive doubling over point-to-point messages, log2(P) rounds, each advanced when tested"}};
/// The non-blocking kinds, those make_reduction builds.
inline constexpr std::initializer_list<ReductionKind> nonblocking_reductions = {
    ReductionKind::iallreduce, ReductionKind::tree, ReductionKind::doubling};
/// A non-blocking kind's command-line spelling; InputError naming `option` on anything else.
inline ReductionKind parse_reduction(const std::string& name, const std::string& option = "--reduction") {
  return core::parse_named_among(reduction_names, nonblocking_reductions, name, option, "reduction");
}
inline const char* to_string(ReductionKind kind) { return core::name_of(reduction_names, kind); }

/// A reduction that advances only when tested (tree, doubling) can be advanced by the halo traffic
/// too, as an MPI library progresses its non-blocking collectives inside any MPI call: while one is
/// set here, every ghost exchange's start(), finish() and poll() (--progress test) tests it once.
/// One per thread; the caller sets it after start() and clears it (nullptr) once the reduction has
/// completed.
void set_progressed_reduction(NonblockingReduction* reduction);
/// Tests the reduction set by set_progressed_reduction, if any and still active.
void progress_reduction();

/// Creates a reduction of `count` doubles over a duplicate of `comm` (collective).
std::unique_ptr<NonblockingReduction> make_reduction(ReductionKind kind, MPI_Comm comm, int count);

}  // namespace desync::comm
