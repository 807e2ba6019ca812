// Rank-local direct solvers (include/desync/linalg/local_solver.hpp): CHOLMOD in either of its two
// modes, UMFPACK, and the automatic choice between them.
#include "desync/linalg/local_solver.hpp"

#include <suitesparse/cholmod.h>
#include <suitesparse/umfpack.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "desync/core/timer.hpp"

namespace desync::linalg {

namespace {

// CHOLMOD's int interface: a symmetric matrix's CSR arrays are its CSC arrays (stype 1: the upper
// triangle of the CSC matrix, i.e. the lower triangle of the rows, is read).
class CholmodSolver final : public LocalSolver {
 public:
  // mode: CHOLMOD_SIMPLICIAL, CHOLMOD_SUPERNODAL, or CHOLMOD_AUTO (CHOLMOD's analysis chooses:
  // supernodal where its factorisation does at least `supernodal_switch` flops per entry of L;
  // 0: CHOLMOD's own default, 40).
  CholmodSolver(const LocalCsr& a, int mode, double supernodal_switch = supernodal_flops_per_entry) {
    core::Stopwatch clock;
    cholmod_start(&c_);
    c_.print = 0;
    c_.supernodal = mode;
    if (supernodal_switch > 0) c_.supernodal_switch = supernodal_switch;
    rows_ = a.rows;
    const auto n = static_cast<std::size_t>(a.rows);
    const auto nnz = static_cast<std::size_t>(a.row_ptr.empty() ? 0 : a.row_ptr.back());
    cholmod_sparse* A = cholmod_allocate_sparse(n, n, nnz, 1, 1, 1, CHOLMOD_REAL, &c_);
    if (!A) fail("CHOLMOD could not allocate the matrix (out of memory)");
    auto* p = static_cast<int*>(A->p);
    for (std::size_t r = 0; r <= n; ++r) p[r] = static_cast<int>(a.row_ptr[r]);
    std::copy(a.col.begin(), a.col.end(), static_cast<int*>(A->i));
    std::copy(a.val.begin(), a.val.end(), static_cast<double*>(A->x));
    L_ = cholmod_analyze(A, &c_);
    const bool analysed = L_ != nullptr;
    if (analysed) {
      kind_ = L_->is_super ? LocalSolverKind::cholmod_supernodal : LocalSolverKind::cholmod_simplicial;
      flops_per_entry_ = c_.lnz > 0 ? c_.fl / c_.lnz : 0.0;
      cholmod_factorize(A, L_, &c_);
    }
    cholmod_free_sparse(&A, &c_);
    if (!analysed || c_.status == CHOLMOD_OUT_OF_MEMORY) fail(fmt::format("CHOLMOD ran out of memory ({} rows)", n));
    // A simplicial LDL^T succeeds on an indefinite matrix: a D_jj <= 0 is the leading minor j + 1
    // that is not positive (the diagonal entry comes first in its column).
    if (L_->minor >= n && !L_->is_ll && !L_->is_super) {
      const auto* Lp = static_cast<const int*>(L_->p);
      const auto* Lx = static_cast<const double*>(L_->x);
      for (std::size_t j = 0; j < n; ++j)
        if (!(Lx[Lp[j]] > 0)) {
          L_->minor = j;
          break;
        }
    }
    if (c_.status == CHOLMOD_NOT_POSDEF || L_->minor < n)
      fail(fmt::format("not positive definite (CHOLMOD: the leading minor of order {} of {} is not)", L_->minor + 1, n));
    if (c_.status < CHOLMOD_OK) fail(fmt::format("CHOLMOD failed with status {}", c_.status));
    factor_nonzeros_ = static_cast<std::int64_t>(c_.lnz);
    factor_seconds_ = clock.seconds();
  }
  ~CholmodSolver() override { release(); }
  /// The analysis's factorisation flops per entry of L.
  double flops_per_entry() const { return flops_per_entry_; }

