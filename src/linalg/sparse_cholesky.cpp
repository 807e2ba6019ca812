#include "desync/linalg/sparse_cholesky.hpp"

#include <suitesparse/cholmod.h>

#include <algorithm>
#include <cstring>

#include "desync/core/timer.hpp"

namespace desync::linalg {

struct SparseCholesky::State {
  cholmod_common c{};
  cholmod_factor* L = nullptr;
  cholmod_dense* X = nullptr;  // solution, reused
  cholmod_dense* Y = nullptr;  // workspace of cholmod_solve2
  cholmod_dense* E = nullptr;
  State() { cholmod_start(&c); c.print = 0; }
  ~State() {
    cholmod_free_dense(&X, &c);
    cholmod_free_dense(&Y, &c);
    cholmod_free_dense(&E, &c);
    cholmod_free_factor(&L, &c);
    cholmod_finish(&c);
  }
};

SparseCholesky::SparseCholesky(const LocalCsr& a) : s_(std::make_unique<State>()), rows_(a.rows) {
  core::Stopwatch clock;
  const auto n = static_cast<std::size_t>(a.rows);
  const auto nnz = static_cast<std::size_t>(a.row_ptr.empty() ? 0 : a.row_ptr.back());
  // A symmetric matrix's CSR arrays are its CSC arrays: hand them to CHOLMOD as they are.
  cholmod_sparse* A = cholmod_allocate_sparse(n, n, nnz, /*sorted=*/1, /*packed=*/1, /*stype=*/1, CHOLMOD_REAL, &s_->c);
  if (!A) throw FactorisationError("CHOLMOD could not allocate the matrix (out of memory)");
  auto* p = static_cast<int*>(A->p);
  auto* i = static_cast<int*>(A->i);
  auto* x = static_cast<double*>(A->x);
  for (std::size_t r = 0; r <= n; ++r) p[r] = static_cast<int>(a.row_ptr[r]);
  std::copy(a.col.begin(), a.col.end(), i);
  std::copy(a.val.begin(), a.val.end(), x);
  s_->L = cholmod_analyze(A, &s_->c);
  const bool analysed = s_->L != nullptr;
  if (analysed) cholmod_factorize(A, s_->L, &s_->c);
  cholmod_free_sparse(&A, &s_->c);
  if (!analysed || s_->c.status == CHOLMOD_OUT_OF_MEMORY)
    throw FactorisationError("CHOLMOD ran out of memory factoring a matrix of " + std::to_string(n) + " rows");
  // CHOLMOD may factor as LDL' (simplicial), which succeeds on an indefinite matrix: then a
  // non-positive D_jj is the leading minor of order j + 1 that is not positive.
  if (s_->L->minor >= n && !s_->L->is_ll && !s_->L->is_super) {
    const auto* Lp = static_cast<const int*>(s_->L->p);
    const auto* Lx = static_cast<const double*>(s_->L->x);
    for (std::size_t j = 0; j < n; ++j)
      if (!(Lx[Lp[j]] > 0)) {  // the diagonal entry comes first in its column
        s_->L->minor = j;
        break;
      }
  }
  if (s_->c.status == CHOLMOD_NOT_POSDEF || s_->L->minor < n)
    throw FactorisationError("the matrix is not positive definite (CHOLMOD: the leading minor of order " +
                             std::to_string(s_->L->minor + 1) + " of " + std::to_string(n) + " is not)");
  if (s_->c.status < CHOLMOD_OK)
    throw FactorisationError("CHOLMOD failed with status " + std::to_string(s_->c.status));
  factor_nonzeros_ = static_cast<std::int64_t>(s_->c.lnz);
  factor_seconds_ = clock.seconds();
}

SparseCholesky::~SparseCholesky() = default;

void SparseCholesky::solve(const double* b, double* x) {
  cholmod_dense B{};
  B.nrow = B.d = B.nzmax = static_cast<std::size_t>(rows_);
  B.ncol = 1;
  B.x = const_cast<double*>(b);  // read only: cholmod_solve2 does not write B
  B.xtype = CHOLMOD_REAL;
  B.dtype = CHOLMOD_DOUBLE;
  cholmod_solve2(CHOLMOD_A, s_->L, &B, nullptr, &s_->X, nullptr, &s_->Y, &s_->E, &s_->c);
  std::memcpy(x, s_->X->x, sizeof(double) * static_cast<std::size_t>(rows_));
}

}  // namespace desync::linalg
