#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

using decomposition::Field;

namespace {
template <bool with_residual, bool prefetch>
double sweep(const Field& u, Field& u_new, int k_begin, int k_end) {
  const auto& n = u.extent();
  const std::ptrdiff_t sy = static_cast<std::ptrdiff_t>(u.stride_y());
  const std::ptrdiff_t sz = static_cast<std::ptrdiff_t>(u.stride_z());
  constexpr double one_sixth = 1.0 / 6.0;
  // Residual squares accumulate per x position across all rows and are summed once at the end:
  // a horizontal reduction per row (rows are short, 50 cells by default) costs more than the
  // extra L1 traffic.
  // Prefetch distances in planes: about 640 KiB ahead in u and 320 KiB ahead in u_new, at least 2
  // and 1 planes (measured on 200^2 to 64^2 planes, docs/benchmarks.md; the plane k + ahead_u of u
  // may be the upper halo plane, u_new's must be interior).
  const double plane_bytes = static_cast<double>(sz) * sizeof(double);
  const int ahead_u = std::max(2, static_cast<int>(std::lround(640.0 * 1024 / plane_bytes)));
  const int ahead_out = std::max(1, static_cast<int>(std::lround(320.0 * 1024 / plane_bytes)));
  std::vector<double> row_residual_sq(with_residual ? static_cast<std::size_t>(n[0]) : 0, 0.0);
  double* __restrict acc = row_residual_sq.data();
  // Row addresses from the origin cell and the strides, and the extents as locals: with the field's
  // halo width a run-time value, computing them through Field::index() in the loop nest left GCC 12
  // one register short and it spilled the inner loop's bound (about 6 % of the memory-bound sweep's
  // rate, docs/benchmarks.md).
  const int nx = n[0], ny = n[1], nz = n[2];
  const double* const u0 = u.data() + u.index(0, 0, 0);
  double* const v0 = u_new.data() + u_new.index(0, 0, 0);
  for (int k = k_begin; k < k_end; ++k) {
    for (int j = 0; j < ny; ++j) {
      const std::ptrdiff_t row = k * sz + j * sy;
      const double* __restrict c = u0 + row;
      double* __restrict out = v0 + row;
      if constexpr (prefetch) {
        // One request per 64-byte line (8 doubles). (Written out here: as a helper function the
        // same requests made GCC 12 lay the loop out so that the sweep got slower, not faster.)
        if (k + ahead_u <= nz) {
          const double* ahead = c + ahead_u * sz;
          for (int i = -1; i < nx + 1; i += 8) __builtin_prefetch(ahead + i, 0, 3);
        }
        if (k + ahead_out < nz) {
          const double* ahead = out + ahead_out * sz;
          for (int i = 0; i < nx; i += 8) __builtin_prefetch(ahead + i, 1, 3);
        }
      }
      if constexpr (with_residual) {
#pragma omp simd
        for (int i = 0; i < nx; ++i) {
          const double s = c[i - 1] + c[i + 1] + c[i - sy] + c[i + sy] + c[i - sz] + c[i + sz];
          out[i] = s * one_sixth;  // u_new = 1/6 * (sum of neighbours)
          const double r = s - 6.0 * c[i];  // (b - A u) at this cell
          acc[i] += r * r;
        }
      } else {
#pragma omp simd
        for (int i = 0; i < nx; ++i)
          out[i] = (c[i - 1] + c[i + 1] + c[i - sy] + c[i + sy] + c[i - sz] + c[i + sz]) * one_sixth;
      }
    }
  }
  double residual_sq = 0.0;
  for (double r2 : row_residual_sq) residual_sq += r2;
  return residual_sq;
}
}  // namespace

void jacobi_sweep_planes(const Field& u, Field& u_new, int k_begin, int k_end, SweepPrefetch prefetch) {
  if (prefetch == SweepPrefetch::on)
    sweep<false, true>(u, u_new, k_begin, k_end);
  else
    sweep<false, false>(u, u_new, k_begin, k_end);
}
double jacobi_sweep_residual_planes(const Field& u, Field& u_new, int k_begin, int k_end, SweepPrefetch prefetch) {
  return prefetch == SweepPrefetch::on ? sweep<true, true>(u, u_new, k_begin, k_end)
                                       : sweep<true, false>(u, u_new, k_begin, k_end);
}
void jacobi_sweep(const Field& u, Field& u_new, SweepPrefetch prefetch) {
  jacobi_sweep_planes(u, u_new, 0, u.extent()[2], prefetch);
}
double jacobi_sweep_residual(const Field& u, Field& u_new, SweepPrefetch prefetch) {
  return jacobi_sweep_residual_planes(u, u_new, 0, u.extent()[2], prefetch);
}

namespace {
// "32768K" -> 33554432; 0 if unreadable.
std::size_t read_cache_size(const std::string& path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text.empty()) return 0;
  std::size_t v = 0;
  try {
    v = std::stoul(text);
  } catch (...) {
    return 0;
  }
  if (text.back() == 'K') v *= 1024;
  else if (text.back() == 'M') v *= 1024 * 1024;
  return v;
}

// "0-7" / "0,2,4-5" -> number of CPUs; 0 if unreadable.
int count_cpu_list(const std::string& path) {
  std::ifstream f(path);
  std::string list;
  if (!(f >> list)) return 0;
  int count = 0;
  std::size_t pos = 0;
  while (pos < list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    try {
      count += dash == std::string::npos ? 1 : std::stoi(item.substr(dash + 1)) - std::stoi(item.substr(0, dash)) + 1;
    } catch (...) {
      return 0;
    }
    pos = comma + 1;
  }
  return count;
}
}  // namespace

CacheInfo last_level_cache() {
  CacheInfo info;
  int best_level = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type");
    int level = 0;
    std::string type;
    if (!(level_file >> level) || !(type_file >> type)) continue;
    if (type == "Instruction" || level <= best_level) continue;
    const std::size_t bytes = read_cache_size(dir + "size");
    if (bytes == 0) continue;
    best_level = level;
    info.bytes = bytes;
    info.shared_by = std::max(1, count_cpu_list(dir + "shared_cpu_list"));
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (info.bytes == 0) {
    const long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (s > 0) info = {static_cast<std::size_t>(s), 1};
  }
#endif
  return info;
}

int ranks_on_node(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

SweepPrefetch sweep_prefetch_for(const Field& u, int ranks_on_node, int threads_per_rank, CacheInfo cache) {
  if (cache.bytes == 0) return SweepPrefetch::off;
  const double threads = std::max(1, threads_per_rank);
  const double sharing = std::max(threads, std::min(static_cast<double>(std::max(1, ranks_on_node)) * threads,
                                                    static_cast<double>(std::max(1, cache.shared_by))));
  const double share = static_cast<double>(cache.bytes) * threads / sharing;
  const double fields = 2.0 * static_cast<double>(u.storage_size()) * sizeof(double);
  return fields > share ? SweepPrefetch::on : SweepPrefetch::off;
}

}  // namespace desync::solvers
