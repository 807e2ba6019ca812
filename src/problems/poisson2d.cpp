// The assembled 2D Poisson system (problems/poisson2d.hpp).
#include "desync/problems/poisson2d.hpp"

#include <algorithm>

namespace desync::problems {

Poisson2DSystem poisson2d_matrix_system(MPI_Comm comm, decomposition::Index3 global, decomposition::Index3 dims) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int nx = global[0], ny = global[1];
  const std::int64_t n = static_cast<std::int64_t>(nx) * ny;
  const double hx = 1.0 / (nx + 1), hy = 1.0 / (ny + 1);
  const double cx = 1.0 / (hx * hx), cy = 1.0 / (hy * hy);
  Poisson2DSystem s;
  auto& A = s.A;
  A.comm = comm;
  A.block_size = 1;
  A.row_offsets.resize(static_cast<std::size_t>(size) + 1);
  for (int r = 0; r <= size; ++r)  // balanced: n / p each, the first n % p one more
    A.row_offsets[static_cast<std::size_t>(r)] = r * (n / size) + std::min<std::int64_t>(r, n % size);
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank)];
  const std::int64_t last = A.row_offsets[static_cast<std::size_t>(rank) + 1];
  // The grid solver's block of a point: block_start along each axis.
  auto owner = [&](int x, int y) {
    int cx_ = 0, cy_ = 0;
    while (cx_ + 1 < dims[0] && decomposition::block_start(nx, dims[0], cx_ + 1) <= x) ++cx_;
    while (cy_ + 1 < dims[1] && decomposition::block_start(ny, dims[1], cy_ + 1) <= y) ++cy_;
    return cx_ + dims[0] * cy_;  // MPI's Cartesian rank order: the last dimension fastest
  };
  A.row_ptr.push_back(0);
  for (std::int64_t row = first; row < last; ++row) {
    const int x = static_cast<int>(row % nx), y = static_cast<int>(row / nx);
    // The right-hand side as the grid solver forms it: f, then the boundary neighbours in the
    // order y-1, x-1, x+1, y+1.
    double b = Poisson2D::source((x + 1) * hx, (y + 1) * hy);
    if (y == 0) b += Poisson2D::exact((x + 1) * hx, 0.0) * cy;
    if (x == 0) b += Poisson2D::exact(0.0, (y + 1) * hy) * cx;
    if (x == nx - 1) b += Poisson2D::exact(1.0, (y + 1) * hy) * cx;
    if (y == ny - 1) b += Poisson2D::exact((x + 1) * hx, 1.0) * cy;
    auto add = [&](std::int64_t c, double v) {
      A.col.push_back(c);
      A.val.push_back(v);
    };
    if (y > 0) add(row - nx, -cy);
    if (x > 0) add(row - 1, -cx);
    add(row, 2 * cx + 2 * cy);
    if (x < nx - 1) add(row + 1, -cx);
    if (y < ny - 1) add(row + nx, -cy);
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
    s.b.push_back(b);
    s.part.push_back(owner(x, y));
  }
  return s;
}

}  // namespace desync::problems
