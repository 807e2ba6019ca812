// The registry of preconditioners (preconditioner.hpp): each registers itself in its own file,
// pc_<name>.cpp; register_all_preconditioners lists them, one line each.
#include <stdexcept>
#include <string>

#include "desync/core/error.hpp"
#include "desync/core/names.hpp"
#include "desync/solvers/pc/preconditioner.hpp"

namespace desync::solvers {

void register_all_preconditioners(PcRegistry& registry) {
  registry.add(none_pc());         // pc_none.cpp
  registry.add(jacobi_pc());       // pc_jacobi.cpp
  registry.add(bjacobi_ic0_pc());  // pc_bjacobi_ic0.cpp
  registry.add(asm_pc());          // pc_schwarz.cpp
  registry.add(ras_pc());          // pc_schwarz.cpp
}

const PcRegistry& pc_registry() {
  static const PcRegistry registry = core::built(&register_all_preconditioners);  // a static here, not in core: core/registry.hpp
  return registry;
}

const PcInfo& find_pc(std::string_view name) {
  if (const PcInfo* p = pc_registry().find(name)) return *p;
  throw InputError("--pc '" + std::string(name) + "': unknown preconditioner (expected " +
                   core::name_list(pc_registry().preconditioners()) + ")");
}

std::string pc_help() { return core::named_help(pc_registry().preconditioners()); }

std::string subdomain_pcs(std::string_view separator) {
  std::string names;
  for (const auto& p : pc_registry().preconditioners())
    if (p.subdomains) names += (names.empty() ? "" : std::string(separator)) + p.name;
  return names;
}

std::vector<core::CostKind> pc_cost_kinds() {
  std::vector<core::CostKind> kinds;
  for (const auto& p : pc_registry().preconditioners()) kinds.push_back(p.cost);
  return kinds;
}

std::unique_ptr<Preconditioner> make_preconditioner(std::string_view name, const linalg::Operator& A,
                                                    const SchwarzPcSetup& schwarz, bool positive_definite) {
  return find_pc(name).make(A, schwarz, positive_definite);  // the preconditioner's own file
}

}  // namespace desync::solvers
