#pragma once
// `desync bench comm`: what the communication schemes of the solvers cost on this machine and MPI
// library (Yamazaki et al., 2019, section 6 and Tables 1 and 2). Ranks 0 and 1 measure the bandwidth of two-sided
// MPI_Send / MPI_Recv against MPI_Put under several epoch and completion schemes, and how well each
// overlaps with computation; all ranks measure the latency of MPI_Allreduce and MPI_Iallreduce.
// docs/benchmarks.md describes the methods; the JSON schema is "desync.bench.comm", version 1.
#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace desync::apps {

inline constexpr int bench_comm_schema_version = 1;

/// Options of `desync bench comm`.
struct BenchCommCommand {
  long min_doubles = 1;         // --min-doubles: smallest message, a power of two
  long max_doubles = 1L << 20;  // --max-doubles: largest message, a power of two (at most 2^24)
  long reps = 1000;             // --reps: messages (iterations) per measurement, before the volume cap
  long warmup = 10;             // --warmup: untimed messages before each measurement (at most reps)
  long samples = 5;             // --samples: bandwidth measurements per method and size (median reported)
  double volume_mib = 32;       // --volume-mib: cap on the bytes one measurement moves
  std::string json_path;        // --json
  bool quiet = false;           // --quiet

  /// Registers the options on a CLI11 subcommand.
  void add_options(CLI::App& app);
  /// Checks the values and the number of ranks (>= 2). Collective; throws InputError.
  void finalise(MPI_Comm comm);
  /// Effective values, for the JSON record.
  std::vector<std::pair<std::string, std::string>> effective() const;
};

/// One message size of one bandwidth method.
struct BandwidthPoint {
  long doubles = 0;
  long messages = 0;              ///< timed messages per sample
  long samples = 0;               ///< measurements, interleaved with the other methods'
  double time_per_message = 0;    ///< seconds, median over the samples
  double bandwidth = 0;           ///< 10^9 bytes per second, at the median time
  double bandwidth_min = 0;       ///< the slowest sample
  double bandwidth_max = 0;       ///< the fastest sample
  bool verified = false;          ///< in every sample the target found the last message's data
};
struct BandwidthSeries {
  std::string name, column, description;
  std::vector<BandwidthPoint> points;
};

/// One message size of one overlap method (Yamazaki et al., 2019, Table 1).
struct OverlapPoint {
  long doubles = 0;
  long iterations = 0;
  long compute_units = 0;  ///< kernel repetitions calibrated to take t_comm
  double t_comm = 0;       ///< seconds per iteration (median over the iterations): communication alone
  double t_comp = 0;       ///< computation alone
  double t_both = 0;       ///< both at once
  double overlap = 0;      ///< percent: (t_comm + t_comp - t_both) / min(t_comm, t_comp) * 100
};
struct OverlapSeries {
  std::string name, description;
  int computing_rank = 0;
  std::vector<OverlapPoint> points;
};

/// Latency of one collective over all ranks.
struct CollectiveLatency {
  std::string name, description;
  long calls = 0;
  double mean = 0;  ///< seconds per call, mean over ranks of each rank's average
  double max = 0;   ///< the slowest rank's average
};

struct BenchCommReport {
  std::string mpi_library;
  int ranks = 0;
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<long> sizes;  ///< message sizes in doubles
  std::vector<BandwidthSeries> bandwidth;
  std::vector<OverlapSeries> overlap;
  std::vector<CollectiveLatency> collectives;
  double compute_unit = 0;  ///< seconds per repetition of the compute kernel (rank 0's calibration)
  double wall_time = 0;     ///< seconds, the whole benchmark on rank 0
  double bandwidth_time = 0, overlap_time = 0, collectives_time = 0;  ///< its parts, rank 0
  bool verified = false;    ///< every bandwidth measurement verified
};

/// Overlap percentage of Yamazaki et al., 2019, Table 1: (t_comm + t_comp - t_both) / min(t_comm, t_comp) * 100.
/// 100: the shorter of the two was hidden completely; 0: none of it was. Noise can take it outside [0, 100].
double overlap_percent(double t_comm, double t_comp, double t_both);

/// Runs the benchmark; collective over `comm` (at least 2 ranks). The report is complete on rank 0.
/// Frees every window, request and communicator it creates.
BenchCommReport run_bench_comm(MPI_Comm comm, const BenchCommCommand& cmd);

/// The tables for people (rank 0).
std::string format_bench_comm(const BenchCommReport& report);
/// Writes the JSON document; throws std::runtime_error if the file cannot be written.
void write_bench_comm_json(const BenchCommReport& report, const std::string& path);

/// Runs the benchmark, prints the tables (unless --quiet) and writes the JSON file (rank 0).
/// Returns the exit code: 0, or exit_internal if the output could not be written or a transfer
/// was not verified at the target.
int bench_comm_main(const BenchCommCommand& cmd, MPI_Comm comm);

}  // namespace desync::apps
