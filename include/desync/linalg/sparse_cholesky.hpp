#pragma once
// Sparse Cholesky factorisation of a rank-local symmetric positive definite matrix, by SuiteSparse
// CHOLMOD: factored once (fill-reducing ordering, supernodal or simplicial as CHOLMOD chooses),
// then solve() every iteration with workspace kept between calls. The optimized Schwarz method's
// subdomain solves (Yamazaki et al., 2019, section 4: "a sparse direct method for solving the local
// problems") use it.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "desync/linalg/csr.hpp"

namespace desync::linalg {

/// The factorisation failed (the matrix is not positive definite, or CHOLMOD ran out of memory):
/// the message says which and where.
class FactorisationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SparseCholesky {
 public:
  /// Factors `a` (square, symmetric, full storage: both triangles; CHOLMOD reads the upper one).
  /// Throws FactorisationError with CHOLMOD's reason (e.g. "not positive definite: the leading
  /// minor of order k").
  explicit SparseCholesky(const LocalCsr& a);
  ~SparseCholesky();
  SparseCholesky(const SparseCholesky&) = delete;
  SparseCholesky& operator=(const SparseCholesky&) = delete;

  /// x <- A^{-1} b (b and x of length rows(); they may not overlap).
  void solve(const double* b, double* x);

  std::int64_t rows() const { return rows_; }
  /// Nonzeros of the factor L (its memory, in doubles).
  std::int64_t factor_nonzeros() const { return factor_nonzeros_; }
  /// Seconds of the analysis and the numerical factorisation.
  double factor_seconds() const { return factor_seconds_; }

 private:
  struct State;
  std::unique_ptr<State> s_;
  std::int64_t rows_ = 0;
  std::int64_t factor_nonzeros_ = 0;
  double factor_seconds_ = 0;
};

}  // namespace desync::linalg
