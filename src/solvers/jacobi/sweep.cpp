#include <cstddef>
#include <vector>

#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

using decomposition::Field;

namespace {
template <bool with_residual>
double sweep(const Field& u, Field& u_new, int k_begin, int k_end) {
  const auto& n = u.extent();
  const std::ptrdiff_t sy = static_cast<std::ptrdiff_t>(u.stride_y());
  const std::ptrdiff_t sz = static_cast<std::ptrdiff_t>(u.stride_z());
  constexpr double one_sixth = 1.0 / 6.0;
  // Residual squares accumulate per x position across all rows and are summed once at the end:
  // a horizontal reduction per row (rows are short, 50 cells by default) costs more than the
  // extra L1 traffic.
  std::vector<double> row_residual_sq(with_residual ? static_cast<std::size_t>(n[0]) : 0, 0.0);
  double* __restrict acc = row_residual_sq.data();
  for (int k = k_begin; k < k_end; ++k) {
    for (int j = 0; j < n[1]; ++j) {
      const std::size_t row = u.index(0, j, k);
      const double* __restrict c = u.data() + row;
      double* __restrict out = u_new.data() + row;
      if constexpr (with_residual) {
#pragma omp simd
        for (int i = 0; i < n[0]; ++i) {
          const double s = c[i - 1] + c[i + 1] + c[i - sy] + c[i + sy] + c[i - sz] + c[i + sz];
          out[i] = s * one_sixth;  // u_new = 1/6 * (sum of neighbours)
          const double r = s - 6.0 * c[i];  // (b - A u) at this cell
          acc[i] += r * r;
        }
      } else {
#pragma omp simd
        for (int i = 0; i < n[0]; ++i)
          out[i] = (c[i - 1] + c[i + 1] + c[i - sy] + c[i + sy] + c[i - sz] + c[i + sz]) * one_sixth;
      }
    }
  }
  double residual_sq = 0.0;
  for (double r2 : row_residual_sq) residual_sq += r2;
  return residual_sq;
}
}  // namespace

void jacobi_sweep(const Field& u, Field& u_new) { sweep<false>(u, u_new, 0, u.extent()[2]); }
double jacobi_sweep_residual(const Field& u, Field& u_new) { return sweep<true>(u, u_new, 0, u.extent()[2]); }
void jacobi_sweep_planes(const Field& u, Field& u_new, int k_begin, int k_end) {
  sweep<false>(u, u_new, k_begin, k_end);
}
double jacobi_sweep_residual_planes(const Field& u, Field& u_new, int k_begin, int k_end) {
  return sweep<true>(u, u_new, k_begin, k_end);
}

}  // namespace desync::solvers
