#include "desync/decomposition/cart_grid.hpp"

#include <cctype>
#include <string>
#include <utility>

#include "desync/core/error.hpp"

namespace desync::decomposition {

const char* face_name(int face) {
  static const char* names[num_faces] = {"x-", "x+", "y-", "y+", "z-", "z+"};
  return (face >= 0 && face < num_faces) ? names[face] : "?";
}

int block_size(int n, int p, int c) { return n / p + (c < n % p ? 1 : 0); }

int block_start(int n, int p, int c) { return c * (n / p) + (c < n % p ? c : n % p); }

Index3 parse_extent(const std::string& text, const char* what) {
  Index3 out{0, 0, 0};
  int count = 0;
  std::size_t pos = 0;
  auto fail = [&] {
    throw InputError(std::string("invalid ") + what + " '" + text +
                     "': expected N or NXxNYxNZ with positive integers");
  };
  while (pos <= text.size()) {
    std::size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    if (part.empty() || part.size() > 9 || count == 3) fail();
    for (char c : part)
      if (!std::isdigit(static_cast<unsigned char>(c))) fail();
    out[count++] = std::stoi(part);
    if (out[count - 1] <= 0) fail();
    pos = end + 1;
  }
  if (count == 1) return {out[0], out[0], out[0]};
  if (count != 3) fail();
  return out;
}

Index3 choose_dims(int nranks, Index3 hint) {
  long long fixed = 1;
  for (int d : hint) {
    if (d < 0) throw InputError("process grid entries must be >= 0 (0 lets MPI choose)");
    if (d > 0) fixed *= d;
  }
  if (nranks % fixed != 0)
    throw InputError("process grid " + std::to_string(hint[0]) + "x" + std::to_string(hint[1]) + "x" +
                     std::to_string(hint[2]) + " does not fit " + std::to_string(nranks) + " ranks");
  int dims[3] = {hint[0], hint[1], hint[2]};
  bool all_fixed = hint[0] > 0 && hint[1] > 0 && hint[2] > 0;
  if (all_fixed) {
    if (fixed != nranks)
      throw InputError("process grid " + std::to_string(hint[0]) + "x" + std::to_string(hint[1]) + "x" +
                       std::to_string(hint[2]) + " has " + std::to_string(fixed) + " rank(s), but the run has " +
                       std::to_string(nranks));
    return hint;
  }
  // The free entries take the most balanced split of what the fixed ones leave (balanced_factors),
  // in non-increasing order as MPI_Dims_create would give them. desync does not call
  // MPI_Dims_create: Open MPI and MPICH split some counts differently (72 ranks in 2D: 12 x 6 and
  // 9 x 8), and SimGrid 3.32's splits counts with a squared odd prime badly (9 ranks in 2D: 9 x 1;
  // 36: 9 x 4), so a simulated run would decompose otherwise than the real run it stands for.
  int free_axes[3];
  int nfree = 0;
  for (int a = 0; a < 3; ++a)
    if (dims[a] == 0) free_axes[nfree++] = a;
  const Index3 f = balanced_factors(static_cast<int>(nranks / fixed), nfree);
  for (int i = 0; i < nfree; ++i) dims[free_axes[i]] = f[i];
  return {dims[0], dims[1], dims[2]};
}

namespace {

/// m = a * b with a >= b and a as small as it can be (so b as large): the most balanced pair.
std::pair<int, int> balanced_pair(int m) {
  int a = 1;
  while (static_cast<long long>(a) * a < m) ++a;
  while (m % a != 0) ++a;
  return {a, m / a};
}

}  // namespace

Index3 balanced_factors(int m, int k) {
  if (m < 1 || k < 0 || k > 3) throw InputError("balanced_factors: m >= 1 and 0 <= k <= 3");
  if (k == 0) {
    if (m != 1) throw InputError("balanced_factors: " + std::to_string(m) + " ranks and no free axis");
    return {1, 1, 1};
  }
  if (k == 1) return {m, 1, 1};
  if (k == 2) {
    const auto [a, b] = balanced_pair(m);
    return {a, b, 1};
  }
  // k == 3: the smallest largest factor a for which the rest splits into two no larger than a;
  // the rest's most balanced pair then also makes the smallest factor as large as it can be.
  for (int a = 1; a <= m; ++a) {
    if (m % a != 0 || static_cast<long long>(a) * a * a < m) continue;
    const auto [b, c] = balanced_pair(m / a);
    if (b <= a) return {a, b, c};
  }
  return {m, 1, 1};  // not reached: a = m always splits
}

std::string check_split(Index3 global, Index3 dims) {
  static const char axis[3] = {'x', 'y', 'z'};
  for (int a = 0; a < 3; ++a) {
    if (dims[a] > global[a])
      return std::string("more ranks than cells along ") + axis[a] + ": " + std::to_string(dims[a]) +
             " ranks for " + std::to_string(global[a]) + " cells";
  }
  return {};
}

CartGrid::CartGrid(MPI_Comm comm, Index3 global_cells, Index3 dims, Periodic3 periodic)
    : dims_(dims), global_(global_cells), periodic_(periodic) {
  int periods[3] = {periodic[2] ? 1 : 0, periodic[1] ? 1 : 0, periodic[0] ? 1 : 0};  // (z, y, x), as mpi_dims
  // MPI numbers Cartesian ranks row-major (last dimension fastest); we pass (z, y, x) so that
  // consecutive ranks are neighbours along x, the fastest storage axis.
  int mpi_dims[3] = {dims[2], dims[1], dims[0]};
  MPI_Cart_create(comm, 3, mpi_dims, periods, /*reorder=*/0, &cart_);
  MPI_Comm_rank(cart_, &rank_);
  MPI_Comm_size(cart_, &size_);
  int c[3];
  MPI_Cart_coords(cart_, rank_, 3, c);
  coords_ = {c[2], c[1], c[0]};
  for (int a = 0; a < 3; ++a) {
    local_[a] = block_size(global_[a], dims_[a], coords_[a]);
    offset_[a] = block_start(global_[a], dims_[a], coords_[a]);
    int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
    MPI_Cart_shift(cart_, 2 - a, 1, &lo, &hi);
    neighbours_[2 * a] = lo;
    neighbours_[2 * a + 1] = hi;
  }
}

CartGrid::~CartGrid() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (cart_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&cart_);
}

int CartGrid::rank_at(Index3 coords) const {
  for (int a = 0; a < 3; ++a) {
    if (periodic_[a])
      coords[a] = ((coords[a] % dims_[a]) + dims_[a]) % dims_[a];
    else if (coords[a] < 0 || coords[a] >= dims_[a])
      return MPI_PROC_NULL;
  }
  const int mpi_coords[3] = {coords[2], coords[1], coords[0]};  // MPI's dimension order is (z, y, x)
  int r = MPI_PROC_NULL;
  MPI_Cart_rank(cart_, mpi_coords, &r);
  return r;
}

int CartGrid::num_neighbours() const {
  int n = 0;
  for (int f = 0; f < num_faces; ++f) n += on_global_boundary(f) ? 0 : 1;
  return n;
}

long long CartGrid::global_index(int i, int j, int k) const {
  long long gi = offset_[0] + i, gj = offset_[1] + j, gk = offset_[2] + k;
  return (gk * global_[1] + gj) * global_[0] + gi;
}

}  // namespace desync::decomposition
