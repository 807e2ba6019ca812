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

#include <mpi.h>

#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"

namespace desync::problems {

/// The assembled 2D Poisson system of the optimized Schwarz solver, for `desync schwarz
/// --export-system` and for comparing the algebraic Schwarz method with it: the nx x ny interior
/// points in natural order (x fastest), rows scaled 1/h^2 as the grid solver's (diagonal 2/hx^2 +
/// 2/hy^2, -1/hx^2 and -1/hy^2 to the neighbours), b = f plus the Dirichlet values of the boundary
/// neighbours over h^2, distributed in contiguous balanced row blocks. `part` gives, for each of
/// this rank's rows, the rank that owns the point in the grid solver's run on process grid `dims`
/// (dims[2] == 1): the partition file that reproduces the grid solver's blocks.
struct Poisson2DSystem {
  linalg::DistributedCsr A;
  std::vector<double> b;
  std::vector<int> part;
};
Poisson2DSystem poisson2d_matrix_system(MPI_Comm comm, decomposition::Index3 global, decomposition::Index3 dims);

}  // namespace desync::problems
