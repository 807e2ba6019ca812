#pragma once
// Gathering one fixed-size record per rank on rank 0, for the per-rank statistics of a run.
#include <mpi.h>

#include <span>
#include <vector>

namespace desync::core {

/// One record per rank, gathered on rank 0 of `comm` in rank order (empty elsewhere): every rank
/// packs its record into mine.size() doubles (the same count on every rank), and unpack(const
/// double*) rebuilds a record from them. Collective.
template <class Unpack>
auto gather_packed(MPI_Comm comm, std::span<const double> mine, Unpack&& unpack) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int width = static_cast<int>(mine.size());
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(width) * static_cast<std::size_t>(size) : 0);
  MPI_Gather(mine.data(), width, MPI_DOUBLE, all.data(), width, MPI_DOUBLE, 0, comm);
  std::vector<decltype(unpack(all.data()))> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r) out.push_back(unpack(all.data() + static_cast<std::size_t>(r) * width));
  return out;
}

}  // namespace desync::core
