#include <algorithm>
#include <cmath>
#include <cstddef>
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

SweepPrefetch sweep_prefetch_for(const Field& u, int ranks_on_node, int threads_per_rank, CacheInfo cache) {
  const double fields = 2.0 * static_cast<double>(u.storage_size()) * sizeof(double);
  return core::exceeds_cache_share(fields, ranks_on_node, threads_per_rank, cache) ? SweepPrefetch::on
                                                                                   : SweepPrefetch::off;
}

}  // namespace desync::solvers
