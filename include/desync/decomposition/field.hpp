#pragma once
// A rank's block of a cell-centred scalar field with a halo of width w_a on both sides of axis a
// (default one cell on every side: Jacobi's 7-point stencil).
//
// Storage is x fastest; local interior cells are (i, j, k) in [0, n) and the halo along axis a is at
// -w_a .. -1 and n_a .. n_a + w_a - 1 (edges and corners of the halo are stored too). On a face with
// a neighbour the halo holds that neighbour's boundary values; on the global boundary it holds the
// Dirichlet values. A width of 0 on an axis means no halo there (a 2D block: one z layer, w_z = 0).
// The face helpers below (pack_boundary, unpack_halo, ...) move the one layer next to a face; wider
// halos, edges and corners travel through a comm::HaloPlan (communication/halo_plan.hpp).
#include <cstddef>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"

namespace desync::decomposition {

class Field {
 public:
  Field() = default;
  /// Halo width 1 on every axis.
  explicit Field(Index3 local, double value = 0.0);
  /// Halo width halo_width[a] >= 0 on both sides of axis a.
  Field(Index3 local, Index3 halo_width, double value = 0.0);

  const Index3& extent() const { return n_; }
  const Index3& halo_width() const { return w_; }
  std::size_t stride_y() const { return sx_; }
  std::size_t stride_z() const { return sxy_; }
  std::size_t index(int i, int j, int k) const {
    return static_cast<std::size_t>(k + w_[2]) * sxy_ + static_cast<std::size_t>(j + w_[1]) * sx_ +
           static_cast<std::size_t>(i + w_[0]);
  }
  double& operator()(int i, int j, int k) { return data_[index(i, j, k)]; }
  double operator()(int i, int j, int k) const { return data_[index(i, j, k)]; }
  double* data() { return data_.data(); }
  const double* data() const { return data_.data(); }
  std::size_t storage_size() const { return data_.size(); }

  /// Number of cells on `face` (the product of the two other extents).
  std::size_t face_size(int face) const;
  /// Copies the interior layer next to `face` into `out` (face_size doubles).
  void pack_boundary(int face, double* out) const;
  /// Writes `in` (face_size doubles) into the halo layer across `face`.
  void unpack_halo(int face, const double* in);
  /// Copies the halo layer across `face` from `other` (same extent).
  void copy_halo(int face, const Field& other);
  /// Calls f(index_in_face, storage_index) for every halo cell across `face`, in pack order.
  template <class F>
  void for_each_halo(int face, F&& f) const {
    walk(face, /*halo=*/true, f);
  }
  template <class F>
  void for_each_boundary(int face, F&& f) const {
    walk(face, /*halo=*/false, f);
  }

 private:
  template <class F>
  void walk(int face, bool halo, F& f) const {
    const int axis = face_axis(face);
    const int layer = face_is_high(face) ? (halo ? n_[axis] : n_[axis] - 1) : (halo ? -1 : 0);
    std::size_t m = 0;
    if (axis == 0) {
      for (int k = 0; k < n_[2]; ++k)
        for (int j = 0; j < n_[1]; ++j) f(m++, index(layer, j, k));
    } else if (axis == 1) {
      for (int k = 0; k < n_[2]; ++k)
        for (int i = 0; i < n_[0]; ++i) f(m++, index(i, layer, k));
    } else {
      for (int j = 0; j < n_[1]; ++j)
        for (int i = 0; i < n_[0]; ++i) f(m++, index(i, j, layer));
    }
  }

  Index3 n_{0, 0, 0};
  Index3 w_{1, 1, 1};
  std::size_t sx_ = 0, sxy_ = 0;
  std::vector<double> data_;
};

}  // namespace desync::decomposition
