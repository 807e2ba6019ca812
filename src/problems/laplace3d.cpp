#include "desync/problems/laplace3d.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "desync/core/error.hpp"

namespace desync::problems {

using decomposition::Field;
using decomposition::num_faces;

double Laplace3D::bottom_value(double x, double y) const {
  const double dx = 0.5 - x, dy = 0.5 - y;
  const bool inside = dx * dx + dy * dy <= source_radius * source_radius;
  return offset + (inside ? std::exp(-(dx * dx + dy * dy)) : 0.0);
}

void Laplace3D::initialise(const decomposition::CartGrid& grid, Field& u) const {
  std::fill(u.data(), u.data() + u.storage_size(), offset);
  if (!grid.on_global_boundary(decomposition::z_lo)) return;
  const auto& g = grid.global();
  const auto& o = grid.offset();
  const auto& n = grid.local();
  for (int j = 0; j < n[1]; ++j)
    for (int i = 0; i < n[0]; ++i) {
      const double x = (o[0] + i + 1) / static_cast<double>(g[0] + 1);
      const double y = (o[1] + j + 1) / static_cast<double>(g[1] + 1);
      u(i, j, -1) = bottom_value(x, y);
    }
}

double Laplace3D::local_source_norm_sq(const decomposition::CartGrid& grid, const Field& u) const {
  // s_c = sum of the source parts (Dirichlet value - offset) of the halo values next to cell c;
  // cells on edges get several.
  Field b(u.extent(), 0.0);
  double* bd = b.data();
  for (int f = 0; f < num_faces; ++f) {
    if (!grid.on_global_boundary(f)) continue;
    std::vector<double> halo(u.face_size(f));
    u.for_each_halo(f, [&](std::size_t m, std::size_t idx) { halo[m] = u.data()[idx] - offset; });
    b.for_each_boundary(f, [&](std::size_t m, std::size_t idx) { bd[idx] += halo[m]; });
  }
  double s = 0;
  const auto& n = u.extent();
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) s += b(i, j, k) * b(i, j, k);
  return s;
}

double laplace_residual_sq(const Field& u) {
  const auto& n = u.extent();
  const std::size_t sy = u.stride_y(), sz = u.stride_z();
  const double* d = u.data();
  double s = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j) {
      const std::size_t row = u.index(0, j, k);
      for (int i = 0; i < n[0]; ++i) {
        const std::size_t c = row + static_cast<std::size_t>(i);
        const double r = d[c - 1] + d[c + 1] + d[c - sy] + d[c + sy] + d[c - sz] + d[c + sz] - 6.0 * d[c];
        s += r * r;
      }
    }
  return s;
}

std::int64_t laplace3d_node(decomposition::Index3 global, int i, int j, int k) {
  const std::int64_t ex = global[0] + 2, ey = global[1] + 2;
  return (static_cast<std::int64_t>(k) + 1) * ey * ex + (static_cast<std::int64_t>(j) + 1) * ex + (i + 1);
}

Laplace3DSystem laplace3d_matrix_system(MPI_Comm comm, decomposition::Index3 global, const Laplace3D& problem) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const int nx = global[0], ny = global[1], nz = global[2];
  if (nx < 1 || ny < 1 || nz < 1) throw InputError("laplace3d matrix: every extent must be >= 1");
  const std::int64_t ex = nx + 2, ey = ny + 2, ez = nz + 2, n = ex * ey * ez;
  if (n < nranks)
    throw InputError("laplace3d matrix: " + std::to_string(nranks) + " ranks for " + std::to_string(n) + " rows");
  Laplace3DSystem s;
  s.global = global;
  auto& A = s.A;
  A.comm = comm;
  A.block_size = 1;
  A.row_offsets.resize(static_cast<std::size_t>(nranks) + 1);
  for (int r = 0; r <= nranks; ++r)  // n/p rows each, the first n%p one more
    A.row_offsets[static_cast<std::size_t>(r)] = r * (n / nranks) + std::min<std::int64_t>(r, n % nranks);
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank)];
  const std::int64_t last = A.row_offsets[static_cast<std::size_t>(rank) + 1];
  A.row_ptr.assign(1, 0);
  for (std::int64_t row = first; row < last; ++row) {
    const int i = static_cast<int>(row % ex) - 1, j = static_cast<int>(row / ex % ey) - 1,
              k = static_cast<int>(row / (ex * ey)) - 1;
    const int outside = (i < 0 || i >= nx) + (j < 0 || j >= ny) + (k < 0 || k >= nz);
    if (outside == 0) {
      // (A u)_c = 6 u_c - the 6 neighbours, columns ascending: z-1, y-1, x-1, c, x+1, y+1, z+1.
      const std::int64_t cols[7] = {row - ex * ey, row - ex, row - 1, row, row + 1, row + ex, row + ex * ey};
      for (int q = 0; q < 7; ++q) {
        A.col.push_back(cols[q]);
        A.val.push_back(q == 3 ? 6.0 : -1.0);
      }
      s.b.push_back(0.0);
    } else {
      A.col.push_back(row);
      A.val.push_back(1.0);
      double value = 0.0;  // edges and corners: not read by any cell
      if (outside == 1) {  // a face node: the Dirichlet value Laplace3D::initialise puts there
        if (k < 0) {
          const double x = (i + 1) / static_cast<double>(nx + 1);
          const double y = (j + 1) / static_cast<double>(ny + 1);
          value = problem.bottom_value(x, y);
        } else {
          value = problem.offset;
        }
      }
      s.b.push_back(value);
    }
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  return s;
}

int laplace3d_node_rank(decomposition::Index3 global, decomposition::Index3 dims, std::int64_t node) {
  const std::int64_t ex = global[0] + 2, ey = global[1] + 2;
  const int at[3] = {static_cast<int>(node % ex) - 1, static_cast<int>(node / ex % ey) - 1,
                     static_cast<int>(node / (ex * ey)) - 1};
  int c[3];
  for (int a = 0; a < 3; ++a) {
    const int cell = std::clamp(at[a], 0, global[a] - 1);  // a boundary node: the cell next to it
    int q = 0;
    while (q + 1 < dims[a] && decomposition::block_start(global[a], dims[a], q + 1) <= cell) ++q;
    c[a] = q;
  }
  return c[0] + dims[0] * (c[1] + dims[1] * c[2]);  // CartGrid's ranks: x fastest (no reordering)
}

}  // namespace desync::problems