  void solve(const double* b, double* x) override {
    cholmod_dense B{};
    B.nrow = B.d = B.nzmax = static_cast<std::size_t>(rows_);
    B.ncol = 1;
    B.x = const_cast<double*>(b);  // read only: cholmod_solve2 does not write B
    B.xtype = CHOLMOD_REAL;
    B.dtype = CHOLMOD_DOUBLE;
    cholmod_solve2(CHOLMOD_A, L_, &B, nullptr, &X_, nullptr, &Y_, &E_, &c_);  // x <- (L D L^T)^{-1} b
    std::memcpy(x, X_->x, sizeof(double) * static_cast<std::size_t>(rows_));
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    release();
    throw FactorisationError(why);
  }
  void release() {
    if (released_) return;
    released_ = true;
    cholmod_free_dense(&X_, &c_);
    cholmod_free_dense(&Y_, &c_);
    cholmod_free_dense(&E_, &c_);
    cholmod_free_factor(&L_, &c_);
    cholmod_finish(&c_);
  }
  cholmod_common c_{};
  cholmod_factor* L_ = nullptr;
  cholmod_dense *X_ = nullptr, *Y_ = nullptr, *E_ = nullptr;  // solution and workspace, reused
  bool released_ = false;
  double flops_per_entry_ = 0;
};

// UMFPACK takes compressed columns; the CSR arrays of A are the CSC arrays of A^T, so the solves
// ask for the transposed system (UMFPACK_At) and no copy is transposed.
class UmfpackSolver final : public LocalSolver {
 public:
  explicit UmfpackSolver(const LocalCsr& a) {
    core::Stopwatch clock;
    kind_ = LocalSolverKind::umfpack;
    rows_ = a.rows;
    if (a.rows > std::numeric_limits<int>::max() || (!a.row_ptr.empty() && a.row_ptr.back() > std::numeric_limits<int>::max()))
      throw FactorisationError("too large for UMFPACK's 32-bit interface");
    const int n = static_cast<int>(a.rows);
    ptr_.assign(a.row_ptr.begin(), a.row_ptr.end());
    col_.assign(a.col.begin(), a.col.end());
    val_ = a.val;
    umfpack_di_defaults(control_);
    void* symbolic = nullptr;
    int status = umfpack_di_symbolic(n, n, ptr_.data(), col_.data(), val_.data(), &symbolic, control_, info_);
    if (status != UMFPACK_OK) {
      umfpack_di_free_symbolic(&symbolic);
      throw FactorisationError(fmt::format("UMFPACK's analysis failed (status {})", status));
    }
    status = umfpack_di_numeric(ptr_.data(), col_.data(), val_.data(), symbolic, &numeric_, control_, info_);
    umfpack_di_free_symbolic(&symbolic);
    if (status == UMFPACK_WARNING_singular_matrix) {
      umfpack_di_free_numeric(&numeric_);
      throw FactorisationError("singular matrix (UMFPACK found a zero pivot)");
    }
    if (status != UMFPACK_OK) {
      umfpack_di_free_numeric(&numeric_);
      throw FactorisationError(fmt::format("UMFPACK's factorisation failed (status {})", status));
    }
    factor_nonzeros_ = static_cast<std::int64_t>(info_[UMFPACK_LNZ] + info_[UMFPACK_UNZ]);
    work_i_.resize(static_cast<std::size_t>(n));
    work_d_.resize(5 * static_cast<std::size_t>(n));
    factor_seconds_ = clock.seconds();
  }
  ~UmfpackSolver() override { umfpack_di_free_numeric(&numeric_); }

  void solve(const double* b, double* x) override {
    // x <- A^{-1} b, with A^T the matrix UMFPACK factored (see above); no iterative refinement.
    double control[UMFPACK_CONTROL];
    std::copy(control_, control_ + UMFPACK_CONTROL, control);
    control[UMFPACK_IRSTEP] = 0;
    umfpack_di_wsolve(UMFPACK_At, ptr_.data(), col_.data(), val_.data(), x, b, numeric_, control, nullptr,
                      work_i_.data(), work_d_.data());
  }

