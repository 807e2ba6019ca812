#include "bench_comm.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "desync/core/error.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/json_file.hpp"
#include "desync/run/record.hpp"

namespace desync::apps {

namespace {

// Ranks of the pair communicator: rank 0 puts and sends ("origin"), rank 1 receives ("target").
constexpr int kOrigin = 0;
constexpr int kTarget = 1;
constexpr int kTagData = 101, kTagAck = 102, kTagTimes = 103;
constexpr long kMaxDoubles = 1L << 24;
constexpr long kMaxReps = 10000000;  // per-iteration times are kept and sent as one MPI message
// The one-put-per-double method moves at most this many doubles per measurement (but at least one
// whole message): it costs one MPI call per double.
constexpr long kPerElementDoubles = 1L << 18;
constexpr long kMinBytesForTarget = 64L * 1024;  // the one-sided vs two-sided summary: messages >= 64 KiB

bool is_power_of_two(long v) { return v > 0 && (v & (v - 1)) == 0; }

// ---------------------------------------------------------------------------------------------
// Bandwidth methods.
enum class Method {
  send_recv,
  send_recv_ack,
  lock_all_flush_local,
  lock_all_flush,
  lock_shared_flush_local,
  lock_shared_flush,
  per_element,
  epoch_shared,
  epoch_exclusive,
};

struct MethodInfo {
  Method method;
  const char* name;
  const char* column;
  const char* description;
};

constexpr std::array<MethodInfo, 9> kMethods = {{
    {Method::send_recv, "send_recv", "send",
     "MPI_Send / MPI_Recv, streamed; the receiver answers the last message with a zero-byte message"},
    {Method::send_recv_ack, "send_recv_ack", "send+ack",
     "MPI_Send / MPI_Recv; the receiver answers every message with a zero-byte message"},
    {Method::lock_all_flush_local, "put_lock_all_flush_local", "all+fl_l",
     "MPI_Win_lock_all once; MPI_Put + MPI_Win_flush_local per message; MPI_Win_flush after the last"},
    {Method::lock_all_flush, "put_lock_all_flush", "all+flush",
     "MPI_Win_lock_all once; MPI_Put + MPI_Win_flush per message"},
    {Method::lock_shared_flush_local, "put_lock_shared_flush_local", "shr+fl_l",
     "MPI_Win_lock(MPI_LOCK_SHARED) once; MPI_Put + MPI_Win_flush_local per message; MPI_Win_flush after the last"},
    {Method::lock_shared_flush, "put_lock_shared_flush", "shr+flush",
     "MPI_Win_lock(MPI_LOCK_SHARED) once; MPI_Put + MPI_Win_flush per message"},
    {Method::per_element, "put_per_element", "per-elem",
     "MPI_Win_lock(MPI_LOCK_SHARED) once; one MPI_Put per double + MPI_Win_flush_local per message; "
     "MPI_Win_flush after the last"},
    {Method::epoch_shared, "put_epoch_shared", "epoch-sh",
     "MPI_Win_lock(MPI_LOCK_SHARED) / MPI_Put / MPI_Win_unlock per message"},
    {Method::epoch_exclusive, "put_epoch_exclusive", "epoch-ex",
     "MPI_Win_lock(MPI_LOCK_EXCLUSIVE) / MPI_Put / MPI_Win_unlock per message"},
}};

bool two_sided(Method m) { return m == Method::send_recv || m == Method::send_recv_ack; }

// ---------------------------------------------------------------------------------------------
// Overlap methods (Yamazaki et al., 2019, Table 1; Table 2's "overlap" and "overlap-local").
enum class OverlapMethod { isend_irecv, put_flush_local, put_flush, put_flush_target_busy };

struct OverlapInfo {
  OverlapMethod method;
  const char* name;
  const char* description;
  int computing_rank;
};

constexpr std::array<OverlapInfo, 4> kOverlapMethods = {{
    {OverlapMethod::isend_irecv, "isend_irecv",
     "rank 0: MPI_Isend, compute, MPI_Wait; rank 1: MPI_Irecv (posted before), MPI_Wait", 0},
    {OverlapMethod::put_flush_local, "put_flush_local",
     "under MPI_Win_lock_all, rank 0: MPI_Put, compute, MPI_Win_flush_local (Yamazaki et al., 2019, Table 1)", 0},
    {OverlapMethod::put_flush, "put_flush", "under MPI_Win_lock_all, rank 0: MPI_Put, compute, MPI_Win_flush", 0},
    {OverlapMethod::put_flush_target_busy, "put_flush_target_busy",
     "under MPI_Win_lock_all, rank 0: MPI_Put, MPI_Win_flush while the target (rank 1) computes without "
     "calling MPI; t_both is the later of the two to finish: 100 % when the put completes without the "
     "target's help, 0 % when it waits for the target's next MPI call",
     1},
}};

enum class Phase { comm, comp, both };

// ---------------------------------------------------------------------------------------------
// The compute kernel: a small in-cache dense matrix-vector product (Yamazaki et al., 2019, Table 1), repeated.
class Kernel {
 public:
  Kernel() {
    for (int i = 0; i < n; ++i) {
      x_[static_cast<std::size_t>(i)] = 1.0 + 0.01 * i;
      for (int j = 0; j < n; ++j) a_[static_cast<std::size_t>(i * n + j)] = (1.0 + ((i + j) % 3)) / (2.0 * n);
    }
  }
  /// `units` products y = A x, each feeding one entry of x back so that none can be skipped. The
  /// entries of A sum to at most 1.5 per row and x is averaged with y: the values stay bounded.
  void run(long units) {
    for (long u = 0; u < units; ++u) {
      for (int i = 0; i < n; ++i) {
        double s = 0;
        for (int j = 0; j < n; ++j) s += a_[static_cast<std::size_t>(i * n + j)] * x_[static_cast<std::size_t>(j)];
        y_[static_cast<std::size_t>(i)] = s;
      }
      const auto k = static_cast<std::size_t>(u % n);
      x_[k] = 0.5 * (x_[k] + y_[k]) * (1.0 / 1.5);
      x_[k] = x_[k] < 1e-3 ? 1.0 : x_[k];
    }
    double c = 0;
    for (double v : x_) c += v;
    sink_ = c;
  }

