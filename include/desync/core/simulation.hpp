#pragma once
// Running desync's own code on a simulated cluster: a build for SimGrid's SMPI (cmake
// -DDESYNC_MPI=smpi), launched by `desync-sim run` (docs/simulation.md).
//
// The ranks are simulated; the numerics run for real (iteration counts are real), but the host's
// time spent computing is not what the modelled machine would spend: every compute phase instead
// charges its work to the rank's simulated clock from a cost model calibrated on a real machine,
//   simulated seconds = units x seconds_per_unit[kind] / rank_speed[rank],
// read from the JSON file named by the environment variable DESYNC_SIM (written by desync-sim:
// {"costs": {kind: seconds per unit}, "rank_speed": [...], "platform": {...}, ...}). The kinds
// are named where the work is done and registered by what does it: each solver and each CG method
// with its registration, the layers beneath them in the run layer's list (run/command_registry.hpp);
// `desync --registry` prints them and docs/simulation.md describes them. core names none of them.
// In an ordinary build every function here is free: charge() does nothing, pause() spins.
#include <string>
#include <utility>
#include <vector>

namespace desync::core {

/// A kind of work that a run may charge, as its owner registers it.
struct CostKind {
  CostKind(std::string kind_name, bool is_optional = false) : name(std::move(kind_name)), optional(is_optional) {}
  CostKind(const char* kind_name, bool is_optional = false) : CostKind(std::string(kind_name), is_optional) {}
  std::string name;       ///< e.g. "halo.element"
  /// A cost model may leave it out (then it is charged nothing): a kind added after cost models
  /// were recorded that runs still use (docs/data). Its owner says so where it registers it.
  bool optional = false;
  friend bool operator==(const CostKind&, const CostKind&) = default;
};

#ifdef DESYNC_SMPI
inline constexpr bool simulated_build = true;
/// Declares every kind a run may charge, before the first charge() or simulation_description() of
/// this rank: reading the cost model then checks that it has each kind that is not optional (a
/// rank failing later, mid-exchange, would leave its neighbours waiting). A kind that is not
/// declared is looked up only when charged, and must be in the model.
void declare_cost_kinds(std::vector<CostKind> kinds);
/// Charges `units` units of work of `kind` to this rank's simulated clock. Throws InputError when
/// DESYNC_SIM is missing or has no cost for `kind`, unless the kind is declared optional (then
/// nothing is charged).
void charge(const char* kind, double units);
/// As charge(), but the work is executed with this rank's next charge() or pause(), added to its
/// execution: for work done at many small points (each message a channel sends or takes in), so
/// that it makes no execution of its own. Every execution is an event of the simulation, and
/// SimGrid 3.32 re-solves its sharing of the links at events: with many messages in flight (the
/// bounded PDE stepper at 216-512 ranks) most of a run's host time goes there.
void charge_deferred(const char* kind, double units);
#else
inline constexpr bool simulated_build = false;
inline void declare_cost_kinds(std::vector<CostKind>) {}
inline void charge(const char*, double) {}
inline void charge_deferred(const char*, double) {}
#endif

/// Pauses this rank for `seconds` of its clock as a busy core would (noise injection: a paused
/// core services no communication): spins on the host, executes on the simulated host under
/// SMPI. Returns the seconds the clock advanced.
double pause(double seconds);

/// For a loop that only polls (a rank with nothing to compute until a message or a decision comes):
/// call idle() after each pass. On a simulated cluster each call lets the rank's clock advance by
/// 10 ns more than the one before, up to 1 us a call (as a polling core would spend it), so that a
/// wait of some milliseconds costs thousands of passes of host time, not the million that the
/// 10 ns of each MPI_Test would take, and the rank sees an arrival at most 1 us late. Unlike SMPI's
/// own smpi/grow-injected-times, whose counter all ranks share, the growth belongs to the loop.
/// In an ordinary build idle() does nothing.
class PollBackoff {
 public:
  void idle() {
    if constexpr (simulated_build) {
      if (passes_ < max_passes) ++passes_;
      pause(passes_ * step_seconds);
    }
  }

 private:
  static constexpr int max_passes = 100;
  static constexpr double step_seconds = 1e-8;
  int passes_ = 0;
};

/// The DESYNC_SIM file's text (the simulation's platform, costs and rank speeds) for the run
/// record; empty in an ordinary build.
std::string simulation_description();

}  // namespace desync::core