 private:
  std::vector<int> ptr_, col_;
  std::vector<double> val_;
  std::vector<int> work_i_;
  std::vector<double> work_d_;
  double control_[UMFPACK_CONTROL];
  double info_[UMFPACK_INFO];
  void* numeric_ = nullptr;
};

// ILU(k) (Saad, 2003, section 10.3.3): the pattern of L + U is A's own with every fill entry of level
// at most k, where an entry of A has level 0 and the fill that l_ik u_kj makes at (i, j) has level
// lev_ik + lev_kj + 1 (the smallest over the k that make it; Algorithm 10.5's "update the levels").
// The symbolic pass builds that pattern row by row; the numeric pass is Algorithm 10.4's IKJ loop
// on it, L unit lower (its multipliers below the diagonal), U upper with the diagonal, fill outside
// the pattern dropped, or with relax = omega > 0 moved onto the row's diagonal times omega (relaxed
// modified ILU, Gustafsson, 1978; Saad, 2003, section 10.3.5: omega = 1 keeps every row sum,
// L U e = A e). k = 0: A's pattern, ILU(0). Solve: L y = b forward, U x = y backward.
class IluSolver final : public LocalSolver {
 public:
  IluSolver(const LocalCsr& a, int levels, double relax) {
    core::Stopwatch clock;
    kind_ = ilu_kind(levels);
    rows_ = a.rows;
    const auto n = static_cast<std::size_t>(a.rows);
    if (levels == 0) {
      ptr_ = a.row_ptr;
      col_ = a.col;
      val_ = a.val;
    } else {
      symbolic(a, levels);
    }
    diag_.assign(n, 0);
    std::vector<std::int64_t> where(n, -1);  // row i's position of column j, while row i is worked on
    for (std::size_t i = 0; i < n; ++i) {
      const auto begin = static_cast<std::size_t>(ptr_[i]), end = static_cast<std::size_t>(ptr_[i + 1]);
      for (auto p = begin; p < end; ++p) where[static_cast<std::size_t>(col_[p])] = static_cast<std::int64_t>(p);
      if (where[i] < 0) throw FactorisationError(fmt::format("zero pivot in ILU({}) at row {} (no diagonal entry)", levels, i));
      diag_[i] = static_cast<std::size_t>(where[i]);
      const double aii = val_[diag_[i]];
      for (auto p = begin; p < end && static_cast<std::size_t>(col_[p]) < i; ++p) {
        const auto k = static_cast<std::size_t>(col_[p]);
        val_[p] /= val_[diag_[k]];  // l_ik = a_ik / u_kk                           (Alg. 10.4, line 3)
        for (auto q = diag_[k] + 1; q < static_cast<std::size_t>(ptr_[k + 1]); ++q) {
          const std::int64_t at = where[static_cast<std::size_t>(col_[q])];
          if (at >= 0) val_[static_cast<std::size_t>(at)] -= val_[p] * val_[q];  // a_ij -= l_ik u_kj on the pattern (line 5)
          else if (relax != 0) val_[diag_[i]] -= relax * val_[p] * val_[q];       // dropped: a_ii -= omega l_ik u_kj (MILU)
        }
      }
      for (auto p = begin; p < end; ++p) where[static_cast<std::size_t>(col_[p])] = -1;
      if (!(std::abs(val_[diag_[i]]) > 0) || !std::isfinite(val_[diag_[i]]))
        throw FactorisationError(fmt::format("zero pivot in ILU({}) at row {}", levels, i));
      // MILU's pivots stay positive on a diagonally dominant M-matrix; elsewhere the fill moved onto
      // the diagonal can outweigh it (a badly scaled matrix), and M would be indefinite.
      if (relax != 0 && aii > 0 && !(val_[diag_[i]] > 0))
        throw FactorisationError(fmt::format("ILU({}) relaxed by {}: pivot {:.3g} <= 0 at row {} (a_ii = {:.3g}): the "
                                             "dropped fill moved onto the diagonal outweighs it; relaxed ILU needs "
                                             "a diagonally dominant matrix, or a smaller --ilu-relax",
                                             levels, relax, val_[diag_[i]], i, aii));
    }
    factor_nonzeros_ = static_cast<std::int64_t>(val_.size());
    factor_seconds_ = clock.seconds();
    if (relax != 0) reason_ = fmt::format("requested, relaxed: dropped fill onto the diagonal times {}", relax);
  }

  void solve(const double* b, double* x) override {
    const auto n = static_cast<std::size_t>(rows_);
    for (std::size_t i = 0; i < n; ++i) {  // L y = b (unit diagonal), y in x
      double s = b[i];
      for (auto p = static_cast<std::size_t>(ptr_[i]); p < diag_[i]; ++p) s -= val_[p] * x[col_[p]];
      x[i] = s;
    }
    for (std::size_t i = n; i-- > 0;) {  // U x = y
      double s = x[i];
      for (auto p = diag_[i] + 1; p < static_cast<std::size_t>(ptr_[i + 1]); ++p) s -= val_[p] * x[col_[p]];
      x[i] = s / val_[diag_[i]];
    }
  }