 private:
  static constexpr int n = 8;
  std::array<double, n * n> a_{};
  std::array<double, n> x_{}, y_{};
  volatile double sink_ = 0;
};

/// Seconds per kernel unit: the best of 3 runs long enough (>= 2 ms) to time.
double calibrate(Kernel& k) {
  long units = 256;
  double dt = 0;
  for (;;) {
    const double t0 = MPI_Wtime();
    k.run(units);
    dt = MPI_Wtime() - t0;
    if (dt >= 2e-3 || units > (1L << 40)) break;
    units *= 4;
  }
  for (int r = 0; r < 2; ++r) {
    const double t0 = MPI_Wtime();
    k.run(units);
    dt = std::min(dt, MPI_Wtime() - t0);
  }
  return dt / static_cast<double>(units);
}

// ---------------------------------------------------------------------------------------------
struct Pair {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = -1;  // kOrigin or kTarget
  MPI_Win win = MPI_WIN_NULL;
  double* window = nullptr;  // this rank's window memory (from MPI_Win_allocate)
  std::vector<double> send, recv;
  char dummy = 0;  // buffer of the zero-byte replies
};

long messages_for(const BenchCommCommand& cmd, long doubles, bool per_element) {
  const double bytes = 8.0 * static_cast<double>(doubles);
  double cap = per_element ? static_cast<double>(kPerElementDoubles) / static_cast<double>(doubles)
                           : cmd.volume_mib * 1048576.0 / bytes;
  cap = std::max(1.0, std::floor(cap));
  return std::min(cmd.reps, static_cast<long>(std::min(cap, 1e15)));
}

// Epoch opened before the timed messages and closed after them (untimed).
void open_epoch(Pair& p, Method m) {
  switch (m) {
    case Method::lock_all_flush_local:
    case Method::lock_all_flush:
      MPI_Win_lock_all(0, p.win);
      break;
    case Method::lock_shared_flush_local:
    case Method::lock_shared_flush:
    case Method::per_element:
      MPI_Win_lock(MPI_LOCK_SHARED, kTarget, 0, p.win);
      break;
    default:
      break;
  }
}

void close_epoch(Pair& p, Method m) {
  switch (m) {
    case Method::lock_all_flush_local:
    case Method::lock_all_flush:
      MPI_Win_unlock_all(p.win);
      break;
    case Method::lock_shared_flush_local:
    case Method::lock_shared_flush:
    case Method::per_element:
      MPI_Win_unlock(kTarget, p.win);
      break;
    default:
      break;
  }
}

// Origin: `count` messages of `n` doubles. Returns when the origin knows the data of every message
// is at the target: the same completion requirement for every method.
void origin_messages(Pair& p, Method m, int n, long count) {
  if (count <= 0) return;
  const double* b = p.send.data();
  MPI_Win w = p.win;
  switch (m) {
    case Method::send_recv:
      for (long i = 0; i < count; ++i) MPI_Send(b, n, MPI_DOUBLE, kTarget, kTagData, p.comm);
      MPI_Recv(&p.dummy, 0, MPI_CHAR, kTarget, kTagAck, p.comm, MPI_STATUS_IGNORE);
      break;
    case Method::send_recv_ack:
      for (long i = 0; i < count; ++i) {
        MPI_Send(b, n, MPI_DOUBLE, kTarget, kTagData, p.comm);
        MPI_Recv(&p.dummy, 0, MPI_CHAR, kTarget, kTagAck, p.comm, MPI_STATUS_IGNORE);
      }
      break;
    case Method::lock_all_flush_local:
    case Method::lock_shared_flush_local:
      for (long i = 0; i < count; ++i) {
        MPI_Put(b, n, MPI_DOUBLE, kTarget, 0, n, MPI_DOUBLE, w);
        MPI_Win_flush_local(kTarget, w);
      }
      MPI_Win_flush(kTarget, w);
      break;
    case Method::lock_all_flush:
    case Method::lock_shared_flush:
      for (long i = 0; i < count; ++i) {
        MPI_Put(b, n, MPI_DOUBLE, kTarget, 0, n, MPI_DOUBLE, w);
        MPI_Win_flush(kTarget, w);
      }
      break;
    case Method::per_element:
      for (long i = 0; i < count; ++i) {
        for (int e = 0; e < n; ++e) MPI_Put(b + e, 1, MPI_DOUBLE, kTarget, e, 1, MPI_DOUBLE, w);
        MPI_Win_flush_local(kTarget, w);
      }
      MPI_Win_flush(kTarget, w);
      break;
    case Method::epoch_shared:
    case Method::epoch_exclusive:
      for (long i = 0; i < count; ++i) {
        MPI_Win_lock(m == Method::epoch_shared ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, kTarget, 0, w);
        MPI_Put(b, n, MPI_DOUBLE, kTarget, 0, n, MPI_DOUBLE, w);
        MPI_Win_unlock(kTarget, w);
      }
      break;
  }
}

// Target side of origin_messages: the receives of the two-sided methods. For the one-sided methods
// the target does nothing here and waits in the MPI_Barrier that follows, where the MPI library can
// progress the origin's puts if it needs the target for that.
void target_messages(Pair& p, Method m, int n, long count) {
  if (count <= 0 || !two_sided(m)) return;
  for (long i = 0; i < count; ++i) {
    MPI_Recv(p.recv.data(), n, MPI_DOUBLE, kOrigin, kTagData, p.comm, MPI_STATUS_IGNORE);
    if (m == Method::send_recv_ack || i + 1 == count) MPI_Send(&p.dummy, 0, MPI_CHAR, kOrigin, kTagAck, p.comm);
  }
}

// The target's own window memory, accessed under a lock on itself (the portable way to read or
// write one's window while others may access it with passive-target RMA).
void clear_window(Pair& p, int n) {
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, kTarget, 0, p.win);
  std::fill(p.window, p.window + n, 0.0);
  MPI_Win_unlock(kTarget, p.win);
}

bool window_holds(Pair& p, int n, double stamp) {
  MPI_Win_lock(MPI_LOCK_SHARED, kTarget, 0, p.win);
  const bool ok = p.window[0] == stamp && p.window[n - 1] == stamp && p.window[n / 2] == stamp;
  MPI_Win_unlock(kTarget, p.win);
  return ok;
}

struct Sample {
  long messages = 0;
  double elapsed = 0;  // seconds, on the origin
  bool verified = false;
};

Sample measure_bandwidth(Pair& p, const BenchCommCommand& cmd, Method m, int n, double stamp) {
  Sample smp;
  smp.messages = messages_for(cmd, n, m == Method::per_element);
  const long warm = std::min(cmd.warmup, smp.messages);
  const bool origin = p.rank == kOrigin;
  if (origin) {
    std::fill(p.send.begin(), p.send.begin() + n, -stamp);
  } else if (two_sided(m)) {
    std::fill(p.recv.begin(), p.recv.begin() + n, 0.0);
  } else {
    clear_window(p, n);
  }
  MPI_Barrier(p.comm);
  if (origin) {
    open_epoch(p, m);
    origin_messages(p, m, n, warm);
    close_epoch(p, m);
    std::fill(p.send.begin(), p.send.begin() + n, stamp);
  } else {
    target_messages(p, m, n, warm);
  }
  MPI_Barrier(p.comm);
  if (origin) {
    open_epoch(p, m);
    const double t0 = MPI_Wtime();
    origin_messages(p, m, n, smp.messages);
    smp.elapsed = MPI_Wtime() - t0;
    close_epoch(p, m);
  } else {
    target_messages(p, m, n, smp.messages);
  }
  MPI_Barrier(p.comm);
  int ok = 1;
  if (!origin) {
    ok = two_sided(m) ? (p.recv[0] == stamp && p.recv[static_cast<std::size_t>(n - 1)] == stamp &&
                         p.recv[static_cast<std::size_t>(n / 2)] == stamp)
                      : window_holds(p, n, stamp);
  }
  MPI_Bcast(&ok, 1, MPI_INT, kTarget, p.comm);
  smp.verified = ok != 0;
  return smp;
}

// Median time per message over the samples; bandwidth at the median, slowest and fastest sample.
BandwidthPoint summarise(int n, const std::vector<Sample>& samples) {
  BandwidthPoint pt;
  pt.doubles = n;
  pt.samples = static_cast<long>(samples.size());
  pt.verified = !samples.empty();
  std::vector<double> t;
  for (const auto& s : samples) {
    pt.messages = s.messages;
    pt.verified = pt.verified && s.verified;
    t.push_back(s.elapsed / static_cast<double>(s.messages));
  }
  if (t.empty()) return pt;
  std::sort(t.begin(), t.end());
  const std::size_t h = t.size() / 2;
  pt.time_per_message = t.size() % 2 ? t[h] : 0.5 * (t[h - 1] + t[h]);
  const double bytes = 8.0 * n;
  auto gbs = [&](double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; };
  pt.bandwidth = gbs(pt.time_per_message);
  pt.bandwidth_min = gbs(t.back());
  pt.bandwidth_max = gbs(t.front());
  return pt;
}

// ---------------------------------------------------------------------------------------------
// One overlap phase: `iterations` iterations, each started by an MPI_Barrier of the pair. Returns
// this rank's time per iteration where it times something (empty otherwise).
std::vector<double> overlap_phase(Pair& p, OverlapMethod om, Phase ph, int n, long iterations, long units,
                                  Kernel& kernel) {
  const bool origin = p.rank == kOrigin;
  const bool busy_target = om == OverlapMethod::put_flush_target_busy;
  const bool origin_times = origin && !(busy_target && ph == Phase::comp);
  const bool target_times = !origin && busy_target && ph != Phase::comm;
  std::vector<double> times;
  if (origin_times || target_times) times.reserve(static_cast<std::size_t>(iterations));
  const double* b = p.send.data();
  for (long it = 0; it < iterations; ++it) {
    MPI_Request rreq = MPI_REQUEST_NULL;
    if (!origin && om == OverlapMethod::isend_irecv && ph != Phase::comp)
      MPI_Irecv(p.recv.data(), n, MPI_DOUBLE, kOrigin, kTagData, p.comm, &rreq);
    MPI_Barrier(p.comm);
    if (origin) {
      if (!origin_times) continue;
      MPI_Request sreq = MPI_REQUEST_NULL;
      const double t0 = MPI_Wtime();
      if (ph != Phase::comp) {
        if (om == OverlapMethod::isend_irecv)
          MPI_Isend(b, n, MPI_DOUBLE, kTarget, kTagData, p.comm, &sreq);
        else
          MPI_Put(b, n, MPI_DOUBLE, kTarget, 0, n, MPI_DOUBLE, p.win);
      }
      if (ph != Phase::comm && !busy_target) kernel.run(units);
      if (ph != Phase::comp) {
        if (om == OverlapMethod::isend_irecv)
          MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        else if (om == OverlapMethod::put_flush_local)
          MPI_Win_flush_local(kTarget, p.win);
        else
          MPI_Win_flush(kTarget, p.win);
      }
      times.push_back(MPI_Wtime() - t0);
    } else {
      if (target_times) {
        const double t0 = MPI_Wtime();
        kernel.run(units);
        times.push_back(MPI_Wtime() - t0);
      }
      if (rreq != MPI_REQUEST_NULL) MPI_Wait(&rreq, MPI_STATUS_IGNORE);
    }
  }
  return times;
}

// Median of the per-iteration times: an iteration in which the operating system took the core away
// counts as one outlier, not as a shift of the whole figure.
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

OverlapPoint measure_overlap(Pair& p, const BenchCommCommand& cmd, OverlapMethod om, int computing_rank, int n,
                             double unit, Kernel& kernel) {
  OverlapPoint pt;
  pt.doubles = n;
  pt.iterations = messages_for(cmd, n, false);
  const long warm = std::min(cmd.warmup, pt.iterations);
  const bool origin = p.rank == kOrigin;
  const bool one_sided = om != OverlapMethod::isend_irecv;
  if (origin && one_sided) MPI_Win_lock_all(0, p.win);

  overlap_phase(p, om, Phase::comm, n, warm, 0, kernel);
  const auto comm_times = overlap_phase(p, om, Phase::comm, n, pt.iterations, 0, kernel);
  // The computing rank calibrates the kernel to take as long as the communication alone.
  double t_comm = median(comm_times);
  MPI_Bcast(&t_comm, 1, MPI_DOUBLE, kOrigin, p.comm);
  double computing_unit = unit;
  MPI_Bcast(&computing_unit, 1, MPI_DOUBLE, computing_rank, p.comm);
  pt.compute_units = std::max(1L, std::lround(t_comm / computing_unit));

  overlap_phase(p, om, Phase::comp, n, warm, pt.compute_units, kernel);
  const auto comp_times = overlap_phase(p, om, Phase::comp, n, pt.iterations, pt.compute_units, kernel);
  overlap_phase(p, om, Phase::both, n, warm, pt.compute_units, kernel);
  auto both_times = overlap_phase(p, om, Phase::both, n, pt.iterations, pt.compute_units, kernel);
  if (origin && one_sided) MPI_Win_unlock_all(p.win);

  double t_comp = median(comp_times);
  MPI_Bcast(&t_comp, 1, MPI_DOUBLE, computing_rank, p.comm);
  if (om == OverlapMethod::put_flush_target_busy) {
    // Both ranks timed each iteration of the overlapped phase: the later one counts.
    std::vector<double> target_times(static_cast<std::size_t>(pt.iterations), 0.0);
    const int count = static_cast<int>(pt.iterations);
    if (origin) {
      MPI_Recv(target_times.data(), count, MPI_DOUBLE, kTarget, kTagTimes, p.comm, MPI_STATUS_IGNORE);
      for (std::size_t i = 0; i < both_times.size(); ++i) both_times[i] = std::max(both_times[i], target_times[i]);
    } else {
      MPI_Send(both_times.data(), count, MPI_DOUBLE, kOrigin, kTagTimes, p.comm);
    }
  }
  pt.t_comm = t_comm;
  pt.t_comp = t_comp;
  pt.t_both = median(both_times);
  pt.overlap = overlap_percent(pt.t_comm, pt.t_comp, pt.t_both);
  return pt;
}

// ---------------------------------------------------------------------------------------------
CollectiveLatency measure_collective(MPI_Comm comm, bool nonblocking, long calls, long warmup) {
  CollectiveLatency c;
  c.name = nonblocking ? "iallreduce" : "allreduce";
  c.description = nonblocking ? "MPI_Iallreduce of 1 double (MPI_SUM) + MPI_Wait"
                              : "MPI_Allreduce of 1 double (MPI_SUM)";
  c.calls = calls;
  double in = 1.0, out = 0.0;
  auto one = [&] {
    if (nonblocking) {
      MPI_Request req = MPI_REQUEST_NULL;
      MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, comm);
    }
  };
  MPI_Barrier(comm);
  for (long i = 0; i < warmup; ++i) one();
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < calls; ++i) one();
  const double mine = (MPI_Wtime() - t0) / static_cast<double>(calls);
  int size = 1;
  MPI_Comm_size(comm, &size);
  double sum = 0, max = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  c.mean = sum / size;
  c.max = max;
  return c;
}

