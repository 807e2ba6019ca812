#pragma once
// The serial Jacobi reference shared by the Jacobi test programs: the whole Laplace problem on one
// process with its own sweep and residual, and bitwise comparisons of fields against it.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/problems/laplace3d.hpp"

namespace desync_test {

/// The whole problem on one process: (nx+2)(ny+2)(nz+2) values, halo included, x fastest.
class SerialGrid {
 public:
  SerialGrid(desync::decomposition::Index3 g, const desync::problems::Laplace3D& p)
      : g_(g), sx_(g[0] + 2), sy_(g[1] + 2), offset_(p.offset), u_(size(), p.offset) {
    // Dirichlet values written out here, independently of Laplace3D::initialise.
    for (int j = 0; j < g[1]; ++j)
      for (int i = 0; i < g[0]; ++i) {
        const double x = (i + 1) / static_cast<double>(g[0] + 1);
        const double y = (j + 1) / static_cast<double>(g[1] + 1);
        const double dx = 0.5 - x, dy = 0.5 - y;
        const bool inside = dx * dx + dy * dy <= p.source_radius * p.source_radius;
        at(i, j, -1) = p.offset + (inside ? std::exp(-(dx * dx + dy * dy)) : 0.0);
      }
  }
  std::size_t size() const { return static_cast<std::size_t>(sx_) * sy_ * (g_[2] + 2); }
  std::size_t idx(int i, int j, int k) const {
    return (static_cast<std::size_t>(k + 1) * sy_ + static_cast<std::size_t>(j + 1)) * sx_ + static_cast<std::size_t>(i + 1);
  }
  std::vector<double>& data() { return u_; }
  double& at(int i, int j, int k) { return u_[idx(i, j, k)]; }
  double at(int i, int j, int k) const { return u_[idx(i, j, k)]; }
  bool interior(int i, int j, int k) const {
    return i >= 0 && i < g_[0] && j >= 0 && j < g_[1] && k >= 0 && k < g_[2];
  }

  /// One Jacobi sweep, neighbours added in the documented order.
  void sweep() {
    std::vector<double> next = u_;
    for (int k = 0; k < g_[2]; ++k)
      for (int j = 0; j < g_[1]; ++j)
        for (int i = 0; i < g_[0]; ++i)
          next[idx(i, j, k)] = (at(i - 1, j, k) + at(i + 1, j, k) + at(i, j - 1, k) + at(i, j + 1, k) +
                                at(i, j, k - 1) + at(i, j, k + 1)) *
                               (1.0 / 6.0);
    u_.swap(next);
  }

  /// ||b - A u|| / ||s||: b_c the sum of the Dirichlet neighbours of cell c, s the same without the
  /// offset (the source disc's part alone), as laplace3d.hpp defines the reported residual.
  double residual() const {
    double r2 = 0, b2 = 0;
    for (int k = 0; k < g_[2]; ++k)
      for (int j = 0; j < g_[1]; ++j)
        for (int i = 0; i < g_[0]; ++i) {
          const int nb[6][3] = {{i - 1, j, k}, {i + 1, j, k}, {i, j - 1, k}, {i, j + 1, k}, {i, j, k - 1}, {i, j, k + 1}};
          double sum = 0, b = 0;
          for (const auto& c : nb) {
            sum += at(c[0], c[1], c[2]);
            if (!interior(c[0], c[1], c[2])) b += at(c[0], c[1], c[2]) - offset_;
          }
          const double r = sum - 6.0 * at(i, j, k);
          r2 += r * r;
          b2 += b * b;
        }
    return std::sqrt(r2) / (b2 > 0 ? std::sqrt(b2) : 1.0);
  }

 private:
  desync::decomposition::Index3 g_;
  int sx_, sy_;
  double offset_;
  std::vector<double> u_;
};

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Interior cells of this rank's block whose bits differ from the serial array.
inline long differing_cells(const desync::decomposition::CartGrid& grid, const desync::decomposition::Field& u,
                            const SerialGrid& ref) {
  const auto& n = grid.local();
  const auto& o = grid.offset();
  long diff = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) diff += same_bits(u(i, j, k), ref.at(o[0] + i, o[1] + j, o[2] + k)) ? 0 : 1;
  return diff;
}

/// Interior cells whose bits differ between two fields of the same extent.
inline long differing_cells(const desync::decomposition::Field& a, const desync::decomposition::Field& b) {
  const auto& n = a.extent();
  long diff = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) diff += same_bits(a(i, j, k), b(i, j, k)) ? 0 : 1;
  return diff;
}

}  // namespace desync_test
