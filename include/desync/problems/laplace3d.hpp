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
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/linalg/csr.hpp"

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

/// The grid problem above as an assembled system, for the solvers of assembled matrices
/// (solvers/jacobi/matrix_jacobi.hpp) and for `--export-system`. The unknowns are the
/// (nx + 2)(ny + 2)(nz + 2) nodes of the grid together with its boundary layer, node (i, j, k),
/// -1 <= i <= nx (likewise j, k), numbered in natural order with x fastest (laplace3d_node):
///   interior cell     6 on the diagonal, -1 to each of its 6 neighbours (boundary nodes
///                     included), b = 0;
///   face node         an identity row, b = its Dirichlet value (Laplace3D::bottom_value on the
///                     bottom face z = 0, `offset` on the others: what Laplace3D::initialise puts in
///                     the halo);
///   edge, corner      (no 7-point stencil reads them) kept as identity rows with b = 0, so that the
///                     numbering stays the full box and every neighbour of a cell lies at the same
///                     index distance: 1 along x, nx + 2 along y, (nx + 2)(ny + 2) along z.
/// Point Jacobi on this system, its off-diagonal terms summed nearest index first (as
/// solve_matrix_jacobi does), started from x0 = 0 gives x1 = D^-1 b: the Dirichlet values on the
/// boundary and 0 inside, the grid solver's initial state for offset 0. Its cell updates are then
/// (x-1 + x+1 + y-1 + y+1 + z-1 + z+1) * (1/6), the grid sweep's operations in the grid sweep's
/// order, so with offset 0 iterate k + 1 of point Jacobi equals iterate k of solve_jacobi bitwise.
/// (With an offset the grid solver starts the interior at the offset instead of 0.)
struct Laplace3DSystem {
  linalg::DistributedCsr A;   ///< block size 1, rows in contiguous balanced blocks (n/p, the first n%p one more)
  std::vector<double> b;      ///< this rank's rows of the right-hand side
  decomposition::Index3 global{};  ///< interior cells (nx, ny, nz)
};

/// Collective over `comm` (which the matrix keeps, not owned). InputError if an extent is < 1 or
/// there are more ranks than nodes.
Laplace3DSystem laplace3d_matrix_system(MPI_Comm comm, decomposition::Index3 global, const Laplace3D& problem);

/// The row of node (i, j, k), -1 <= i <= nx etc., in laplace3d_matrix_system's numbering.
std::int64_t laplace3d_node(decomposition::Index3 global, int i, int j, int k);

/// The rank whose grid block (decomposition::CartGrid with process grid `dims`: blocks
/// decomposition::block_start/block_size per axis, ranks numbered x fastest) holds the cell of
/// `node`; a boundary node goes with the interior cell next to it (an edge or corner node with the
/// cell at its corner). The grid's own partition of the system, for a partition file.
int laplace3d_node_rank(decomposition::Index3 global, decomposition::Index3 dims, std::int64_t node);

}  // namespace desync::problems