std::string human_bytes(long bytes) {
  if (bytes >= 1048576 && bytes % 1048576 == 0) return fmt::format("{} MiB", bytes / 1048576);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} B", bytes);
}

// Smallest ratio of bandwidth a / bandwidth b over the sizes >= 64 KiB; NaN if there are none.
double min_ratio(const BenchCommReport& r, const char* a, const char* b) {
  const BandwidthSeries *sa = nullptr, *sb = nullptr;
  for (const auto& s : r.bandwidth) {
    if (s.name == a) sa = &s;
    if (s.name == b) sb = &s;
  }
  double worst = std::numeric_limits<double>::quiet_NaN();
  if (!sa || !sb) return worst;
  for (std::size_t i = 0; i < sa->points.size() && i < sb->points.size(); ++i) {
    if (8 * sa->points[i].doubles < kMinBytesForTarget || !(sb->points[i].bandwidth > 0)) continue;
    const double q = sa->points[i].bandwidth / sb->points[i].bandwidth;
    worst = std::isnan(worst) ? q : std::min(worst, q);
  }
  return worst;
}

constexpr std::array<std::pair<const char*, const char*>, 2> kRatios = {{
    {"put_lock_all_flush_local", "send_recv"},
    {"put_lock_all_flush", "send_recv_ack"},
}};

}  // namespace

