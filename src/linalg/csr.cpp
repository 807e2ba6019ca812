#include "desync/linalg/csr.hpp"

namespace desync::linalg {

int DistributedCsr::rank() const {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

std::int64_t DistributedCsr::first_block_row() const {
  const int r = rank();
  return static_cast<std::size_t>(r) < row_offsets.size() ? row_offsets[static_cast<std::size_t>(r)] : 0;
}

}  // namespace desync::linalg
