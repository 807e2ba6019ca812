#pragma once
// What a run reports of its coarse level, whichever iteration uses it (the stationary two-level
// Schwarz, or asm/ras with --coarse inside a Krylov method): CoarseSpace::summary() fills it, and
// the run layer writes it into the record in one place (src/run/coarse_record.hpp).
#include <cstdint>
#include <string>

namespace desync::solvers {

struct CoarseSummary {
  std::string kind;              ///< the registered coarse space ("" : one level)
  int functions = 0;             ///< the coarse dimension (0: one level)
  int near_kernel_vectors = 1;   ///< the near-kernel vectors the space was built from
  std::int64_t nonzeros = 0;     ///< A0's
  std::int64_t factor_nonzeros = 0;  ///< its factors'
  std::string solver;            ///< CoarseSolver::name: "dense-lu", "mumps", "cholmod-simplicial-rank0", ...
  int ranks = 0;                 ///< the ranks that factor A0 (0: every rank)
  std::string description;       ///< CoarseSpace::description (the record's set-up line)
  double setup_seconds = 0;      ///< this rank's set-up (Phi, A0, its factorisation)
};

}  // namespace desync::solvers