double overlap_percent(double t_comm, double t_comp, double t_both) {
  const double shorter = std::min(t_comm, t_comp);
  return shorter > 0 ? (t_comm + t_comp - t_both) / shorter * 100.0 : 0.0;
}

// ---------------------------------------------------------------------------------------------
void BenchCommCommand::add_options(CLI::App& app) {
  app.add_option("--min-doubles", min_doubles, "Smallest message in doubles (a power of two)")->capture_default_str();
  app.add_option("--max-doubles", max_doubles, "Largest message in doubles (a power of two, at most 2^24)")
      ->capture_default_str();
  app.add_option("--reps", reps,
                 "Messages per measurement (fewer for large messages: at most --volume-mib per measurement); "
                 "also the calls per collective")
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed messages before each measurement (at most the timed count)")
      ->capture_default_str();
  app.add_option("--samples", samples,
                 "Bandwidth measurements per method and size, interleaved across the methods (the median is reported)")
      ->capture_default_str();
  app.add_option("--volume-mib", volume_mib, "At most this many MiB per measurement (at least one message)")
      ->capture_default_str();
  app.add_option("--json", json_path, "Write the results as JSON to this file");
  app.add_flag("--quiet", quiet, "Print no tables");
}

void BenchCommCommand::finalise(MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  if (nranks < 2)
    throw InputError(fmt::format(
        "bench comm needs at least 2 ranks (ranks 0 and 1 communicate), got {}: run it with mpirun -np 2", nranks));
  if (!is_power_of_two(min_doubles))
    throw InputError(fmt::format("--min-doubles {}: must be a power of two >= 1", min_doubles));
  if (!is_power_of_two(max_doubles) || max_doubles > kMaxDoubles)
    throw InputError(fmt::format("--max-doubles {}: must be a power of two between 1 and {}", max_doubles, kMaxDoubles));
  if (min_doubles > max_doubles)
    throw InputError(fmt::format("--min-doubles {} is larger than --max-doubles {}", min_doubles, max_doubles));
  if (reps < 1 || reps > kMaxReps)
    throw InputError(fmt::format("--reps {}: must be between 1 and {}", reps, kMaxReps));
  if (warmup < 0) throw InputError(fmt::format("--warmup {}: must be >= 0", warmup));
  if (samples < 1 || samples > 1000) throw InputError(fmt::format("--samples {}: must be between 1 and 1000", samples));
  if (!(volume_mib > 0) || !std::isfinite(volume_mib))
    throw InputError(fmt::format("--volume-mib {}: must be > 0", volume_mib));
  if (!json_path.empty()) run::check_writable(comm, json_path, "--json");
}

