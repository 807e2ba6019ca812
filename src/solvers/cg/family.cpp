// The CG family's names, the dispatch from a method to its file, and the per-rank statistics. The
// methods: cg.cpp (cg), chronopoulos_gear.cpp (cg-cg), pipecg.cpp, groppcg.cpp; what they share: cg_base.hpp.
#include "desync/solvers/cg/cg.hpp"

#include "cg_base.hpp"
#include "desync/core/error.hpp"

namespace desync::solvers {

const char* to_string(CgMethod m) {
  for (const auto& info : cg_methods)
    if (info.method == m) return info.name;
  return "?";
}

CgMethod parse_cg_method(const std::string& name) {
  std::string names;
  for (std::size_t i = 0; i < cg_methods.size(); ++i) {
    if (name == cg_methods[i].name) return cg_methods[i].method;
    names += (i == 0 ? "" : i + 1 == cg_methods.size() ? " or " : ", ") + std::string(cg_methods[i].name);
  }
  throw InputError("--method '" + name + "': unknown method (expected " + names + ")");
}

CgResult solve_cg(linalg::Operator& A, std::span<const double> b, std::span<double> x, const CgOptions& options) {
  CgResult res;
  {
    detail::CgBase s(A, b, x, options, res);
    const double t0 = detail::now();
    if (s.start()) {
      switch (options.method) {  // one file per method
        case CgMethod::cg: detail::run_pcg(s); break;
        case CgMethod::cg_cg: detail::run_cg_cg(s); break;
        case CgMethod::pipecg: detail::run_pipecg(s); break;
        case CgMethod::groppcg: detail::run_groppcg(s); break;
      }
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
