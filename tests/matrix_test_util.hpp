#pragma once
// Helpers of the tests that read, write and distribute matrices: ranks, a scratch directory every
// rank shares, files written by rank 0, balanced row blocks, and bitwise equality of two matrices.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "desync/core/comm.hpp"
#include "desync/linalg/csr.hpp"

namespace desync_test {

using desync::core::rank_of;
using desync::core::size_of;

/// A scratch directory shared by all ranks (made by rank 0, named after `prefix`), removed at the end.
class ScratchDir {
 public:
  explicit ScratchDir(MPI_Comm comm, const std::string& prefix = "desync_test") : comm_(comm) {
    char buf[256] = {0};
    if (rank_of(comm) == 0) {
      const auto p = std::filesystem::temp_directory_path() /
                     (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
      std::filesystem::create_directories(p);
      std::snprintf(buf, sizeof buf, "%s", p.c_str());
    }
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, comm);
    dir_ = buf;
  }
  ~ScratchDir() {
    MPI_Barrier(comm_);
    std::error_code ec;
    if (rank_of(comm_) == 0) std::filesystem::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

 private:
  MPI_Comm comm_;
  std::string dir_;
  static inline int counter_ = 0;
};

/// Rank 0 writes `bytes` to `path`; every rank returns once it is there.
inline void write_file(MPI_Comm comm, const std::string& path, const std::string& bytes) {
  if (rank_of(comm) == 0) std::ofstream(path, std::ios::binary) << bytes;
  MPI_Barrier(comm);
}

/// Contiguous balanced blocks: n/p rows each, the first n%p one more.
inline std::vector<std::int64_t> balanced_offsets(std::int64_t n, int p) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) off[r + 1] = off[r] + n / p + (r < n % p ? 1 : 0);
  return off;
}

/// b - A x for a serial matrix.
inline std::vector<double> local_residual(const desync::linalg::LocalCsr& a, const std::vector<double>& x,
                                          const std::vector<double>& b) {
  std::vector<double> r(b.begin(), b.begin() + a.rows);
  for (std::size_t i = 0; i < r.size(); ++i)
    for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      r[i] -= a.val[static_cast<std::size_t>(p)] * x[static_cast<std::size_t>(a.col[static_cast<std::size_t>(p)])];
  return r;
}

/// diag(d(0), d(1), ...), distributed in balanced contiguous rows (balanced_offsets).
inline desync::linalg::DistributedCsr diagonal_matrix(MPI_Comm comm, std::int64_t n, double (*d)(std::int64_t)) {
  desync::linalg::DistributedCsr A;
  A.comm = comm;
  A.row_offsets = balanced_offsets(n, desync::core::size_of(comm));
  const auto rank = static_cast<std::size_t>(desync::core::rank_of(comm));
  A.row_ptr.push_back(0);
  for (std::int64_t i = A.row_offsets[rank]; i < A.row_offsets[rank + 1]; ++i) {
    A.col.push_back(i);
    A.val.push_back(d(i));
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  return A;
}

/// The two distributed matrices are the same: layout, pattern and values bitwise.
inline void expect_same(const desync::linalg::DistributedCsr& a, const desync::linalg::DistributedCsr& b) {
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.row_offsets, b.row_offsets);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col, b.col);
  ASSERT_EQ(a.val.size(), b.val.size());
  if (!a.val.empty()) { EXPECT_EQ(std::memcmp(a.val.data(), b.val.data(), a.val.size() * sizeof(double)), 0); }
}

}  // namespace desync_test
