#include "desync/problems/poisson3d.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"

namespace desync::problems {

using decomposition::CartGrid;
using decomposition::Face;
using decomposition::Index3;

namespace {

// Faces in MPI's neighbour order for CartGrid's communicator: CartGrid creates it with the
// dimensions (z, y, x), and MPI lists per dimension the lower, then the upper neighbour.
constexpr int mpi_face_order[6] = {Face::z_lo, Face::z_hi, Face::y_lo, Face::y_hi, Face::x_lo, Face::x_hi};

// Extent of rank `rank`'s block.
Index3 block_of(const CartGrid& grid, int rank) {
  int c[3];
  MPI_Cart_coords(grid.comm(), rank, 3, c);
  const Index3 coords{c[2], c[1], c[0]};
  Index3 n{};
  for (int a = 0; a < 3; ++a) n[a] = decomposition::block_size(grid.global()[a], grid.dims()[a], coords[a]);
  return n;
}

// Local indices of the points next to `face`, in the order Field packs a face (and the neighbour
// stores the ghost layer): x faces k outer, j inner; y faces k outer, i inner; z faces j outer, i inner.
void face_points(const Index3& n, int face, std::vector<std::int32_t>& out) {
  const int axis = decomposition::face_axis(face);
  const int layer = decomposition::face_is_high(face) ? n[axis] - 1 : 0;
  auto idx = [&](int i, int j, int k) {
    return static_cast<std::int32_t>((static_cast<std::int64_t>(k) * n[1] + j) * n[0] + i);
  };
  if (axis == 0) {
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j) out.push_back(idx(layer, j, k));
  } else if (axis == 1) {
    for (int k = 0; k < n[2]; ++k)
      for (int i = 0; i < n[0]; ++i) out.push_back(idx(i, layer, k));
  } else {
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) out.push_back(idx(i, j, layer));
  }
}

}  // namespace

std::vector<std::int64_t> poisson3d_row_offsets(const CartGrid& grid) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(grid.size()) + 1, 0);
  for (int r = 0; r < grid.size(); ++r) {
    const Index3 n = block_of(grid, r);
    off[static_cast<std::size_t>(r) + 1] =
        off[static_cast<std::size_t>(r)] + static_cast<std::int64_t>(n[0]) * n[1] * n[2];
  }
  return off;
}

std::vector<double> poisson3d_rhs(const CartGrid& grid) {
  const Index3& n = grid.local();
  const Index3& o = grid.offset();
  const Index3& g = grid.global();
  std::vector<double> b(static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  std::size_t c = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        const int p[3] = {o[0] + i, o[1] + j, o[2] + k};
        int count = 0;
        for (int a = 0; a < 3; ++a) count += (p[a] == 0 ? 1 : 0) + (p[a] == g[a] - 1 ? 1 : 0);
        b[c++] = static_cast<double>(count);
      }
  return b;
}

