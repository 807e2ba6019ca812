// The 1D advection-diffusion verification problem of Aditya et al. (2019), section 3.2: the stability
// limit and the forward Euler step; see include/desync/problems/advection_diffusion1d.hpp.
#include "desync/problems/advection_diffusion1d.hpp"

#include <algorithm>

namespace desync::problems {

double AdvectionDiffusion1D::stable_dt(double h) const {
  // min(h² / (2 d ν), 2 ν / c²), d = 1
  double limit = viscosity > 0 ? h * h / (2.0 * 1 * viscosity) : HUGE_VAL;
  const double speed = std::abs(velocity);
  if (speed > 0) limit = std::min(limit, 2.0 * viscosity / (speed * speed));
  return limit;
}

void advection_diffusion1d_step(const decomposition::Field& layout, const double* in, double* out, double c,
                                double nu, double dt, double dx) {
  const double inv2dx = 1.0 / (2.0 * dx), invdx2 = 1.0 / (dx * dx);
  const double* u = in + layout.index(0, 0, 0);
  double* o = out + layout.index(0, 0, 0);
  const int n = layout.extent()[0];
  // u^{n+1}_i = u_i + dt (-c (u_{i+1} - u_{i-1}) / 2dx + nu (u_{i+1} - 2 u_i + u_{i-1}) / dx^2)
  for (int i = 0; i < n; ++i)
    o[i] = u[i] + dt * (-c * (u[i + 1] - u[i - 1]) * inv2dx + nu * (u[i + 1] - 2.0 * u[i] + u[i - 1]) * invdx2);
}

}  // namespace desync::problems
