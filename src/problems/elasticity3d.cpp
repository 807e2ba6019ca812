#include "desync/problems/elasticity3d.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "desync/core/error.hpp"

namespace desync::problems {

using decomposition::Index3;

namespace {

/// Block (along one axis) that holds point `i` when `n` points are split over `p` blocks.
int block_of(int n, int p, int i) {
  const int q = n / p, rem = n % p;
  const int big = rem * (q + 1);  // points in the first `rem` (larger) blocks
  if (i < big) return i / (q + 1);
  return rem + (i - big) / q;  // q >= 1 here: i < n and big = n when q = 0
}

}  // namespace

RankMajorNumbering::RankMajorNumbering(Index3 global, Index3 dims, std::vector<int> rank_of)
    : global_(global), dims_(dims), rank_of_(std::move(rank_of)) {
  const int nranks = dims_[0] * dims_[1] * dims_[2];
  std::vector<std::int64_t> count(static_cast<std::size_t>(nranks), 0);
  for (int cz = 0; cz < dims_[2]; ++cz)
    for (int cy = 0; cy < dims_[1]; ++cy)
      for (int cx = 0; cx < dims_[0]; ++cx) {
        const int r = rank_of_[static_cast<std::size_t>(cx + dims_[0] * (cy + dims_[1] * cz))];
        count[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(decomposition::block_size(global_[0], dims_[0], cx)) *
                                             decomposition::block_size(global_[1], dims_[1], cy) *
                                             decomposition::block_size(global_[2], dims_[2], cz);
      }
  offsets_.assign(static_cast<std::size_t>(nranks) + 1, 0);
  for (int r = 0; r < nranks; ++r) offsets_[r + 1] = offsets_[r] + count[static_cast<std::size_t>(r)];
}

RankMajorNumbering RankMajorNumbering::from_grid(const decomposition::CartGrid& grid) {
  const Index3 d = grid.dims();
  std::vector<int> rank_of(static_cast<std::size_t>(d[0]) * d[1] * d[2], 0);
  for (int cz = 0; cz < d[2]; ++cz)
    for (int cy = 0; cy < d[1]; ++cy)
      for (int cx = 0; cx < d[0]; ++cx) {
        int coords[3] = {cz, cy, cx};  // CartGrid passes (z, y, x) to MPI_Cart_create
        int r = 0;
        MPI_Cart_rank(grid.comm(), coords, &r);
        rank_of[static_cast<std::size_t>(cx + d[0] * (cy + d[1] * cz))] = r;
      }
  return RankMajorNumbering(grid.global(), d, std::move(rank_of));
}

std::int64_t RankMajorNumbering::index(int i, int j, int k) const {
  const int p[3] = {i, j, k};
  int c[3], l[3], n[3];
  for (int a = 0; a < 3; ++a) {
    c[a] = block_of(global_[a], dims_[a], p[a]);
    l[a] = p[a] - decomposition::block_start(global_[a], dims_[a], c[a]);
    n[a] = decomposition::block_size(global_[a], dims_[a], c[a]);
  }
  const int r = rank_of_[static_cast<std::size_t>(c[0] + dims_[0] * (c[1] + dims_[1] * c[2]))];
  return offsets_[static_cast<std::size_t>(r)] + l[0] + static_cast<std::int64_t>(n[0]) * (l[1] + static_cast<std::int64_t>(n[1]) * l[2]);
}

std::vector<double> elasticity_element_stiffness(double hx, double hy, double hz, const ElasticityParams& p) {
  const double lambda = p.E * p.nu / ((1.0 + p.nu) * (1.0 - 2.0 * p.nu));
  const double mu = p.E / (2.0 * (1.0 + p.nu));
  const double g = 1.0 / std::sqrt(3.0);
  const double gauss[2] = {-g, g};
  const double h[3] = {hx, hy, hz};
  const double det_j = hx * hy * hz / 8.0;  // Jacobian of the map from [-1, 1]^3; weights are 1
  std::vector<double> K(24 * 24, 0.0);
  for (double zeta : gauss)
    for (double eta : gauss)
      for (double xi : gauss) {
        const double q[3] = {xi, eta, zeta};
        double dn[8][3];  // physical gradient of shape function a
        for (int a = 0; a < 8; ++a) {
          const double s[3] = {(a & 1) ? 1.0 : -1.0, (a & 2) ? 1.0 : -1.0, (a & 4) ? 1.0 : -1.0};
          const double f[3] = {1.0 + s[0] * q[0], 1.0 + s[1] * q[1], 1.0 + s[2] * q[2]};
          dn[a][0] = s[0] * f[1] * f[2] / 8.0 * (2.0 / h[0]);
          dn[a][1] = f[0] * s[1] * f[2] / 8.0 * (2.0 / h[1]);
          dn[a][2] = f[0] * f[1] * s[2] / 8.0 * (2.0 / h[2]);
        }
        // B^T D B for the isotropic D: entry (a c, b d) =
        //   lambda dN_a/dx_c dN_b/dx_d + mu dN_a/dx_d dN_b/dx_c + mu [c = d] grad N_a . grad N_b.
        for (int a = 0; a < 8; ++a)
          for (int b = 0; b < 8; ++b) {
            const double dot = dn[a][0] * dn[b][0] + dn[a][1] * dn[b][1] + dn[a][2] * dn[b][2];
            for (int c = 0; c < 3; ++c)
              for (int d = 0; d < 3; ++d) {
                double v = lambda * dn[a][c] * dn[b][d] + mu * dn[a][d] * dn[b][c];
                if (c == d) v += mu * dot;
                K[static_cast<std::size_t>((3 * a + c) * 24 + 3 * b + d)] += v * det_j;
              }
          }
      }
  // Exactly symmetric (it is already up to rounding).
  for (int r = 0; r < 24; ++r)
    for (int c = r + 1; c < 24; ++c) K[static_cast<std::size_t>(c * 24 + r)] = K[static_cast<std::size_t>(r * 24 + c)];
  return K;
}

std::vector<std::vector<double>> elasticity3d_rigid_body_modes(const decomposition::CartGrid& grid) {
  const Index3 n = grid.global(), l = grid.local(), o = grid.offset();
  const std::size_t nodes = static_cast<std::size_t>(l[0]) * static_cast<std::size_t>(l[1]) * static_cast<std::size_t>(l[2]);
  std::vector<std::vector<double>> modes(6, std::vector<double>(3 * nodes, 0.0));
  std::size_t row = 0;  // the assembly's node order: x fastest
  for (int k = 0; k < l[2]; ++k)
    for (int j = 0; j < l[1]; ++j)
      for (int i = 0; i < l[0]; ++i, ++row) {
        const double x = (o[0] + i) * (1.0 / (n[0] - 1)), y = (o[1] + j) * (1.0 / (n[1] - 1)),
                     z = (o[2] + k) * (1.0 / (n[2] - 1));
        for (std::size_t c = 0; c < 3; ++c) modes[c][3 * row + c] = 1.0;  // translations
        modes[3][3 * row] = -y;  // rotation about z: (-y, x, 0)
        modes[3][3 * row + 1] = x;
        modes[4][3 * row + 1] = -z;  // about x: (0, -z, y)
        modes[4][3 * row + 2] = y;
        modes[5][3 * row] = z;  // about y: (z, 0, -x)
        modes[5][3 * row + 2] = -x;
      }
  return modes;
}

ElasticitySystem assemble_elasticity3d(const decomposition::CartGrid& grid, const ElasticityParams& p) {
  const Index3 n = grid.global();
  for (int a = 0; a < 3; ++a)
    if (n[a] < 2)
      throw InputError("elasticity3d needs at least 2 nodes along every axis (1 element), got " +
                       std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]) + " nodes");
  if (!(p.E > 0) || !std::isfinite(p.E)) throw InputError("elasticity3d: Young's modulus must be > 0");
  if (!(p.nu > -1.0 && p.nu < 0.5)) throw InputError("elasticity3d: Poisson's ratio must lie in (-1, 0.5)");
  if (!std::isfinite(p.load)) throw InputError("elasticity3d: the load must be finite");

