#pragma once
// The 1D verification problem of Aditya, Gysi, Kranzlmüller and Hoefler (2019), section 3.2 and
// Figure 2: u_t + c u_x = ν u_xx on the periodic [0, 2π p) (p whole periods; the paper's p = 1),
// u(x, 0) = sin x, exact solution u = exp(-ν t) sin(x - c t).
//
// The discretisation: second-order central differences in space, forward Euler in time,
//     u^{n+1}_i = u_i + Δt (-c (u_{i+1} - u_{i-1}) / 2h + ν (u_{i+1} - 2 u_i + u_{i-1}) / h²),
// one step per call of advection_diffusion1d_step on a block whose two halo cells are filled.
#include <cmath>

#include "desync/decomposition/field.hpp"

namespace desync::problems {

struct AdvectionDiffusion1D {
  double velocity = 1.0;   ///< c
  double viscosity = 0.1;  ///< ν

  double initial(double x) const { return std::sin(x); }
  double exact(double x, double t) const { return std::exp(-viscosity * t) * std::sin(x - velocity * t); }
  /// The stability limit of forward Euler with central differences at spacing h:
  /// min(h² / (2 ν), 2 ν / c²).
  double stable_dt(double h) const;
};

/// One forward Euler step on a block stored as `layout` (x-halo width 1, filled); writes `out`'s
/// interior only.
void advection_diffusion1d_step(const decomposition::Field& layout, const double* in, double* out, double c,
                                double nu, double dt, double h);

}  // namespace desync::problems
