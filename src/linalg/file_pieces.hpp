#pragma once
// Internal to linalg: the collective MPI-IO writer that the system files (system_io.cpp: PETSc
// binary, .npy) and Matrix Market output (matrix_market.cpp) share.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace desync::linalg::detail {

/// Bytes to be written at an offset of the file.
struct FilePiece {
  std::int64_t offset;
  const unsigned char* data;
  std::int64_t bytes;
};

/// Rank 0 creates or truncates the file (so that an error is the operating system's and names the
/// path: a missing directory, a directory in its place); then every rank writes its pieces with
/// MPI_File_write_at, in chunks of at most 1 GiB. Collective; InputError on every rank if the file
/// cannot be written.
void write_pieces(MPI_Comm comm, const std::string& path, const std::vector<FilePiece>& pieces);

}  // namespace desync::linalg::detail