std::vector<std::pair<std::string, std::string>> BenchCommCommand::effective() const {
  return {{"min-doubles", std::to_string(min_doubles)},
          {"max-doubles", std::to_string(max_doubles)},
          {"reps", std::to_string(reps)},
          {"warmup", std::to_string(warmup)},
          {"samples", std::to_string(samples)},
          {"volume-mib", fmt::format("{}", volume_mib)},
          {"json", json_path},
          {"quiet", quiet ? "true" : "false"}};
}

// ---------------------------------------------------------------------------------------------
BenchCommReport run_bench_comm(MPI_Comm comm, const BenchCommCommand& cmd) {
  BenchCommReport report;
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &world);
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &report.ranks);
  report.mpi_library = run::mpi_library_version();
  report.options = cmd.effective();
  for (long n = cmd.min_doubles; n <= cmd.max_doubles; n *= 2) report.sizes.push_back(n);

  MPI_Barrier(world);
  const double start = MPI_Wtime();
  Kernel kernel;
  const double unit = calibrate(kernel);
  report.compute_unit = unit;

  Pair p;
  MPI_Comm_split(world, rank < 2 ? 0 : MPI_UNDEFINED, rank, &p.comm);
  int all_ok = 1;
  if (p.comm != MPI_COMM_NULL) {
    MPI_Comm_rank(p.comm, &p.rank);
    const auto max_n = static_cast<std::size_t>(cmd.max_doubles);
    p.send.assign(max_n, 0.0);
    p.recv.assign(max_n, 0.0);
    MPI_Win_allocate(static_cast<MPI_Aint>(max_n * sizeof(double)), static_cast<int>(sizeof(double)), MPI_INFO_NULL,
                     p.comm, &p.window, &p.win);

    const double t_bandwidth = MPI_Wtime();
    // Samples interleave the methods (every sample of a size visits all of them, in turn), so that a
    // slow drift of the machine spreads over all methods instead of landing on one.
    for (const auto& info : kMethods) report.bandwidth.push_back({info.name, info.column, info.description, {}});
    for (std::size_t si = 0; si < report.sizes.size(); ++si) {
      const int n = static_cast<int>(report.sizes[si]);
      std::vector<std::vector<Sample>> samples(kMethods.size());
      for (long k = 0; k < cmd.samples; ++k)
        for (std::size_t mi = 0; mi < kMethods.size(); ++mi) {
          const double stamp = 1.0 + static_cast<double>(si) + 0.001 * static_cast<double>(mi + 1) +
                               1e-6 * static_cast<double>(k);
          samples[mi].push_back(measure_bandwidth(p, cmd, kMethods[mi].method, n, stamp));
        }
      for (std::size_t mi = 0; mi < kMethods.size(); ++mi) {
        report.bandwidth[mi].points.push_back(summarise(n, samples[mi]));
        all_ok &= report.bandwidth[mi].points.back().verified ? 1 : 0;
      }
    }
    const double t_overlap = MPI_Wtime();
    report.bandwidth_time = t_overlap - t_bandwidth;
    for (const auto& info : kOverlapMethods) {
      OverlapSeries s{info.name, info.description, info.computing_rank, {}};
      for (long n : report.sizes)
        s.points.push_back(measure_overlap(p, cmd, info.method, info.computing_rank, static_cast<int>(n), unit, kernel));
      report.overlap.push_back(std::move(s));
    }
    report.overlap_time = MPI_Wtime() - t_overlap;
    MPI_Win_free(&p.win);
    MPI_Comm_free(&p.comm);
  }
  // Ranks beyond the pair wait here without spinning, so that they do not take a core from the pair
  // when ranks share cores.
  {
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Ibarrier(world, &req);
    if (rank < 2) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      int done = 0;
      for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  const long coll_warmup = std::min(cmd.warmup, cmd.reps);
  const double t_collectives = MPI_Wtime();
  report.collectives.push_back(measure_collective(world, false, cmd.reps, coll_warmup));
  report.collectives.push_back(measure_collective(world, true, cmd.reps, coll_warmup));
  report.collectives_time = MPI_Wtime() - t_collectives;
  report.verified = all_ok != 0;
  report.wall_time = MPI_Wtime() - start;
  MPI_Comm_free(&world);
  return report;
}

