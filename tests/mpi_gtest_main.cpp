// GoogleTest main for tests that run under mpiexec.
//
//  * MPI_Init_thread / MPI_Finalize around the whole run (MPI_THREAD_FUNNELED, or
//    MPI_THREAD_MULTIPLE when the environment sets DESYNC_TEST_MPI_THREAD=multiple).
//  * Only rank 0 prints GoogleTest's usual output. The other ranks drop the default printer but
//    still report every failed assertion (and the failing test's name) on stderr, tagged with the
//    rank, so a failure seen by rank 3 alone is not lost.
//  * After every test, and again after the whole run, RequestLedger::outstanding() must be 0 on
//    every rank: a test that leaves an MPI request pending fails (clean termination).
//  * Pass/fail is combined with MPI_Allreduce, so every rank exits with the same code (1 on any
//    failure on any rank, 0 otherwise).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/request_ledger.hpp"

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// Non-zero ranks: print failures (only) on stderr.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.message());
    std::fflush(stderr);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] [  FAILED  ] %s.%s\n", rank_, info.test_suite_name(), info.name());
      std::fflush(stderr);
    }
  }

 private:
  int rank_;
};

/// Every rank: a test must not leave an MPI request of desync's pending.
class LedgerCheck : public ::testing::EmptyTestEventListener {
 public:
  explicit LedgerCheck(int rank) : rank_(rank) {}
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const long n = desync::comm::RequestLedger::outstanding();
    if (n != 0) {
      std::fprintf(stderr, "[rank %d] %s.%s left %ld MPI request(s) outstanding (RequestLedger)\n", rank_,
                   info.test_suite_name(), info.name(), n);
      std::fflush(stderr);
      leaks_.push_back(std::string(info.test_suite_name()) + "." + info.name());
    }
  }
  const std::vector<std::string>& leaks() const { return leaks_; }

 private:
  int rank_;
  std::vector<std::string> leaks_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  // DESYNC_TEST_MPI_THREAD=multiple asks for MPI_THREAD_MULTIPLE (tests of progress threads).
  const char* level = std::getenv("DESYNC_TEST_MPI_THREAD");
  const bool multiple = level != nullptr && std::string(level) == "multiple";
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
  const int rank = world_rank();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  auto* ledger = new LedgerCheck(rank);  // owned by gtest once appended
  listeners.Append(ledger);

  int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  if (!ledger->leaks().empty()) local_failed = 1;
  const long outstanding = desync::comm::RequestLedger::outstanding();
  if (outstanding != 0) {
    std::fprintf(stderr, "[rank %d] %ld MPI request(s) outstanding after all tests\n", rank, outstanding);
    local_failed = 1;
  }

  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int failed_ranks = 0;
  MPI_Reduce(&local_failed, &failed_ranks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (any_failed)
      std::printf("mpi_gtest_main: FAILED on %d of %d rank(s)\n", failed_ranks, size);
    else
      std::printf("mpi_gtest_main: all tests passed on %d rank(s), no MPI request outstanding\n", size);
    std::fflush(stdout);
  }
  desync::comm::finalize_transports_and_mpi();  // shmem_finalize first if a test started OpenSHMEM
  return any_failed ? 1 : 0;
}
