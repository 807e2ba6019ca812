#include "desync/communication/request_ledger.hpp"

#include <atomic>

namespace desync::comm {
namespace {
std::atomic<long> g_outstanding{0};
std::atomic<long> g_total{0};
}  // namespace

void RequestLedger::posted(long n) {
  g_outstanding.fetch_add(n, std::memory_order_relaxed);
  g_total.fetch_add(n, std::memory_order_relaxed);
}
void RequestLedger::retired(long n) { g_outstanding.fetch_sub(n, std::memory_order_relaxed); }
long RequestLedger::outstanding() { return g_outstanding.load(std::memory_order_relaxed); }
long RequestLedger::total_posted() { return g_total.load(std::memory_order_relaxed); }

bool test_request(MPI_Request& request, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Test(&request, &done, status);
  if (done) RequestLedger::retired();
  return done != 0;
}

void wait_request(MPI_Request& request, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) return;
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

}  // namespace desync::comm
