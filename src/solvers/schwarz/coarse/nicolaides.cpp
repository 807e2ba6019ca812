// The Nicolaides coarse space (Nicolaides, 1987): one basis vector per subdomain and near-kernel
// vector, the partition of unity times the near-kernel. Rank p's subdomain (or each of its K pieces
// with --subdomains-per-rank K) owns its rows of the partitioned matrix (a non-overlapping partition of unity: the indicator of p's rows), so
// phi_{p,k} is z_k on p's rows and 0 elsewhere, and sum_p phi_{p,k} = z_k reproduces every
// near-kernel vector exactly. The near-kernel of a scalar problem is the constant: phi_p is 1 on
// p's rows; for elasticity, the six rigid-body modes.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"

namespace desync::solvers {

namespace {

CoarseBasis build_nicolaides(const CoarseBasisInput& in) {
  // phi_{p,k}: z_k on subdomain p's rows, 0 elsewhere, for the z_k independent on p's rows (their
  // Gram matrix over p's rows, independent_columns). The functions are numbered by subdomain, then
  // k; subdomain p is rank p, or rank r's piece q is subdomain r K + q (K pieces per rank).
  const auto& z = in.near_kernel;
  const std::size_t M = z.size(), rows = static_cast<std::size_t>(in.A.local_rows());
  const auto K = static_cast<std::size_t>(in.piece.empty() ? 1 : in.pieces_per_rank);
  auto piece = [&](std::size_t i) { return in.piece.empty() ? std::size_t{0} : static_cast<std::size_t>(in.piece[i]); };
  std::vector<double> gram(K * M * M, 0.0);
  for (std::size_t i = 0; i < rows; ++i) {
    double* g = gram.data() + piece(i) * M * M;
    for (std::size_t a = 0; a < M; ++a)
      for (std::size_t b = 0; b < M; ++b) g[a * M + b] += z[a][i] * z[b][i];
  }
  std::vector<std::vector<int>> kept(K);
  std::vector<int> count(K);
  for (std::size_t q = 0; q < K; ++q) {
    kept[q] = independent_columns(std::vector<double>(gram.begin() + static_cast<std::ptrdiff_t>(q * M * M),
                                                      gram.begin() + static_cast<std::ptrdiff_t>((q + 1) * M * M)),
                                  static_cast<int>(M));
    count[q] = static_cast<int>(kept[q].size());
  }
  std::vector<int> counts(static_cast<std::size_t>(in.ranks) * K);
  MPI_Allgather(count.data(), static_cast<int>(K), MPI_INT, counts.data(), static_cast<int>(K), MPI_INT, in.comm);
  CoarseBasis phi;
  std::vector<int> start(K, 0);  // this rank's pieces' first functions
  for (std::size_t s = 0; s < counts.size(); ++s) {
    if (s / K == static_cast<std::size_t>(in.rank)) start[s % K] = phi.size;
    phi.size += counts[s];
  }
  phi.ptr.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t q = piece(i);
    for (std::size_t t = 0; t < kept[q].size(); ++t) {
      const double v = z[static_cast<std::size_t>(kept[q][t])][i];
      if (v != 0.0) {
        phi.col.push_back(start[q] + static_cast<int>(t));
        phi.val.push_back(v);
      }
    }
    phi.ptr.push_back(static_cast<std::int64_t>(phi.col.size()));
  }
  return phi;
}

}  // namespace

CoarseSpaceInfo nicolaides_coarse_space() {
  return {"nicolaides",
          "one coarse function per subdomain and near-kernel vector, the vector on the subdomain's rows (Nicolaides, "
          "1987)",
          &build_nicolaides};
}

}  // namespace desync::solvers
