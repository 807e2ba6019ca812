// Block Jacobi with IC(0) blocks: M is block diagonal with one block per rank, each rank's block
// being the IC(0) factorisation L L^T of its diagonal block of A (incomplete Cholesky with zero
// fill-in: L has the sparsity of the lower triangle of the block). Applying it is a forward and a
// backward triangular solve (Horikoshi et al., 2022, section 2: IC(0) with block-Jacobi
// localisation).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "desync/communication/reduction.hpp"
#include "desync/core/error.hpp"
#include "desync/linalg/vector.hpp"
#include "desync/solvers/pc/preconditioner.hpp"

namespace desync::solvers {

Ic0Factor::Ic0Factor(const linalg::LocalCsr& a, int rank, std::int64_t first_global_row) : n_(a.rows) {
  const auto n = static_cast<std::size_t>(n_);
  // Pattern of the strictly lower triangle; values start as A's.
  ptr_.assign(n + 1, 0);
  for (std::int64_t i = 0; i < n_; ++i) {
    std::int64_t count = 0;
    for (std::int64_t e = a.row_ptr[static_cast<std::size_t>(i)]; e < a.row_ptr[static_cast<std::size_t>(i) + 1]; ++e)
      if (a.col[static_cast<std::size_t>(e)] < i) ++count;
    ptr_[static_cast<std::size_t>(i) + 1] = ptr_[static_cast<std::size_t>(i)] + count;
  }
  col_.resize(static_cast<std::size_t>(ptr_[n]));
  val_.resize(static_cast<std::size_t>(ptr_[n]));
  inv_diag_.assign(n, 0.0);
  std::vector<double> diag(n, 0.0), work(n, 0.0);
  std::vector<char> has_diag(n, 0);
  for (std::int64_t i = 0; i < n_; ++i) {
    std::int64_t k = ptr_[static_cast<std::size_t>(i)];
    for (std::int64_t e = a.row_ptr[static_cast<std::size_t>(i)]; e < a.row_ptr[static_cast<std::size_t>(i) + 1]; ++e) {
      const auto c = a.col[static_cast<std::size_t>(e)];
      if (c < i) {
        col_[static_cast<std::size_t>(k)] = c;
        val_[static_cast<std::size_t>(k)] = a.val[static_cast<std::size_t>(e)];
        ++k;
      } else if (c == i) {
        diag[static_cast<std::size_t>(i)] += a.val[static_cast<std::size_t>(e)];
        has_diag[static_cast<std::size_t>(i)] = 1;
      }
    }
  }
  auto fail = [&](std::int64_t i, const std::string& what) {
    throw PcSetupError(fmt::format(
        "bjacobi-ic0: IC(0) factorisation failed on rank {} at local row {} (global row {}): {}; the matrix "
        "is not symmetric positive definite, or IC(0) breaks down on it (try --pc jacobi or none)",
        rank, i, first_global_row + i, what));
  };
  // Row i of L: for each j < i in the pattern, ascending:
  //   L_ij = (a_ij - sum_{k < j} L_ik L_jk) / L_jj,   L_ii = sqrt(a_ii - sum_{k < i} L_ik^2),
  // sums over the pattern only. `work` holds row i's finished entries scattered by column (zero
  // elsewhere), so sum_{k<j} L_ik L_jk is a walk over row j.
  for (std::int64_t i = 0; i < n_; ++i) {
    const auto b = static_cast<std::size_t>(ptr_[static_cast<std::size_t>(i)]);
    const auto e = static_cast<std::size_t>(ptr_[static_cast<std::size_t>(i) + 1]);
    double d = diag[static_cast<std::size_t>(i)];
    for (std::size_t t = b; t < e; ++t) {
      const auto j = static_cast<std::size_t>(col_[t]);
      double v = val_[t];
      for (auto s = static_cast<std::size_t>(ptr_[j]); s < static_cast<std::size_t>(ptr_[j + 1]); ++s)
        v -= val_[s] * work[static_cast<std::size_t>(col_[s])];
      v *= inv_diag_[j];
      val_[t] = v;
      work[j] = v;
      d -= v * v;
    }
    for (std::size_t t = b; t < e; ++t) work[static_cast<std::size_t>(col_[t])] = 0.0;
    if (!has_diag[static_cast<std::size_t>(i)]) fail(i, "no diagonal entry");
    if (!std::isfinite(d)) fail(i, "non-finite pivot");
    if (!(d > 0)) fail(i, fmt::format("pivot {:.6e} is {}", d, d == 0 ? "zero" : "negative"));
    inv_diag_[static_cast<std::size_t>(i)] = 1.0 / std::sqrt(d);
  }
}

double Ic0Factor::solve(std::span<const double> r, std::span<double> u, const PcPolls* polls) const {
  const double* rp = r.data();
  double* up = u.data();
  const std::int64_t* ptr = ptr_.data();
  const std::int32_t* col = col_.data();
  const double* val = val_.data();
  const double* id = inv_diag_.data();
  // Rows per chunk: a poll after each (progress control), or the whole pass in one.
  const bool polling = polls != nullptr && polls->active();
  const std::int64_t step = polling ? polls->interval : std::max<std::int64_t>(n_, 1);
  // Forward: L y = r (row-oriented).
  for (std::int64_t b = 0; b < n_; b += step) {
    const std::int64_t e = std::min(n_, b + step);
    for (std::int64_t i = b; i < e; ++i) {
      double v = rp[i];
      for (std::int64_t t = ptr[i]; t < ptr[i + 1]; ++t) v -= val[t] * up[col[t]];
      up[i] = v * id[i];
    }
    if (polling) polls->poll(0.5 * static_cast<double>(e - b));
  }
  // Backward: L^T u = y, column-oriented over L's rows, in place; (r, u) accumulated as u_i is final.
  double ru = 0;
  for (std::int64_t b = n_; b > 0; b -= step) {
    const std::int64_t e = std::max<std::int64_t>(0, b - step);
    for (std::int64_t i = b - 1; i >= e; --i) {
      const double ui = up[i] * id[i];
      up[i] = ui;
      ru += rp[i] * ui;
      for (std::int64_t t = ptr[i]; t < ptr[i + 1]; ++t) up[col[t]] -= val[t] * ui;
    }
    if (polling) polls->poll(0.5 * static_cast<double>(b - e));
  }
  return ru;
}

namespace {

class BlockIc0Pc final : public Preconditioner {
 public:
  explicit BlockIc0Pc(Ic0Factor f) : f_(std::move(f)) {}
  std::string description() const override { return "bjacobi-ic0"; }
  void apply(std::span<const double> r, std::span<double> u) const override { f_.solve(r, u, &polls_); }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    return f_.solve(r, u, &polls_);
  }

 private:
  Ic0Factor f_;
};


std::unique_ptr<Preconditioner> make_bjacobi_ic0(const linalg::Operator& A, const SchwarzPcSetup&, bool) {
  int rank = 0;
  MPI_Comm_rank(A.comm(), &rank);
  // First global row of this rank: the exclusive prefix sum of the local sizes.
  const std::int64_t first = comm::exclusive_prefix_sum(A.comm(), A.local_size());
  return std::make_unique<BlockIc0Pc>(Ic0Factor(A.diagonal_block(), rank, first));
}

}  // namespace

PcInfo bjacobi_ic0_pc() {
  return {.name = "bjacobi-ic0",
          .description = "block Jacobi, one IC(0) block per rank (Horikoshi et al., 2022)",
          .cost = "pc.bjacobi-ic0",
          .make = &make_bjacobi_ic0};
}

}  // namespace desync::solvers
