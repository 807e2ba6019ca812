// desync_bench_sweep: how close the Jacobi sweep kernel comes to the machine's memory bandwidth.
//
//   mpirun -np 1 desync_bench_sweep [--local 200] [--cache-local 50] [--reps 40] [--triad-mib 64] [--json F]
//   mpirun -np 2 desync_bench_sweep ...
//
// Every rank runs every kernel at the same time (MPI_Barrier before each repetition), so with 2 ranks
// the two cores compete for memory exactly as they do in a 2-rank solve. Measured:
//
//   triad      a[i] = b[i] + s * c[i] on three arrays of --triad-mib MiB each (far beyond L3),
//              counted as 32 B per element: read b, read c, write a plus the write-allocate read of a.
//   sweep      desync::solvers::jacobi_sweep on a --local^3 Field (two Fields, swapped after every
//              sweep), counted as desync::solvers::sweep_bytes_per_update = 24 B per lattice update:
//              read u, write u_new plus its write-allocate read.
//   sweep+res  desync::solvers::jacobi_sweep_residual, same byte count (the residual reads nothing more).
//   the same two sweeps on a --cache-local^3 Field (50^3, the paper's default problem), whose two
//              Fields fit in L3: a cache-resident figure, in lattice updates per second only.
//
// The memory-bound kernels run interleaved: --reps rounds, each running every kernel once, so the
// triad and the sweeps see the same machine conditions (bandwidth on a shared or virtualised host
// drifts over seconds; measured one after the other, the ratio would follow the drift). Each figure
// is the kernel's best round, as STREAM reports its best. "aggregate" divides the bytes of all ranks by the
// slowest rank's time in that repetition; "per rank" is each rank's own best.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

#include "desync/decomposition/field.hpp"
#include "desync/solvers/jacobi/sweep.hpp"
#include "desync/problems/burgers3d.hpp"

namespace {

using desync::decomposition::Field;
using desync::solvers::SweepPrefetch;
using clock_type = std::chrono::steady_clock;

constexpr double triad_bytes_per_element = 32.0;  // read b, read c, write a (+ write-allocate of a)
constexpr double scale_bytes_per_element = 24.0;  // read b, write a (+ write-allocate of a)

enum class Prefetch { auto_, on, off };

struct Options {
  Prefetch prefetch = Prefetch::auto_;
  int local = 200;
  int cache_local = 50;
  int reps = 40;
  double triad_mib = 64;
  int pde_local = 0;
  std::string json;
};

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

[[noreturn]] void usage_error(int rank, const char* msg) {
  if (rank == 0)
    std::fprintf(stderr,
                 "desync_bench_sweep: %s\n"
                 "usage: desync_bench_sweep [--local N] [--cache-local N] [--reps R] [--triad-mib M] [--prefetch auto|on|off] [--json FILE]\n",
                 msg);
  MPI_Finalize();
  std::exit(2);
}

Options parse(int argc, char** argv, int rank) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "-h" || arg == "--help") {
      if (rank == 0)
        std::printf(
            "usage: desync_bench_sweep [--local N] [--cache-local N] [--reps R] [--triad-mib M]\n"
            "                          [--prefetch auto|on|off] [--json FILE]\n"
            "  --local N        memory-bound sweep on N^3 cells per rank (default 200)\n"
            "  --cache-local N  cache-resident sweep on N^3 cells per rank (default 50; 0 skips it)\n"
            "  --reps R         rounds; each runs every kernel once, interleaved; the best is reported (default 40)\n"
            "  --triad-mib M    size of each of the three triad arrays in MiB (default 64)\n"
            "  --pde-local N    also the burgers3d update of desync pde (3 velocities, 2 scalars) on an N^3 block\n"
            "                   per rank, memory-bound, in the same rounds (default 0: off), with the store path\n"
            "                   the solvers choose (problems::burgers_stores_for) and the other one, for comparison\n"
            "  --prefetch P     software prefetch in the sweeps: auto (default; the solvers' choice, on when the\n"
            "                   two fields exceed the rank's share of the last-level cache), on, off. With auto\n"
            "                   the memory-bound sweep is also run with the other setting, for comparison\n"
            "  --json FILE      also write the results as JSON\n");
      MPI_Finalize();
      std::exit(0);
    }
    if (a + 1 >= argc) usage_error(rank, ("missing value after " + arg).c_str());
    const char* v = argv[++a];
    char* end = nullptr;
    if (arg == "--local") o.local = static_cast<int>(std::strtol(v, &end, 10));
    else if (arg == "--cache-local") o.cache_local = static_cast<int>(std::strtol(v, &end, 10));
    else if (arg == "--reps") o.reps = static_cast<int>(std::strtol(v, &end, 10));
    else if (arg == "--triad-mib") o.triad_mib = std::strtod(v, &end);
    else if (arg == "--pde-local") o.pde_local = static_cast<int>(std::strtol(v, &end, 10));
    else if (arg == "--json") { o.json = v; continue; }
    else if (arg == "--prefetch") {
      const std::string p = v;
      if (p == "auto") o.prefetch = Prefetch::auto_;
      else if (p == "on") o.prefetch = Prefetch::on;
      else if (p == "off") o.prefetch = Prefetch::off;
      else usage_error(rank, ("--prefetch " + p + ": expected auto, on or off").c_str());
      continue;
    }
    else usage_error(rank, ("unknown option " + arg).c_str());
    if (end == v || *end != '\0') usage_error(rank, ("bad value for " + arg).c_str());
  }
  if (o.local < 1 || o.local > 1000) usage_error(rank, "--local must be in 1..1000");
  if (o.cache_local < 0 || o.cache_local > 1000) usage_error(rank, "--cache-local must be in 0..1000");
  if (o.reps < 1) usage_error(rank, "--reps must be >= 1");
  if (o.pde_local < 0 || o.pde_local > 400) usage_error(rank, "--pde-local must be in 0..400");
  if (!(o.triad_mib >= 1)) usage_error(rank, "--triad-mib must be >= 1");
  return o;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  return "unknown";
}

