#pragma once
// Optimized Schwarz domain decomposition for the 2D Poisson problem (problems/poisson2d.hpp) and
// the 3D Laplace problem of Jacobi (problems/laplace3d.hpp, 7-point, overlap in 3D), synchronous and
// asynchronous, after Yamazaki, Chow, Bouteiller and Dongarra (2019), sections 3-4.
//
// Rank p owns a block of the global interior points (its non-overlapping subdomain, the "interior
// points" of their Figure 1) and works on the block extended by `overlap` (gamma) points in each
// direction except at the physical boundary. Its points on the extended box's boundary that face a
// neighbour are the local interface points; the points just outside, the external interface
// points. Every iteration it solves
//     A_p x_p = b_p + (Robin data from the neighbours' newest values),   A_p = L_p - D_p,
// by a sparse Cholesky factorisation computed once (linalg::make_local_solver: CHOLMOD, choosing
// its mode), and keeps the block part of x_p as its part of the global iterate. The run is the one
// of every Schwarz solver (schwarz_run.cpp), over this rank's GridSchwarzSubdomain.
//
// Interface condition OO0 (their equation 2): du/dn + alpha u = du_q/dn + alpha u_q, the normal
// derivative taken one-sided at the external point e of the local interface point i:
//     (u_e - u_i)/h + alpha u_e = g   =>   u_e = beta u_i + beta h g,   beta = 1/(1 + alpha h).
// Substituted into the 5-point (7-point) row of i, each external neighbour lowers the diagonal by
// beta/h^2 (a corner point, with two, by 2 beta/h^2, three in 3D: their D_p, with beta = 1/(1 + alpha) for unit spacing) and
// adds beta h g / h^2 to the right-hand side, where the receiver computes the Robin data from the
// neighbour's values at e and i: beta h g = beta ((1 + alpha h) u_q(e) - u_q(i)) = u_q(e) - beta u_q(i),
// the Robin data of a matrix's dropped coupling a_ie = -1/h^2 (subdomain.hpp: add_robin_data).
// alpha = inf gives beta = 0, Dirichlet data u_q(e): classical Schwarz.
//
// The values at other ranks' points (u_q(e), u_q(i), and the neighbours of the block's boundary for
// the local residual) are the owners' current iterates, carried by comm::PlanExchange over any
// transport: the synchronous exchange of their section 4.1 or the asynchronous one of 4.2 (the
// newest whole message). The run loop is solvers::IterationDriver's, with StopRule::every_rank_local
// (section 4.3).
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/communication/halo_plan.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/core/noise.hpp"
#include "desync/core/waiting.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/core/names.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"
#include "desync/solvers/schwarz/subdomain.hpp"

namespace desync::solvers {

inline constexpr double schwarz_classical = std::numeric_limits<double>::infinity();

/// The OO0 Robin parameter with overlap (Gander, "Optimized Schwarz methods", SIAM J. Numer. Anal.
/// 44 (2006), Theorem 4.6, eta = 0): alpha* = 2^(-1/3) k_min^(2/3) L^(-1/3), with k_min = pi the
/// lowest frequency on the unit square and L = (2 gamma + 1) h the distance between the two
/// subdomains' Robin interfaces (the external points where each imposes its condition).
double schwarz_auto_alpha(int overlap, double h);

/// Half-open box of global interior points [x0, x1) x [y0, y1) x [z0, z1) (2D: [0, 1) along z).
struct Box3 {
  int x0 = 0, x1 = 0, y0 = 0, y1 = 0, z0 = 0, z1 = 1;
  int nx() const { return x1 - x0; }
  int ny() const { return y1 - y0; }
  int nz() const { return z1 - z0; }
  bool contains(int x, int y, int z) const {
    return x >= x0 && x < x1 && y >= y0 && y < y1 && z >= z0 && z < z1;
  }
};

/// Everything rank p needs to iterate, built without communication (every rank can build any
/// rank's, which is how the exchange plan is agreed on). The run iterates on it through
/// GridSchwarzSubdomain (solvers::Subdomain).
struct GridSubdomain {
  SchwarzProblem problem = SchwarzProblem::poisson2d;
  int axes = 2;                 ///< 2 (5-point) or 3 (7-point)
  int nx = 0, ny = 0, nz = 1;   ///< global interior points per axis
  double hx = 0, hy = 0, hz = 1;
  Box3 block, ext;              ///< owned points; the extended (overlapping) subdomain
  std::vector<std::int64_t> ghosts;  ///< global indices ((z ny + y) nx + x) of the other ranks' points read, sorted
  linalg::LocalCsr matrix;      ///< A_p on ext, row-major natural order
  std::vector<double> rhs_fixed;  ///< f and the physical boundary values on ext
  std::vector<RobinCoupling> couplings;  ///< a = -1/h^2, beta = 1/(1 + alpha h) of the coupling's axis
  // Local residual on the block: r = b_block - (L u) over the block's points, u from the iterate
  // (ext indices), the ghost buffer or the boundary values (folded into b_block).
  std::vector<double> b_block;  ///< the global right-hand side on the block, block row-major
  std::vector<std::int32_t> block_ext;  ///< ext index of each block point
  struct Link { std::int32_t point, index; bool ghost; double coef; };
  std::vector<Link> links;      ///< the off-diagonal couplings of the block's rows
  double diag = 0;              ///< 2/hx^2 + 2/hy^2 (+ 2/hz^2)

