#pragma once
// Honest per-rank statistics of a run, gathered to rank 0 for the summary and the JSON output.
#include <mpi.h>

#include <vector>

#include "desync/core/history.hpp"
#include "desync/solvers/jacobi/jacobi_stats.hpp"

namespace desync::run {

using core::HistoryPoint;
using solvers::RankStats;
using solvers::TimeSplit;


/// All ranks' RankStats on rank 0 (empty elsewhere). Collective.
std::vector<solvers::RankStats> gather_rank_stats(MPI_Comm comm, const solvers::RankStats& mine);

}  // namespace desync::run