linalg::DistributedCsr assemble_poisson3d(const CartGrid& grid) {
  linalg::DistributedCsr A;
  A.comm = grid.comm();
  A.block_size = 1;
  A.row_offsets = poisson3d_row_offsets(grid);
  const Index3& n = grid.local();
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(grid.rank())];
  const std::int64_t rows = static_cast<std::int64_t>(n[0]) * n[1] * n[2];
  // Neighbour blocks: global index of their point next to the shared face.
  std::int64_t nb_off[6] = {};
  Index3 nb_n[6] = {};
  for (int f = 0; f < 6; ++f) {
    if (grid.on_global_boundary(f)) continue;
    const int nb = grid.neighbour(f);
    nb_off[f] = A.row_offsets[static_cast<std::size_t>(nb)];
    nb_n[f] = block_of(grid, nb);
  }
  auto local = [&](int i, int j, int k) { return first + (static_cast<std::int64_t>(k) * n[1] + j) * n[0] + i; };
  A.row_ptr.reserve(static_cast<std::size_t>(rows) + 1);
  A.col.reserve(static_cast<std::size_t>(rows) * 7);
  A.val.reserve(static_cast<std::size_t>(rows) * 7);
  A.row_ptr.push_back(0);
  std::vector<std::pair<std::int64_t, double>> entries;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        entries.clear();
        entries.emplace_back(local(i, j, k), 6.0);
        // x
        if (i > 0) entries.emplace_back(local(i - 1, j, k), -1.0);
        else if (!grid.on_global_boundary(Face::x_lo)) {
          const Index3& m = nb_n[Face::x_lo];
          entries.emplace_back(nb_off[Face::x_lo] + (static_cast<std::int64_t>(k) * m[1] + j) * m[0] + m[0] - 1, -1.0);
        }
        if (i < n[0] - 1) entries.emplace_back(local(i + 1, j, k), -1.0);
        else if (!grid.on_global_boundary(Face::x_hi)) {
          const Index3& m = nb_n[Face::x_hi];
          entries.emplace_back(nb_off[Face::x_hi] + (static_cast<std::int64_t>(k) * m[1] + j) * m[0], -1.0);
        }
        // y
        if (j > 0) entries.emplace_back(local(i, j - 1, k), -1.0);
        else if (!grid.on_global_boundary(Face::y_lo)) {
          const Index3& m = nb_n[Face::y_lo];
          entries.emplace_back(nb_off[Face::y_lo] + (static_cast<std::int64_t>(k) * m[1] + m[1] - 1) * m[0] + i, -1.0);
        }
        if (j < n[1] - 1) entries.emplace_back(local(i, j + 1, k), -1.0);
        else if (!grid.on_global_boundary(Face::y_hi)) {
          const Index3& m = nb_n[Face::y_hi];
          entries.emplace_back(nb_off[Face::y_hi] + static_cast<std::int64_t>(k) * m[1] * m[0] + i, -1.0);
        }
        // z
        if (k > 0) entries.emplace_back(local(i, j, k - 1), -1.0);
        else if (!grid.on_global_boundary(Face::z_lo)) {
          const Index3& m = nb_n[Face::z_lo];
          entries.emplace_back(nb_off[Face::z_lo] + (static_cast<std::int64_t>(m[2] - 1) * m[1] + j) * m[0] + i, -1.0);
        }
        if (k < n[2] - 1) entries.emplace_back(local(i, j, k + 1), -1.0);
        else if (!grid.on_global_boundary(Face::z_hi)) {
          const Index3& m = nb_n[Face::z_hi];
          entries.emplace_back(nb_off[Face::z_hi] + static_cast<std::int64_t>(j) * m[0] + i, -1.0);
        }
        std::sort(entries.begin(), entries.end());
        for (const auto& [c, v] : entries) {
          A.col.push_back(c);
          A.val.push_back(v);
        }
        A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
      }
  return A;
}

std::unique_ptr<linalg::Operator> make_poisson3d_operator(const CartGrid& grid, const linalg::SpmvConfig& cfg) {
  return std::make_unique<Poisson3dOperator>(grid, cfg);
}

Poisson3dOperator::Poisson3dOperator(const CartGrid& grid, const linalg::SpmvConfig& cfg)
    : grid_(grid),
      cfg_(cfg),
      nx_(grid.local()[0]),
      ny_(grid.local()[1]),
      nz_(grid.local()[2]),
      n_local_(static_cast<std::int64_t>(nx_) * ny_ * nz_) {
  agree_or_throw(grid.comm(), cfg_.test_interval >= 1,
                 "test interval " + std::to_string(cfg_.test_interval) + ": must be >= 1");
  agree_or_throw(grid.comm(), n_local_ < (std::int64_t{1} << 31),
                 "poisson3d: more than 2^31 - 1 points on one rank");
  const int n[3] = {nx_, ny_, nz_};
  for (int f = 0; f < 6; ++f) {
    remote_[f] = !grid.on_global_boundary(f);
    absent_[f] = !remote_[f];
  }
  for (int a = 0; a < 3; ++a) {
    lo_[a] = remote_[2 * a] ? 1 : 0;
    hi_[a] = std::max(lo_[a], n[a] - (remote_[2 * a + 1] ? 1 : 0));
  }
  zero_line_.assign(static_cast<std::size_t>(nx_), 0.0);

  comm::GhostPlanSpec spec;
  spec.cartesian = true;
  spec.send_offsets = {0};
  spec.recv_offsets = {0};
  for (int f : mpi_face_order) {
    const int rank = grid.neighbour(f);
    spec.send_ranks.push_back(rank);
    spec.recv_ranks.push_back(rank);
    if (remote_[f]) face_points(grid.local(), f, spec.send_index);
    spec.send_offsets.push_back(static_cast<int>(spec.send_index.size()));
    const int count = remote_[f] ? static_cast<int>(spec.send_index.size()) - spec.send_offsets[spec.send_offsets.size() - 2] : 0;
    spec.recv_offsets.push_back(spec.recv_offsets.back() + count);
  }
  exchange_ = std::make_unique<comm::GhostExchange>(grid.comm(), std::move(spec), cfg_.engine, cfg_.progress,
                                                  cfg_.transport);
  const auto& s = exchange_->spec();
  for (std::size_t m = 0; m < 6; ++m) {
    const int f = mpi_face_order[m];
    ghost_[f] = remote_[f] ? exchange_->ghosts() + s.recv_offsets[m] : nullptr;
  }
  const std::int64_t interior = static_cast<std::int64_t>(hi_[0] - lo_[0]) * (hi_[1] - lo_[1]) * (hi_[2] - lo_[2]);
  layout_.interior_rows = interior;
  layout_.boundary_rows = n_local_ - interior;
  layout_.ghost_entries = static_cast<std::int64_t>(exchange_->ghost_count());
  layout_.neighbours = exchange_->neighbours();
}

