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

/// Every rank's `mine`, of any length, gathered on rank 0 of `comm` in rank order (empty
/// elsewhere). Collective.
inline std::vector<std::vector<double>> gather_varying(MPI_Comm comm, std::span<const double> mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank == 0 ? static_cast<std::size_t>(size) : 0), offsets(counts.size(), 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0, comm);
  std::vector<std::vector<double>> out;
  for (std::size_t r = 0; r < counts.size(); ++r)
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  return out;
}

}  // namespace desync::core