// Result of one kernel on every rank: per repetition, each rank's time.
struct Timing {
  std::string name;
  double work_per_rank = 0;   // elements (triad) or lattice updates (sweeps) per repetition
  double bytes_per_unit = 0;  // bytes counted per element / update
  bool memory_bound = true;
  std::vector<double> best_per_rank;  // seconds, rank 0 only
  double best_aggregate = 0;          // min over rounds of the max over ranks, seconds
  std::vector<double> rounds;         // every round's max over ranks, seconds (the same on every rank)
  std::string working_set;            // e.g. "3 x 64.0 MiB"
  bool prefetch = false;              // sweeps: software prefetch on
  bool burgers = false;               // the burgers3d update (its JSON reports streaming_stores, not prefetch)
  bool streaming = false;             // burgers: streaming stores (problems::BurgersStores::streaming)
  double working_set_bytes = 0;

  double aggregate_rate(int nranks) const { return work_per_rank * nranks / best_aggregate; }
  double aggregate_gbs(int nranks) const { return aggregate_rate(nranks) * bytes_per_unit * 1e-9; }
  double rank_rate(int r) const { return work_per_rank / best_per_rank[static_cast<std::size_t>(r)]; }
  double rank_gbs(int r) const { return rank_rate(r) * bytes_per_unit * 1e-9; }
};

// One kernel under measurement: its result and one repetition of it.
struct Kernel {
  Timing* timing;
  std::function<void()> body;
};

