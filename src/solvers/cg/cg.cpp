// The CG family's names, the dispatch from a method to its file, and the per-rank statistics. The
// methods: pcg.cpp (cg), cg_cg.cpp (cg-cg), pipecg.cpp, groppcg.cpp; what they share: cg_base.hpp.
#include "desync/solvers/cg/cg.hpp"

#include "cg_base.hpp"
#include "desync/core/error.hpp"
#include "desync/core/gather.hpp"

namespace desync::solvers {

const char* to_string(CgMethod m) {
  switch (m) {
    case CgMethod::cg: return "cg";
    case CgMethod::cg_cg: return "cg-cg";
    case CgMethod::pipecg: return "pipecg";
    case CgMethod::groppcg: return "groppcg";
  }
  return "?";
}

CgMethod parse_cg_method(const std::string& name) {
  if (name == "cg") return CgMethod::cg;
  if (name == "cg-cg") return CgMethod::cg_cg;
  if (name == "pipecg") return CgMethod::pipecg;
  if (name == "groppcg") return CgMethod::groppcg;
  throw InputError("--method '" + name + "': unknown method (expected cg, cg-cg, pipecg or groppcg)");
}

const char* to_string(CgStop s) {
  switch (s) {
    case CgStop::converged: return "tolerance_reached";
    case CgStop::max_iters: return "max_iters";
    case CgStop::time_limit: return "time_limit";
    case CgStop::non_finite: return "non_finite";
    case CgStop::diverged: return "diverged";
    case CgStop::breakdown: return "breakdown";
    case CgStop::pc_failed: return "pc_failed";
    case CgStop::stagnated: return "stagnated";
  }
  return "?";
}

bool is_numerical_failure(CgStop s) {
  return s == CgStop::non_finite || s == CgStop::diverged || s == CgStop::breakdown || s == CgStop::pc_failed;
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

// ---- gathering per-rank statistics -----------------------------------------------------------

namespace {
constexpr int cg_stat_width = 20;

void pack(const CgRankStats& s, double* v) {
  int i = 0;
  v[i++] = s.rank;
  v[i++] = static_cast<double>(s.local_rows);
  v[i++] = static_cast<double>(s.iterations);
  v[i++] = static_cast<double>(s.reductions);
  v[i++] = static_cast<double>(s.spmvs);
  v[i++] = static_cast<double>(s.pc_applications);
  v[i++] = static_cast<double>(s.replacements);
  v[i++] = s.time.spmv;
  v[i++] = s.time.halo_wait;
  v[i++] = s.time.pc;
  v[i++] = s.time.vector;
  v[i++] = s.time.reduction;
  v[i++] = s.time.reduction_wait;
  v[i++] = s.time.setup;
  v[i++] = s.time.total;
  v[i++] = static_cast<double>(s.spmv.applications);
  v[i++] = static_cast<double>(s.spmv.messages_sent);
  v[i++] = static_cast<double>(s.spmv.messages_received);
  v[i++] = s.spmv.bytes_sent;
  v[i++] = s.spmv.interior_seconds + s.spmv.boundary_seconds;
}

CgRankStats unpack(const double* v) {
  CgRankStats s;
  int i = 0;
  s.rank = static_cast<int>(v[i++]);
  s.local_rows = static_cast<std::int64_t>(v[i++]);
  s.iterations = static_cast<std::int64_t>(v[i++]);
  s.reductions = static_cast<long>(v[i++]);
  s.spmvs = static_cast<long>(v[i++]);
  s.pc_applications = static_cast<long>(v[i++]);
  s.replacements = static_cast<long>(v[i++]);
  s.time.spmv = v[i++];
  s.time.halo_wait = v[i++];
  s.time.pc = v[i++];
  s.time.vector = v[i++];
  s.time.reduction = v[i++];
  s.time.reduction_wait = v[i++];
  s.time.setup = v[i++];
  s.time.total = v[i++];
  s.spmv.applications = static_cast<long>(v[i++]);
  s.spmv.messages_sent = static_cast<long>(v[i++]);
  s.spmv.messages_received = static_cast<long>(v[i++]);
  s.spmv.bytes_sent = v[i++];
  s.spmv.interior_seconds = v[i++];
  return s;
}
}  // namespace

std::vector<CgRankStats> gather_cg_stats(MPI_Comm comm, const CgRankStats& mine) {
  double buf[cg_stat_width];
  pack(mine, buf);
  return core::gather_packed(comm, buf, unpack);
}

}  // namespace desync::solvers
