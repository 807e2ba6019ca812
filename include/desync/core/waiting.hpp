#pragma once
// How a rank waits: what an asynchronous rank does when nothing new has arrived (IdlePolicy), and
// the last-resort watchdog that turns a wait that never ends into an error naming the rank and what
// it waited for (WaitScope, start_watchdog).
//
// The channel layer is written to progress without asynchronous progress in the MPI library: every
// loop that waits also drives the library (docs/channel.md, "Progress"). The watchdog is there for
// what that cannot cover -- a peer that died or never calls MPI again, an MPI call that never returns
// -- so that a run ends with one message and a non-zero exit instead of hanging.
#include <cstdint>
#include <string>

#include "desync/core/names.hpp"

namespace desync::core {

/// What an asynchronous rank does in a pass where no new external value has arrived since its last
/// update (docs/usage.md, "When nothing new has arrived"):
///   spin   update anyway, at once: the asynchronous loop as Bethune et al. (2011) and Yamazaki et
///          al. (2019) run it, one process per core.
///   yield  update anyway, after giving the core up once (sched_yield): free where each rank has a
///          core of its own; where ranks share cores, a neighbour that waits gets to run.
///   skip   no update where the update's result depends only on the external values (a subdomain
///          solve reproduces the current iterate bit for bit): the pass does not count as an
///          iteration; the rank yields its core and keeps receiving and testing (a residual of
///          the unchanged iterate against the values it was made from would not count: see
///          comm::ExchangeStats::rounds).
enum class IdlePolicy { spin, yield, skip };
inline constexpr Named<IdlePolicy> idle_policy_names[] = {
    {IdlePolicy::spin, "spin", "go on at once (as Bethune et al., 2011, and Yamazaki et al., 2019)"},
    {IdlePolicy::yield, "yield", "give the core up once, then go on"},
    {IdlePolicy::skip, "skip",
     "do not repeat the work on the same values: yield the core, go on when new values arrive or a vote needs the "
     "residual"}};
inline const char* to_string(IdlePolicy p) { return name_of(idle_policy_names, p); }
/// Parses spin|yield|skip; throws desync::InputError naming `option` otherwise.
IdlePolicy parse_idle_policy(const std::string& text, const std::string& option = "--idle");

/// Seconds a WaitScope may stay open before the watchdog ends the run: DESYNC_WAIT_LIMIT if set
/// (a number > 0; 0 or "off" disables the watchdog), else 600. InputError on anything else.
double wait_limit_from_environment();

/// Starts the watchdog thread of this process (idempotent): every second it looks at the open
/// WaitScope, and if one has been open longer than `limit_seconds` it prints
///   desync: error: rank R waited N s for WHAT (DESYNC_WAIT_LIMIT=L); giving up
/// on standard error and ends the process with exit code 5 (exit_wait_limit); the launcher then ends
/// the job.
/// limit_seconds <= 0: no thread. `rank` names the process in the message.
void start_watchdog(double limit_seconds, int rank);
/// Stops the watchdog thread (before MPI_Finalize; idempotent).
void stop_watchdog();

/// Marks this thread as waiting for `what` (a string literal or a string that outlives the scope;
/// e.g. "a halo message from rank 3") while it is alive. Scopes nest: the outermost one's start
/// time counts, the innermost one's text is reported. Costs a few atomic loads and stores (and a
/// clock read for the outermost) when entered and left; no system call.
class WaitScope {
 public:
  explicit WaitScope(const char* what, int peer = -1);
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  const char* previous_what_;
  int previous_peer_;
  bool outermost_;
};

}  // namespace desync::core