  const double h[3] = {1.0 / (n[0] - 1), 1.0 / (n[1] - 1), 1.0 / (n[2] - 1)};
  const std::vector<double> Ke = elasticity_element_stiffness(h[0], h[1], h[2], p);
  const RankMajorNumbering numbering = RankMajorNumbering::from_grid(grid);

  ElasticitySystem sys;
  linalg::DistributedCsr& A = sys.A;
  A.comm = grid.comm();
  A.block_size = 3;
  A.row_offsets = numbering.offsets();
  const Index3 l = grid.local(), o = grid.offset();
  const std::int64_t nodes = static_cast<std::int64_t>(l[0]) * l[1] * l[2];
  A.row_ptr.reserve(static_cast<std::size_t>(nodes) + 1);
  A.row_ptr.push_back(0);
  A.col.reserve(static_cast<std::size_t>(nodes) * 27);
  A.val.reserve(static_cast<std::size_t>(nodes) * 27 * 9);
  sys.b.assign(static_cast<std::size_t>(nodes) * 3, 0.0);

  const double face_load = p.load * h[0] * h[1] / 4.0;  // per node of each top face element
  double blk[27][9];
  bool present[27];
  std::array<std::pair<std::int64_t, int>, 27> cols{};
  std::size_t row = 0;
  for (int k = 0; k < l[2]; ++k)
    for (int j = 0; j < l[1]; ++j)
      for (int i = 0; i < l[0]; ++i, ++row) {
        const int g[3] = {o[0] + i, o[1] + j, o[2] + k};
        for (int s = 0; s < 27; ++s) {
          present[s] = false;
          for (int e = 0; e < 9; ++e) blk[s][e] = 0.0;
        }
        // Elements touching node g, in ascending global element order (z slowest).
        for (int ez = g[2] - 1; ez <= g[2]; ++ez) {
          if (ez < 0 || ez > n[2] - 2) continue;
          for (int ey = g[1] - 1; ey <= g[1]; ++ey) {
            if (ey < 0 || ey > n[1] - 2) continue;
            for (int ex = g[0] - 1; ex <= g[0]; ++ex) {
              if (ex < 0 || ex > n[0] - 2) continue;
              const int a = (g[0] - ex) + 2 * (g[1] - ey) + 4 * (g[2] - ez);  // this node in the element
              for (int b = 0; b < 8; ++b) {
                const int dx = ex + (b & 1) - g[0], dy = ey + ((b >> 1) & 1) - g[1], dz = ez + ((b >> 2) & 1) - g[2];
                const int s = (dx + 1) + 3 * ((dy + 1) + 3 * (dz + 1));
                present[s] = true;
                for (int c = 0; c < 3; ++c)
                  for (int d = 0; d < 3; ++d)
                    blk[s][3 * c + d] += Ke[static_cast<std::size_t>((3 * a + c) * 24 + 3 * b + d)];
              }
            }
          }
        }
        // Symmetry planes: component c of a node with coordinate 0 along axis c is fixed.
        std::size_t ncols = 0;
        for (int s = 0; s < 27; ++s) {
          if (!present[s]) continue;
          const int m[3] = {g[0] + s % 3 - 1, g[1] + (s / 3) % 3 - 1, g[2] + s / 9 - 1};
          for (int c = 0; c < 3; ++c)
            for (int d = 0; d < 3; ++d) {
              const bool diagonal = (s == 13 && c == d);
              if (!diagonal && (g[c] == 0 || m[d] == 0)) blk[s][3 * c + d] = 0.0;
            }
          cols[ncols++] = {numbering.index(m[0], m[1], m[2]), s};
        }
        std::sort(cols.begin(), cols.begin() + static_cast<std::ptrdiff_t>(ncols));
        for (std::size_t q = 0; q < ncols; ++q) {
          A.col.push_back(cols[q].first);
          A.val.insert(A.val.end(), blk[cols[q].second], blk[cols[q].second] + 9);
        }
        A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));

        // Consistent nodal load of the top face (z = 1), z component.
        if (g[2] == n[2] - 1) {
          int faces = 0;
          for (int ey = g[1] - 1; ey <= g[1]; ++ey)
            for (int ex = g[0] - 1; ex <= g[0]; ++ex)
              if (ex >= 0 && ex <= n[0] - 2 && ey >= 0 && ey <= n[1] - 2) ++faces;
          sys.b[3 * row + 2] = face_load * faces;
        }
      }
  return sys;
}

}  // namespace desync::problems
