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
// its mode), and keeps the block part of x_p as its part of the global iterate.
//
// Interface condition OO0 (their equation 2): du/dn + alpha u = du_q/dn + alpha u_q, the normal
// derivative taken one-sided at the external point e of the local interface point i:
//     (u_e - u_i)/h + alpha u_e = g   =>   u_e = beta u_i + beta h g,   beta = 1/(1 + alpha h).
// Substituted into the 5-point (7-point) row of i, each external neighbour lowers the diagonal by
// beta/h^2 (a corner point, with two, by 2 beta/h^2, three in 3D: their D_p, with beta = 1/(1 + alpha) for unit spacing) and
// adds beta h g / h^2 to the right-hand side, where the receiver computes the Robin data from the
// neighbour's values at e and i: beta h g = beta ((1 + alpha h) u_q(e) - u_q(i)) = u_q(e) - beta u_q(i).
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
#include "desync/solvers/schwarz/schwarz_loop.hpp"

namespace desync::solvers {

inline constexpr double schwarz_classical = std::numeric_limits<double>::infinity();

/// The problem solved: -Δu = f with Dirichlet values on the boundary, finite differences scaled by
/// 1/h^2 (the relative residual is that of the unscaled system).
///   poisson2d  the unit square, f and g from a known solution (problems/poisson2d.hpp)
///   laplace3d  the unit cube, f = 0, the source disc on the bottom face (problems/laplace3d.hpp,
///              offset 0): Jacobi's problem, for comparing the two on one system; no known solution
enum class SchwarzProblem { poisson2d, laplace3d };
inline constexpr core::Named<SchwarzProblem> schwarz_problems[] = {
    {SchwarzProblem::poisson2d, "poisson2d", "the unit square, a known smooth solution"},
    {SchwarzProblem::laplace3d, "laplace3d",
     "Jacobi's 3D problem of Bethune et al., 2011: 7-point, overlap in 3D"},
};

/// The grid solver's options: its loop's (SchwarzLoopOptions) and the problem's and subdomains'.
struct SchwarzOptions : SchwarzLoopOptions {
  SchwarzProblem problem = SchwarzProblem::poisson2d;
  int overlap = 1;               ///< gamma >= 1
  double alpha = 0;              ///< Robin parameter > 0, or schwarz_classical (resolved by the caller)
};

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

/// One Robin term of the right-hand side: rhs[row] += coef (u_q(e) - beta u_q(i)), with u_q(e) and
/// u_q(i) read from the ghost buffer.
struct RobinTerm {
  std::int32_t row, ghost_e, ghost_i;
  double coef, beta;
};

/// Everything rank p needs to iterate, built without communication (every rank can build any
/// rank's, which is how the exchange plan is agreed on).
struct SchwarzSubdomain {
  SchwarzProblem problem = SchwarzProblem::poisson2d;
  int axes = 2;                 ///< 2 (5-point) or 3 (7-point)
  int nx = 0, ny = 0, nz = 1;   ///< global interior points per axis
  double hx = 0, hy = 0, hz = 1;
  Box3 block, ext;              ///< owned points; the extended (overlapping) subdomain
  std::vector<std::int64_t> ghosts;  ///< global indices ((z ny + y) nx + x) of the other ranks' points read, sorted
  linalg::LocalCsr matrix;      ///< A_p on ext, row-major natural order
  std::vector<double> rhs_fixed;  ///< f and the physical boundary values on ext
  std::vector<RobinTerm> robin;
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
SchwarzSubdomain make_schwarz_subdomain(const decomposition::CartGrid& grid, decomposition::Index3 coords,
                                        int overlap, double alpha,
                                        SchwarzProblem problem = SchwarzProblem::poisson2d);
/// The same from the sizes alone: `global` points, process grid `dims`, block `coords`.
SchwarzSubdomain make_schwarz_subdomain(decomposition::Index3 global, decomposition::Index3 dims,
                                        decomposition::Index3 coords, int overlap, double alpha,
                                        SchwarzProblem problem = SchwarzProblem::poisson2d);
/// The exchange plan of this rank: from every neighbouring rank (8 in 2D, 26 in 3D) the ghosts it
/// owns.
comm::HaloPlan make_schwarz_plan(const decomposition::CartGrid& grid, int overlap, double alpha,
                                 SchwarzProblem problem = SchwarzProblem::poisson2d);

/// The local residual^2 of the block, sum over the block of (b - L u)^2, for iterate `x` (on ext)
/// and ghost values `ghost`. The plain reference of what the run computes.
double schwarz_local_residual_sq(const SchwarzSubdomain& s, const double* x, const double* ghost);

struct SchwarzResult : SchwarzRunResult {
  double alpha = 0;
  double error_max = 0;           ///< max |u - u_exact| over the global solution (same on every rank; NaN
                                  ///< where the problem has no known solution)
};

/// Solves on `grid` (collective). `u` receives this rank's block of the solution (x fastest).
/// Throws InputError for bad options, linalg::FactorisationError (with the rank) if A_p is not SPD.
SchwarzResult solve_schwarz(const decomposition::CartGrid& grid, const SchwarzOptions& options,
                            std::vector<double>& u);

}  // namespace desync::solvers