// ---------------------------------------------------------------------------------------------
std::string format_bench_comm(const BenchCommReport& r) {
  std::string s;
  auto opt = [&](const char* key) {
    for (const auto& [k, v] : r.options)
      if (k == key) return v;
    return std::string();
  };
  s += fmt::format("desync bench comm: ranks 0 and 1 of {}; {}\n", r.ranks, r.mpi_library);
  s += fmt::format("messages per measurement: min(--reps {}, --volume-mib {} MiB / message size), at least 1; "
                   "warm-up {}; bandwidth: median of {} samples\n",
                   opt("reps"), opt("volume-mib"), opt("warmup"), opt("samples"));
  s += "data is at the target when each clock stops (see docs/benchmarks.md)\n\n";

  auto size_cols = [](long n) { return fmt::format("{:>9} {:>9}", n, human_bytes(8 * n)); };
  std::string header = fmt::format("{:>9} {:>9}", "doubles", "bytes");
  for (const auto& b : r.bandwidth) header += fmt::format(" {:>9}", b.column);
  s += "Bandwidth, GB/s (10^9 bytes per second), median of the samples\n" + header + "\n";
  for (std::size_t i = 0; i < r.sizes.size(); ++i) {
    s += size_cols(r.sizes[i]);
    for (const auto& b : r.bandwidth) s += fmt::format(" {:>9.3f}", b.points[i].bandwidth);
    s += "\n";
  }
  s += "\nTime per message, us, median of the samples\n" + header + "\n";
  for (std::size_t i = 0; i < r.sizes.size(); ++i) {
    s += size_cols(r.sizes[i]);
    for (const auto& b : r.bandwidth) s += fmt::format(" {:>9.2f}", b.points[i].time_per_message * 1e6);
    s += "\n";
  }
  s += "\n";
  for (const auto& b : r.bandwidth) s += fmt::format("  {:<9} {}: {}\n", b.column, b.name, b.description);

  s += "\nOverlap of communication with computation (Yamazaki et al., 2019, Table 1); times in us, median per iteration;\n"
       "overlap % = (t_comm + t_comp - t_both) / min(t_comm, t_comp) * 100\n";
  for (const auto& o : r.overlap) {
    s += fmt::format("\n{}: {}\n", o.name, o.description);
    s += fmt::format("{:>9} {:>9} {:>11} {:>11} {:>11} {:>10}\n", "doubles", "bytes", "t_both", "t_comm", "t_comp",
                     "overlap %");
    for (const auto& pt : o.points)
      s += fmt::format("{} {:>11.2f} {:>11.2f} {:>11.2f} {:>10.1f}\n", size_cols(pt.doubles), pt.t_both * 1e6,
                       pt.t_comm * 1e6, pt.t_comp * 1e6, pt.overlap);
  }

  s += fmt::format("\nCollectives over {} ranks, us per call: mean over ranks (slowest rank)\n", r.ranks);
  for (const auto& c : r.collectives)
    s += fmt::format("  {:<11} {:>9.2f} ({:.2f})  {}\n", c.name, c.mean * 1e6, c.max * 1e6, c.description);

  s += "\n";
  for (const auto& [a, b] : kRatios) {
    const double q = min_ratio(r, a, b);
    if (std::isnan(q))
      s += fmt::format("SUMMARY {} / {} bandwidth: no message >= 64 KiB measured\n", a, b);
    else
      s += fmt::format("SUMMARY {} / {} bandwidth, messages >= 64 KiB: at least {:.3f}\n", a, b, q);
  }
  s += fmt::format("wall time {:.2f} s (bandwidth {:.2f}, overlap {:.2f}, collectives {:.2f}); every transfer "
                   "verified at the target: {}\n",
                   r.wall_time, r.bandwidth_time, r.overlap_time, r.collectives_time, r.verified ? "yes" : "NO");
  return s;
}

