#pragma once
// Sparse matrices distributed by rows.
//
// Rows are distributed in contiguous ranges: rank r owns global (block) rows
// [row_offsets[r], row_offsets[r + 1]). Vectors use the same distribution: a rank stores the
// entries of the rows it owns, in global order. For the Cartesian problems (poisson3d,
// elasticity3d) global numbering is rank-major and, inside a rank, the local block's points in
// lexicographic order with x fastest, so a rank's vector part is laid out exactly like the interior
// of its decomposition::Field block (without halo); elasticity interleaves the three displacement
// components of a node (block size 3).
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace desync::linalg {

/// Owned rows of a row-distributed sparse matrix. block_size 1: CSR; 3: block CSR with 3x3
/// blocks (rows, columns and offsets are counted in blocks).
struct DistributedCsr {
  MPI_Comm comm = MPI_COMM_NULL;     ///< not owned
  int block_size = 1;
  std::vector<std::int64_t> row_offsets;  ///< size nranks + 1, in block rows
  std::vector<std::int64_t> row_ptr;      ///< local block rows + 1
  std::vector<std::int64_t> col;          ///< global block column of each entry, ascending within a row
  std::vector<double> val;                ///< block_size^2 values per entry, row-major inside a block

  int rank() const;  ///< this rank in comm
  std::int64_t first_block_row() const;
  std::int64_t local_block_rows() const { return static_cast<std::int64_t>(row_ptr.size()) - 1; }
  std::int64_t global_block_rows() const { return row_offsets.empty() ? 0 : row_offsets.back(); }
  /// Scalar rows owned here (= length of this rank's part of a vector).
  std::int64_t local_rows() const { return local_block_rows() * block_size; }
  std::int64_t global_rows() const { return global_block_rows() * block_size; }
  std::int64_t nonzero_blocks() const { return static_cast<std::int64_t>(col.size()); }
};

/// The same matrix with block size 1: every stored block becomes block_size^2 scalar entries
/// (explicit zeros included), rows and columns numbered in scalars. Local, no communication.
DistributedCsr scalar_csr(const DistributedCsr& A);

/// A rank-local sparse matrix with local column indices (scalar CSR), e.g. the diagonal block of
/// the owned rows, on which block-Jacobi preconditioners factor.
struct LocalCsr {
  std::int64_t rows = 0;
  std::vector<std::int64_t> row_ptr;  ///< rows + 1
  std::vector<std::int32_t> col;      ///< ascending within a row
  std::vector<double> val;
};

}  // namespace desync::linalg
