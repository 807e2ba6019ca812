#include "desync/solvers/jacobi/sweep.hpp"

namespace desync::solvers {

using decomposition::Field;

void jacobi_sweep_ref(const Field& u, Field& u_new) {
  const auto& n = u.extent();
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i)
        u_new(i, j, k) = (u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) + u(i, j, k - 1) +
                          u(i, j, k + 1)) *
                         (1.0 / 6.0);
}

double jacobi_residual_sq_ref(const Field& u) {
  const auto& n = u.extent();
  double s = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        const double r = u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) + u(i, j, k - 1) +
                         u(i, j, k + 1) - 6.0 * u(i, j, k);
        s += r * r;
      }
  return s;
}

}  // namespace desync::solvers
