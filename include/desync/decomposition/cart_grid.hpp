#pragma once
// Cartesian process grid and the block of global cells each rank owns.
//
// The global interior is nx x ny x nz cells, x fastest. Ranks form a Px x Py x Pz grid from
// choose_dims / MPI_Cart_create, non-periodic unless asked (a periodic dimension wraps: the
// first block's lower neighbour is the last block); a dimension of n cells split over p ranks gives
// blocks whose sizes differ by at most one, the first n % p blocks one cell larger.
#include <mpi.h>

#include <array>
#include <string>

namespace desync::decomposition {

using Index3 = std::array<int, 3>;  // (x, y, z)
using Periodic3 = std::array<bool, 3>;  // per axis (x, y, z): the dimension wraps around

/// Faces of a block, in the order the halo layer walks them.
enum Face : int { x_lo = 0, x_hi = 1, y_lo = 2, y_hi = 3, z_lo = 4, z_hi = 5 };
inline constexpr int num_faces = 6;
inline constexpr int face_axis(int face) { return face / 2; }
inline constexpr bool face_is_high(int face) { return (face % 2) == 1; }
inline constexpr int opposite_face(int face) { return face ^ 1; }
const char* face_name(int face);

/// Size of block `c` when `n` cells are split over `p` blocks (sizes differ by at most one).
int block_size(int n, int p, int c);
/// First global cell of block `c`.
int block_start(int n, int p, int c);

/// Parses "50" (cube) or "200x100x80" into cell counts; throws desync::InputError on bad text.
Index3 parse_extent(const std::string& text, const char* what);

/// Process-grid dimensions for `nranks`: the non-zero entries of `hint` are kept, the zero entries
/// take balanced_factors of what those leave, in non-increasing order (as MPI_Dims_create orders
/// them; desync computes them itself, so that every MPI library, the simulated one too, decomposes
/// a run alike). Throws desync::InputError if the non-zero entries do not divide `nranks`.
Index3 choose_dims(int nranks, Index3 hint);

/// The most balanced split of `m` into `k` (0..3) factors, largest first, ones after the k-th:
/// the largest factor as small as it can be, and for that largest the smallest as large.
Index3 balanced_factors(int m, int k);

/// Empty when `global` cells can be split over `dims`, otherwise the reason (e.g. more ranks than
/// cells along a dimension).
std::string check_split(Index3 global, Index3 dims);

class CartGrid {
 public:
  /// Collective over `comm`. `dims` must multiply to the size of `comm` (see choose_dims).
  /// `periodic`: per axis, whether the dimension wraps (default: none, the Dirichlet problems).
  CartGrid(MPI_Comm comm, Index3 global_cells, Index3 dims, Periodic3 periodic = {false, false, false});
  ~CartGrid();
  CartGrid(const CartGrid&) = delete;
  CartGrid& operator=(const CartGrid&) = delete;

  MPI_Comm comm() const { return cart_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const Index3& dims() const { return dims_; }
  const Index3& coords() const { return coords_; }
  const Index3& global() const { return global_; }
  const Index3& local() const { return local_; }
  /// Global index of this block's first interior cell along each axis.
  const Index3& offset() const { return offset_; }
  const Periodic3& periodic() const { return periodic_; }
  /// Rank of the block at process coordinates `coords` (x, y, z), wrapped along periodic axes;
  /// MPI_PROC_NULL outside a non-periodic axis. May be this rank itself (a periodic axis of 1 rank).
  int rank_at(Index3 coords) const;
  /// Rank across `face`, MPI_PROC_NULL on the global boundary (never on a periodic axis).
  int neighbour(int face) const { return neighbours_[face]; }
  bool on_global_boundary(int face) const { return neighbours_[face] == MPI_PROC_NULL; }
  int num_neighbours() const;
  long long global_cells() const {
    return static_cast<long long>(global_[0]) * global_[1] * global_[2];
  }
  /// Linear global index (x fastest) of local interior cell (i, j, k), all 0-based.
  long long global_index(int i, int j, int k) const;

 private:
  MPI_Comm cart_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  Index3 dims_{}, coords_{}, global_{}, local_{}, offset_{};
  Periodic3 periodic_{false, false, false};
  std::array<int, num_faces> neighbours_{};
};

}  // namespace desync::decomposition
