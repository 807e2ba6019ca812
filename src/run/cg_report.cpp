#include "desync/run/cg_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "desync/run/report.hpp"
#include "report_common.hpp"

namespace desync::run {

namespace {

struct CgMeans {
  solvers::CgTimes time;
  double sent_per_it = 0, recv_per_it = 0;
  long replacements = 0;
  double it_min = 0, it_mean = 0, it_max = 0;
};

CgMeans means(const std::vector<solvers::CgRankStats>& ranks) {
  CgMeans m;
  if (ranks.empty()) return m;
  m.it_min = m.it_max = static_cast<double>(ranks[0].iterations);
  for (const auto& r : ranks) {
    auto& t = m.time;
    t.spmv += r.time.spmv;
    t.halo_wait += r.time.halo_wait;
    t.pc += r.time.pc;
    t.vector += r.time.vector;
    t.reduction += r.time.reduction;
    t.reduction_wait += r.time.reduction_wait;
    t.setup += r.time.setup;
    t.total += r.time.total;
    const double its = std::max<double>(1.0, static_cast<double>(r.iterations));
    m.sent_per_it += static_cast<double>(r.spmv.messages_sent) / its;
    m.recv_per_it += static_cast<double>(r.spmv.messages_received) / its;
    m.replacements = std::max(m.replacements, r.replacements);
    const auto it = static_cast<double>(r.iterations);
    m.it_min = std::min(m.it_min, it);
    m.it_max = std::max(m.it_max, it);
    m.it_mean += it;
  }
  const double n = static_cast<double>(ranks.size());
  for (double* x : {&m.time.spmv, &m.time.halo_wait, &m.time.pc, &m.time.vector, &m.time.reduction,
                    &m.time.reduction_wait, &m.time.setup, &m.time.total, &m.sent_per_it, &m.recv_per_it, &m.it_mean})
    *x /= n;
  return m;
}

nlohmann::json time_json(const solvers::CgTimes& t) {
  return {{"spmv", t.spmv},
          {"halo_wait", t.halo_wait},
          {"pc", t.pc},
          {"vector", t.vector},
          {"reduction", t.reduction},
          {"reduction_wait", t.reduction_wait},
          {"setup", t.setup},
          {"other", t.other()},
          {"total", t.total}};
}

}  // namespace

std::string format_cg_summary(const CgReport& r) {
  const CgMeans m = means(r.per_rank);
  std::string s;
  s += fmt::format("desync cg — method {}, pc {}, reduction {}\n", r.method, r.pc, r.reduction);
  if (r.grid)
    s += fmt::format("  ranks            {} (process grid {}x{}x{}), MPI: {}\n", r.ranks, r.dims[0], r.dims[1],
                     r.dims[2], r.mpi_library);
  else
    s += fmt::format("  ranks            {}, MPI: {}\n", r.ranks, r.mpi_library);
  std::string transport;  // engine p2p: the channels' transport (an entry of the options)
  for (const auto& [key, value] : r.options)
    if (key == "transport" && r.engine == "p2p") transport = " over " + value;
  s += fmt::format("  problem          {}, operator {}, exchange {}{} (progress {})\n", r.problem, r.operator_name,
                   r.engine, transport, r.progress);
  if (r.grid) {
    const auto& g = r.global;
    s += fmt::format("  global size      {}x{}x{} {}, {} unknowns, local {}\n", g[0], g[1], g[2],
                     r.problem == "elasticity3d" ? "nodes" : "points", r.unknowns, detail::local_sizes(g, r.dims));
  } else {
    s += fmt::format("  global size      {} unknowns\n", r.unknowns);
  }
  s += fmt::format("  iterations       {}", r.iterations);
  if (m.replacements > 0) s += fmt::format("  (residual replacements {})", m.replacements);
  s += "\n";
  const double per_it = r.iterations > 0 ? r.wall_time / static_cast<double>(r.iterations) : 0.0;
  s += fmt::format("  wall time        {:.4f} s   time per iteration {:.3f} ms\n", r.wall_time, 1e3 * per_it);
  const double tot = m.time.total > 0 ? m.time.total : 1.0;
  s += fmt::format("  time split       spmv {:.4f} s ({:.1f}%, halo wait {:.4f} s)  pc {:.4f} s ({:.1f}%)  vector "
                   "{:.4f} s ({:.1f}%)\n",
                   m.time.spmv, 100 * m.time.spmv / tot, m.time.halo_wait, m.time.pc, 100 * m.time.pc / tot,
                   m.time.vector, 100 * m.time.vector / tot);
  s += fmt::format("                   reduction {:.4f} s ({:.1f}%, waiting {:.4f} s)  setup {:.4f} s  other {:.4f} s "
                   "(means over ranks)\n",
                   m.time.reduction, 100 * m.time.reduction / tot, m.time.reduction_wait, m.time.setup,
                   m.time.other());
  s += fmt::format("  residual         true {:.6e} (rtol {:.1e}), recursive {:.6e}  (relative to ||b|| = {:.6e})\n",
                   r.true_residual, r.rtol, r.recursive_residual, r.b_norm);
  s += fmt::format("  result           {} (stopped: {})\n", r.converged ? "CONVERGED" : "NOT CONVERGED", r.stop_reason);
  if (!r.message.empty()) s += fmt::format("  note             {}\n", r.message);
  if (r.per_rank.size() > 1 && r.per_rank.size() <= 16) {
    s += "  per rank         rank  rows        spmv      halo wait pc        vector    reduction red. wait\n";
    for (const auto& p : r.per_rank)
      s += fmt::format("                   {:4d}  {:10d}  {:8.4f}  {:8.4f}  {:8.4f}  {:8.4f}  {:8.4f}  {:8.4f}\n", p.rank,
                       p.local_rows, p.time.spmv, p.time.halo_wait, p.time.pc, p.time.vector, p.time.reduction,
                       p.time.reduction_wait);
  }
  return s;
}

void write_cg_json(const CgReport& r, const std::string& path) {
  using nlohmann::json;
  const CgMeans m = means(r.per_rank);
  json j;
  j["schema"] = "desync.run";
  j["schema_version"] = json_schema_version;
  j["solver"] = "cg";
  j["mode"] = "sync";
  j["method"] = r.method;
  j["pc"] = r.pc;
  j["reduction"] = r.reduction;
  j["transport"] = r.engine;
  j["progress"] = r.progress;
  j["mpi_library"] = r.mpi_library;
  j["ranks"] = r.ranks;
  j["problem"] = r.problem;
  j["operator"] = r.operator_name;
  j["unknowns"] = r.unknowns;
  if (r.grid) {
    j["process_grid"] = {r.dims[0], r.dims[1], r.dims[2]};
    j["global_size"] = {r.global[0], r.global[1], r.global[2]};
  } else {
    j["process_grid"] = nullptr;
    j["global_size"] = nullptr;
  }
  j["options"] = detail::options_json<json>(r.options);
  j["tolerance"] = r.rtol;
  j["converged"] = r.converged;
  j["stop_reason"] = r.stop_reason;
  j["message"] = r.message;
  j["true_residual"] = r.true_residual;
  j["tested_residual"] = r.recursive_residual;
  j["b_norm"] = r.b_norm;
  j["iterations"] = {{"min", m.it_min}, {"mean", m.it_mean}, {"max", m.it_max}};
  j["replacements"] = m.replacements;
  j["wall_time"] = r.wall_time;
  j["time_per_iteration"] = r.iterations > 0 ? r.wall_time / static_cast<double>(r.iterations) : 0.0;
  j["iteration_rate"] = r.wall_time > 0 ? static_cast<double>(r.iterations) / r.wall_time : 0.0;
  j["time_split"] = time_json(m.time);
  j["messages_per_iteration"] = {{"sent", m.sent_per_it}, {"received", m.recv_per_it}};
  j["outstanding_requests"] = r.outstanding_requests;
  j["residual_history"] = detail::history_json(r.history);
  json ranks = json::array();
  for (const auto& p : r.per_rank)
    ranks.push_back({{"rank", p.rank},
                     {"local_rows", p.local_rows},
                     {"iterations", p.iterations},
                     {"reductions", p.reductions},
                     {"spmvs", p.spmvs},
                     {"pc_applications", p.pc_applications},
                     {"replacements", p.replacements},
                     {"time", time_json(p.time)},
                     {"messages_sent", p.spmv.messages_sent},
                     {"messages_received", p.spmv.messages_received},
                     {"bytes_sent", p.spmv.bytes_sent}});
  j["per_rank"] = ranks;
  detail::write_json_file(j, path);
}

}  // namespace desync::run
