#pragma once
// Reading and writing linear systems A x = b in the formats other codes write them: Matrix Market
// (text), PETSc binary (MatView / VecView to a binary viewer) and NumPy .npy (vectors only).
//
// Every reader is collective and parallel: each rank reads the small header itself, then the part
// of the file it owns (PETSc binary and .npy with MPI_File_read_at at computed offsets; Matrix
// Market with the byte-range reader of matrix_market.hpp). Every writer is collective: rank 0 creates the file and writes the
// headers, every rank writes its own rows at their offsets with MPI-IO.
//
// PETSc binary layout (PETSc manual, MatLoad and VecLoad), every number big-endian:
//   matrix: int32 class id 1211216, int32 rows M, int32 columns N, int32 nonzeros nz,
//           int32 row lengths [M], int32 column indices [nz] (0-based, row by row),
//           float64 values [nz]
//   vector: int32 class id 1211214, int32 length n, float64 values [n]
// Only 32-bit indices and real double scalars are read (PETSc's default build). Bytes after the
// object (e.g. a vector stored after the matrix in the same file) are ignored.
//
// .npy (NumPy format 1.0; 2.0 and 3.0 are read too): "\x93NUMPY", version, header length, a Python
// dict header {'descr': '<f8', 'fortran_order': False, 'shape': (n,), } padded with spaces to a
// multiple of 64 bytes, then the data. Read: float64 little-endian ('<f8'), shape (n,) or (n, 1).
//
// Every error is a desync::InputError thrown on every rank with the same message, which names the
// path and what is wrong; when several entries are wrong, the first in file order is named, so the
// message does not depend on the number of ranks.
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "desync/linalg/csr.hpp"

namespace desync::linalg {

enum class SystemFormat { matrix_market, petsc_binary, npy };

/// The name of a format as printed in messages: "Matrix Market", "PETSc binary", ".npy".
const char* format_name(SystemFormat format);

/// By extension (.mtx/.mm -> matrix_market; .petsc/.bin/.dat -> petsc_binary; .npy -> npy; case
/// ignored; the file need not exist), else by content (the "%%MatrixMarket" banner; PETSc's
/// big-endian class id 1211216 (Mat) / 1211214 (Vec); the NumPy magic "\x93NUMPY"). InputError if
/// the content is unknown (a gzip file is named as such) or the file unreadable. Not collective.
SystemFormat detect_format(const std::string& path);

/// Any square real matrix: Matrix Market coordinate general / symmetric / skew-symmetric, real or
/// integer (pattern and complex refused: "pattern matrix: no values to solve with"), or PETSc
/// binary AIJ as written by MatView. Rows in contiguous balanced blocks (n/p, the first n%p one
/// more), block_size 1, columns sorted, duplicates summed, comm = `comm`. Collective.
///
/// InputError (every rank, same message): a missing or unreadable file; a .npy file; a non-square
/// or empty matrix; more ranks than rows ("4 ranks for a matrix of 3 rows: use at most 3"); a
/// truncated PETSc file ("<path>: truncated: expected 40 bytes of column indices, found 12"); a
/// wrong class id ("<path>: not a PETSc binary matrix (class id X)"); a negative row length; row
/// lengths whose sum differs from the header's nonzero count; a column index out of range; a value
/// that is not finite; and every Matrix Market error of read_matrix_market_square.
DistributedCsr read_matrix(MPI_Comm comm, const std::string& path);

/// A vector of layout.global_rows() entries; returns this rank's rows of `layout` (block_size is
/// respected). Matrix Market array or coordinate n x 1, PETSc binary Vec, or .npy float64 of shape
/// (n,) or (n, 1). Collective over `comm` (layout's communicator).
/// InputError on the wrong length ("<path>: the vector has 99 entries, the matrix 100 rows"), a
/// truncated or corrupt file, a .npy of another dtype or shape, a value that is not finite.
std::vector<double> read_vector(MPI_Comm comm, const std::string& path, const DistributedCsr& layout);

/// m >= 1 vectors of layout.global_rows() entries each (the near-kernel of a coarse space):
/// Matrix Market n x m (`array`, column after column, or `coordinate`), or one vector in any format
/// read_vector reads. This rank's rows of each. Collective; InputError as read_vector, and
/// "<path>:<line>: 99 rows, the matrix has 100" for a Matrix Market file of another length.
std::vector<std::vector<double>> read_vectors(MPI_Comm comm, const std::string& path, const DistributedCsr& layout);

/// Writes a distributed vector, rank r holding global entries [offsets[r], offsets[r+1]) in
/// `local`, as .npy (float64 '<f8', shape (n,)), Matrix Market `array real general` n x 1, or PETSc
/// binary Vec; the format by extension (.npy; .mtx/.mm; .petsc/.bin/.dat). Values are written
/// exactly (binary, or 17 significant digits). Collective; InputError on every rank if the
/// extension is unknown or the path cannot be written.
void write_vector(MPI_Comm comm, const std::string& path, const std::vector<std::int64_t>& offsets,
                  std::span<const double> local);

/// Writes A as a PETSc binary AIJ matrix (see the layout above) with parallel MPI-IO; a block
/// matrix is written in scalar rows and columns with all block_size^2 values of every stored block.
/// Collective over A.comm. InputError if the path cannot be written or A does not fit PETSc's
/// 32-bit indices.
void write_petsc_binary(const DistributedCsr& A, const std::string& path);

/// Writes A by the path's extension: .mtx/.mm -> Matrix Market coordinate real general (every
/// stored entry, 17 significant digits); .petsc/.bin/.dat -> PETSc binary. InputError for another
/// extension (.npy included). Collective over A.comm.
void write_matrix(const DistributedCsr& A, const std::string& path);

/// Whether A = A^T: the same stored pattern and |a_ij - a_ji| <= 1e-12 max|a| for every stored
/// entry (a block matrix is compared in scalar entries). Each owner sends (i, j, a_ij) to the
/// owner of row j, which compares it with its a_ji. Collective over A.comm; the same answer on
/// every rank.
bool is_symmetric(const DistributedCsr& A);

}  // namespace desync::linalg
