#include "desync/communication/request_ledger.hpp"

#include "desync/core/waiting.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "desync/core/simulation.hpp"

namespace desync::comm {
namespace {
std::atomic<long> g_outstanding{0};
// A signalling NaN with a payload no computation produces, and no channel header (time level >= -1).
constexpr std::uint64_t unreceived_mark = 0x7ff4'de5c'0000'0d5eULL;
}  // namespace

void RequestLedger::posted(long n) {
  g_outstanding.fetch_add(n, std::memory_order_relaxed);
}
void RequestLedger::retired(long n) { g_outstanding.fetch_sub(n, std::memory_order_relaxed); }
long RequestLedger::outstanding() { return g_outstanding.load(std::memory_order_relaxed); }

bool test_request(MPI_Request& request, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Test(&request, &done, status);
  if (done) RequestLedger::retired();
  return done != 0;
}

void wait_request(MPI_Request& request, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) return;
  core::WaitScope waiting("an MPI request (a peer's message or its part of a reduction)");
  MPI_Wait(&request, status);
  RequestLedger::retired();
}

bool cancel_request(MPI_Request& request) {
  if (request == MPI_REQUEST_NULL) return false;
  MPI_Cancel(&request);
  MPI_Status status;
  MPI_Wait(&request, &status);
  RequestLedger::retired();
  int cancelled = 0;
  MPI_Test_cancelled(&status, &cancelled);
  return cancelled != 0;
}

void mark_unreceived(void* buffer) {
  if constexpr (core::simulated_build) std::memcpy(buffer, &unreceived_mark, sizeof unreceived_mark);
}

bool marked_buffer_written(const void* buffer) {
  if constexpr (!core::simulated_build) return false;
  std::uint64_t first = 0;
  std::memcpy(&first, buffer, sizeof first);
  return first != unreceived_mark;
}

bool test_receive(MPI_Request& request, const void* buffer, MPI_Status* status) {
  if (request != MPI_REQUEST_NULL && marked_buffer_written(buffer)) {
    wait_request(request, status);  // complete already: SimGrid wrote the buffer when it ended
    return true;
  }
  return test_request(request, status);
}

}  // namespace desync::comm