Poisson3dOperator::~Poisson3dOperator() = default;

// Every row is 0.0 - (neighbours with a lower global index, ascending) + 6 x_c - (higher ones,
// ascending); see the header. In the interior box all neighbours are local or absent; an absent
// y/z neighbour line reads zeros (s - 0.0 == s exactly, so this equals skipping the term), an absent
// x neighbour is peeled off the line.
double Poisson3dOperator::interior(const double* x, double* y) {
  if (lo_[0] >= hi_[0] || lo_[1] >= hi_[1] || lo_[2] >= hi_[2]) return 0.0;
  const std::size_t sy = static_cast<std::size_t>(nx_);
  const std::size_t sz = sy * static_cast<std::size_t>(ny_);
  const double* zero = zero_line_.data();
  const bool testing = cfg_.progress == linalg::Progress::test && cfg_.engine != linalg::ExchangeEngine::blocking;
  const int interval = cfg_.test_interval;
  int since = 0;  // rows since the last poll
  double charged = 0;  // simulated cluster: rows charged at polls
  for (int k = lo_[2]; k < hi_[2]; ++k) {
    for (int j = lo_[1]; j < hi_[1]; ++j) {
      const std::size_t line = static_cast<std::size_t>(k) * sz + static_cast<std::size_t>(j) * sy;
      const double* __restrict xc = x + line;
      const double* __restrict zm = k > 0 ? xc - sz : zero;
      const double* __restrict ym = j > 0 ? xc - sy : zero;
      const double* __restrict yp = j < ny_ - 1 ? xc + sy : zero;
      const double* __restrict zp = k < nz_ - 1 ? xc + sz : zero;
      double* __restrict yc = y + line;
      int i0 = lo_[0];
      int i1 = hi_[0];
      // Peeled ends: the x neighbour is on the global boundary (or the line has one point).
      auto edge = [&](int i) {
        double s = 0.0 - zm[i] - ym[i];
        if (i > 0) s -= xc[i - 1];
        s += 6.0 * xc[i];
        if (i < nx_ - 1) s -= xc[i + 1];
        yc[i] = s - yp[i] - zp[i];
      };
      if (i0 == 0) edge(i0++);
      if (i1 == nx_ && i1 > i0) edge(--i1);
      while (i0 < i1) {
        int end = i1;
        if (testing) end = std::min(i1, i0 + (interval - since));
        for (int i = i0; i < end; ++i)
          yc[i] = 0.0 - zm[i] - ym[i] - xc[i - 1] + 6.0 * xc[i] - xc[i + 1] - yp[i] - zp[i];
        if (testing) {
          since += end - i0;
          if (since >= interval) {
            // Simulated cluster: the rows since the last poll are charged before it, so that the
            // poll, and the reduction rounds it advances, happen at the simulated time they took.
            core::charge("poisson3d.row", since);
            charged += since;
            exchange_->poll();
            since = 0;
          }
        }
        i0 = end;
      }
    }
  }
  return charged;
}

double Poisson3dOperator::boundary_row(const double* x, int i, int j, int k) const {
  const std::size_t sy = static_cast<std::size_t>(nx_);
  const std::size_t sz = sy * static_cast<std::size_t>(ny_);
  const std::size_t c = static_cast<std::size_t>(k) * sz + static_cast<std::size_t>(j) * sy + static_cast<std::size_t>(i);
  const std::size_t fx = static_cast<std::size_t>(k) * static_cast<std::size_t>(ny_) + static_cast<std::size_t>(j);
  const std::size_t fy = static_cast<std::size_t>(k) * sy + static_cast<std::size_t>(i);
  const std::size_t fz = static_cast<std::size_t>(j) * sy + static_cast<std::size_t>(i);
  double s = 0.0;
  if (k == 0 && remote_[Face::z_lo]) s -= ghost_[Face::z_lo][fz];
  if (j == 0 && remote_[Face::y_lo]) s -= ghost_[Face::y_lo][fy];
  if (i == 0 && remote_[Face::x_lo]) s -= ghost_[Face::x_lo][fx];
  if (k > 0) s -= x[c - sz];
  if (j > 0) s -= x[c - sy];
  if (i > 0) s -= x[c - 1];
  s += 6.0 * x[c];
  if (i < nx_ - 1) s -= x[c + 1];
  if (j < ny_ - 1) s -= x[c + sy];
  if (k < nz_ - 1) s -= x[c + sz];
  if (i == nx_ - 1 && remote_[Face::x_hi]) s -= ghost_[Face::x_hi][fx];
  if (j == ny_ - 1 && remote_[Face::y_hi]) s -= ghost_[Face::y_hi][fy];
  if (k == nz_ - 1 && remote_[Face::z_hi]) s -= ghost_[Face::z_hi][fz];
  return s;
}

