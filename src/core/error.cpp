#include "desync/core/error.hpp"

#include <vector>

namespace desync {

void agree_or_throw(MPI_Comm comm, bool ok, const std::string& message) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Lowest failing rank, or INT_MAX-like sentinel when nobody failed.
  int size = 0;
  MPI_Comm_size(comm, &size);
  int mine = ok ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int length = (rank == first) ? static_cast<int>(message.size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string text = (rank == first) ? message : std::string(static_cast<std::size_t>(length), ' ');
  MPI_Bcast(text.data(), length, MPI_CHAR, first, comm);
  throw InputError(text);
}

}  // namespace desync
