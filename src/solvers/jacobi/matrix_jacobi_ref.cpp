// The plain synchronous reference of matrix Jacobi (matrix_jacobi.hpp): the whole matrix on one
// process, no communication, dense block solves. The tests compare solve_matrix_jacobi against it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "desync/solvers/jacobi/matrix_jacobi.hpp"

namespace desync::solvers {

namespace {

// x <- M^-1 r for a dense row-major m x m matrix M, by Gaussian elimination with partial pivoting.
void dense_solve(std::vector<double> M, std::vector<double> r, std::size_t m, double* x) {
  for (std::size_t k = 0; k < m; ++k) {
    std::size_t pivot = k;
    for (std::size_t i = k + 1; i < m; ++i)
      if (std::abs(M[i * m + k]) > std::abs(M[pivot * m + k])) pivot = i;
    if (M[pivot * m + k] == 0.0) throw std::runtime_error("matrix_jacobi_ref: singular diagonal block");
    if (pivot != k) {
      for (std::size_t j = 0; j < m; ++j) std::swap(M[k * m + j], M[pivot * m + j]);
      std::swap(r[k], r[pivot]);
    }
    for (std::size_t i = k + 1; i < m; ++i) {
      const double l = M[i * m + k] / M[k * m + k];
      if (l == 0.0) continue;
      for (std::size_t j = k; j < m; ++j) M[i * m + j] -= l * M[k * m + j];
      r[i] -= l * r[k];
    }
  }
  for (std::size_t k = m; k-- > 0;) {
    double s = r[k];
    for (std::size_t j = k + 1; j < m; ++j) s -= M[k * m + j] * x[j];
    x[k] = s / M[k * m + k];
  }
}

}  // namespace

void matrix_jacobi_ref(const linalg::LocalCsr& A, std::span<const double> b, std::span<double> x, JacobiVariant variant,
                       int iterations, std::span<const std::int64_t> order_key,
                       std::span<const std::int64_t> block_offsets) {
  const std::int64_t n = A.rows;
  auto key = [&](std::int64_t i) { return order_key.empty() ? i : order_key[static_cast<std::size_t>(i)]; };
  // Each row's off-diagonal terms (-a_ij, j) in the order (|key_j - key_i|, key_j), and a_ii.
  std::vector<double> diag(static_cast<std::size_t>(n), 0.0);
  std::vector<std::vector<std::pair<double, std::int64_t>>> terms(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, double>> t;
    for (auto p = A.row_ptr[static_cast<std::size_t>(i)]; p < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++p) {
      const std::int64_t j = A.col[static_cast<std::size_t>(p)];
      if (j == i) {
        diag[static_cast<std::size_t>(i)] = A.val[static_cast<std::size_t>(p)];
        continue;
      }
      const std::int64_t ki = key(i), kj = key(j);
      t.emplace_back(kj > ki ? kj - ki : ki - kj, kj, j, -A.val[static_cast<std::size_t>(p)]);
    }
    std::sort(t.begin(), t.end());
    for (const auto& [d, k, j, c] : t) terms[static_cast<std::size_t>(i)].emplace_back(c, j);
  }
  std::vector<double> next(static_cast<std::size_t>(n));
  for (int it = 0; it < iterations; ++it) {
    std::vector<double> s(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {  // s_i = b_i + sum_{j != i} (-a_ij) x_j
      double sum = b[static_cast<std::size_t>(i)];
      for (const auto& [c, j] : terms[static_cast<std::size_t>(i)]) sum += c * x[static_cast<std::size_t>(j)];
      s[static_cast<std::size_t>(i)] = sum;
    }
    if (variant == JacobiVariant::point) {
      for (std::int64_t i = 0; i < n; ++i)
        next[static_cast<std::size_t>(i)] = s[static_cast<std::size_t>(i)] * (1.0 / diag[static_cast<std::size_t>(i)]);
    } else {
      // x_p <- x_p + A_pp^-1 (b_p - (A x)_p), each block [block_offsets[p], block_offsets[p + 1]).
      std::vector<std::int64_t> blocks(block_offsets.begin(), block_offsets.end());
      if (blocks.empty()) blocks = {0, n};
      for (std::size_t q = 0; q + 1 < blocks.size(); ++q) {
        const std::int64_t lo = blocks[q], hi = blocks[q + 1];
        const auto m = static_cast<std::size_t>(hi - lo);
        std::vector<double> M(m * m, 0.0), r(m), d(m);
        for (std::int64_t i = lo; i < hi; ++i) {
          r[static_cast<std::size_t>(i - lo)] = s[static_cast<std::size_t>(i)] - diag[static_cast<std::size_t>(i)] * x[static_cast<std::size_t>(i)];
          for (auto p = A.row_ptr[static_cast<std::size_t>(i)]; p < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++p) {
            const std::int64_t j = A.col[static_cast<std::size_t>(p)];
            if (j >= lo && j < hi) M[static_cast<std::size_t>(i - lo) * m + static_cast<std::size_t>(j - lo)] = A.val[static_cast<std::size_t>(p)];
          }
        }
        dense_solve(std::move(M), std::move(r), m, d.data());
        for (std::int64_t i = lo; i < hi; ++i)
          next[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(i)] + d[static_cast<std::size_t>(i - lo)];
      }
    }
    std::copy(next.begin(), next.end(), x.begin());
  }
}

}  // namespace desync::solvers
