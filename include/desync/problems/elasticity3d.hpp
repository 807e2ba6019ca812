#pragma once
// 3D linear elasticity on the unit cube (the cube problem of Horikoshi et al. (2022), section 2.1), assembled in
// parallel as a block CSR matrix with 3x3 blocks.
//
// Mesh. The global node grid has nx x ny x nz nodes (the CartGrid's "cells" are nodes here; every
// extent must be >= 2); node (i, j, k) sits at (i hx, j hy, k hz) with hx = 1 / (nx - 1) etc., so
// there are (nx - 1)(ny - 1)(nz - 1) trilinear (8-node) hexahedral elements of hx x hy x hz.
//
// Material. Isotropic, homogeneous: Young's modulus E, Poisson's ratio nu (default 1 and 0.3). The
// element stiffness K_e = sum over the 2x2x2 Gauss points of B^T D B det J is the same for every
// element; it is computed once and made exactly symmetric.
//
// Unknowns. Three displacement components per node, interleaved: scalar row 3 n + c is component
// c (0 = x, 1 = y, 2 = z) of node n. Nodes are numbered rank-major (see csr.hpp): rank r owns the
// nodes of its CartGrid block, numbered from row_offsets[r] (the number of nodes of ranks < r) with
// x fastest inside the block. Columns are the global numbers of the (up to 27) neighbour nodes,
// which may belong to face, edge or corner neighbour ranks; they are ascending in each row.
//
// Assembly. Each rank assembles the rows of its own nodes by integrating every element touching
// them (elements on a rank border are computed by every rank that needs them). An entry is the sum
// of the element contributions in ascending global element order, so the matrix (and the load)
// is bitwise the same for every number of ranks and process grid, and bitwise symmetric.
//
// Boundary conditions (symmetry planes): u_x = 0 on x = 0, u_y = 0 on y = 0, u_z = 0 on z = 0.
// A constrained DOF keeps its diagonal entry, every other entry of its row and its column is set
// to 0 (the blocks stay in the structure), and its load entry is 0. The matrix stays symmetric and
// positive definite, and the diagonal keeps the scale of the rest of the matrix.
//
// Load. A uniform normal traction `load` per unit area in +z on the face z = 1 (positive = pulling
// the top face outwards: tension). The face has area 1, so the total force is `load`. It is
// distributed by consistent nodal loads of the bilinear face elements: each face element of area
// hx hy gives load hx hy / 4 to each of its four nodes (a node of the top face gets hx hy load
// times the number of adjacent face elements over 4). Only z components of nodes with k = nz - 1
// are non-zero. The exact solution of this problem is the uniform uniaxial stress
// u = load / E (-nu x, -nu y, z), which the trilinear elements reproduce exactly.
#include <cstdint>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"

namespace desync::problems {

struct ElasticityParams {
  double E = 1;
  double nu = 0.3;
  double load = 1;  ///< total force on the face z = 1 (traction per unit area, +z)
};

struct ElasticitySystem {
  linalg::DistributedCsr A;  ///< block_size 3, comm = the CartGrid's communicator
  std::vector<double> b;     ///< this rank's part of the load vector (A.local_rows() entries)
};

/// Collective over grid.comm(). `grid` is over nodes (grid.global() = nx x ny x nz nodes).
/// Throws desync::InputError (on every rank) if an extent is < 2, E <= 0, or nu is outside
/// (-1, 0.5).
ElasticitySystem assemble_elasticity3d(const decomposition::CartGrid& grid, const ElasticityParams& p = {});

/// The six rigid-body modes (the near-kernel of elasticity without boundary conditions): the
/// translations e_x, e_y, e_z and the rotations (-y, x, 0), (0, -z, y), (z, 0, -x) at each node's
/// coordinates, as this rank's scalar rows of assemble_elasticity3d's matrix (row 3 n + c for the
/// rank's node n in its own order, x fastest, and component c). Six vectors of 3 x the rank's
/// nodes. Not collective.
std::vector<std::vector<double>> elasticity3d_rigid_body_modes(const decomposition::CartGrid& grid);

/// The 24x24 element stiffness matrix of an hx x hy x hz brick, row-major. Local node
/// a = ax + 2 ay + 4 az sits at corner (ax hx, ay hy, az hz); local DOF 3 a + c.
std::vector<double> elasticity_element_stiffness(double hx, double hy, double hz, const ElasticityParams& p);

/// Rank-major numbering of a Cartesian point grid split into blocks as CartGrid does (see
/// csr.hpp): global point (i, j, k) -> its global row (block row for elasticity).
class RankMajorNumbering {
 public:
  /// `rank_of` maps process-grid coordinates (cx + Px (cy + Py cz)) to the rank in the grid's
  /// communicator; from_grid() builds it from a CartGrid. Neither communicates.
  RankMajorNumbering(decomposition::Index3 global, decomposition::Index3 dims, std::vector<int> rank_of);
  static RankMajorNumbering from_grid(const decomposition::CartGrid& grid);

  std::int64_t index(int i, int j, int k) const;
  /// row_offsets as in DistributedCsr: size nranks + 1.
  const std::vector<std::int64_t>& offsets() const { return offsets_; }

 private:
  decomposition::Index3 global_, dims_;
  std::vector<int> rank_of_;             // by process-grid coordinates
  std::vector<std::int64_t> offsets_;    // by rank
};

}  // namespace desync::problems
