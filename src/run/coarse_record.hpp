#pragma once
// Internal to the run layer: the coarse level's part of a run's record, written here for every
// command that runs one (schwarz: the stationary two-level iteration; krylov: asm or ras with
// --coarse). The commands hand over what the solver reported and write no coarse key themselves.
//
// Per rank: coarse_setup_seconds (coarse_level_fields) and, in the stationary iteration, its use of
// the coarse level (coarse_iteration_fields). On rank 0, from those: the set-up line and the details
// keys coarse, coarse_functions, coarse_nonzeros, coarse_factor_nonzeros, coarse_solver,
// coarse_ranks, coarse_setup_seconds, near_kernel, near_kernel_vectors (record_coarse_level), and
// the performance line and keys of the iteration's corrections (record_coarse_iterations).
#include <nlohmann/json.hpp>
#include <string>

#include "desync/run/record.hpp"
#include "desync/solvers/schwarz/coarse/coarse_summary.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"

namespace desync::run::detail {

/// This rank's set-up seconds of the coarse level.
RankFields& coarse_level_fields(RankFields& f, const solvers::CoarseSummary& c);

/// This rank's use of the coarse level in the stationary iteration: corrections applied, coarse
/// solves made here (async: rank 0), residual sums made (one per coarse cycle), passes held back by
/// --coarse-reuse, its seconds, and the delays (this rank's iterations between its sum and the
/// correction built from it).
RankFields& coarse_iteration_fields(RankFields& f, const solvers::SchwarzResult::CoarseCounts& c);

/// Rank 0, the per-rank fields gathered in r.per_rank (coarse_level_fields): the "coarse level"
/// set-up line (the slowest rank's set-up) and the coarse level's details keys. `near_kernel`
/// names where the near-kernel came from ("constant", "rigid-body", "file:PATH"). One level
/// (c.functions 0): details["coarse"] = "none" alone.
void record_coarse_level(RunRecord& r, nlohmann::json& details, const solvers::CoarseSummary& c,
                         const std::string& near_kernel);

/// How the stationary iteration used its coarse level (the settings that shape it).
struct CoarseIterationSettings {
  bool asynchronous = false;
  int reuse = 0, fan_in = 0, tree_height = 0;
  std::string form = "galerkin";  ///< sync: --coarse-form
  comm::TreeCosts fan_in_model;   ///< async, --coarse-fan-in auto: the measured costs (else zeros)
  bool fan_in_auto = false;       ///< async: the fan-in came from the model
};

/// Rank 0, after record_coarse_level, the fields of coarse_iteration_fields in r.per_rank: the
/// "coarse" performance line and the keys of the corrections (coarse_seconds, coarse_solves,
/// coarse_corrections, coarse_delay, coarse_held, coarse_reuse; async: coarse_fan_in,
/// coarse_tree_height).
void record_coarse_iterations(RunRecord& r, nlohmann::json& details, const CoarseIterationSettings& s);

}  // namespace desync::run::detail
