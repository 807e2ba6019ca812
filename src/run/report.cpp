#include "desync/run/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "report_common.hpp"

namespace desync::run {

IterationSummary summarise_iterations(const std::vector<RankStats>& per_rank) {
  IterationSummary s;
  if (per_rank.empty()) return s;
  s.min = s.max = static_cast<double>(per_rank[0].iterations);
  double sum = 0;
  for (const auto& r : per_rank) {
    const auto it = static_cast<double>(r.iterations);
    s.min = std::min(s.min, it);
    s.max = std::max(s.max, it);
    sum += it;
  }
  s.mean = sum / static_cast<double>(per_rank.size());
  return s;
}

namespace {

struct Means {
  TimeSplit time;
  double sent_per_it = 0, recv_per_it = 0, skipped_per_it = 0, delay_mean = 0;
  std::int64_t delay_max = 0, delay_min = 0, polish_iterations = 0;
  long delay_ahead = 0;
};

Means means(const std::vector<RankStats>& ranks) {
  Means m;
  if (ranks.empty()) return m;
  long delay_count = 0;
  double delay_sum = 0;
  bool any_delay = false;
  for (const auto& r : ranks) {
    m.time.compute += r.time.compute;
    m.time.halo += r.time.halo;
    m.time.reduction += r.time.reduction;
    m.time.noise += r.time.noise;
    m.time.polish += r.time.polish;
    m.time.finish += r.time.finish;
    m.time.total += r.time.total;
    const double its = std::max<double>(1.0, static_cast<double>(r.iterations));
    m.sent_per_it += static_cast<double>(r.halo.messages_sent) / its;
    m.recv_per_it += static_cast<double>(r.halo.messages_received) / its;
    m.skipped_per_it += static_cast<double>(r.halo.sends_skipped) / its;
    delay_count += r.halo.delay.count;
    delay_sum += r.halo.delay.sum;
    if (r.halo.delay.count > 0) {
      m.delay_max = any_delay ? std::max(m.delay_max, r.halo.delay.max) : r.halo.delay.max;
      m.delay_min = any_delay ? std::min(m.delay_min, r.halo.delay.min) : r.halo.delay.min;
      any_delay = true;
    }
    m.delay_ahead += r.halo.delay.ahead;
    m.polish_iterations = std::max(m.polish_iterations, r.polish_iterations);
  }
  const double n = static_cast<double>(ranks.size());
  for (double* x : {&m.time.compute, &m.time.halo, &m.time.reduction, &m.time.noise, &m.time.polish, &m.time.finish,
                    &m.time.total, &m.sent_per_it, &m.recv_per_it, &m.skipped_per_it})
    *x /= n;
  m.delay_mean = delay_count ? delay_sum / static_cast<double>(delay_count) : 0.0;
  return m;
}

// Iterations per second of the main (sync or async) phase: mean iterations over the mean time spent
// in that phase (polish and the final drain / true residual excluded).
double iteration_rate(const IterationSummary& it, const Means& m) {
  const double main_phase = m.time.total - m.time.polish - m.time.finish;
  return main_phase > 0 ? it.mean / main_phase : 0.0;
}

nlohmann::json time_json(const TimeSplit& t) {
  return {{"compute", t.compute}, {"halo", t.halo},     {"reduction", t.reduction}, {"noise", t.noise},
          {"polish", t.polish},   {"finish", t.finish}, {"other", t.other()},       {"total", t.total}};
}

}  // namespace

std::string format_summary(const RunReport& r) {
  const auto it = summarise_iterations(r.per_rank);
  const Means m = means(r.per_rank);
  const auto& d = r.dims;
  const auto& g = r.global;
  std::string s;
  std::string transport = r.transport;  // with its completion scheme, e.g. "rma (flush)"
  for (const auto& [key, value] : r.options)
    if ((r.transport == "rma" && key == "rma-sync") || (r.transport == "shmem" && key == "shmem-sync"))
      transport += " (" + value + ")";
  s += fmt::format("desync {} — mode {}, transport {}{}\n", r.solver, r.mode, transport,
                   r.mode == "sync" ? "" : ", reduction " + r.reduction);
  s += fmt::format("  ranks            {} (process grid {}x{}x{}), MPI: {}\n", r.ranks, d[0], d[1], d[2],
                   r.mpi_library);
  s += fmt::format("  global size      {}x{}x{} cells, local {}\n", g[0], g[1], g[2], detail::local_sizes(g, d));
  s += fmt::format("  iterations       min {:.0f}  mean {:.1f}  max {:.0f}", it.min, it.mean, it.max);
  if (m.polish_iterations > 0) s += fmt::format("  (+{} synchronous polish)", m.polish_iterations);
  s += "\n";
  if (!r.per_rank.empty() && r.per_rank[0].threads > 0) {
    std::int64_t lo = r.per_rank[0].thread_iterations_min, hi = r.per_rank[0].thread_iterations_max;
    for (const auto& p : r.per_rank) {
      lo = std::min(lo, p.thread_iterations_min);
      hi = std::max(hi, p.thread_iterations_max);
    }
    s += fmt::format("  threads          {} OpenMP threads per rank (slabs along z), iterations per thread min {}  max {}\n",
                     r.per_rank[0].threads, lo, hi);
  }
  const auto prefetching = std::count_if(r.per_rank.begin(), r.per_rank.end(), [](const RankStats& p) { return p.prefetch; });
  if (prefetching > 0)
    s += fmt::format("  sweep prefetch   on for {} of {} ranks (block beyond its share of the last-level cache, or --prefetch on)\n",
                     prefetching, r.per_rank.size());
  s += fmt::format("  wall time        {:.4f} s   iteration rate {:.1f} it/s (main phase)\n", r.wall_time,
                   iteration_rate(it, m));
  const double tot = m.time.total > 0 ? m.time.total : 1.0;
  s += fmt::format(
      "  time split       compute {:.4f} s ({:.1f}%)  halo {:.4f} s ({:.1f}%)  reduction {:.4f} s ({:.1f}%)\n",
      m.time.compute, 100 * m.time.compute / tot, m.time.halo, 100 * m.time.halo / tot, m.time.reduction,
      100 * m.time.reduction / tot);
  s += fmt::format("                   noise {:.4f} s  polish {:.4f} s  finish {:.4f} s  other {:.4f} s (means over ranks)\n",
                   m.time.noise, m.time.polish, m.time.finish, m.time.other());
  s += fmt::format("  messages/iter    sent {:.3f}  received {:.3f}  sends skipped {:.3f}  (per rank)\n",
                   m.sent_per_it, m.recv_per_it, m.skipped_per_it);
  if (r.mode != "sync")
    s += fmt::format("  halo delay       mean {:.2f}  min {}  max {} iterations (own iteration - sender's)\n",
                     m.delay_mean, m.delay_min, m.delay_max);
  s += fmt::format("  residual         true {:.6e} (tolerance {:.1e}), last tested {:.6e}\n", r.true_residual,
                   r.tolerance, r.tested_residual);
  s += fmt::format("  result           {} (stopped: {})\n", r.converged ? "CONVERGED" : "NOT CONVERGED", r.stop_reason);
  if (!r.message.empty()) s += fmt::format("  note             {}\n", r.message);
  if (r.per_rank.size() > 1 && r.per_rank.size() <= 16) {
    s += "  per rank         rank  coords      iterations  compute   halo      reduction noise\n";
    for (const auto& p : r.per_rank)
      s += fmt::format("                   {:4d}  ({},{},{})  {:10d}  {:8.4f}  {:8.4f}  {:8.4f}  {:8.4f}\n", p.rank,
                       p.coords[0], p.coords[1], p.coords[2], p.iterations, p.time.compute, p.time.halo,
                       p.time.reduction, p.time.noise);
  }
  return s;
}

void write_json(const RunReport& r, const std::string& path) {
  using nlohmann::json;
  const auto it = summarise_iterations(r.per_rank);
  const Means m = means(r.per_rank);
  json j;
  j["schema"] = "desync.run";
  j["schema_version"] = json_schema_version;
  j["solver"] = r.solver;
  j["mode"] = r.mode;
  j["transport"] = r.transport;
  j["reduction"] = r.reduction;
  j["mpi_library"] = r.mpi_library;
  j["ranks"] = r.ranks;
  j["threads"] = r.per_rank.empty() ? 0 : r.per_rank[0].threads;
  j["process_grid"] = {r.dims[0], r.dims[1], r.dims[2]};
  j["global_size"] = {r.global[0], r.global[1], r.global[2]};
  j["options"] = detail::options_json<json>(r.options);
  j["tolerance"] = r.tolerance;
  j["converged"] = r.converged;
  j["stop_reason"] = r.stop_reason;
  j["message"] = r.message;
  j["true_residual"] = r.true_residual;
  j["tested_residual"] = r.tested_residual;
  j["iterations"] = {{"min", it.min}, {"mean", it.mean}, {"max", it.max}};
  j["polish_iterations"] = m.polish_iterations;
  j["wall_time"] = r.wall_time;
  j["iteration_rate"] = iteration_rate(it, m);
  j["time_split"] = time_json(m.time);
  j["messages_per_iteration"] = {{"sent", m.sent_per_it}, {"received", m.recv_per_it}, {"skipped", m.skipped_per_it}};
  j["outstanding_requests"] = r.outstanding_requests;
  j["residual_history"] = detail::history_json(r.history);
  json ranks = json::array();
  std::array<long, comm::DelayStats::bins> hist{};
  for (const auto& p : r.per_rank) {
    for (int b = 0; b < comm::DelayStats::bins; ++b) hist[static_cast<std::size_t>(b)] += p.halo.delay.histogram[static_cast<std::size_t>(b)];
    ranks.push_back({{"rank", p.rank},
                     {"coords", {p.coords[0], p.coords[1], p.coords[2]}},
                     {"local_size", {p.local[0], p.local[1], p.local[2]}},
                     {"neighbours", p.neighbours},
                     {"iterations", p.iterations},
                     {"polish_iterations", p.polish_iterations},
                     {"reductions", p.reductions},
                     {"threads", p.threads},
                     {"thread_iterations", {{"min", p.thread_iterations_min}, {"max", p.thread_iterations_max}}},
                     {"prefetch", p.prefetch},
                     {"time", time_json(p.time)},
                     {"messages_sent", p.halo.messages_sent},
                     {"messages_received", p.halo.messages_received},
                     {"messages_discarded", p.halo.messages_discarded},
                     {"sends_skipped", p.halo.sends_skipped},
                     {"delay_mean", p.halo.delay.mean()},
                     {"delay_min", p.halo.delay.min},
                     {"delay_max", p.halo.delay.max},
                     {"delay_ahead", p.halo.delay.ahead}});
  }
  j["delay"] = {{"mean", m.delay_mean}, {"min", m.delay_min}, {"max", m.delay_max},
                {"ahead", m.delay_ahead}, {"histogram", hist}};
  j["per_rank"] = ranks;
  detail::write_json_file(j, path);
}

}  // namespace desync::run
