// Optimized Schwarz for the 2D Poisson problem, synchronous and asynchronous (Yamazaki et al., 2019,
// sections 3-4); see include/desync/solvers/schwarz/schwarz.hpp for the method as implemented.
#include "desync/solvers/schwarz/schwarz.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>

#include "desync/communication/plan_exchange.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/problems/laplace3d.hpp"
#include "desync/problems/poisson2d.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "schwarz_run.hpp"
#include "desync/core/simulation.hpp"

namespace desync::solvers {

using decomposition::Index3;
using problems::Poisson2D;

double schwarz_auto_alpha(int overlap, double h) {
  const double L = (2.0 * overlap + 1.0) * h;
  return std::pow(2.0, -1.0 / 3.0) * std::pow(std::numbers::pi, 2.0 / 3.0) * std::pow(L, -1.0 / 3.0);
}

namespace {

Box3 block_of(const Index3& g, const Index3& d, Index3 c) {
  Box3 b;
  int* lo[3] = {&b.x0, &b.y0, &b.z0};
  int* hi[3] = {&b.x1, &b.y1, &b.z1};
  for (int a = 0; a < 3; ++a) {
    *lo[a] = decomposition::block_start(g[a], d[a], c[a]);
    *hi[a] = *lo[a] + decomposition::block_size(g[a], d[a], c[a]);
  }
  return b;
}

/// The block extended by gamma towards every neighbour (their Figure 1).
Box3 extended(const Box3& b, const Index3& d, Index3 c, int gamma) {
  return {b.x0 - (c[0] > 0 ? gamma : 0), b.x1 + (c[0] < d[0] - 1 ? gamma : 0),
          b.y0 - (c[1] > 0 ? gamma : 0), b.y1 + (c[1] < d[1] - 1 ? gamma : 0),
          b.z0 - (c[2] > 0 ? gamma : 0), b.z1 + (c[2] < d[2] - 1 ? gamma : 0)};
}

// The stencil's neighbours, ordered by their column in natural (x fastest) order: z-1, y-1, x-1,
// (self), x+1, y+1, z+1. 2D uses the middle four.
constexpr int d3[6][3] = {{0, 0, -1}, {0, -1, 0}, {-1, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};

/// The right-hand side f at an interior point and the Dirichlet value at a boundary point (one
/// coordinate 0 or 1), by problem.
double source(SchwarzProblem p, double x, double y, double) {
  return p == SchwarzProblem::poisson2d ? Poisson2D::source(x, y) : 0.0;
}
double boundary_value(SchwarzProblem p, double x, double y, double z) {
  if (p == SchwarzProblem::poisson2d) return Poisson2D::exact(x, y);
  return z <= 0.0 ? problems::Laplace3D{}.bottom_value(x, y) : 0.0;
}

}  // namespace

std::int32_t GridSubdomain::ghost_index(int x, int y, int z) const {
  const std::int64_t g = global_index(x, y, z);
  const auto it = std::lower_bound(ghosts.begin(), ghosts.end(), g);
  return it != ghosts.end() && *it == g ? static_cast<std::int32_t>(it - ghosts.begin()) : -1;
}

GridSubdomain make_schwarz_subdomain(const decomposition::CartGrid& grid, Index3 coords, int overlap,
                                        double alpha, SchwarzProblem problem) {
  return make_schwarz_subdomain(grid.global(), grid.dims(), coords, overlap, alpha, problem);
}

GridSubdomain make_schwarz_subdomain(Index3 global, Index3 dims, Index3 coords, int overlap, double alpha,
                                        SchwarzProblem problem) {
  GridSubdomain s;
  s.problem = problem;
  s.axes = problem == SchwarzProblem::poisson2d ? 2 : 3;
  s.nx = global[0];
  s.ny = global[1];
  s.nz = global[2];
  s.hx = 1.0 / (s.nx + 1);
  s.hy = 1.0 / (s.ny + 1);
  s.hz = s.axes == 3 ? 1.0 / (s.nz + 1) : 1.0;
  s.block = block_of(global, dims, coords);
  s.ext = extended(s.block, dims, coords, overlap);
  const int first = s.axes == 3 ? 0 : 1, last = s.axes == 3 ? 6 : 5;  // stencil directions used
  // The stencil's spacings. laplace3d is Jacobi's system, the same weight to every neighbour
  // whatever the extents (6 u - sum of neighbours, here over h^2 with h of the longest axis), while
  // its boundary values are taken at the points' own coordinates, as Jacobi's.
  const double hs = 1.0 / (std::max({s.nx, s.ny, s.nz}) + 1);
  const double hh[3] = {s.axes == 3 ? hs * hs : s.hx * s.hx, s.axes == 3 ? hs * hs : s.hy * s.hy, hs * hs};
  auto axis = [](int k) { return d3[k][0] ? 0 : d3[k][1] ? 1 : 2; };
  s.diag = 0;
  for (int a = 0; a < s.axes; ++a) s.diag += 2.0 / hh[a];
  auto inside = [&](int x, int y, int z) { return x >= 0 && x < s.nx && y >= 0 && y < s.ny && z >= 0 && z < s.nz; };
  auto at = [&](int x, int y, int z) {  // the physical coordinates of grid point (x, y, z)
    return std::array<double, 3>{(x + 1) * s.hx, (y + 1) * s.hy, s.axes == 3 ? (z + 1) * s.hz : 0.0};
  };
  auto f_at = [&](int x, int y, int z) {
    const auto c = at(x, y, z);
    return source(problem, c[0], c[1], c[2]);
  };
  auto g_at = [&](int x, int y, int z) {
    const auto c = at(x, y, z);
    return boundary_value(problem, c[0], c[1], c[2]);
  };
  auto for_each = [](const Box3& b, auto&& body) {
    for (int z = b.z0; z < b.z1; ++z)
      for (int y = b.y0; y < b.y1; ++y)
        for (int x = b.x0; x < b.x1; ++x) body(x, y, z);
  };

  // The ghosts: for each local interface point i and its external neighbour e, both (the Robin
  // data); for each block point, its neighbours outside the block (the local residual).
  for_each(s.ext, [&](int x, int y, int z) {
    for (int k = first; k < last; ++k) {
      const int ex = x + d3[k][0], ey = y + d3[k][1], ez = z + d3[k][2];
      if (inside(ex, ey, ez) && !s.ext.contains(ex, ey, ez)) {
        s.ghosts.push_back(s.global_index(ex, ey, ez));
        s.ghosts.push_back(s.global_index(x, y, z));
      }
    }
  });
  for_each(s.block, [&](int x, int y, int z) {
    for (int k = first; k < last; ++k) {
      const int ex = x + d3[k][0], ey = y + d3[k][1], ez = z + d3[k][2];
      if (inside(ex, ey, ez) && !s.block.contains(ex, ey, ez)) s.ghosts.push_back(s.global_index(ex, ey, ez));
    }
  });
  std::sort(s.ghosts.begin(), s.ghosts.end());
  s.ghosts.erase(std::unique(s.ghosts.begin(), s.ghosts.end()), s.ghosts.end());

  // A_p = L_p - D_p (section 4) and the fixed part of the right-hand side, row by row in natural
  // order, so that the columns of a row come out ascending.
  double beta[3];
  const double h[3] = {std::sqrt(hh[0]), std::sqrt(hh[1]), std::sqrt(hh[2])};
  for (int a = 0; a < 3; ++a) beta[a] = std::isinf(alpha) ? 0.0 : 1.0 / (1.0 + alpha * h[a]);
  const auto n = static_cast<std::int64_t>(s.ext.nx()) * s.ext.ny() * s.ext.nz();
  auto& A = s.matrix;
  A.rows = n;
  A.row_ptr.assign(1, 0);
  s.rhs_fixed.assign(static_cast<std::size_t>(n), 0.0);
  for_each(s.ext, [&](int x, int y, int z) {
    const std::int32_t row = s.ext_index(x, y, z);
    double rhs = f_at(x, y, z);
    std::vector<std::pair<std::int32_t, double>> entries;
    for (int k = first; k < last; ++k) {
      const int ex = x + d3[k][0], ey = y + d3[k][1], ez = z + d3[k][2];
      const int a = axis(k);
      if (s.ext.contains(ex, ey, ez)) {
        entries.push_back({s.ext_index(ex, ey, ez), -1.0 / hh[a]});  // L_p
      } else if (!inside(ex, ey, ez)) {
        rhs += g_at(ex, ey, ez) / hh[a];  // Dirichlet boundary
      } else {
        // D_p and the Robin data (subdomain.hpp): a_ie = -1/h^2 moves onto the diagonal as
        // beta a_ie (2 beta at a corner, 3 in 3D), and rhs -= a_ie (u_q(e) - beta u_q(i)) adds
        // (u_q(e) - beta u_q(i)) / h^2.
        s.couplings.push_back({row, s.ghost_index(ex, ey, ez), s.ghost_index(x, y, z), -1.0 / hh[a], beta[a]});
      }
    }
    entries.push_back({row, s.diag});
    std::sort(entries.begin(), entries.end());
    for (const auto& [c, v] : entries) {
      A.col.push_back(c);
      A.val.push_back(v);
    }
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
    s.rhs_fixed[static_cast<std::size_t>(row)] = rhs;
  });
  shift_robin_diagonal(A, s.couplings);  // A_p = L_p - D_p

  // The local residual's rows: the global system's rows of the block.
  for_each(s.block, [&](int x, int y, int z) {
    const auto point = static_cast<std::int32_t>(s.block_ext.size());
    double b = f_at(x, y, z);
    for (int k = first; k < last; ++k) {
      const int ex = x + d3[k][0], ey = y + d3[k][1], ez = z + d3[k][2];
      const double c = 1.0 / hh[axis(k)];
      if (!inside(ex, ey, ez))
        b += g_at(ex, ey, ez) * c;
      else if (s.block.contains(ex, ey, ez))
        s.links.push_back({point, s.ext_index(ex, ey, ez), false, c});
      else
        s.links.push_back({point, s.ghost_index(ex, ey, ez), true, c});
    }
    s.block_ext.push_back(s.ext_index(x, y, z));
    s.b_block.push_back(b);
  });
  return s;
}

double schwarz_local_residual_sq(const GridSubdomain& s, const double* x, const double* ghost) {
  std::vector<double> r(s.b_block.size());
  for (std::size_t p = 0; p < r.size(); ++p) r[p] = s.b_block[p] - s.diag * x[s.block_ext[p]];  // b - D u
  for (const auto& l : s.links) r[static_cast<std::size_t>(l.point)] += l.coef * (l.ghost ? ghost[l.index] : x[l.index]);
  double sum = 0;
  for (double v : r) sum += v * v;
  return sum;
}

comm::HaloPlan make_schwarz_plan(const decomposition::CartGrid& grid, int overlap, double alpha,
                                 SchwarzProblem problem) {
  const Index3 me = grid.coords();
  const GridSubdomain mine = make_schwarz_subdomain(grid, me, overlap, alpha, problem);
  const auto& d = grid.dims();
  comm::HaloPlan plan;
  plan.rank = grid.rank();
  auto point = [&](std::int64_t g) {
    return Index3{static_cast<int>(g % mine.nx), static_cast<int>(g / mine.nx % mine.ny),
                  static_cast<int>(g / (static_cast<std::int64_t>(mine.nx) * mine.ny))};
  };
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if (dx == 0 && dy == 0 && dz == 0) continue;
        const Index3 q{me[0] + dx, me[1] + dy, me[2] + dz};
        if (q[0] < 0 || q[0] >= d[0] || q[1] < 0 || q[1] >= d[1] || q[2] < 0 || q[2] >= d[2]) continue;
        const Box3 qblock = block_of(grid.global(), d, q);
        const GridSubdomain theirs = make_schwarz_subdomain(grid, q, overlap, alpha, problem);
        comm::PlanNeighbour nb;
        nb.peer = grid.rank_at(q);
        nb.direction = {dx, dy, dz};
        nb.send_tag = comm::direction_tag({dx, dy, dz});
        nb.recv_tag = comm::direction_tag({-dx, -dy, -dz});
        for (std::size_t g = 0; g < mine.ghosts.size(); ++g) {  // what q sends me: my ghosts in its block
          const auto c = point(mine.ghosts[g]);
          if (qblock.contains(c[0], c[1], c[2])) nb.recv.push_back(static_cast<std::int32_t>(g));
        }
        for (const auto gi : theirs.ghosts) {  // what I send q: its ghosts in my block, in its order
          const auto c = point(gi);
          if (mine.block.contains(c[0], c[1], c[2])) nb.send.push_back(mine.ext_index(c[0], c[1], c[2]));
        }
        if (!nb.send.empty() || !nb.recv.empty()) plan.neighbours.push_back(std::move(nb));
      }
  return plan;
}

GridSchwarzSubdomain::GridSchwarzSubdomain(const decomposition::CartGrid& grid, int overlap, double alpha,
                                           SchwarzProblem problem)
    : comm_(grid.comm()), dims_(grid.dims()), coords_(grid.coords()),
      sub_(make_schwarz_subdomain(grid, grid.coords(), overlap, alpha, problem)),
      plan_(make_schwarz_plan(grid, overlap, alpha, problem)) {
  std::string failure;
  try {
    solver_ = linalg::make_local_solver(sub_.matrix, linalg::LocalSolverKind::cholmod);
  } catch (const linalg::FactorisationError& e) {
    failure = fmt::format("rank {}: the subdomain matrix could not be factored: {}", grid.rank(), e.what());
  }
  agree_or_throw(comm_, failure.empty(), failure);
}

GridSchwarzSubdomain::~GridSchwarzSubdomain() = default;

double GridSchwarzSubdomain::source_norm_sq() const {
  double b2 = 0;
  for (double b : sub_.b_block) b2 += b * b;
  return b2;
}

SchwarzResult solve_schwarz(const decomposition::CartGrid& grid, const SchwarzOptions& o, std::vector<double>& u) {
  if (o.problem == SchwarzProblem::poisson2d && grid.global()[2] != 1)
    throw InputError("the 2D Poisson problem needs a 2D grid (one point along z)");
  const int overlap = o.subdomains.overlap;
  if (overlap < 1) throw InputError(fmt::format("--overlap {}: must be >= 1", overlap));
  if (o.transport.max_in_flight < 1)
    throw InputError(fmt::format("--inflight {}: R must be >= 1", o.transport.max_in_flight));
  if (!(o.alpha > 0)) throw InputError(fmt::format("--alpha {}: must be > 0 (the local problem of an interior "
                                                   "subdomain would be singular)", o.alpha));
  const auto& g = grid.global();
  const auto& d = grid.dims();
  int smallest = std::min(g[0] / d[0], g[1] / d[1]);
  if (o.problem == SchwarzProblem::laplace3d) smallest = std::min(smallest, g[2] / d[2]);
  if (grid.size() > 1 && overlap >= smallest)
    throw InputError(fmt::format("--overlap {}: must be smaller than the smallest block ({} points)", overlap,
                                 smallest));
  core::Stopwatch setup;
  GridSchwarzSubdomain sub(grid, overlap, o.alpha, o.problem);
  const double setup_seconds = setup.seconds();
  u.assign(sub.owned(), 0.0);
  SchwarzResult r = detail::run_schwarz(sub, o, {}, u, nullptr);
  r.setup_seconds = setup_seconds;
  const auto& s = sub.data();
  double err = 0;
  if (o.problem == SchwarzProblem::poisson2d) {
    for (int y = s.block.y0, p = 0; y < s.block.y1; ++y)
      for (int x = s.block.x0; x < s.block.x1; ++x, ++p)
        err = std::max(err, std::abs(u[static_cast<std::size_t>(p)] -
                                     Poisson2D::exact((x + 1) * s.hx, (y + 1) * s.hy)));
  } else {
    err = std::numeric_limits<double>::quiet_NaN();  // no known solution
  }
  if (!std::isnan(err)) MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, grid.comm());
  r.error_max = err;
  return r;
}

}  // namespace desync::solvers