// Runs the kernels round-robin: a warm-up of each (page faults, frequency ramp, cache state), then
// `reps` rounds in which every kernel runs once, all ranks starting each kernel together. Because the
// repetitions interleave, every kernel sees the same machine conditions (on a shared or virtualised
// host the memory bandwidth drifts over seconds); each kernel's figure is its best round.
void time_interleaved(int reps, const std::vector<Kernel>& kernels) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::size_t nk = kernels.size();
  for (const Kernel& k : kernels) {
    MPI_Barrier(MPI_COMM_WORLD);
    k.body();
  }
  std::vector<double> mine_best(nk, 1e300);
  for (int r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < nk; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = clock_type::now();
      kernels[i].body();
      double dt = seconds_since(t0);
      mine_best[i] = std::min(mine_best[i], dt);
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      kernels[i].timing->rounds.push_back(dt);
    }
  for (std::size_t i = 0; i < nk; ++i) {
    Timing& t = *kernels[i].timing;
    t.best_aggregate = *std::min_element(t.rounds.begin(), t.rounds.end());  // reps >= 1
    t.best_per_rank.assign(static_cast<std::size_t>(size), 0.0);
    MPI_Gather(&mine_best[i], 1, MPI_DOUBLE, t.best_per_rank.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
}

volatile double sink = 0;  // keeps results observable

// Median over rounds of a's bandwidth divided by ref's bandwidth in the same round (aggregate over
// ranks): a second estimate of a / ref beside the ratio of the best rounds, robust to one lucky or
// unlucky round.
double median_same_round_ratio(const Timing& a, const Timing& ref) {
  std::vector<double> r;
  for (std::size_t i = 0; i < std::min(a.rounds.size(), ref.rounds.size()); ++i)
    r.push_back((a.work_per_rank * a.bytes_per_unit / a.rounds[i]) / (ref.work_per_rank * ref.bytes_per_unit / ref.rounds[i]));
  if (r.empty()) return 0.0;
  std::sort(r.begin(), r.end());
  const std::size_t m = r.size() / 2;
  return r.size() % 2 ? r[m] : 0.5 * (r[m - 1] + r[m]);
}

// The STREAM arrays, first-touched on this rank (no value-initialising vector, so the pages are
// written once, here).
struct StreamArrays {
  std::size_t n;
  std::unique_ptr<double[]> a, b, c;
  explicit StreamArrays(double mib)
      : n(static_cast<std::size_t>(mib * 1024 * 1024 / sizeof(double))), a(new double[n]), b(new double[n]),
        c(new double[n]) {
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = 0.0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
  }
  ~StreamArrays() { sink = sink + a[n / 2] + a[n - 1]; }
};

// STREAM triad a = b + s c (32 B/element) and, for a kernel with the sweep's own traffic pattern
// (one read stream, one write stream), STREAM scale a = s b (24 B/element with write-allocate).
// triad: true for the triad, false for scale. The branch is outside the loops.
Kernel stream_kernel(StreamArrays& arr, double mib, Timing& t, bool triad) {
  t.name = triad ? "triad" : "scale";
  const int arrays = triad ? 3 : 2;
  t.work_per_rank = static_cast<double>(arr.n);
  t.bytes_per_unit = triad ? triad_bytes_per_element : scale_bytes_per_element;
  t.working_set_bytes = arrays * static_cast<double>(arr.n) * sizeof(double);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d x %.1f MiB", arrays, mib);
  t.working_set = buf;
  return {&t, [&arr, triad] {
            const double s = 3.0;
            const std::size_t n = arr.n;
            double* __restrict pa = arr.a.get();
            const double* __restrict pb = arr.b.get();
            const double* __restrict pc = arr.c.get();
            if (triad) {
#pragma omp simd
              for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
            } else {
#pragma omp simd
              for (std::size_t i = 0; i < n; ++i) pa[i] = s * pb[i];
            }
          }};
}

// Two Fields of `local`^3 cells, swapped after every sweep. Smooth, non-trivial data (no
// denormals, no all-equal shortcuts); halos included.
struct SweepFields {
  int local;
  Field u, v;
  Field* cur = &u;
  Field* next = &v;
  explicit SweepFields(int n) : local(n), u({n, n, n}, 0.0), v({n, n, n}, 0.0) {
    for (std::size_t i = 0; i < u.storage_size(); ++i) u.data()[i] = 1.0 + 1e-3 * static_cast<double>(i % 997);
    std::copy(u.data(), u.data() + u.storage_size(), v.data());
  }
  ~SweepFields() { sink = sink + (*cur)(local / 2, local / 2, local / 2); }
};

// Sweeps of the fields' cells; `residual` selects jacobi_sweep_residual. A memory-bound repetition
// is one sweep (8e6 updates for 200^3, as long as a triad pass), so the best-of statistics of triad
// and sweep sample alike; a cache-resident repetition is enough sweeps to make at least ~2e7
// updates, so it is not dominated by timer and barrier overhead.
Kernel sweep_kernel(SweepFields& f, bool residual, bool memory_bound, int ranks_on_node, Prefetch forced, Timing& t) {
  const int local = f.local;
  const SweepPrefetch pf = forced == Prefetch::on    ? SweepPrefetch::on
                           : forced == Prefetch::off ? SweepPrefetch::off
                                                     : desync::solvers::sweep_prefetch_for(f.u, ranks_on_node, 1);
  const double updates = static_cast<double>(local) * local * local;
  const int sweeps = memory_bound ? 1 : std::max(1, static_cast<int>(std::ceil(2e7 / updates)));
  t.name = residual ? "sweep+residual" : "sweep";
  if (forced != Prefetch::auto_) t.name += pf == SweepPrefetch::on ? " [pf on]" : " [pf off]";
  t.prefetch = pf == SweepPrefetch::on;
  t.work_per_rank = updates * sweeps;
  t.bytes_per_unit = desync::solvers::sweep_bytes_per_update;
  t.memory_bound = memory_bound;
  t.working_set_bytes = 2.0 * static_cast<double>(f.u.storage_size()) * sizeof(double);
  char buf[96];
  std::snprintf(buf, sizeof buf, "2 x %d^3 (%.1f MiB), %d sweep%s/rep", local,
                t.working_set_bytes / (1024.0 * 1024.0), sweeps, sweeps == 1 ? "" : "s");
  t.working_set = buf;
  return {&t, [&f, residual, pf, sweeps] {
            double acc = 0;
            for (int s = 0; s < sweeps; ++s) {
              if (residual)
                acc += desync::solvers::jacobi_sweep_residual(*f.cur, *f.next, pf);
              else
                desync::solvers::jacobi_sweep(*f.cur, *f.next, pf);
              std::swap(f.cur, f.next);
            }
            sink = sink + acc;
          }};
}

// The burgers3d update of desync pde (problems::burgers_step) on an N^3 block of 5 variables
// (3 velocities, 2 scalars), two state vectors swapped after every step: counted as
// burgers_bytes_per_update_per_variable (24 B: read, write, write-allocate) per variable and point,
// the neighbours coming from cache. Smooth data and a small step keep the values tame.
struct BurgersFields {
  static constexpr int variables = 5;
  int local;
  Field layout;
  std::vector<double> a, b;
  double* cur;
  double* next;
  explicit BurgersFields(int n)
      : local(n), layout({n, n, n}, {1, 1, 1}), a(variables * layout.storage_size()), b(a.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.5 + 1e-3 * static_cast<double>(i % 991);
    b = a;
    cur = a.data();
    next = b.data();
  }
  ~BurgersFields() { sink = sink + cur[layout.index(local / 2, local / 2, local / 2)]; }
};

// `stores`: the store path of the update (problems::BurgersStores); the solvers choose with burgers_stores_for,
// which the first burgers kernel uses, and the other path runs beside it for comparison.
Kernel burgers_kernel(BurgersFields& f, desync::problems::BurgersStores stores, bool chosen, Timing& t) {
  const double points = static_cast<double>(f.local) * f.local * f.local;
  t.name = chosen ? "pde burgers3d" : (stores == desync::problems::BurgersStores::streaming ? "burgers [stream]" : "burgers [regular]");
  t.burgers = true;
  t.streaming = stores == desync::problems::BurgersStores::streaming;
  t.work_per_rank = points;
  t.bytes_per_unit = desync::problems::burgers_bytes_per_update_per_variable * BurgersFields::variables;
  t.working_set_bytes = 2.0 * static_cast<double>(f.a.size()) * sizeof(double);
  char buf[96];
  std::snprintf(buf, sizeof buf, "2 x 5 x %d^3 (%.1f MiB)", f.local, t.working_set_bytes / (1024.0 * 1024.0));
  t.working_set = buf;
  return {&t, [&f, stores] {
            static const double diffusivity[BurgersFields::variables] = {0.1, 0.1, 0.1, 0.1, 0.05};
            desync::problems::burgers_step(f.layout, f.cur, f.next, BurgersFields::variables, diffusivity, 1e-5,
                                              0.1, 0, stores);
            std::swap(f.cur, f.next);
          }};
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) r += ch;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Options o = parse(argc, argv, rank);

  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const desync::solvers::CacheInfo cache = desync::solvers::last_level_cache();
  const long l3 = static_cast<long>(cache.bytes);
  const int ranks_on_node = desync::solvers::ranks_on_node(MPI_COMM_WORLD);

  // Memory-bound kernels (interleaved with each other), then the cache-resident ones. The sweeps use
  // the prefetch setting a solver would choose (or --prefetch); with auto the memory-bound sweep also
  // runs with the other setting, as big[4], for comparison.
  std::vector<Timing> big(o.prefetch == Prefetch::auto_ ? 5 : 4), small(o.cache_local > 0 ? 2 : 0);
  const std::size_t burgers_first = big.size();
  big.reserve(big.size() + 2);  // the burgers kernels' Timings are added later: no reallocation
  {
    StreamArrays arrays(o.triad_mib);
    SweepFields fields(o.local);
    std::vector<Kernel> kernels{stream_kernel(arrays, o.triad_mib, big[0], true),
                                stream_kernel(arrays, o.triad_mib, big[1], false),
                                sweep_kernel(fields, false, true, ranks_on_node, o.prefetch, big[2]),
                                sweep_kernel(fields, true, true, ranks_on_node, o.prefetch, big[3])};
    if (o.prefetch == Prefetch::auto_)
      kernels.push_back(sweep_kernel(fields, false, true, ranks_on_node, big[2].prefetch ? Prefetch::off : Prefetch::on, big[4]));
    std::unique_ptr<BurgersFields> burgers;
    if (o.pde_local > 0) {
      burgers = std::make_unique<BurgersFields>(o.pde_local);
      using desync::problems::BurgersStores;
      const BurgersStores chosen =
          desync::problems::burgers_stores_for(burgers->layout, BurgersFields::variables, ranks_on_node, 1);
      big.emplace_back();
      kernels.push_back(burgers_kernel(*burgers, chosen, true, big.back()));
      if (desync::problems::burgers_streaming_available()) {
        big.emplace_back();
        kernels.push_back(burgers_kernel(
            *burgers, chosen == BurgersStores::streaming ? BurgersStores::regular : BurgersStores::streaming, false, big.back()));
      }
    }
    time_interleaved(o.reps, kernels);
  }
  if (o.cache_local > 0) {
    SweepFields fields(o.cache_local);
    time_interleaved(o.reps, {sweep_kernel(fields, false, false, ranks_on_node, o.prefetch, small[0]),
                              sweep_kernel(fields, true, false, ranks_on_node, o.prefetch, small[1])});
  }

  if (rank == 0) {
    const Timing& triad = big[0];
    const Timing& scale = big[1];
    const Timing& sweep = big[2];
    const Timing& sweep_res = big[3];
    const char* s_ranks = size == 1 ? "" : "s";
    std::printf("desync_bench_sweep: %d rank%s, %s, host %s\n", size, s_ranks, cpu_model().c_str(), host);
    std::printf("  L3 %.0f MiB; best of %d interleaved rounds; all ranks run each kernel concurrently\n",
                static_cast<double>(l3) / (1024.0 * 1024.0), o.reps);
    std::printf("  sweep prefetch (%s): memory-bound %s, cache-resident %s; %d rank%s on this node\n",
                o.prefetch == Prefetch::auto_ ? "auto, the solvers' choice" : "forced by --prefetch",
                sweep.prefetch ? "on" : "off", small.empty() ? "-" : (small[0].prefetch ? "on" : "off"), ranks_on_node,
                ranks_on_node == 1 ? "" : "s");
    std::printf("  bytes counted: triad 32 B/element (read b, c; write a + write-allocate), scale 24 B/element,\n"
                "                 sweep %.0f B/update (read u; write u_new + write-allocate)\n\n",
                desync::solvers::sweep_bytes_per_update);
    for (const Timing& t : big)
      if (l3 > 0 && t.working_set_bytes < 3.0 * static_cast<double>(l3))
        std::printf("  WARNING: %s working set %.0f MiB per rank is less than 3x L3: not far beyond cache\n",
                    t.name.c_str(), t.working_set_bytes / (1024.0 * 1024.0));

    std::printf("Memory-bound (working set far beyond L3), aggregate over %d rank%s:\n", size, s_ranks);
    std::printf("  %-15s %-36s %11s %9s %9s %9s\n", "kernel", "working set per rank", "Mupdates/s", "GB/s",
                "vs triad", "vs scale");
    for (const Timing& t : big) {
      const bool stream = &t == &triad || &t == &scale;
      char rate[32] = "-";
      if (!stream) std::snprintf(rate, sizeof rate, "%.1f", t.aggregate_rate(size) * 1e-6);
      std::printf("  %-15s %-36s %11s %9.2f %8.3fx %8.3fx\n", t.name.c_str(), t.working_set.c_str(), rate,
                  t.aggregate_gbs(size), t.aggregate_gbs(size) / triad.aggregate_gbs(size),
                  t.aggregate_gbs(size) / scale.aggregate_gbs(size));
    }
    std::printf("\nMemory-bound, per rank (each rank's own best), GB/s:\n");
    std::printf("  %-5s %9s %9s %9s %12s %11s %12s\n", "rank", "triad", "scale", "sweep", "sweep/triad", "sweep+res",
                "+res/triad");
    for (int r = 0; r < size; ++r)
      std::printf("  %-5d %9.2f %9.2f %9.2f %11.3fx %11.2f %11.3fx\n", r, triad.rank_gbs(r), scale.rank_gbs(r),
                  sweep.rank_gbs(r), sweep.rank_gbs(r) / triad.rank_gbs(r), sweep_res.rank_gbs(r),
                  sweep_res.rank_gbs(r) / triad.rank_gbs(r));
    if (!small.empty()) {
      std::printf("\nCACHE-RESIDENT (%d^3 per rank%s: the two Fields fit in L3, so\n"
                  "GB/s is only the equivalent traffic and a ratio to triad means nothing; compare Mupdates/s):\n",
                  o.cache_local, o.cache_local == 50 ? ", the paper's default problem" : "");
      std::printf("  %-15s %-36s %11s %14s %12s\n", "kernel", "working set per rank", "Mupdates/s", "per rank",
                  "equiv. GB/s");
      for (const Timing& t : small)
        std::printf("  %-15s %-36s %11.1f %14.1f %12.2f\n", t.name.c_str(), t.working_set.c_str(),
                    t.aggregate_rate(size) * 1e-6, t.aggregate_rate(size) * 1e-6 / size, t.aggregate_gbs(size));
      for (int r = 0; r < size; ++r)
        std::printf("  rank %d own best: sweep %.1f, sweep+residual %.1f Mupdates/s\n", r, small[0].rank_rate(r) * 1e-6,
                    small[1].rank_rate(r) * 1e-6);
    }
    std::printf("\nSUMMARY %d rank%s: sweep/triad %.3f (per rank", size, s_ranks,
                sweep.aggregate_gbs(size) / triad.aggregate_gbs(size));
    for (int r = 0; r < size; ++r) std::printf(" %.3f", sweep.rank_gbs(r) / triad.rank_gbs(r));
    std::printf("), median of same-round sweep/triad %.3f", median_same_round_ratio(sweep, triad));
    std::printf(", sweep/scale %.3f, sweep+residual/triad %.3f", sweep.aggregate_gbs(size) / scale.aggregate_gbs(size),
                sweep_res.aggregate_gbs(size) / triad.aggregate_gbs(size));
    if (o.prefetch == Prefetch::auto_)
      std::printf("; prefetch %s: sweep/triad %.3f", big[4].prefetch ? "on" : "off",
                  big[4].aggregate_gbs(size) / triad.aggregate_gbs(size));
    if (o.pde_local > 0) {
      const Timing& pde = big[burgers_first];
      std::printf("; pde burgers3d (stores %s)/triad %.3f (median of same-round %.3f)", pde.streaming ? "streaming" : "regular",
                  pde.aggregate_gbs(size) / triad.aggregate_gbs(size), median_same_round_ratio(pde, triad));
      if (big.size() > burgers_first + 1)
        std::printf("; stores %s: %.3f", big.back().streaming ? "streaming" : "regular",
                    big.back().aggregate_gbs(size) / triad.aggregate_gbs(size));
    }
    std::printf("\n");

    if (!o.json.empty()) {
      std::FILE* f = std::fopen(o.json.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "desync_bench_sweep: cannot write %s\n", o.json.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      auto kernel_json = [&](const Timing& t, bool ratios) {
        std::fprintf(f, "    {\"kernel\": \"%s\", \"memory_bound\": %s, \"%s\": %s, \"working_set\": \"%s\", "
                        "\"working_set_bytes_per_rank\": %.0f, \"bytes_per_unit\": %.1f, \"units_per_rep_per_rank\": %.0f,\n",
                     t.name.c_str(), t.memory_bound ? "true" : "false",
                     t.burgers ? "streaming_stores" : "prefetch", (t.burgers ? t.streaming : t.prefetch) ? "true" : "false",
                     json_escape(t.working_set).c_str(),
                     t.working_set_bytes, t.bytes_per_unit, t.work_per_rank);
        std::fprintf(f, "     \"aggregate\": {\"seconds\": %.6e, \"units_per_s\": %.6e, \"gb_per_s\": %.4f",
                     t.best_aggregate, t.aggregate_rate(size), t.aggregate_gbs(size));
        if (ratios)
          std::fprintf(f, ", \"ratio_to_triad\": %.4f, \"ratio_to_scale\": %.4f",
                       t.aggregate_gbs(size) / triad.aggregate_gbs(size), t.aggregate_gbs(size) / scale.aggregate_gbs(size));
        std::fprintf(f, ", \"round_seconds\": [");
        for (std::size_t i = 0; i < t.rounds.size(); ++i) std::fprintf(f, "%s%.6e", i ? ", " : "", t.rounds[i]);
        std::fprintf(f, "]},\n     \"per_rank\": [");
        for (int r = 0; r < size; ++r) {
          std::fprintf(f, "%s{\"rank\": %d, \"seconds\": %.6e, \"units_per_s\": %.6e, \"gb_per_s\": %.4f", r ? ", " : "",
                       r, t.best_per_rank[static_cast<std::size_t>(r)], t.rank_rate(r), t.rank_gbs(r));
          if (ratios)
            std::fprintf(f, ", \"ratio_to_triad\": %.4f, \"ratio_to_scale\": %.4f", t.rank_gbs(r) / triad.rank_gbs(r),
                         t.rank_gbs(r) / scale.rank_gbs(r));
          std::fprintf(f, "}");
        }
        std::fprintf(f, "]}");
      };
      std::fprintf(f, "{\n  \"benchmark\": \"desync_bench_sweep\",\n  \"ranks\": %d,\n  \"cpu\": \"%s\",\n"
                      "  \"host\": \"%s\",\n  \"l3_bytes\": %ld,\n  \"l3_shared_by_cpus\": %d,\n"
                      "  \"ranks_on_node\": %d,\n  \"prefetch_option\": \"%s\",\n  \"reps\": %d,\n  \"local\": %d,\n"
                      "  \"cache_local\": %d,\n  \"triad_mib_per_array\": %.1f,\n  \"kernels\": [\n",
                   size, json_escape(cpu_model()).c_str(), json_escape(host).c_str(), l3, cache.shared_by,
                   ranks_on_node, o.prefetch == Prefetch::auto_ ? "auto" : (o.prefetch == Prefetch::on ? "on" : "off"),
                   o.reps, o.local, o.cache_local, o.triad_mib);
      std::vector<const Timing*> all;
      for (const Timing& t : big) all.push_back(&t);
      for (const Timing& t : small) all.push_back(&t);
      for (std::size_t i = 0; i < all.size(); ++i) {
        kernel_json(*all[i], all[i]->memory_bound && all[i] != &big[0] && all[i] != &big[1]);
        std::fprintf(f, "%s\n", i + 1 < all.size() ? "," : "");
      }
      std::fprintf(f, "  ],\n  \"sweep_over_triad\": %.4f,\n  \"sweep_over_triad_per_rank\": [", 
                   sweep.aggregate_gbs(size) / triad.aggregate_gbs(size));
      for (int r = 0; r < size; ++r) std::fprintf(f, "%s%.4f", r ? ", " : "", sweep.rank_gbs(r) / triad.rank_gbs(r));
      std::fprintf(f, "],\n  \"sweep_over_triad_median_same_round\": %.4f", median_same_round_ratio(sweep, triad));
      std::fprintf(f, ",\n  \"sweep_over_scale\": %.4f,\n  \"sweep_residual_over_triad\": %.4f,\n"
                      "  \"cache_resident_updates_per_s\": %.6e\n}\n",
                   sweep.aggregate_gbs(size) / scale.aggregate_gbs(size),
                   sweep_res.aggregate_gbs(size) / triad.aggregate_gbs(size),
                   small.empty() ? 0.0 : small[0].aggregate_rate(size));
      std::fclose(f);
    }
  }
  MPI_Finalize();
  return 0;
}