  std::int32_t ext_index(int x, int y, int z = 0) const {
    return ((z - ext.z0) * ext.ny() + (y - ext.y0)) * ext.nx() + (x - ext.x0);
  }
  std::int64_t global_index(int x, int y, int z) const {
    return (static_cast<std::int64_t>(z) * ny + y) * nx + x;
  }
  /// Position of global point (x, y, z) in the ghost buffer (-1 if absent).
  std::int32_t ghost_index(int x, int y, int z = 0) const;
};

/// Rank `coords`' subdomain of `grid` with overlap gamma and Robin alpha (poisson2d: a 2D grid, z
/// extent 1).
GridSubdomain make_schwarz_subdomain(const decomposition::CartGrid& grid, decomposition::Index3 coords,
                                        int overlap, double alpha,
                                        SchwarzProblem problem = SchwarzProblem::poisson2d);
/// The same from the sizes alone: `global` points, process grid `dims`, block `coords`.
GridSubdomain make_schwarz_subdomain(decomposition::Index3 global, decomposition::Index3 dims,
                                        decomposition::Index3 coords, int overlap, double alpha,
                                        SchwarzProblem problem = SchwarzProblem::poisson2d);
/// The exchange plan of this rank: from every neighbouring rank (8 in 2D, 26 in 3D) the ghosts it
/// owns.
comm::HaloPlan make_schwarz_plan(const decomposition::CartGrid& grid, int overlap, double alpha,
                                 SchwarzProblem problem = SchwarzProblem::poisson2d);

/// The local residual^2 of the block, sum over the block of (b - L u)^2, for iterate `x` (on ext)
/// and ghost values `ghost`. The plain reference of what the run computes.
double schwarz_local_residual_sq(const GridSubdomain& s, const double* x, const double* ghost);

/// Rank p's subdomain of `grid` as the Schwarz run iterates on it: its GridSubdomain, its exchange
/// plan and A_p factored (CHOLMOD, its own choice of mode). Collective over the grid's communicator
/// (a failed factorisation is reported by every rank, naming the rank).
class GridSchwarzSubdomain final : public Subdomain {
 public:
  GridSchwarzSubdomain(const decomposition::CartGrid& grid, int overlap, double alpha, SchwarzProblem problem);
  ~GridSchwarzSubdomain() override;
  const GridSubdomain& data() const { return sub_; }

  MPI_Comm comm() const override { return comm_; }
  std::size_t size() const override { return sub_.rhs_fixed.size(); }
  std::size_t owned() const override { return sub_.block_ext.size(); }
  std::size_t owned_index(std::size_t k) const override { return static_cast<std::size_t>(sub_.block_ext[k]); }
  const comm::HaloPlan& ghost_plan() const override { return plan_; }
  std::size_t send_offset() const override { return 0; }  // the plan sends from ext indices
  std::size_t ghost_count() const override { return sub_.ghosts.size(); }
  linalg::LocalSolver& solver() const override { return *solver_; }
  const linalg::LocalCsr& local_matrix() const override { return sub_.matrix; }
  std::span<const RobinCoupling> robin_couplings() const override { return sub_.couplings; }
  const double* rhs() const override { return sub_.rhs_fixed.data(); }
  double local_residual_sq(const double* x, const double* ghost) const override {
    return schwarz_local_residual_sq(sub_, x, ghost);
  }
  double source_norm_sq() const override;
  // The simulated cluster charges a grid residual by the extended subdomain's points, as the grid
  // solver always has (simulated times stay what they were).
  double residual_work() const override { return static_cast<double>(size()); }
  bool solve_reads_own_values() const override { return false; }  // every external point is another rank's
  int exchange_hops() const override { return (dims_[0] - 1) + (dims_[1] - 1) + (dims_[2] - 1); }
  std::array<int, 3> extent() const override { return {sub_.block.nx(), sub_.block.ny(), sub_.block.nz()}; }
  std::array<int, 3> coords() const override { return coords_; }

 private:
  MPI_Comm comm_;
  decomposition::Index3 dims_, coords_;
  GridSubdomain sub_;
  comm::HaloPlan plan_;
  std::unique_ptr<linalg::LocalSolver> solver_;
};

/// Solves on `grid` (collective). `u` receives this rank's block of the solution (x fastest).
/// Throws InputError for bad options, linalg::FactorisationError (with the rank) if A_p is not SPD.
/// The grid's options: problem, overlap (gamma), alpha and the loop's; the matrix's fields
/// (robin, local_solver, coarse) are not read (a two-level run goes through the assembled matrix).
SchwarzResult solve_schwarz(const decomposition::CartGrid& grid, const SchwarzOptions& options,
                            std::vector<double>& u);

}  // namespace desync::solvers
