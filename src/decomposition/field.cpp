#include "desync/decomposition/field.hpp"

namespace desync::decomposition {

Field::Field(Index3 local, double value) : Field(local, Index3{1, 1, 1}, value) {}

Field::Field(Index3 local, Index3 halo_width, double value)
    : n_(local),
      w_(halo_width),
      sx_(static_cast<std::size_t>(local[0] + 2 * halo_width[0])),
      sxy_(sx_ * static_cast<std::size_t>(local[1] + 2 * halo_width[1])),
      data_(sxy_ * static_cast<std::size_t>(local[2] + 2 * halo_width[2]), value) {}

std::size_t Field::face_size(int face) const {
  const int axis = face_axis(face);
  std::size_t s = 1;
  for (int a = 0; a < 3; ++a)
    if (a != axis) s *= static_cast<std::size_t>(n_[a]);
  return s;
}

void Field::pack_boundary(int face, double* out) const {
  const double* d = data_.data();
  for_each_boundary(face, [&](std::size_t m, std::size_t idx) { out[m] = d[idx]; });
}

void Field::unpack_halo(int face, const double* in) {
  double* d = data_.data();
  for_each_halo(face, [&](std::size_t m, std::size_t idx) { d[idx] = in[m]; });
}

void Field::copy_halo(int face, const Field& other) {
  double* d = data_.data();
  const double* o = other.data_.data();
  for_each_halo(face, [&](std::size_t, std::size_t idx) { d[idx] = o[idx]; });
}

}  // namespace desync::decomposition
