#include "desync/problems/laplace3d.hpp"

#include <cmath>
#include <vector>

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

}  // namespace desync::problems
