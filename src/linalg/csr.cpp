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

DistributedCsr scalar_csr(const DistributedCsr& A) {
  if (A.block_size == 1) return A;
  const std::int64_t bs = A.block_size;
  DistributedCsr S;
  S.comm = A.comm;
  S.block_size = 1;
  for (std::int64_t o : A.row_offsets) S.row_offsets.push_back(o * bs);
  S.row_ptr.push_back(0);
  for (std::int64_t br = 0; br < A.local_block_rows(); ++br)
    for (std::int64_t i = 0; i < bs; ++i) {  // scalar row br * bs + i
      for (auto p = A.row_ptr[static_cast<std::size_t>(br)]; p < A.row_ptr[static_cast<std::size_t>(br) + 1]; ++p)
        for (std::int64_t j = 0; j < bs; ++j) {  // the block's row i, columns ascending
          S.col.push_back(A.col[static_cast<std::size_t>(p)] * bs + j);
          S.val.push_back(A.val[static_cast<std::size_t>(p * bs * bs + i * bs + j)]);
        }
      S.row_ptr.push_back(static_cast<std::int64_t>(S.col.size()));
    }
  return S;
}

}  // namespace desync::linalg
