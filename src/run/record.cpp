#include "desync/run/record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "desync/run/run_end.hpp"
#include "desync/core/gather.hpp"
#include "desync/core/simulation.hpp"
#include "invocation.hpp"
#include "report_common.hpp"

namespace desync::run {

// ---- one rank's fields ------------------------------------------------------------------------

RankFields& RankFields::number(std::string name, double value) {
  fields.push_back({std::move(name), RankField::Kind::number, {value}});
  return *this;
}
RankFields& RankFields::integer(std::string name, std::int64_t value) {
  fields.push_back({std::move(name), RankField::Kind::integer, {static_cast<double>(value)}});
  return *this;
}
RankFields& RankFields::flag(std::string name, bool value) {
  fields.push_back({std::move(name), RankField::Kind::flag, {value ? 1.0 : 0.0}});
  return *this;
}
RankFields& RankFields::integers(std::string name, const std::vector<std::int64_t>& values) {
  RankField f{std::move(name), RankField::Kind::integers, {}};
  for (const auto v : values) f.values.push_back(static_cast<double>(v));
  fields.push_back(std::move(f));
  return *this;
}
RankFields& RankFields::time_part(std::string name, double seconds, bool counted) {
  time.push_back({std::move(name), seconds, counted});
  return *this;
}

const RankField* RankFields::find(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

double RankFields::value(const std::string& name) const {
  const RankField* f = find(name);
  if (!f || f->values.empty()) throw std::out_of_range("no per-rank field '" + name + "'");
  return f->values[0];
}

double RankFields::other_time() const {
  double t = total_time;
  for (const auto& p : time)
    if (p.counted) t -= p.seconds;
  return t;
}

// ---- gathering by name ------------------------------------------------------------------------

namespace {

// The names, kinds and lengths of a rank's fields and time parts, as one string.
std::string signature(const RankFields& f) {
  std::string s;
  for (const auto& x : f.fields) s += fmt::format("{}:{}:{};", x.name, static_cast<int>(x.kind), x.values.size());
  for (const auto& p : f.time) s += fmt::format("time {}:{};", p.name, p.counted ? 1 : 0);
  return s;
}

std::vector<double> values_of(const RankFields& f) {
  std::vector<double> v;
  for (const auto& x : f.fields) v.insert(v.end(), x.values.begin(), x.values.end());
  for (const auto& p : f.time) v.push_back(p.seconds);
  v.push_back(f.total_time);
  return v;
}

}  // namespace

std::vector<RankFields> gather_rank_fields(MPI_Comm comm, const RankFields& mine) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Every rank compares its names with rank 0's, then the values travel in one MPI_Gather.
  std::string names = signature(mine);
  std::string root_names = names;
  int length = static_cast<int>(root_names.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  root_names.resize(static_cast<std::size_t>(length));
  MPI_Bcast(root_names.data(), length, MPI_CHAR, 0, comm);
  int mismatch = names == root_names ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &mismatch, 1, MPI_INT, MPI_MAX, comm);
  if (mismatch)
    throw std::logic_error("gather_rank_fields: the ranks' per-rank statistics differ in their names (rank 0: " +
                           root_names + ")");
  const std::vector<double> packed = values_of(mine);
  return core::gather_packed(comm, packed, [&mine](const double* v) {
    RankFields r = mine;  // the same names on every rank: rank 0's, with each rank's values
    for (auto& x : r.fields)
      for (auto& value : x.values) value = *v++;
    for (auto& p : r.time) p.seconds = *v++;
    r.total_time = *v;
    return r;
  });
}

IterationSummary summarise_iterations(const std::vector<RankFields>& per_rank) {
  IterationSummary s;
  if (per_rank.empty()) return s;
  s.min = s.max = per_rank[0].value("iterations");
  double sum = 0;
  for (const auto& r : per_rank) {
    const double it = r.value("iterations");
    s.min = std::min(s.min, it);
    s.max = std::max(s.max, it);
    sum += it;
  }
  s.mean = sum / static_cast<double>(per_rank.size());
  return s;
}

std::vector<TimePart> mean_time_split(const std::vector<RankFields>& per_rank) {
  std::vector<TimePart> m;
  if (per_rank.empty()) return m;
  m = per_rank[0].time;
  m.push_back({"other", 0, true});
  m.push_back({"total", 0, false});
  for (auto& p : m) p.seconds = 0;
  for (const auto& r : per_rank) {
    for (std::size_t i = 0; i < r.time.size(); ++i) m[i].seconds += r.time[i].seconds;
    m[m.size() - 2].seconds += r.other_time();
    m.back().seconds += r.total_time;
  }
  for (auto& p : m) p.seconds /= static_cast<double>(per_rank.size());
  return m;
}

// ---- the human summary ------------------------------------------------------------------------

namespace {

std::string line(const std::string& label, const std::string& text) { return fmt::format("  {:<17}{}\n", label, text); }

std::string spaced(std::string name) {
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

std::string integer_text(double x) { return fmt::format("{:.0f}", x); }

}  // namespace

std::string format_summary(const RunRecord& r) {
  const auto it = summarise_iterations(r.per_rank);
  const auto split = mean_time_split(r.per_rank);
  std::string s = fmt::format("desync {} — {}\n", r.solver, r.headline);
  std::string ranks = std::to_string(r.ranks);
  if (r.process_grid) {
    const auto& d = *r.process_grid;
    ranks += fmt::format(" (process grid {}x{}x{})", d[0], d[1], d[2]);
  }
  s += line("ranks", ranks + ", MPI: " + r.mpi_library);
  for (const auto& l : r.setup_lines) s += line(l.label, l.text);
  std::string its = it.min == it.max ? integer_text(it.max)
                                     : fmt::format("min {}  mean {:.1f}  max {}", integer_text(it.min), it.mean,
                                                   integer_text(it.max));
  s += line("iterations", its + r.iterations_note);
  s += line("wall time", fmt::format("{:.4f} s   iteration rate {:.1f} it/s", r.wall_time, r.iteration_rate));
  if (!split.empty()) {
    // Counted parts with their share of the mean total; a part that is a share of another, plain.
    const double total = split.back().seconds > 0 ? split.back().seconds : 1.0;
    std::vector<std::string> items;
    for (std::size_t i = 0; i + 1 < split.size(); ++i) {
      const auto& p = split[i];
      items.push_back(p.counted && p.name != "other"
                          ? fmt::format("{} {:.4f} s ({:.1f}%)", spaced(p.name), p.seconds, 100 * p.seconds / total)
                          : fmt::format("{} {:.4f} s", spaced(p.name), p.seconds));
    }
    items.back() += fmt::format(", total {:.4f} s (means over ranks)", split.back().seconds);
    for (std::size_t i = 0; i < items.size(); i += 3) {
      std::string text;
      for (std::size_t k = i; k < std::min(items.size(), i + 3); ++k) text += (k == i ? "" : "  ") + items[k];
      s += line(i == 0 ? "time split" : "", text);
    }
  }
  for (const auto& l : r.performance_lines) s += line(l.label, l.text);
  s += line("residual", fmt::format("true {:.6e} (tolerance {:.1e}), last tested {:.6e}{}", r.true_residual,
                                    r.tolerance, r.tested_residual, r.residual_note));
  s += line("result", fmt::format("{} (stopped: {})", r.converged ? "CONVERGED" : "NOT CONVERGED",
                                  core::to_string(r.stop_reason)));
  if (!r.message.empty()) s += line("note", r.message);
  if (r.per_rank.size() > 1 && r.per_rank.size() <= 16) {
    // rank, iterations, then each time part in seconds, in a column as wide as its name.
    std::string head = "rank  iterations";
    for (const auto& p : r.per_rank[0].time)
      head += fmt::format("  {:>{}}", spaced(p.name), std::max<std::size_t>(8, p.name.size()));
    s += line("per rank", head);
    for (const auto& p : r.per_rank) {
      std::string row = fmt::format("{:4.0f}  {:10.0f}", p.value("rank"), p.value("iterations"));
      for (const auto& t : p.time) row += fmt::format("  {:{}.4f}", t.seconds, std::max<std::size_t>(8, t.name.size()));
      s += line("", row);
    }
  }
  return s;
}

// ---- the JSON document ------------------------------------------------------------------------

namespace {

using nlohmann::json;

json field_json(const RankField& f) {
  switch (f.kind) {
    case RankField::Kind::number: return f.values[0];
    case RankField::Kind::integer: return static_cast<std::int64_t>(f.values[0]);
    case RankField::Kind::flag: return f.values[0] != 0.0;
    case RankField::Kind::integers: {
      json a = json::array();
      for (const double v : f.values) a.push_back(static_cast<std::int64_t>(v));
      return a;
    }
  }
  return nullptr;
}

json time_json(const std::vector<TimePart>& parts) {
  json t = json::object();
  for (const auto& p : parts) t[p.name] = p.seconds;
  return t;
}

json index3(const std::optional<decomposition::Index3>& v) {
  if (!v) return nullptr;
  return {(*v)[0], (*v)[1], (*v)[2]};
}

}  // namespace

namespace {
json record_document(const RunRecord& r) {
  const auto it = summarise_iterations(r.per_rank);
  json j;
  j["schema"] = "desync.run";
  j["schema_version"] = json_schema_version;
  j["solver"] = r.solver;
  j["method"] = r.method;
  j["ranks"] = r.ranks;
  j["mpi_library"] = r.mpi_library;
  j["process_grid"] = index3(r.process_grid);
  j["global_size"] = index3(r.global_size);
  j["unknowns"] = r.unknowns;
  j["options"] = options_json<json>(r.options);
  j["tolerance"] = r.tolerance;
  j["converged"] = r.converged;
  j["stop_reason"] = core::to_string(r.stop_reason);
  j["message"] = r.message;
  j["true_residual"] = r.true_residual;
  j["tested_residual"] = r.tested_residual;
  j["outstanding_requests"] = r.outstanding_requests;
  j["iterations"] = {{"min", it.min}, {"mean", it.mean}, {"max", it.max}};
  j["wall_time"] = r.wall_time;
  j["iteration_rate"] = r.iteration_rate;
  const auto split = mean_time_split(r.per_rank);
  j["time_split"] = time_json(split);
  // The parts that are shares of another part (not stacked with the others by plotting tools).
  json shares = json::array();
  for (const auto& p : split)
    if (!p.counted && p.name != "total") shares.push_back(p.name);
  j["time_split_shares"] = shares;
  j["residual_history"] = detail::history_json(r.history);
  json ranks = json::array();
  for (std::size_t k = 0; k < r.per_rank.size(); ++k) {
    const auto& p = r.per_rank[k];
    json e = json::object();
    for (const auto& f : p.fields) e[f.name] = field_json(f);
    auto parts = p.time;
    parts.push_back({"other", p.other_time(), true});
    parts.push_back({"total", p.total_time, false});
    e["time"] = time_json(parts);
    if (k < r.rank_histories.size()) e["residual_history"] = detail::history_json(r.rank_histories[k]);
    ranks.push_back(std::move(e));
  }
  j["per_rank"] = std::move(ranks);
  j["details"] = json::parse(r.details);
  // On a simulated cluster: the platform, the calibrated cost model and the ranks' speeds the run
  // was simulated with (desync-sim's description; every time in this record is simulated).
  if (core::simulated_build) j["simulation"] = json::parse(core::simulation_description());
  return j;
}
}  // namespace

void write_json(const RunRecord& r, const std::string& path) { write_json_file(record_document(r), path); }

std::string record_json_text(const RunRecord& r) { return record_document(r).dump(2); }

// ---- the end of a run -------------------------------------------------------------------------

namespace {

// A stop on the convergence test that the run's own true residual contradicts is not
// "tolerance_reached": the summary and the record say what happened and what to do.
RunRecord settle_verdict(const RunRecord& r) {
  RunRecord s = r;
  if (r.stop_reason != core::StopReason::converged || r.converged) return s;
  s.stop_reason = core::StopReason::unconfirmed;
  const bool krylov = r.solver == "cg" || r.solver == "krylov";
  const std::string remedy =
      krylov ? "the recursive residual drifted from the true one: ask for a smaller --rtol"
             : "the test read interface values that other ranks had changed since (asynchronous or racy "
               "exchanges, --halo-period > 1); --polish continues with synchronous iterations until the true "
               "residual meets the tolerance";
  std::string note = fmt::format(
      "not converged: the convergence test met the tolerance (last tested {:.3e}) but the true residual of "
      "the final iterate is {:.3e}, above the tolerance {:.1e}; {}",
      r.tested_residual, r.true_residual, r.tolerance, remedy);
  s.message = r.message.empty() ? note : note + ". " + r.message;
  return s;
}

}  // namespace

int finish_run(MPI_Comm comm, const RunRecord& record, bool quiet, const std::string& json_path, std::string io_error) {
  const RunRecord r = settle_verdict(record);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0 && !quiet) {
    std::fputs(format_summary(r).c_str(), stdout);
    std::fflush(stdout);
  }
  write_on_rank0(rank, json_path, io_error, [&] { write_json(r, json_path); });
  // In-process (run::invoke): the record goes back to the caller as well.
  if (detail::Invocation* inv = detail::current_invocation(); inv && rank == 0) inv->record_json = record_json_text(r);
  return exit_code(comm, {io_error, r.outstanding_requests, core::is_numerical_failure(r.stop_reason), r.message,
                          r.converged});
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string v(buf, static_cast<std::size_t>(len));
  for (char& c : v)
    if (c == '\t') c = ' ';
  const auto nl = v.find_first_of("\n,");
  return nl == std::string::npos ? v : v.substr(0, nl);
}

}  // namespace desync::run