 private:
  // The level-k pattern, row by row, with A's values and zeros at the fill: row i starts from A's
  // columns (level 0); its columns below i are taken in ascending order (a min-heap: a column's
  // level is final when it is taken, since only smaller columns change it), and each taken column
  // k < i with level l_ik passes row k's upper columns j at level l_ik + lev_kj + 1, kept if <= levels.
  void symbolic(const LocalCsr& a, int levels) {
    const auto n = static_cast<std::size_t>(a.rows);
    constexpr int none = std::numeric_limits<int>::max();
    std::vector<int> level(n, none);  // row i's level of column j, while row i is built
    std::vector<int> lev;             // the kept entries' levels, beside col_ (the upper parts are read)
    std::vector<std::int32_t> cols;
    std::priority_queue<std::int32_t, std::vector<std::int32_t>, std::greater<>> lower;
    ptr_.assign(1, 0);
    std::vector<std::size_t> udiag(n, 0);  // row k's position of its diagonal in col_
    for (std::size_t i = 0; i < n; ++i) {
      cols.clear();
      for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const std::int32_t j = a.col[static_cast<std::size_t>(p)];
        level[static_cast<std::size_t>(j)] = 0;
        cols.push_back(j);
        if (static_cast<std::size_t>(j) < i) lower.push(j);
      }
      while (!lower.empty()) {
        const auto k = static_cast<std::size_t>(lower.top());
        lower.pop();
        const int lik = level[k];
        for (auto q = udiag[k] + 1; q < static_cast<std::size_t>(ptr_[k + 1]); ++q) {
          const int l = lik + lev[q] + 1;
          if (l > levels) continue;
          const auto j = static_cast<std::size_t>(col_[q]);
          if (level[j] == none) {
            cols.push_back(static_cast<std::int32_t>(j));
            if (j < i) lower.push(static_cast<std::int32_t>(j));
          }
          level[j] = std::min(level[j], l);
        }
      }
      std::sort(cols.begin(), cols.end());
      for (const std::int32_t j : cols) {
        if (static_cast<std::size_t>(j) == i) udiag[i] = col_.size();
        col_.push_back(j);
        lev.push_back(level[static_cast<std::size_t>(j)]);
        level[static_cast<std::size_t>(j)] = none;
      }
      ptr_.push_back(static_cast<std::int64_t>(col_.size()));
      if (std::find(cols.begin(), cols.end(), static_cast<std::int32_t>(i)) == cols.end())
        throw FactorisationError(fmt::format("zero pivot in ILU({}) at row {} (no diagonal entry)", levels, i));
    }
    // A's values on the new pattern, zero at the fill.
    val_.assign(col_.size(), 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      auto q = static_cast<std::size_t>(ptr_[i]);
      for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        while (col_[q] != a.col[static_cast<std::size_t>(p)]) ++q;  // both ascending; A's columns are a subset
        val_[q] = a.val[static_cast<std::size_t>(p)];
      }
    }
  }

  std::vector<std::int64_t> ptr_;
  std::vector<std::int32_t> col_;
  std::vector<double> val_;
  std::vector<std::size_t> diag_;
};

/// Seconds per solve, the smallest of three.
double time_solve(LocalSolver& s) {
  std::vector<double> b(static_cast<std::size_t>(s.rows()), 1.0), x(b.size());
  double best = HUGE_VAL;
  for (int k = 0; k < 3; ++k) {
    core::Stopwatch t;
    s.solve(b.data(), x.data());
    best = std::min(best, t.seconds());
  }
  return best;
}

}  // namespace

bool symmetric_positive_diagonal(const LocalCsr& a) {
  double amax = 0;
  for (double v : a.val) amax = std::max(amax, std::abs(v));
  const double tol = 1e-12 * amax;
  for (std::int64_t i = 0; i < a.rows; ++i) {
    bool diag = false;
    for (auto p = a.row_ptr[static_cast<std::size_t>(i)]; p < a.row_ptr[static_cast<std::size_t>(i) + 1]; ++p) {
      const std::int32_t j = a.col[static_cast<std::size_t>(p)];
      const double v = a.val[static_cast<std::size_t>(p)];
      if (j == i) {
        if (!(v > 0)) return false;
        diag = true;
        continue;
      }
      // a_ji: binary search in row j (columns ascending).
      const auto b = a.col.begin() + a.row_ptr[static_cast<std::size_t>(j)];
      const auto e = a.col.begin() + a.row_ptr[static_cast<std::size_t>(j) + 1];
      const auto it = std::lower_bound(b, e, static_cast<std::int32_t>(i));
      if (it == e || *it != i) return false;
      if (std::abs(a.val[static_cast<std::size_t>(it - a.col.begin())] - v) > tol) return false;
    }
    if (!diag) return false;
  }
  return true;
}

