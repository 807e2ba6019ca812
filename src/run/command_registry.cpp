#include "desync/run/command_registry.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace desync::run {

void register_all_solvers(SolverRegistry& registry) {
  registry.add(jacobi_solver());  // src/run/commands/jacobi_command.cpp
  registry.add(krylov_solver());  // src/run/commands/krylov_command.cpp
  registry.add(cg_solver());      // src/run/commands/krylov_command.cpp: the krylov command under its first name
  registry.add(schwarz_solver()); // src/run/commands/schwarz_command.cpp
  registry.add(pde_solver());     // src/run/commands/pde_command.cpp
}

const SolverRegistry& solver_registry() {
  static const SolverRegistry registry = core::built(&register_all_solvers);  // a static here, not in core: core/registry.hpp
  return registry;
}

std::vector<core::CostKind> shared_cost_kinds() {
  return {
      {"halo.element"},    // packing or unpacking one ghost value (communication/)
      {"poisson3d.row"},   // a row of the matrix-free Poisson operator (problems/poisson3d.cpp)
      {"csr.entry"},       // an entry of an assembled operator's product (linalg/csr_operator.cpp)
      // Optional: added on 2026-11-26, after cost models that runs still use were recorded
      // (docs/data). desync's own work per message a channel sends or takes in, beyond the link's
      // latency; the host's time to open a plan exchange (bench/simgrid/calibrate.py).
      {"halo.message", true},
      {"halo.open", true},
  };
}

std::vector<core::CostKind> all_cost_kinds(const SolverRegistry& registry) {
  // A kind its owner registered optional (it came after cost models that runs still use were
  // recorded, docs/data) is charged nothing by such a model.
  std::vector<core::CostKind> kinds = shared_cost_kinds();
  std::set<std::string, std::less<>> seen;
  for (const auto& k : kinds) seen.insert(k.name);
  for (const auto& s : registry.solvers())
    for (const auto& k : s.cost_kinds)
      if (seen.insert(k.name).second) kinds.push_back(k);  // each once (krylov and cg share theirs)
  return kinds;
}

namespace {
std::vector<std::string> names(const std::vector<core::CostKind>& kinds) {
  std::vector<std::string> out;
  for (const auto& k : kinds) out.push_back(k.name);
  return out;
}
}  // namespace

std::string registry_json(const SolverRegistry& registry) {
  nlohmann::ordered_json j;
  j["solvers"] = nlohmann::ordered_json::array();
  for (const auto& s : registry.solvers()) {
    nlohmann::ordered_json methods = nlohmann::ordered_json::array();
    for (const auto& m : s.methods)
      methods.push_back({{"name", m.name}, {"description", m.description}, {"cost_kinds", names(m.cost_kinds)}});
    j["solvers"].push_back({{"name", s.name},
                            {"description", s.description},
                            {"method_option", s.method_option},
                            {"methods", methods},
                            {"cost_kinds", names(s.cost_kinds)}});
  }
  j["shared_cost_kinds"] = nlohmann::ordered_json::array();
  for (const auto& k : shared_cost_kinds())
    j["shared_cost_kinds"].push_back({{"name", k.name}, {"optional", k.optional}});
  return j.dump(2);
}

}  // namespace desync::run
