// The CG family's registry of methods, the dispatch from a method to its file, and the per-rank
// statistics. Each method registers itself in its own file (cg_base.hpp lists them); what they
// share: cg_base.hpp.
#include <stdexcept>

#include "cg_base.hpp"
#include "desync/core/error.hpp"
#include "desync/core/names.hpp"
#include "desync/solvers/cg/cg.hpp"

namespace desync::solvers {

void register_all_cg_methods(CgMethodRegistry& registry) {
  registry.add(detail::cg_method());                 // cg.cpp
  registry.add(detail::chronopoulos_gear_method());  // chronopoulos_gear.cpp
  registry.add(detail::pipecg_method());             // pipecg.cpp
  registry.add(detail::groppcg_method());            // groppcg.cpp
  registry.add(detail::gmres_method());              // gmres.cpp
}

const CgMethodRegistry& cg_method_registry() {
  static const CgMethodRegistry registry = core::built(&register_all_cg_methods);  // a static here, not in core: core/registry.hpp
  return registry;
}

const CgMethodInfo& find_cg_method(std::string_view name) {
  const auto& methods = cg_method_registry().methods();
  if (const CgMethodInfo* m = cg_method_registry().find(name)) return *m;
  throw InputError("--method '" + std::string(name) + "': unknown method (expected " + core::name_list(methods) + ")");
}

std::vector<core::CostKind> cg_cost_kinds() {
  std::vector<core::CostKind> kinds;
  for (const auto& m : cg_method_registry().methods()) kinds.push_back(m.vector_cost);
  for (const auto& k : pc_cost_kinds()) kinds.push_back(k);
  return kinds;
}

std::string general_cg_methods() {
  std::string names;
  for (const auto& m : cg_method_registry().methods())
    if (!m.positive_definite) names += (names.empty() ? "" : " or ") + m.name;
  return names;
}

CgResult solve_cg(linalg::Operator& A, std::span<const double> b, std::span<double> x, const CgOptions& options) {
  const CgMethodInfo& method = find_cg_method(options.method);
  CgResult res;
  {
    detail::CgBase s(A, b, x, method, options, res);
    const double t0 = detail::now();
    if (s.start()) {
      method.run(s);  // the method's own file
      s.finish();
    }
    res.stats.time.total = detail::now() - t0;
    s.collect();
  }
  auto& st = res.stats;
  st.iterations = res.iterations;
  st.spmv = A.stats();
  st.time.halo_wait = st.spmv.wait_seconds;
  return res;
}

}  // namespace desync::solvers