std::unique_ptr<LocalSolver> make_local_solver(const LocalCsr& a, LocalSolverKind kind, LocalSolverUse use,
                                               double ilu_relax) {
  if (!(ilu_relax >= 0 && ilu_relax <= 1))
    throw std::invalid_argument(fmt::format("ILU relaxation {}: must be in [0, 1]", ilu_relax));
  if (ilu_relax != 0 && exact(kind))
    throw std::invalid_argument(fmt::format("ILU relaxation {} with the local solver {}: ilu0-ilu3 only", ilu_relax,
                                            to_string(kind)));
  switch (kind) {
    case LocalSolverKind::cholmod_simplicial: return std::make_unique<CholmodSolver>(a, CHOLMOD_SIMPLICIAL);
    case LocalSolverKind::cholmod_supernodal: return std::make_unique<CholmodSolver>(a, CHOLMOD_SUPERNODAL);
    case LocalSolverKind::cholmod: return std::make_unique<CholmodSolver>(a, CHOLMOD_AUTO, /*CHOLMOD's own*/ 0.0);
    case LocalSolverKind::umfpack: return std::make_unique<UmfpackSolver>(a);
    case LocalSolverKind::ilu0: return std::make_unique<IluSolver>(a, 0, ilu_relax);
    case LocalSolverKind::ilu1: return std::make_unique<IluSolver>(a, 1, ilu_relax);
    case LocalSolverKind::ilu2: return std::make_unique<IluSolver>(a, 2, ilu_relax);
    case LocalSolverKind::ilu3: return std::make_unique<IluSolver>(a, 3, ilu_relax);
    case LocalSolverKind::automatic: break;
  }
  std::unique_ptr<LocalSolver> s;
  std::string reason;
  if (!symmetric_positive_diagonal(a)) {
    s = std::make_unique<UmfpackSolver>(a);
    reason = fmt::format("not symmetric or a diagonal entry <= 0, {} rows", a.rows);
  } else {
    try {
      const bool many = use == LocalSolverUse::many_solves;
      if (many && a.rows < auto_trial_rows) {
        s = std::make_unique<CholmodSolver>(a, CHOLMOD_SIMPLICIAL);
        reason = fmt::format("symmetric, positive diagonal, {} rows", a.rows);
      } else {
        // One analysis decides by the flops per entry of L (2D blocks ~80-170: simplicial; 3D ~400
        // and up: supernodal); a block solved many times then has its two modes' solves timed,
        // unless the analysis chose simplicial, whose solves measured faster on every block tried
        // (local_solver.hpp).
        auto first = std::make_unique<CholmodSolver>(a, CHOLMOD_AUTO);
        reason = fmt::format("symmetric, positive diagonal, {} rows, {:.0f} flops per factor entry", a.rows,
                             first->flops_per_entry());
        const bool super = first->kind() == LocalSolverKind::cholmod_supernodal;
        if (many && super) {
          const double supernodal = time_solve(*first);
          auto simple = std::make_unique<CholmodSolver>(a, CHOLMOD_SIMPLICIAL);
          const double simplicial = time_solve(*simple);
          const double factored = first->factor_seconds() + simple->factor_seconds();
          reason += fmt::format("; trial: simplicial {:.3g} ms, supernodal {:.3g} ms per solve", 1e3 * simplicial,
                                1e3 * supernodal);
          s = supernodal < simplicial ? std::unique_ptr<LocalSolver>(std::move(first))
                                      : std::unique_ptr<LocalSolver>(std::move(simple));
          s->factor_seconds_ = factored;
        } else {
          if (many) reason += fmt::format(" (< {:.0f}: simplicial, no trial)", supernodal_flops_per_entry);
          s = std::move(first);
        }
      }
    } catch (const FactorisationError& e) {
      s = std::make_unique<UmfpackSolver>(a);
      reason = fmt::format("symmetric but {}: UMFPACK, {} rows", e.what(), a.rows);
    }
  }
  s->reason_ = reason;
  return s;
}

}  // namespace desync::linalg
