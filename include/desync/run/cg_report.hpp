#pragma once
// What `desync cg` reports: a summary for people and a JSON document (schema "desync.run", the
// same top-level keys as `desync jacobi` where they apply, plus the CG keys; docs/output.md).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/solvers/cg/cg.hpp"

namespace desync::run {

struct CgReport {
  std::string method, pc, reduction, engine, progress, problem, operator_name, mpi_library;
  int ranks = 1;
  bool grid = true;  ///< a generated problem on a process grid (dims, global are meaningful)
  decomposition::Index3 dims{1, 1, 1}, global{0, 0, 0};
  std::int64_t unknowns = 0;
  std::vector<std::pair<std::string, std::string>> options;
  double rtol = 0;
  bool converged = false;
  std::string stop_reason, message;
  double true_residual = 0, recursive_residual = 0, b_norm = 0;
  std::int64_t iterations = 0;
  std::vector<core::HistoryPoint> history;
  std::vector<solvers::CgRankStats> per_rank;  ///< rank 0 only
  double wall_time = 0;                         ///< slowest rank's solve time
  long outstanding_requests = 0;
};

std::string format_cg_summary(const CgReport& report);
/// Throws std::runtime_error if the file cannot be written.
void write_cg_json(const CgReport& report, const std::string& path);

}  // namespace desync::run

namespace desync::run {
struct CgCommand;
/// Runs `desync cg` after CgCommand::finalise(): builds the problem, solves, prints the summary,
/// writes the JSON record. Returns the exit code (see error.hpp). Collective over MPI_COMM_WORLD;
/// bad input found while building the problem is thrown as InputError on every rank.
int run_cg(CgCommand& cmd);
}  // namespace desync::run
