#include "desync/run/registry.hpp"

#include <stdexcept>

namespace desync::run {

void SolverRegistry::add(SolverInfo info) {
  if (find(info.name)) throw std::logic_error("solver '" + info.name + "' registered twice");
  solvers_.push_back(std::move(info));
}

const SolverInfo* SolverRegistry::find(std::string_view name) const {
  for (const auto& s : solvers_)
    if (s.name == name) return &s;
  return nullptr;
}

void register_all_solvers(SolverRegistry& registry) {
  registry.add(jacobi_solver());  // src/run/solvers/jacobi.cpp
  registry.add(cg_solver());      // src/run/solvers/cg.cpp
  registry.add(schwarz_solver()); // src/run/solvers/schwarz.cpp
  registry.add(pde_solver());     // src/run/solvers/pde.cpp
}

const SolverRegistry& solver_registry() {
  static const SolverRegistry registry = [] {
    SolverRegistry r;
    register_all_solvers(r);
    return r;
  }();
  return registry;
}

}  // namespace desync::run
