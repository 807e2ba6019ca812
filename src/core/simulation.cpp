#include "desync/core/simulation.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
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
// The kinds of work charged (docs/simulation.md), each named where it is done.
constexpr const char* cost_kinds[] = {
    "jacobi.update", "jacobi.update_residual", "halo.element", "pde.burgers3d.update",
    "pde.advection_diffusion1d.update", "poisson3d.row", "csr.entry", "cg.cg.vector", "cg.cg-cg.vector",
    "cg.pipecg.vector", "cg.groppcg.vector", "pc.none", "pc.jacobi", "pc.bjacobi-ic0", "schwarz.solve",
    "schwarz.residual"};

struct Model {
  std::string text;
  std::map<std::string, double, std::less<>> costs;
  double speed = 1.0;
};

const Model& model() {
  static std::mutex mutex;
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
    if (j.contains("rank_speed")) {
      const auto& s = j.at("rank_speed");
      if (rank < static_cast<int>(s.size())) m.speed = s.at(static_cast<std::size_t>(rank)).get<double>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("DESYNC_SIM {}: {}", path, e.what()));
  }
  if (!(m.speed > 0)) throw InputError(fmt::format("DESYNC_SIM {}: rank {} has speed {}", path, rank, m.speed));
  // Every kind a run may charge, checked now (a rank failing later, mid-exchange, would leave its
  // neighbours waiting).
  std::string missing;
  for (const char* kind : cost_kinds)
    if (m.costs.find(kind) == m.costs.end()) missing += std::string(missing.empty() ? "" : ", ") + kind;
  if (!missing.empty())
    throw InputError(fmt::format("DESYNC_SIM {}: the cost model has no seconds per unit for {} (calibrate with "
                                 "bench/simgrid/calibrate.py)",
                                 path, missing));
  return models.emplace(rank, std::move(m)).first->second;
}

}  // namespace

void charge(const char* kind, double units) {
  const Model& m = model();
  const auto it = m.costs.find(kind);
  if (it == m.costs.end())
    throw InputError(fmt::format("DESYNC_SIM: the cost model has no entry \"{}\" (seconds per unit); calibrate it "
                                 "with bench/simgrid/calibrate.py",
                                 kind));
  const double seconds = units * it->second / m.speed;
  if (seconds > 0) smpi_execute(seconds);
}

double pause(double seconds) {
  const double t0 = wall_time();
  if (seconds > 0) smpi_execute(seconds);
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
