#include <cstddef>

#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

using decomposition::Field;

namespace {
template <bool with_residual>
double sweep(const Field& u, Field& u_new) {
  const auto& n = u.extent();
  const std::ptrdiff_t sy = static_cast<std::ptrdiff_t>(u.stride_y());
  const std::ptrdiff_t sz = static_cast<std::ptrdiff_t>(u.stride_z());
  constexpr double one_sixth = 1.0 / 6.0;
  double residual_sq = 0.0;
  for (int k = 0; k < n[2]; ++k) {
    for (int j = 0; j < n[1]; ++j) {
      const std::size_t row = u.index(0, j, k);
      const double* __restrict c = u.data() + row;
      double* __restrict out = u_new.data() + row;
      if constexpr (with_residual) {
        double acc = 0.0;
#pragma omp simd reduction(+ : acc)
        for (int i = 0; i < n[0]; ++i) {
          const double s = c[i - 1] + c[i + 1] + c[i - sy] + c[i + sy] + c[i - sz] + c[i + sz];
          out[i] = s * one_sixth;
          const double r = s - 6.0 * c[i];
          acc += r * r;
        }
        residual_sq += acc;
      } else {
#pragma omp simd
        for (int i = 0; i < n[0]; ++i)
          out[i] = (c[i - 1] + c[i + 1] + c[i - sy] + c[i + sy] + c[i - sz] + c[i + sz]) * one_sixth;
      }
    }
  }
  return residual_sq;
}
}  // namespace

void jacobi_sweep(const Field& u, Field& u_new) { sweep<false>(u, u_new); }
double jacobi_sweep_residual(const Field& u, Field& u_new) { return sweep<true>(u, u_new); }

}  // namespace desync::solvers