void Poisson3dOperator::boundary(const double* x, double* y) const {
  const std::size_t sy = static_cast<std::size_t>(nx_);
  const std::size_t sz = sy * static_cast<std::size_t>(ny_);
  for (int k = 0; k < nz_; ++k)
    for (int j = 0; j < ny_; ++j) {
      double* yl = y + static_cast<std::size_t>(k) * sz + static_cast<std::size_t>(j) * sy;
      const bool whole = k < lo_[2] || k >= hi_[2] || j < lo_[1] || j >= hi_[1];
      if (whole) {
        for (int i = 0; i < nx_; ++i) yl[i] = boundary_row(x, i, j, k);
      } else {
        for (int i = 0; i < lo_[0]; ++i) yl[i] = boundary_row(x, i, j, k);
        for (int i = hi_[0]; i < nx_; ++i) yl[i] = boundary_row(x, i, j, k);
      }
    }
}

void Poisson3dOperator::apply(std::span<const double> x, std::span<double> y) {
  if (static_cast<std::int64_t>(x.size()) != n_local_ || static_cast<std::int64_t>(y.size()) != n_local_)
    throw std::invalid_argument("poisson3d apply: vectors must have local_size() entries");
  const double t0 = MPI_Wtime();
  exchange_->start(x.data());
  const double t1 = MPI_Wtime();
  const double charged = interior(x.data(), y.data());
  // Simulated cluster: the interior rows' cost (less what the polls charged), charged while the
  // halos travel.
  const double inner =
      static_cast<double>(std::max(0, hi_[0] - lo_[0])) * std::max(0, hi_[1] - lo_[1]) * std::max(0, hi_[2] - lo_[2]);
  core::charge("poisson3d.row", inner - charged);
  const double t2 = MPI_Wtime();
  exchange_->finish();
  const double t3 = MPI_Wtime();
  boundary(x.data(), y.data());
  core::charge("poisson3d.row", static_cast<double>(n_local_) - inner);
  const double t4 = MPI_Wtime();
  ++stats_.applications;
  stats_.interior_seconds += t2 - t1;
  stats_.boundary_seconds += t4 - t3;
  stats_.wait_seconds += (t1 - t0) + (t3 - t2);
}

std::vector<double> Poisson3dOperator::diagonal() const {
  return std::vector<double>(static_cast<std::size_t>(n_local_), 6.0);
}

linalg::LocalCsr Poisson3dOperator::diagonal_block() const {
  linalg::LocalCsr D;
  D.rows = n_local_;
  D.row_ptr.reserve(static_cast<std::size_t>(n_local_) + 1);
  D.col.reserve(static_cast<std::size_t>(n_local_) * 7);
  D.val.reserve(static_cast<std::size_t>(n_local_) * 7);
  D.row_ptr.push_back(0);
  const std::int32_t sy = nx_, sz = nx_ * ny_;
  for (int k = 0; k < nz_; ++k)
    for (int j = 0; j < ny_; ++j)
      for (int i = 0; i < nx_; ++i) {
        const std::int32_t c = k * sz + j * sy + i;
        auto add = [&](std::int32_t col, double v) {
          D.col.push_back(col);
          D.val.push_back(v);
        };
        if (k > 0) add(c - sz, -1.0);
        if (j > 0) add(c - sy, -1.0);
        if (i > 0) add(c - 1, -1.0);
        add(c, 6.0);
        if (i < nx_ - 1) add(c + 1, -1.0);
        if (j < ny_ - 1) add(c + sy, -1.0);
        if (k < nz_ - 1) add(c + sz, -1.0);
        D.row_ptr.push_back(static_cast<std::int64_t>(D.col.size()));
      }
  return D;
}

const linalg::SpmvStats& Poisson3dOperator::stats() const {
  stats_.exchange = exchange_->stats();
  return stats_;
}

void Poisson3dOperator::reset_stats() {
  stats_ = linalg::SpmvStats{};
  exchange_->reset_stats();
}

}  // namespace desync::problems
