#pragma once
// Which entries of a row-distributed vector each rank needs from the others, and the ghost plan that
// brings them: the set-up step that every operator and solver on an assembled matrix shares
// (linalg::CsrOperator, Jacobi on a matrix, the overlapping subdomains of Schwarz).
//
// Collective over `comm` and for set-up only (MPI_Alltoall of counts, MPI_Alltoallv of indices).
#include <mpi.h>

#include <cstdint>
#include <span>
#include <vector>

#include "desync/communication/halo_plan.hpp"

namespace desync::linalg {

struct GhostRequests {
  /// Per rank q: how many of `wanted` q owns, and where they start in `wanted` (size ranks + 1).
  std::vector<int> need, need_displs;
  /// Per rank q: how many of this rank's entries q asked for, and where they start in `asked`.
  std::vector<int> give, give_displs;
  /// The global indices of this rank's entries the others asked for, grouped by the asking rank.
  std::vector<std::int64_t> asked;

  /// The plan description that serves them: to each rank that asked, block_size scalars per asked
  /// entry at the local offsets (index - first) * block_size + b; from each owner, its part of
  /// `wanted` in order, into a ghost buffer of wanted.size() * block_size doubles. `ok` turns false
  /// if some rank asked for an index outside [first, last) (those are left out).
  comm::GhostPlanSpec plan_spec(std::int64_t first, std::int64_t last, int block_size, bool& ok) const;
};

/// `wanted`: global indices this rank needs, ascending and unique, none in its own rows (ascending
/// order groups them by owner). `offsets`: the first global row of every rank, ranks + 1 entries.
GhostRequests request_entries(MPI_Comm comm, const std::vector<std::int64_t>& offsets,
                              std::span<const std::int64_t> wanted);

/// The rank whose rows [offsets[q], offsets[q + 1]) hold global row g.
int owner_of(const std::vector<std::int64_t>& offsets, std::int64_t g);

}  // namespace desync::linalg
