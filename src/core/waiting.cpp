// IdlePolicy names and the wait watchdog (waiting.hpp).
#include "desync/core/waiting.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "desync/core/error.hpp"

namespace desync::core {

IdlePolicy parse_idle_policy(const std::string& text, const std::string& option) {
  return parse_named(idle_policy_names, text, option, "policy");
}

double wait_limit_from_environment() {
  const char* text = std::getenv("DESYNC_WAIT_LIMIT");
  if (!text || !*text) return 600.0;
  const std::string s(text);
  if (s == "off") return 0.0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0) || v > 1e9)
    throw InputError("DESYNC_WAIT_LIMIT '" + s + "': expected seconds >= 0 or off");
  return v;
}

namespace {
// The state of the main thread's open scope, read by the watchdog thread. Seconds on the steady
// clock since an arbitrary origin; 0: no scope open. Only the thread running the solver opens scopes.
std::atomic<double> scope_since{0.0};
std::atomic<const char*> scope_what{nullptr};
std::atomic<int> scope_peer{-1};

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count() + 1.0;  // never 0
}

struct Watchdog {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable stop_requested;
  bool stopping = false;
};
Watchdog& watchdog() {
  static Watchdog w;
  return w;
}
}  // namespace

WaitScope::WaitScope(const char* what, int peer)
    : previous_what_(scope_what.load(std::memory_order_relaxed)),
      previous_peer_(scope_peer.load(std::memory_order_relaxed)),
      outermost_(scope_since.load(std::memory_order_relaxed) == 0.0) {
  scope_what.store(what, std::memory_order_relaxed);
  scope_peer.store(peer, std::memory_order_relaxed);
  if (outermost_) scope_since.store(now(), std::memory_order_release);
}

WaitScope::~WaitScope() {
  if (outermost_) scope_since.store(0.0, std::memory_order_release);
  scope_what.store(previous_what_, std::memory_order_relaxed);
  scope_peer.store(previous_peer_, std::memory_order_relaxed);
}

void start_watchdog(double limit_seconds, int rank) {
  auto& w = watchdog();
  if (limit_seconds <= 0 || w.thread.joinable()) return;
  w.stopping = false;
  w.thread = std::thread([limit_seconds, rank] {
    auto& wd = watchdog();
    std::unique_lock lock(wd.mutex);
    const auto period = std::chrono::duration<double>(std::min(1.0, limit_seconds / 4));
    while (!wd.stop_requested.wait_for(lock, period, [&] { return wd.stopping; })) {
      const double since = scope_since.load(std::memory_order_acquire);
      if (since == 0.0 || now() - since <= limit_seconds) continue;
      // From here the rank's exit code is 5 and nothing else: a launcher that sees the message (or
      // another rank's end) may hang up on the job before _Exit runs, and a SIGHUP then would
      // report rank 0 as killed instead (MPICH's mpiexec, seen once in CI).
      std::signal(SIGHUP, SIG_IGN);
      const char* what = scope_what.load(std::memory_order_relaxed);
      const int peer = scope_peer.load(std::memory_order_relaxed);
      char peer_text[32] = "";
      if (peer >= 0) std::snprintf(peer_text, sizeof peer_text, " from rank %d", peer);
      std::fprintf(stderr, "desync: error: rank %d waited %.0f s for %s%s (DESYNC_WAIT_LIMIT=%g); giving up\n", rank,
                   now() - since, what ? what : "its peers", peer_text, limit_seconds);
      std::fflush(stderr);
      std::_Exit(exit_wait_limit);  // the solver thread is stuck: no clean-up can run; the launcher ends the job
    }
  });
}

void stop_watchdog() {
  auto& w = watchdog();
  if (!w.thread.joinable()) return;
  {
    std::lock_guard lock(w.mutex);
    w.stopping = true;
  }
  w.stop_requested.notify_all();
  w.thread.join();
}

}  // namespace desync::core
