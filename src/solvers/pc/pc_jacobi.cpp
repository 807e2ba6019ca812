// Point Jacobi, M = diag(A): u_i = r_i / a_ii. The methods that need M symmetric positive definite
// need a positive diagonal; the others a non-zero one.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "desync/communication/reduction.hpp"
#include "desync/core/error.hpp"
#include "desync/linalg/vector.hpp"
#include "desync/solvers/pc/preconditioner.hpp"

namespace desync::solvers {

namespace {

class JacobiPc final : public Preconditioner {
 public:
  explicit JacobiPc(std::vector<double> inv) : inv_(std::move(inv)) {}
  std::string description() const override { return "jacobi"; }
  void apply(std::span<const double> r, std::span<double> u) const override {
    const double* rp = r.data();
    const double* d = inv_.data();
    double* up = u.data();
    in_chunks(r.size(), [&](std::int64_t b, std::int64_t e) {  // with polls, the same products, a poll per chunk
#pragma omp simd
      for (std::int64_t i = b; i < e; ++i) up[i] = d[i] * rp[i];
    });
  }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    const double* rp = r.data();
    const double* d = inv_.data();
    double* up = u.data();
    double s = 0;
    in_chunks(r.size(), [&](std::int64_t b, std::int64_t e) {  // with polls, (r, u) is summed chunk by chunk
      double c = s;
#pragma omp simd reduction(+ : c)
      for (std::int64_t i = b; i < e; ++i) {
        const double z = d[i] * rp[i];
        up[i] = z;
        c += rp[i] * z;
      }
      s = c;
    });
    return s;
  }
  std::span<const double> inverse_diagonal() const override { return inv_; }

 private:
  std::vector<double> inv_;

  // Calls body(b, e) over [0, n) in chunks of the poll interval, polling after each; without polls,
  // once over all of it.
  template <class Body>
  void in_chunks(std::size_t size, Body&& body) const {
    const auto n = static_cast<std::int64_t>(size);
    const std::int64_t step = polls_.active() ? polls_.interval : std::max<std::int64_t>(n, 1);
    for (std::int64_t b = 0; b < n; b += step) {
      const std::int64_t e = std::min(n, b + step);
      body(b, e);
      if (polls_.active()) polls_.poll(static_cast<double>(e - b));
    }
  }
};


std::unique_ptr<Preconditioner> make_jacobi(const linalg::Operator& A, const SchwarzPcSetup&, bool positive_definite) {
  int rank = 0;
  MPI_Comm_rank(A.comm(), &rank);
  // First global row of this rank: the exclusive prefix sum of the local sizes.
  const std::int64_t first = comm::exclusive_prefix_sum(A.comm(), A.local_size());
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

}  // namespace

PcInfo jacobi_pc() {
  return {.name = "jacobi", .description = "point Jacobi, M = diag(A)", .cost = "pc.jacobi", .make = &make_jacobi};
}

}  // namespace desync::solvers
