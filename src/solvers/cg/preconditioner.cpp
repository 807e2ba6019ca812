#include "desync/solvers/cg/preconditioner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "desync/linalg/vector.hpp"
#include "desync/core/error.hpp"
#include "desync/solvers/schwarz/overlap.hpp"

namespace desync::solvers {

std::string pc_cost_kind(PcKind kind) { return std::string("pc.") + to_string(kind); }

std::vector<core::CostKind> pc_cost_kinds() {
  std::vector<core::CostKind> kinds;
  // asm and ras came after cost models that runs still use were recorded (docs/data).
  for (const auto& k : pc_names) kinds.push_back({pc_cost_kind(k.value), is_schwarz(k.value)});
  return kinds;
}

// ---- IC(0) ------------------------------------------------------------------------------------

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

// ---- the preconditioners ----------------------------------------------------------------------

namespace {

class IdentityPc final : public Preconditioner {
 public:
  PcKind kind() const override { return PcKind::none; }
  void apply(std::span<const double> r, std::span<double> u) const override { linalg::copy(r, u); }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    linalg::copy(r, u);
    return linalg::dot(r, r);
  }
};

class JacobiPc final : public Preconditioner {
 public:
  explicit JacobiPc(std::vector<double> inv) : inv_(std::move(inv)) {}
  PcKind kind() const override { return PcKind::jacobi; }
  void apply(std::span<const double> r, std::span<double> u) const override {
    const double* rp = r.data();
    const double* d = inv_.data();
    double* up = u.data();
    const auto n = static_cast<std::int64_t>(r.size());
    const std::int64_t step = polls_.active() ? polls_.interval : std::max<std::int64_t>(n, 1);
    for (std::int64_t b = 0; b < n; b += step) {  // with polls, the same products, a poll per chunk
      const std::int64_t e = std::min(n, b + step);
#pragma omp simd
      for (std::int64_t i = b; i < e; ++i) up[i] = d[i] * rp[i];
      if (polls_.active()) polls_.poll(static_cast<double>(e - b));
    }
  }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    const double* rp = r.data();
    const double* d = inv_.data();
    double* up = u.data();
    const auto n = static_cast<std::int64_t>(r.size());
    const std::int64_t step = polls_.active() ? polls_.interval : std::max<std::int64_t>(n, 1);
    double s = 0;
    for (std::int64_t b = 0; b < n; b += step) {  // with polls, (r, u) is summed chunk by chunk
      const std::int64_t e = std::min(n, b + step);
#pragma omp simd reduction(+ : s)
      for (std::int64_t i = b; i < e; ++i) {
        const double z = d[i] * rp[i];
        up[i] = z;
        s += rp[i] * z;
      }
      if (polls_.active()) polls_.poll(static_cast<double>(e - b));
    }
    return s;
  }
  std::span<const double> inverse_diagonal() const override { return inv_; }

 private:
  std::vector<double> inv_;
};

class BlockIc0Pc final : public Preconditioner {
 public:
  explicit BlockIc0Pc(Ic0Factor f) : f_(std::move(f)) {}
  PcKind kind() const override { return PcKind::bjacobi_ic0; }
  void apply(std::span<const double> r, std::span<double> u) const override { f_.solve(r, u, &polls_); }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    return f_.solve(r, u, &polls_);
  }

 private:
  Ic0Factor f_;
};

}  // namespace

/// asm / ras: solvers::SchwarzPreconditioner behind the const interface (its exchange and buffers
/// change in apply, which is collective).
class SchwarzPc final : public Preconditioner {
 public:
  SchwarzPc(PcKind kind, std::unique_ptr<solvers::SchwarzPreconditioner> pc) : kind_(kind), pc_(std::move(pc)) {}
  PcKind kind() const override { return kind_; }
  std::string description() const override { return pc_->description(); }
  const solvers::CoarseSpace* coarse() const override { return pc_->coarse(); }
  void apply(std::span<const double> r, std::span<double> u) const override { pc_->apply(r, u); }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    pc_->apply(r, u);
    return linalg::dot(r, u);
  }

 private:
  PcKind kind_;
  std::unique_ptr<solvers::SchwarzPreconditioner> pc_;
};

std::unique_ptr<Preconditioner> make_preconditioner(PcKind kind, const linalg::Operator& A,
                                                    const SchwarzPcSetup& schwarz, bool positive_definite) {
  if (is_schwarz(kind)) {
    if (!schwarz.matrix)
      throw InputError(fmt::format("--pc {} needs an assembled matrix (--matrix, or --operator csr)", to_string(kind)));
    agree_or_throw(A.comm(), schwarz.matrix->local_rows() == A.local_size(),
                   fmt::format("--pc {}: the assembled matrix is distributed unlike the operator", to_string(kind)));
    solvers::OverlapOptions o;
    o.overlap = schwarz.overlap;
    o.solver = schwarz.local_solver;
    o.coarse = schwarz.coarse;
    return std::make_unique<SchwarzPc>(
        kind, std::make_unique<solvers::SchwarzPreconditioner>(*schwarz.matrix, o, kind == PcKind::restricted_schwarz,
                                                      schwarz.transport));
  }
  int rank = 0;
  MPI_Comm_rank(A.comm(), &rank);
  // First global row of this rank: the exclusive prefix sum of the local sizes.
  const std::int64_t first = comm::exclusive_prefix_sum(A.comm(), A.local_size());
  switch (kind) {
    case PcKind::none: return std::make_unique<IdentityPc>();
    case PcKind::jacobi: {
      std::vector<double> d = A.diagonal();
      for (std::size_t i = 0; i < d.size(); ++i) {
        if (!positive_definite && (d[i] == 0 || !std::isfinite(d[i])))
          throw PcSetupError(fmt::format("jacobi: diagonal entry {:.6e} of global row {} on rank {} is zero or not "
                                         "finite; Jacobi preconditioning needs a non-zero diagonal",
                                         d[i], first + static_cast<std::int64_t>(i), rank));
        if (positive_definite && (!(d[i] > 0) || !std::isfinite(d[i])))
          throw PcSetupError(fmt::format(
              "jacobi: diagonal entry {:.6e} of global row {} on rank {} is not positive; the matrix is "
              "not symmetric positive definite",
              d[i], first + static_cast<std::int64_t>(i), rank));
        d[i] = 1.0 / d[i];
      }
      return std::make_unique<JacobiPc>(std::move(d));
    }
    case PcKind::bjacobi_ic0: return std::make_unique<BlockIc0Pc>(Ic0Factor(A.diagonal_block(), rank, first));
    case PcKind::additive_schwarz:
    case PcKind::restricted_schwarz: break;  // above
  }
  return nullptr;
}

}  // namespace desync::solvers
