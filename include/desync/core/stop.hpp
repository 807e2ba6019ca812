#pragma once
// Why an iterative solve stopped: one vocabulary for every solver of desync. The names are those of
// the summary's "stopped:" and of the JSON record's "stop_reason" (docs/output.md).
namespace desync::core {

enum class StopReason {
  converged,   ///< the solver's convergence test met the tolerance ("tolerance_reached")
  max_iters,   ///< the iteration limit was reached
  time_limit,  ///< the time limit was reached
  non_finite,  ///< a NaN or Inf appeared
  diverged,    ///< the residual grew beyond the solver's divergence bound
  breakdown,   ///< a division by a quantity that must be positive was not (e.g. (p, Ap) <= 0 in CG)
  pc_failed,   ///< the preconditioner could not be set up or applied
  stagnated,   ///< no further progress possible (e.g. the true residual stays above the tolerance)
  /// The convergence test met the tolerance but the true residual of the final iterate does not:
  /// the test read values other ranks had changed since, or a recursive residual that drifted.
  /// Set by the run layer (run::finish_run), never by a solver: a solver's test says converged.
  unconfirmed,
};

/// "tolerance_reached", "max_iters", "time_limit", "non_finite", "diverged", "breakdown", "pc_failed",
/// "stagnated", "true_residual_above_tol".
constexpr const char* to_string(StopReason s) {
  switch (s) {
    case StopReason::converged: return "tolerance_reached";
    case StopReason::max_iters: return "max_iters";
    case StopReason::time_limit: return "time_limit";
    case StopReason::non_finite: return "non_finite";
    case StopReason::diverged: return "diverged";
    case StopReason::breakdown: return "breakdown";
    case StopReason::pc_failed: return "pc_failed";
    case StopReason::stagnated: return "stagnated";
    case StopReason::unconfirmed: return "true_residual_above_tol";
  }
  return "?";
}

/// The stops that mean a numerical failure (exit code 3, error.hpp): non_finite, diverged,
/// breakdown, pc_failed. The others end a run normally, converged or not.
constexpr bool is_numerical_failure(StopReason s) {
  return s == StopReason::non_finite || s == StopReason::diverged || s == StopReason::breakdown ||
         s == StopReason::pc_failed;
}

}  // namespace desync::core
