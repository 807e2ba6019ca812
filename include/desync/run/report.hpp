#pragma once
// What a run reports: a summary for people (like paper 000, Table 1) and a JSON document for
// scripts. The JSON schema is "desync.run", version 1; docs/output.md documents every key.
#include <string>
#include <utility>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/run/stats.hpp"

namespace desync::run {

inline constexpr int json_schema_version = 1;

struct RunReport {
  std::string solver = "jacobi";
  std::string mode;
  std::string transport = "p2p";
  std::string reduction;
  std::string mpi_library;
  int ranks = 1;
  decomposition::Index3 dims{1, 1, 1}, global{0, 0, 0};
  std::vector<std::pair<std::string, std::string>> options;  ///< every option's effective value
  double tolerance = 0;
  bool converged = false;
  std::string stop_reason;
  std::string message;
  double true_residual = 0;
  double tested_residual = 0;
  std::vector<HistoryPoint> history;
  std::vector<RankStats> per_rank;  ///< rank 0 only
  double wall_time = 0;             ///< slowest rank's solve time
  long outstanding_requests = 0;    ///< max over ranks after the run: 0 for a clean run
};

/// Min / mean / max of the main-phase iteration counts.
struct IterationSummary {
  double min = 0, mean = 0, max = 0;
};
IterationSummary summarise_iterations(const std::vector<RankStats>& per_rank);

/// Human-readable summary (rank 0).
std::string format_summary(const RunReport& report);
/// Writes the JSON document; throws std::runtime_error if the file cannot be written.
void write_json(const RunReport& report, const std::string& path);

}  // namespace desync::run
