// The Nicolaides coarse space (Nicolaides, 1987): one basis vector per subdomain and near-kernel
// vector, the partition of unity times the near-kernel. Rank p's subdomain owns its rows of the
// partitioned matrix (a non-overlapping partition of unity: the indicator of p's rows), so
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
  // phi_{p,k}: z_k on rank p's rows, 0 elsewhere, for the z_k independent on p's rows (their Gram
  // matrix over p's rows, independent_columns). The functions are numbered by rank, then k.
  const auto& z = in.near_kernel;
  const std::size_t M = z.size(), rows = static_cast<std::size_t>(in.A.local_rows());
  std::vector<double> gram(M * M, 0.0);
  for (std::size_t a = 0; a < M; ++a)
    for (std::size_t b = 0; b < M; ++b)
      for (std::size_t i = 0; i < rows; ++i) gram[a * M + b] += z[a][i] * z[b][i];
  const std::vector<int> kept = independent_columns(gram, static_cast<int>(M));
  int count = static_cast<int>(kept.size());
  std::vector<int> counts(static_cast<std::size_t>(in.ranks));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, in.comm);
  CoarseBasis phi;
  int start = 0;
  for (int q = 0; q < in.ranks; ++q) {
    if (q == in.rank) start = phi.size;
    phi.size += counts[static_cast<std::size_t>(q)];
  }
  phi.ptr.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t t = 0; t < kept.size(); ++t) {
      const double v = z[static_cast<std::size_t>(kept[t])][i];
      if (v != 0.0) {
        phi.col.push_back(start + static_cast<int>(t));
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
