#pragma once
// Matrix Market (coordinate and array text formats) input and output for distributed matrices.
//
// Reading is parallel: every rank reads the header, parses a byte range of the entries (a line
// belongs to the rank whose range holds its first character) and the entries are redistributed
// to the owners of their rows with MPI_Alltoallv. Rows are distributed in contiguous balanced
// ranges: with n rows over p ranks every rank gets floor(n / p) rows and the first n mod p one more.
//
// Every error is a desync::InputError thrown on every rank with the same message (the first
// error in file order), of the form "<path>:<line>: <what>" when a line is to blame.
#include <mpi.h>

#include <span>
#include <string>
#include <vector>

#include "desync/linalg/csr.hpp"

namespace desync::linalg {

/// Reads a symmetric matrix from a Matrix Market file: `matrix coordinate`, field `real` or
/// `integer`, storage `general` or `symmetric` (a symmetric file holds the lower triangle, i >= j;
/// its entries are mirrored). Duplicate entries are summed; columns are sorted in every row. The
/// result has block_size 1 and comm = `comm`. Collective.
///
/// Rejected (InputError): a missing or unreadable file; a malformed banner, size line or entry;
/// an index out of range; the wrong number of entries; a non-square matrix; an entry above the
/// diagonal in a `symmetric` file; unsupported kinds (complex, pattern, hermitian,
/// skew-symmetric, array); a `general` matrix that is not symmetric, structurally (a(i,j) stored
/// but a(j,i) not) or numerically (|a(i,j) - a(j,i)| > 1e-12 max|a|, after duplicates are summed);
/// a diagonal entry that is missing or not positive (the matrix cannot be positive definite).
DistributedCsr read_matrix_market(MPI_Comm comm, const std::string& path);

/// Reads any square real matrix from a Matrix Market file, for general (non-symmetric) solvers:
/// `matrix coordinate`, field `real` or `integer`, storage `general`, `symmetric` (lower triangle,
/// mirrored) or `skew-symmetric` (strictly lower triangle, mirrored with the opposite sign).
/// Duplicates summed, columns sorted, block_size 1, rows in the same balanced ranges. No symmetry or
/// diagonal check. Rejected (InputError, every rank alike): what read_matrix_market rejects for its
/// form, `pattern` ("pattern matrix: no values to solve with") and `complex` fields, a diagonal
/// entry in a skew-symmetric file, and more ranks than rows ("4 ranks for a matrix of 3 rows: use at
/// most 3"). Collective.
DistributedCsr read_matrix_market_square(MPI_Comm comm, const std::string& path);

/// Reads a vector of layout.global_rows() entries and returns this rank's part (layout.local_rows()
/// entries, in layout's row distribution; block_size is respected). Accepted: `matrix array`
/// real/integer general of n x 1, or `matrix coordinate` real/integer general of n x 1 (missing
/// entries are 0, duplicates summed). Collective over `comm` (the communicator of layout).
std::vector<double> read_matrix_market_vector(MPI_Comm comm, const std::string& path, const DistributedCsr& layout);

/// With `several`: m vectors of layout.global_rows() entries each, the n x m `matrix array` (column
/// after column) or `matrix coordinate` real/integer general file; this rank's part of every
/// column. InputError "<path>:<line>: 99 rows, the matrix has 100" for another number of rows.
/// Without: read_matrix_market_vector (n x 1 only). Collective.
std::vector<std::vector<double>> read_matrix_market_columns(MPI_Comm comm, const std::string& path,
                                                            const DistributedCsr& layout, bool several);

/// Writes A as `matrix coordinate real general` (every stored entry) or, with `symmetric`, as
/// `matrix coordinate real symmetric` (the stored entries with row >= column; A is assumed to be
/// symmetric, which is not checked). A block matrix is written in scalar rows and columns with all
/// block_size^2 entries of every stored block, explicit zeros included. Values are printed with 17
/// significant digits, so reading the file back gives A exactly. Collective (MPI-IO); throws
/// InputError on every rank if the file cannot be written.
void write_matrix_market(const DistributedCsr& A, const std::string& path, bool symmetric);

/// Writes a distributed vector (this rank's part `local`, distributed like `layout`'s rows) as
/// `matrix array real general` of n x 1. Collective.
void write_matrix_market_vector(const DistributedCsr& layout, std::span<const double> local,
                                const std::string& path);

}  // namespace desync::linalg
