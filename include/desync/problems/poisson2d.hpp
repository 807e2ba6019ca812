#pragma once
// The 2D Poisson problem of the optimized Schwarz solver (Yamazaki et al., 2019, section 4):
//   -Δu = f on the unit square, u = g on its boundary,
// discretised by 5-point finite differences on nx x ny interior points, h = 1/(n + 1) per axis.
// f and g come from a known smooth solution, so that the discretisation error can be measured as
// well as the algebraic residual:
//   u(x, y) = sin(πx) sin(2πy) + x² + y,   f = -Δu = 5π² sin(πx) sin(2πy) - 2,
// non-zero on the boundary (g = u there) and in the interior.
#include <cmath>
#include <numbers>

namespace desync::problems {

struct Poisson2D {
  static double exact(double x, double y) {
    using std::numbers::pi;
    return std::sin(pi * x) * std::sin(2 * pi * y) + x * x + y;
  }
  static double source(double x, double y) {
    using std::numbers::pi;
    return 5 * pi * pi * std::sin(pi * x) * std::sin(2 * pi * y) - 2;
  }
};

}  // namespace desync::problems
