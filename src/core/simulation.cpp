#include "desync/core/simulation.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"

#ifdef DESYNC_SMPI
#include <smpi/smpi.h>
#endif

namespace desync::core {

#ifdef DESYNC_SMPI
namespace {

// The model, read once per rank. SMPI runs the ranks as threads of one process; desync-sim asks
// for privatised globals, and the table is keyed by rank so it stays right without.
std::mutex mutex;  ///< guards the declared kinds and the models

/// The kinds of work a run may charge (declare_cost_kinds), as the solvers and the run layer
/// register them. Every rank declares the same list.
std::vector<CostKind>& declared_kinds() {
  static std::vector<CostKind> kinds;
  return kinds;
}

bool optional_kind(std::string_view kind) {
  std::lock_guard lock(mutex);
  for (const auto& k : declared_kinds())
    if (k.optional && kind == k.name) return true;
  return false;
}

struct Model {
  std::string text;
  std::map<std::string, double, std::less<>> costs;
  double speed = 1.0;
  /// Flops per second of the cost model (smpi/host-speed, which desync-sim writes into sim.json):
  /// a charge of s seconds executes s x host_flops flops on the rank's host, at that host's speed.
  double host_flops = 1e9;
  /// Flops per second of the platform's cores: a pause of s seconds executes s x platform_flops
  /// flops, so it lasts s seconds whatever smpi/host-speed says of the calibrated seconds.
  double platform_flops = 1e9;
  /// Work charged with charge_deferred, executed with the next charge() or pause().
  mutable double pending_flops = 0;
};

const Model& model() {
  static std::map<int, Model> models;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::lock_guard lock(mutex);
  auto it = models.find(rank);
  if (it != models.end()) return it->second;
  Model m;
  const char* path = std::getenv("DESYNC_SIM");
  if (!path || !*path)
    throw InputError("this desync is built for SimGrid's SMPI: run it with desync-sim run (DESYNC_SIM, the "
                     "simulation's cost model, is not set)");
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("DESYNC_SIM: cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  m.text = ss.str();
  try {
    const auto j = nlohmann::json::parse(m.text);
    if (j.contains("costs")) {
      // desync-sim copies the calibration file in: {"costs": {kind: seconds}, "calibration": ...}.
      const auto& c = j.at("costs").contains("costs") ? j.at("costs").at("costs") : j.at("costs");
      for (const auto& [k, v] : c.items())
        if (v.is_number()) m.costs[k] = v.get<double>();
    }
    if (j.contains("platform") && j.at("platform").contains("speed_flops"))
      m.platform_flops = j.at("platform").at("speed_flops").get<double>();
    // smpi/host-speed, as smpi_execute would convert seconds; without it, the platform's speed.
    m.host_flops = j.contains("host_speed_flops") ? j.at("host_speed_flops").get<double>() : m.platform_flops;
    if (j.contains("rank_speed")) {
      const auto& s = j.at("rank_speed");
      if (rank < static_cast<int>(s.size())) m.speed = s.at(static_cast<std::size_t>(rank)).get<double>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("DESYNC_SIM {}: {}", path, e.what()));
  }
  if (!(m.speed > 0)) throw InputError(fmt::format("DESYNC_SIM {}: rank {} has speed {}", path, rank, m.speed));
  if (!(m.host_flops > 0))
    throw InputError(fmt::format("DESYNC_SIM {}: host_speed_flops {} must be > 0", path, m.host_flops));
  if (!(m.platform_flops > 0))
    throw InputError(fmt::format("DESYNC_SIM {}: platform speed_flops {} must be > 0", path, m.platform_flops));
  // Every kind a run may charge, checked now (a rank failing later, mid-exchange, would leave its
  // neighbours waiting).
  std::string missing;
  for (const auto& kind : declared_kinds())
    if (!kind.optional && m.costs.find(kind.name) == m.costs.end())
      missing += (missing.empty() ? "" : ", ") + kind.name;
  if (!missing.empty())
    throw InputError(fmt::format("DESYNC_SIM {}: the cost model has no seconds per unit for {} (calibrate with "
                                 "bench/simgrid/calibrate.py)",
                                 path, missing));
  return models.emplace(rank, std::move(m)).first->second;
}

}  // namespace

void declare_cost_kinds(std::vector<CostKind> kinds) {
  std::lock_guard lock(mutex);
  declared_kinds() = std::move(kinds);
}

namespace {
/// Advances this rank's simulated clock by executing `flops` on its host. smpi_execute(seconds)
/// would drop any duration below smpi/cpu-threshold (1 us by default: a 32x32 face's pack, most
/// of a small subdomain's work); flops are executed whatever their number.
void execute_flops(double flops) {
  if (flops > 0) smpi_execute_flops(flops);
}
}  // namespace

namespace {
/// Calibrated seconds of `units` of this rank's work of `kind`, as flops at the cost model's flops
/// per second; 0 for an optional kind the model lacks.
double work_flops(const Model& m, const char* kind, double units) {
  const auto it = m.costs.find(kind);
  if (it == m.costs.end() && optional_kind(kind)) return 0.0;
  if (it == m.costs.end())
    throw InputError(fmt::format("DESYNC_SIM: the cost model has no entry \"{}\" (seconds per unit); calibrate it "
                                 "with bench/simgrid/calibrate.py",
                                 kind));
  return units * it->second / m.speed * m.host_flops;
}
}  // namespace

void charge(const char* kind, double units) {
  const Model& m = model();
  const double flops = work_flops(m, kind, units) + m.pending_flops;
  m.pending_flops = 0;
  execute_flops(flops);
}

void charge_deferred(const char* kind, double units) {
  const Model& m = model();
  m.pending_flops += work_flops(m, kind, units);
}

double pause(double seconds) {
  // Work still pending first: it is not part of the pause.
  const Model& m = model();
  if (m.pending_flops > 0) {
    execute_flops(m.pending_flops);
    m.pending_flops = 0;
  }
  // Seconds of the modelled machine's time, not calibrated work: at the platform core's speed.
  const double t0 = wall_time();
  execute_flops(seconds * model().platform_flops);
  return wall_time() - t0;
}

std::string simulation_description() { return model().text; }

#else

double pause(double seconds) {
  const double start = wall_time();
  double now = start;
  while (now - start < seconds) now = wall_time();
  return now - start;
}

std::string simulation_description() { return {}; }

#endif

}  // namespace desync::core
