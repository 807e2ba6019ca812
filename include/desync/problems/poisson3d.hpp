#pragma once
// The 3D Poisson problem of Hoefler et al. (2007), section 3.1: -Δu = 0 on the unit cube, u = 1 on the boundary.
//
// Unknowns are the nx x ny x nz interior grid points (the CartGrid's global cells); A is the
// 7-point stencil with 6 on the diagonal and -1 for each neighbour that is an unknown (no h²
// scaling). The Dirichlet values move to the right-hand side: b_i = number of neighbours of point i
// on the boundary (each u = 1 times 1). The exact solution is u ≡ 1, so A·1 = b.
//
// Global numbering (for the assembled matrix and the vector distribution) is rank-major: rank r owns
// rows [sum of the points of ranks < r, + its own points), inside a rank x fastest. CartGrid numbers
// ranks with x fastest too, so a point's neighbours across the low faces (z, y, x) are on lower
// ranks and those across the high faces (x, y, z) on higher ranks; the global column order of a row
// is therefore: remote z-, y-, x- neighbours, local z-, y-, x-, the point, local x+, y+, z+, remote
// x+, y+, z+. The matrix-free operator sums every row in exactly that order, starting from 0.0,
// as the assembled CSR operator does, so the two give bitwise the same y.
#include <memory>
#include <vector>

#include "desync/communication/ghost_exchange.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/operator.hpp"

namespace desync::problems {

/// The matrix-free operator on `grid` (which must outlive it). Interior rows are the local points
/// with no neighbour on another rank; the six faces are exchanged with the grid's neighbours.
/// Collective over grid.comm().
std::unique_ptr<linalg::Operator> make_poisson3d_operator(const decomposition::CartGrid& grid,
                                                           const linalg::SpmvConfig& cfg);
/// The same matrix assembled (block size 1, global numbering as above); comm is grid.comm().
/// Collective (computes every rank's offset locally, no communication).
linalg::DistributedCsr assemble_poisson3d(const decomposition::CartGrid& grid);
/// This rank's part of b.
std::vector<double> poisson3d_rhs(const decomposition::CartGrid& grid);
/// First global row of every rank (size nranks + 1), as DistributedCsr::row_offsets.
std::vector<std::int64_t> poisson3d_row_offsets(const decomposition::CartGrid& grid);

class Poisson3dOperator final : public linalg::Operator {
 public:
  Poisson3dOperator(const decomposition::CartGrid& grid, const linalg::SpmvConfig& cfg);
  ~Poisson3dOperator() override;

  MPI_Comm comm() const override { return grid_.comm(); }
  std::int64_t local_size() const override { return n_local_; }
  std::int64_t global_size() const override { return grid_.global_cells(); }
  void apply(std::span<const double> x, std::span<double> y) override;
  std::vector<double> diagonal() const override;
  linalg::LocalCsr diagonal_block() const override;
  const linalg::SpmvStats& stats() const override;
  void reset_stats() override;
  std::string name() const override { return "poisson3d matrix-free"; }

  const linalg::OperatorLayout& layout() const { return layout_; }

 private:
  /// The interior rows; returns how many of them it charged to a simulated clock at its polls.
  double interior(const double* x, double* y);
  void boundary(const double* x, double* y) const;
  double boundary_row(const double* x, int i, int j, int k) const;

  const decomposition::CartGrid& grid_;
  linalg::SpmvConfig cfg_;
  int nx_, ny_, nz_;
  std::int64_t n_local_;
  bool remote_[6];            // a neighbour rank across face f
  bool absent_[6];            // the global boundary across face f
  int lo_[3], hi_[3];         // interior box: [lo, hi) per axis
  const double* ghost_[6]{};  // ghost layer across face f inside the exchange's buffer
  std::vector<double> zero_line_;
  std::unique_ptr<comm::GhostExchange> exchange_;
  linalg::OperatorLayout layout_;
  mutable linalg::SpmvStats stats_;
};

}  // namespace desync::problems