void write_bench_comm_json(const BenchCommReport& r, const std::string& path) {
  using json = nlohmann::ordered_json;
  json j;
  j["schema"] = "desync.bench.comm";
  j["schema_version"] = bench_comm_schema_version;
  j["mpi_library"] = r.mpi_library;
  j["ranks"] = r.ranks;
  j["pair"] = {0, 1};
  j["options"] = run::options_json<json>(r.options);
  std::vector<long> bytes;
  for (long n : r.sizes) bytes.push_back(8 * n);
  j["sizes"] = {{"doubles", r.sizes}, {"bytes", bytes}};
  json bw = json::object();
  for (const auto& s : r.bandwidth) {
    json pts = json::array();
    for (const auto& p : s.points)
      pts.push_back({{"doubles", p.doubles},
                     {"bytes", 8 * p.doubles},
                     {"messages", p.messages},
                     {"samples", p.samples},
                     {"time_per_message", p.time_per_message},
                     {"bandwidth_gbs", p.bandwidth},
                     {"bandwidth_min_gbs", p.bandwidth_min},
                     {"bandwidth_max_gbs", p.bandwidth_max},
                     {"verified", p.verified}});
    bw[s.name] = {{"description", s.description}, {"results", pts}};
  }
  j["bandwidth"] = bw;
  json ov = json::object();
  for (const auto& s : r.overlap) {
    json pts = json::array();
    for (const auto& p : s.points)
      pts.push_back({{"doubles", p.doubles},
                     {"bytes", 8 * p.doubles},
                     {"iterations", p.iterations},
                     {"compute_units", p.compute_units},
                     {"t_comm", p.t_comm},
                     {"t_comp", p.t_comp},
                     {"t_both", p.t_both},
                     {"overlap_percent", p.overlap}});
    ov[s.name] = {{"description", s.description}, {"computing_rank", s.computing_rank}, {"results", pts}};
  }
  j["overlap"] = ov;
  json co = {{"ranks", r.ranks}};
  for (const auto& c : r.collectives)
    co[c.name] = {{"description", c.description}, {"calls", c.calls}, {"mean", c.mean}, {"max", c.max}};
  j["collectives"] = co;
  json sum = json::object();
  for (const auto& [a, b] : kRatios) {
    const double q = min_ratio(r, a, b);
    sum[std::string(a) + "/" + b] = std::isnan(q) ? json(nullptr) : json(q);
  }
  j["min_bandwidth_ratio_ge_64KiB"] = sum;
  j["compute_unit"] = r.compute_unit;
  j["wall_time"] = r.wall_time;
  j["phase_time"] = {{"bandwidth", r.bandwidth_time}, {"overlap", r.overlap_time}, {"collectives", r.collectives_time}};
  j["verified"] = r.verified;
  run::write_json_file(j, path);
}

int bench_comm_main(const BenchCommCommand& cmd, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const BenchCommReport report = run_bench_comm(comm, cmd);
  int code = 0;
  if (rank == 0) {
    if (!cmd.quiet) {
      std::fputs(format_bench_comm(report).c_str(), stdout);
      std::fflush(stdout);
    }
    if (!cmd.json_path.empty()) {
      try {
        write_bench_comm_json(report, cmd.json_path);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "desync: error: %s\n", e.what());
        code = exit_internal;
      }
    }
    if (!report.verified) {
      std::fprintf(stderr, "desync: error: a transfer's data was not found at the target (JSON key 'verified')\n");
      code = exit_internal;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);  // every rank exits with rank 0's code
  return code;
}

}  // namespace desync::apps
