#pragma once
// The record of a solver run, the same for every solver: the keys every solver shares, per-rank
// statistics by name, and a section the solver's command file fills. One writer makes the human
// summary (format_summary) and one the JSON document (write_json): schema "desync.run", version 2;
// docs/output.md documents every key.
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "desync/core/history.hpp"
#include "desync/core/stop.hpp"
#include "desync/decomposition/cart_grid.hpp"

namespace desync::run {

inline constexpr int json_schema_version = 2;

/// One named per-rank statistic: a number, an integer, a flag, or a fixed-length array of integers
/// (process grid coordinates, a histogram). The name is its key in the JSON per-rank entry.
struct RankField {
  enum class Kind { number, integer, flag, integers };
  std::string name;
  Kind kind = Kind::number;
  std::vector<double> values;  ///< one value, except for `integers` (integers up to 2^53 are exact)
};

/// One named part of a rank's solve time, seconds. Parts that are `counted` add up, with "other",
/// to the total; the others are shares of a counted part (e.g. CG's halo_wait, part of spmv).
struct TimePart {
  std::string name;
  double seconds = 0;
  bool counted = true;
};

/// One rank's statistics by name, in the order the JSON per-rank entry lists them. Every rank of a
/// run must add the same names in the same order (gather_rank_fields checks). "rank" and
/// "iterations" are required: the record's iteration counts come from them.
struct RankFields {
  std::vector<RankField> fields;
  std::vector<TimePart> time;  ///< the named parts of the time split
  double total_time = 0;       ///< the rank's whole solve time

  RankFields& number(std::string name, double value);
  RankFields& integer(std::string name, std::int64_t value);
  RankFields& flag(std::string name, bool value);
  RankFields& integers(std::string name, const std::vector<std::int64_t>& values);
  RankFields& time_part(std::string name, double seconds, bool counted = true);

  /// The field called `name`, or nullptr.
  const RankField* find(const std::string& name) const;
  /// The first value of field `name`; throws std::out_of_range if there is none.
  double value(const std::string& name) const;
  /// total_time minus the counted parts.
  double other_time() const;
};

/// Every rank's fields on rank 0 of `comm`, in rank order (empty elsewhere). Collective. Every rank
/// must send the same names, kinds and lengths: otherwise every rank throws std::logic_error (a
/// programming error of the solver's command file, not bad input).
std::vector<RankFields> gather_rank_fields(MPI_Comm comm, const RankFields& mine);

/// Min / mean / max over ranks of the per-rank "iterations".
struct IterationSummary {
  double min = 0, mean = 0, max = 0;
};
IterationSummary summarise_iterations(const std::vector<RankFields>& per_rank);

/// Means over ranks of each time part, of "other" and of the total, in the parts' order.
std::vector<TimePart> mean_time_split(const std::vector<RankFields>& per_rank);

/// One line of the human summary: a label (padded to the summary's column) and its text.
struct SummaryLine {
  std::string label, text;
};

struct RunRecord {
  // Identification and set-up.
  std::string solver;       ///< the registered name, e.g. "jacobi"
  std::string method;       ///< the method or mode, e.g. "cg", "async"
  std::string headline;     ///< the rest of the summary's first line, e.g. "method cg, pc jacobi"
  int ranks = 1;
  std::string mpi_library;  ///< mpi_library_version()
  std::optional<decomposition::Index3> process_grid;  ///< grid problems only
  std::optional<decomposition::Index3> global_size;   ///< grid problems only (cells, points or nodes)
  std::int64_t unknowns = 0;
  std::vector<std::pair<std::string, std::string>> options;  ///< every option's effective value
  double tolerance = 0;
  // Result.
  bool converged = false;
  core::StopReason stop_reason = core::StopReason::max_iters;
  std::string message;           ///< why a numerical failure stopped the run
  double true_residual = 0;      ///< of the returned solution, computed synchronously
  double tested_residual = 0;    ///< the last value the solver's own convergence test saw
  long outstanding_requests = 0; ///< max over ranks after the run: 0 for a clean run
  // Performance.
  double wall_time = 0;          ///< the slowest rank's solve time
  double iteration_rate = 0;     ///< iterations per second, as the solver defines it (docs/output.md)
  std::vector<core::HistoryPoint> history;
  std::vector<RankFields> per_rank;  ///< gather_rank_fields (rank 0 only)
  /// Solvers that record local residuals: each rank's history (rank 0 only; empty: none), written
  /// as per_rank[].residual_history.
  std::vector<std::vector<core::HistoryPoint>> rank_histories;
  // The solver's section.
  std::string details = "{}";    ///< a JSON object (text), written under "details"
  std::vector<SummaryLine> setup_lines;        ///< summary lines after "ranks"
  std::string iterations_note;                 ///< appended to the summary's "iterations" line
  std::vector<SummaryLine> performance_lines;  ///< summary lines after "time split"
  std::string residual_note;                   ///< appended to the summary's "residual" line
};

/// The human summary (rank 0).
std::string format_summary(const RunRecord& record);
/// Writes the JSON document; throws std::runtime_error if the file cannot be written.
void write_json(const RunRecord& record, const std::string& path);
/// The same JSON document as text.
std::string record_json_text(const RunRecord& record);

/// Name and version of the MPI library in use: MPI_Get_library_version with tabs replaced by
/// spaces, cut at the first line break or comma.
std::string mpi_library_version();

}  // namespace desync::run

namespace desync::run {

/// The end every solver command shares, after the record is complete on rank 0: rank 0 prints the
/// summary (unless `quiet`) and writes the JSON document (when `json_path` is not empty); returns the
/// exit code of run_end.hpp. `io_error`: an output error met before (e.g. writing the solution),
/// "" if none. Collective over `comm`.
int finish_run(MPI_Comm comm, const RunRecord& record, bool quiet, const std::string& json_path,
               std::string io_error = "");

}  // namespace desync::run
