#pragma once
// The 3D Laplace problem of Bethune et al. (2011), section 3: -∇²u = 0 on the unit cube, 7-point stencil.
//
// Global interior cells (i, j, k), 0 <= i < nx, sit at x = (i + 1) / (nx + 1) (likewise y, z); the
// halo layer at i = -1 and i = nx holds the Dirichlet values on x = 0 and x = 1. All boundary values
// are 0 except on the bottom face z = 0, where inside the disc of radius `source_radius` around
// (0.5, 0.5) they are exp(-((0.5 - x)^2 + (0.5 - y)^2)). `offset` is added to every boundary value
// and to the initial interior value 0 (Bethune et al., 2011, section 6.1: avoids exact zeros).
//
// The discrete system is A u = b with (A u)_c = 6 u_c - sum of interior neighbours and b_c = sum of
// the Dirichlet values next to cell c. The residual norm reported everywhere is ||b - A u||_2 / ||s||_2
// ("normalised by the source"), where s is b without the offset: the contribution of the source
// disc alone. The offset shifts the solution by a constant that A maps to the offset's part of b, so
// the residual, its normalisation and hence the work to converge do not depend on the offset
// (Bethune et al., 2011, section 6.1). The initial residual is 1 for any offset.
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"

namespace desync::problems {

struct Laplace3D {
  double offset = 0.0;
  double source_radius = 0.25;

  /// Dirichlet value on the bottom face at (x, y), offset included.
  double bottom_value(double x, double y) const;
  /// Sets the interior of u to the initial guess and every global-boundary halo to its Dirichlet
  /// value; halos towards neighbours are set to the initial guess too.
  void initialise(const decomposition::CartGrid& grid, decomposition::Field& u) const;
  /// Local part of ||s||^2, s the source part of b (needs the boundary halos set by initialise()).
  double local_source_norm_sq(const decomposition::CartGrid& grid, const decomposition::Field& u) const;
};

/// Local part of ||b - A u||^2 using u's current halo values.
double laplace_residual_sq(const decomposition::Field& u);

}  // namespace desync::problems
