// Reading and writing linear systems (system_io.hpp): exact round trips of a non-symmetric matrix
// through PETSc binary and Matrix Market, vectors through .npy, Matrix Market and PETSc binary, a
// PETSc file and a .npy file written here byte by byte (so the formats are pinned independently of
// desync's writers), format detection, one InputError per corrupt file (the same message on every
// rank), and the collective symmetry check.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/linalg/matrix_market.hpp"
#include "desync/linalg/system_io.hpp"
#include "matrix_test_util.hpp"
#include "test_util.hpp"

using desync::InputError;
using namespace desync::linalg;
using namespace desync_test;

namespace {

/// Bytes of a binary file, assembled by hand: big-endian (PETSc) or little-endian (.npy) numbers.
struct ByteFile {
  std::string bytes;
  ByteFile& be32(std::int32_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((u >> shift) & 0xff);
    return *this;
  }
  ByteFile& be64(double v) {
    std::uint64_t u = 0;
    std::memcpy(&u, &v, 8);
    for (int shift = 56; shift >= 0; shift -= 8) bytes += static_cast<char>((u >> shift) & 0xff);
    return *this;
  }
  ByteFile& le64(double v) {
    std::uint64_t u = 0;
    std::memcpy(&u, &v, 8);
    for (int shift = 0; shift <= 56; shift += 8) bytes += static_cast<char>((u >> shift) & 0xff);
    return *this;
  }
  ByteFile& text(const std::string& s) {
    bytes += s;
    return *this;
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Rank 0 cuts the file to `bytes` bytes; every rank returns once it is done.
void truncate_file(MPI_Comm comm, const std::string& path, std::uintmax_t bytes) {
  if (rank_of(comm) == 0) std::filesystem::resize_file(path, bytes);
  MPI_Barrier(comm);
}

/// Row i of the non-symmetric test matrix of n rows, columns ascending: a 1D convection-diffusion
/// stencil (-1 - c, 2 + d_i, -1 + c) with awkward values, a long-range coupling a(0, n-1) without
/// its transpose, an explicit zero a(7, 2), a row with only its diagonal (row 5), and an empty row
/// (row 9: a singular matrix is still a matrix to read and write).
std::vector<std::pair<std::int64_t, double>> test_row(std::int64_t n, std::int64_t i) {
  std::vector<std::pair<std::int64_t, double>> row;
  if (i == 9) return row;
  if (i == 5) return {{5, 1.0 / 3.0}};
  if (i == 7) row.emplace_back(2, 0.0);
  if (i > 0) row.emplace_back(i - 1, -1.0 - 0.3 - 1e-17 * static_cast<double>(i));
  row.emplace_back(i, 2.0 + 1.0 / static_cast<double>(i + 7) + (i == 3 ? 1e-300 : 0.0));
  if (i + 1 < n) row.emplace_back(i + 1, -1.0 + 0.3 + std::sqrt(static_cast<double>(i)) * 1e-3);
  if (i == 0 && n > 2) row.emplace_back(n - 1, 1e17 / 3.0);
  std::sort(row.begin(), row.end());
  return row;
}

/// The test matrix of n rows with the rows distributed by `offsets`.
DistributedCsr test_matrix(MPI_Comm comm, std::int64_t n, const std::vector<std::int64_t>& offsets) {
  DistributedCsr A;
  A.comm = comm;
  A.row_offsets = offsets;
  A.row_ptr.push_back(0);
  for (std::int64_t i = offsets[rank_of(comm)]; i < offsets[rank_of(comm) + 1]; ++i) {
    for (auto [j, v] : test_row(n, i)) {
      A.col.push_back(j);
      A.val.push_back(v);
    }
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  return A;
}

void expect_bitwise(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(double)), 0) << "entry " << i << ": " << got[i] << " vs " << want[i];
}

/// Runs `f`, expecting an InputError containing `expected` with the same message on every rank.
void expect_error(MPI_Comm comm, const std::function<void()>& f, const std::string& expected) {
  std::string message;
  try {
    f();
  } catch (const InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(expected), std::string::npos) << "\n  expected: " << expected << "\n  got:      " << message;
  int len = static_cast<int>(message.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  std::string root(static_cast<std::size_t>(len), ' ');
  if (rank_of(comm) == 0) root = message;
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, comm);
  EXPECT_EQ(message, root);
}

/// The layout of a vector of n entries (balanced rows, like read_matrix).
DistributedCsr layout_of(MPI_Comm comm, std::int64_t n) { return test_matrix(comm, n, balanced_offsets(n, size_of(comm))); }

/// Awkward values: thirds, a subnormal, a negative zero, large and tiny magnitudes.
double vector_value(std::int64_t i) {
  if (i == 1) return 5e-324;
  if (i == 2) return -0.0;
  return std::sin(static_cast<double>(i)) * std::pow(10.0, static_cast<double>(i % 9) - 4.0) + 1.0 / 3.0;
}

}  // namespace

TEST(SystemIo, NonSymmetricMatrixRoundTripsExactly) {
  TestComm comm;
  ScratchDir dir(comm, "desync_io");
  const int size = size_of(comm);
  const std::int64_t n = 13;
  const DistributedCsr A = test_matrix(comm, n, balanced_offsets(n, size));
  // Written from another distribution too: rank 0 holds all rows but one per other rank.
  std::vector<std::int64_t> skewed(static_cast<std::size_t>(size) + 1, 0);
  skewed[1] = n - (size - 1);
  for (int r = 1; r < size; ++r) skewed[r + 1] = skewed[r] + 1;
  const DistributedCsr S = test_matrix(comm, n, skewed);

  write_petsc_binary(A, dir.file("A.petsc"));
  write_matrix_market(A, dir.file("A.mtx"), false);
  write_matrix(S, dir.file("S.dat"));
  write_matrix(S, dir.file("S.mm"));
  for (const char* name : {"A.petsc", "A.mtx", "S.dat", "S.mm"}) {
    SCOPED_TRACE(name);
    const DistributedCsr B = read_matrix(comm, dir.file(name));
    EXPECT_EQ(B.comm, comm.get());
    expect_same(B, A);
    EXPECT_FALSE(is_symmetric(B));
  }
  // Both PETSc files hold the same bytes, whatever the distribution of the writer.
  if (rank_of(comm) == 0) { EXPECT_EQ(read_file(dir.file("A.petsc")), read_file(dir.file("S.dat"))); }
}

TEST(SystemIo, HandWrittenPetscBinaryPinsTheFormat) {
  TestComm comm;
  if (size_of(comm) > 4) GTEST_SKIP() << "a 4 x 4 matrix is read on at most 4 ranks";
  ScratchDir dir(comm, "desync_io");
  // 4 x 4, columns of row 2 unsorted with a duplicate (2, 2) in two parts, row 1 empty:
  //   [ 4    0    -1.5  0 ]
  //   [ 0    0     0    0 ]
  //   [ 0.5  2.25  1.25 0 ]
  //   [ 0    0     0    7 ]
  ByteFile mat;
  mat.be32(1211216).be32(4).be32(4).be32(6);
  mat.be32(2).be32(0).be32(3).be32(1);
  mat.be32(0).be32(2).be32(2).be32(1).be32(0).be32(3);
  mat.be64(4.0).be64(-1.5).be64(1.0).be64(2.25).be64(0.5).be64(7.0);
  // The second part of the duplicate: stored later in the same row.
  ByteFile dup;
  dup.be32(1211216).be32(4).be32(4).be32(7);
  dup.be32(2).be32(0).be32(4).be32(1);
  dup.be32(0).be32(2).be32(2).be32(1).be32(0).be32(2).be32(3);
  dup.be64(4.0).be64(-1.5).be64(1.0).be64(2.25).be64(0.5).be64(0.25).be64(7.0);
  write_file(comm, dir.file("hand.bin"), dup.bytes);
  const DistributedCsr A = read_matrix(comm, dir.file("hand.bin"));

  // The expected matrix, in the reader's balanced rows.
  const std::vector<std::vector<std::pair<std::int64_t, double>>> rows = {
      {{0, 4.0}, {2, -1.5}}, {}, {{0, 0.5}, {1, 2.25}, {2, 1.25}}, {{3, 7.0}}};
  const auto off = balanced_offsets(4, size_of(comm));
  EXPECT_EQ(A.row_offsets, off);
  DistributedCsr want;
  want.row_offsets = off;
  want.row_ptr.push_back(0);
  for (std::int64_t i = off[rank_of(comm)]; i < off[rank_of(comm) + 1]; ++i) {
    for (auto [j, v] : rows[static_cast<std::size_t>(i)]) {
      want.col.push_back(j);
      want.val.push_back(v);
    }
    want.row_ptr.push_back(static_cast<std::int64_t>(want.col.size()));
  }
  expect_same(A, want);

  // desync's writer produces PETSc's canonical bytes: sorted columns, duplicates summed.
  ByteFile canonical;
  canonical.be32(1211216).be32(4).be32(4).be32(6);
  canonical.be32(2).be32(0).be32(3).be32(1);
  canonical.be32(0).be32(2).be32(0).be32(1).be32(2).be32(3);
  canonical.be64(4.0).be64(-1.5).be64(0.5).be64(2.25).be64(1.25).be64(7.0);
  write_petsc_binary(A, dir.file("again.petsc"));
  if (rank_of(comm) == 0) { EXPECT_EQ(read_file(dir.file("again.petsc")), canonical.bytes); }
  (void)mat;

  // A hand-written PETSc Vec.
  ByteFile vec;
  vec.be32(1211214).be32(4).be64(1.5).be64(-2.0).be64(1e-3).be64(1.0 / 3.0);
  write_file(comm, dir.file("b.petsc"), vec.bytes);
  const std::vector<double> all = {1.5, -2.0, 1e-3, 1.0 / 3.0};
  const std::vector<double> b = read_vector(comm, dir.file("b.petsc"), A);
  expect_bitwise(b, std::vector<double>(all.begin() + off[rank_of(comm)], all.begin() + off[rank_of(comm) + 1]));
  write_vector(comm, dir.file("b2.petsc"), off, b);
  if (rank_of(comm) == 0) { EXPECT_EQ(read_file(dir.file("b2.petsc")), vec.bytes); }
}

TEST(SystemIo, VectorsRoundTripInEveryFormat) {
  TestComm comm;
  ScratchDir dir(comm, "desync_io");
  const int rank = rank_of(comm), size = size_of(comm);
  const std::int64_t n = 13;
  const DistributedCsr layout = layout_of(comm, n);
  std::vector<double> all(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = vector_value(i);
  const std::vector<double> mine(all.begin() + layout.row_offsets[rank], all.begin() + layout.row_offsets[rank + 1]);
  // Written from a distribution other than the reader's: rank r holds r entries more than balanced
  // would be impossible for small n, so rank 0 holds everything but the last entry.
  std::vector<std::int64_t> other(static_cast<std::size_t>(size) + 1, n);
  other[0] = 0;
  if (size > 1) other[1] = n - 1;
  const std::vector<double> other_mine(all.begin() + other[rank], all.begin() + other[rank + 1]);
  for (const char* name : {"x.npy", "x.mtx", "x.petsc"}) {
    SCOPED_TRACE(name);
    write_vector(comm, dir.file(name), layout.row_offsets, mine);
    expect_bitwise(read_vector(comm, dir.file(name), layout), mine);
    write_vector(comm, dir.file(std::string("other_") + name), other, other_mine);
    expect_bitwise(read_vector(comm, dir.file(std::string("other_") + name), layout), mine);
  }
  if (rank == 0) {
    // The .npy header as NumPy writes it: version 1.0, a dict padded to a multiple of 64 bytes.
    const std::string npy = read_file(dir.file("x.npy"));
    ASSERT_GT(npy.size(), 10u);
    EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const std::size_t header_len = static_cast<unsigned char>(npy[8]) | (static_cast<unsigned char>(npy[9]) << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u);
    const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (13,), }";
    ASSERT_GT(header_len, dict.size());
    EXPECT_EQ(npy.substr(10, header_len), dict + std::string(header_len - dict.size() - 1, ' ') + "\n");
    EXPECT_EQ(npy.size(), 10 + header_len + 8 * n);
  }

  // A hand-written .npy of shape (4, 1), format 2.0.
  ByteFile npy;
  const std::string dict = "{'descr': '<f8', 'fortran_order': True, 'shape': (4, 1), }\n";
  npy.text(std::string("\x93NUMPY\x02\x00", 8));
  npy.bytes += static_cast<char>(dict.size());
  npy.bytes += std::string(3, '\0');
  npy.text(dict).le64(-1.0).le64(0.1).le64(2.5e300).le64(3.0);
  write_file(comm, dir.file("col.npy"), npy.bytes);
  if (size <= 4) {
    const DistributedCsr four = layout_of(comm, 4);
    const std::vector<double> want = {-1.0, 0.1, 2.5e300, 3.0};
    expect_bitwise(read_vector(comm, dir.file("col.npy"), four),
                   std::vector<double>(want.begin() + four.row_offsets[rank], want.begin() + four.row_offsets[rank + 1]));
  }
}

TEST(SystemIo, DetectFormatByExtensionAndContent) {
  TestComm comm;
  ScratchDir dir(comm, "desync_io");
  EXPECT_EQ(detect_format("no/such/dir/A.mtx"), SystemFormat::matrix_market);  // by name alone
  EXPECT_EQ(detect_format("A.MM"), SystemFormat::matrix_market);
  EXPECT_EQ(detect_format("A.petsc"), SystemFormat::petsc_binary);
  EXPECT_EQ(detect_format("A.bin"), SystemFormat::petsc_binary);
  EXPECT_EQ(detect_format("A.dat"), SystemFormat::petsc_binary);
  EXPECT_EQ(detect_format("x.npy"), SystemFormat::npy);

  const DistributedCsr A = test_matrix(comm, 6, balanced_offsets(6, size_of(comm)));
  write_matrix_market(A, dir.file("mm_matrix"), false);
  write_petsc_binary(A, dir.file("petsc_matrix"));
  const std::vector<double> x(static_cast<std::size_t>(A.local_rows()), 1.0);
  write_vector(comm, dir.file("v.npy"), A.row_offsets, x);
  write_vector(comm, dir.file("v.petsc"), A.row_offsets, x);
  if (rank_of(comm) == 0) {
    std::filesystem::rename(dir.file("v.npy"), dir.file("npy_vector"));
    std::filesystem::rename(dir.file("v.petsc"), dir.file("petsc_vector"));
  }
  write_file(comm, dir.file("gzipped"), std::string("\x1f\x8b\x08\x00", 4));
  write_file(comm, dir.file("text"), "hello\n");
  EXPECT_EQ(detect_format(dir.file("mm_matrix")), SystemFormat::matrix_market);
  EXPECT_EQ(detect_format(dir.file("petsc_matrix")), SystemFormat::petsc_binary);
  EXPECT_EQ(detect_format(dir.file("petsc_vector")), SystemFormat::petsc_binary);
  EXPECT_EQ(detect_format(dir.file("npy_vector")), SystemFormat::npy);
  // read_matrix / read_vector go by content too.
  expect_same(read_matrix(comm, dir.file("mm_matrix")), A);
  expect_same(read_matrix(comm, dir.file("petsc_matrix")), A);
  expect_bitwise(read_vector(comm, dir.file("npy_vector"), A), x);
  expect_bitwise(read_vector(comm, dir.file("petsc_vector"), A), x);

  expect_error(comm, [&] { detect_format(dir.file("gzipped")); }, "gzipped': a gzip-compressed file");
  expect_error(comm, [&] { detect_format(dir.file("text")); }, "text': unknown format");
  expect_error(comm, [&] { detect_format(dir.file("missing")); }, "missing': no such file");
  expect_error(comm, [&] { read_matrix(comm, dir.file("text")); }, "text': unknown format");
}

TEST(SystemIo, CorruptPetscMatricesAreRefused) {
  TestComm comm;
  if (size_of(comm) > 4) GTEST_SKIP() << "the corrupt files hold 4 x 4 matrices, read on at most 4 ranks";
  ScratchDir dir(comm, "desync_io");
  const int size = size_of(comm);
  const std::string path = dir.file("bad.petsc");
  const auto expect_read_error = [&](const std::string& bytes, const std::string& expected) {
    write_file(comm, path, bytes);
    expect_error(comm, [&] { read_matrix(comm, path); }, expected);
  };
  expect_error(comm, [&] { read_matrix(comm, dir.file("none.petsc")); }, "none.petsc': no such file");

  // A well-formed 4 x 4 file (2 nonzeros per row), then each part corrupted.
  const auto file = [](std::int32_t classid, std::int32_t rows, std::int32_t cols, std::int32_t nz,
                       std::vector<std::int32_t> lengths, std::vector<std::int32_t> columns) {
    ByteFile f;
    f.be32(classid).be32(rows).be32(cols).be32(nz);
    for (auto l : lengths) f.be32(l);
    for (auto c : columns) f.be32(c);
    for (std::size_t k = 0; k < columns.size(); ++k) f.be64(1.0 + static_cast<double>(k));
    return f.bytes;
  };
  const std::vector<std::int32_t> lengths = {2, 2, 2, 2}, columns = {0, 1, 0, 1, 2, 3, 2, 3};
  write_file(comm, dir.file("good.petsc"), file(1211216, 4, 4, 8, lengths, columns));
  if (size <= 4) { EXPECT_EQ(read_matrix(comm, dir.file("good.petsc")).global_rows(), 4); }

  expect_read_error(file(1234, 4, 4, 8, lengths, columns), path + ": not a PETSc binary matrix (class id 1234)");
  expect_read_error(ByteFile().be32(1211214).be32(2).be64(1.0).be64(2.0).bytes,
                    path + ": not a PETSc binary matrix (class id 1211214: a vector)");
  expect_read_error(file(1211216, 4, 5, 8, lengths, columns), path + ": matrix is not square (4 x 5)");
  expect_read_error(file(1211216, 4, 4, -1, {}, {}), path + ": a dense PETSc matrix");
  expect_read_error(file(1211216, 0, 0, 0, {}, {}), path + ": empty matrix (0 x 0)");
  expect_read_error(file(1211216, 4, 4, 8, {2, -1, 2, 2}, columns), path + ": row 1 has a negative length (-1)");
  expect_read_error(file(1211216, 4, 4, 8, {2, 2, 2, 1}, columns),
                    path + ": the row lengths add up to 7 nonzeros, the header says 8");
  expect_read_error(file(1211216, 4, 4, 8, lengths, {0, 1, 0, 1, 2, 4, 2, 3}),
                    path + ": column index 4 out of range in row 2 (the matrix has 4 columns, numbered from 0)");
  expect_read_error(file(1211216, 4, 4, 8, lengths, {0, -3, 0, 1, 2, 7, 2, 3}),
                    path + ": column index -3 out of range in row 0");  // the first in file order
  expect_read_error(std::string("\0\x12", 2), path + ": truncated: expected 16 bytes of header, found 2");

  // Truncated at every section: header 16, row lengths 16, columns 32, values 64 bytes.
  const std::string good = file(1211216, 4, 4, 8, lengths, columns);
  write_file(comm, path, good);
  truncate_file(comm, path, 16 + 10);
  expect_error(comm, [&] { read_matrix(comm, path); }, path + ": truncated: expected 16 bytes of row lengths, found 10");
  write_file(comm, path, good);
  truncate_file(comm, path, 16 + 16 + 12);
  expect_error(comm, [&] { read_matrix(comm, path); },
               path + ": truncated: expected 32 bytes of column indices, found 12");
  write_file(comm, path, good);
  truncate_file(comm, path, good.size() - 1);
  expect_error(comm, [&] { read_matrix(comm, path); }, path + ": truncated: expected 64 bytes of values, found 63");

  // A file written by desync, cut in its column indices.
  const std::int64_t n = 13;
  const DistributedCsr A = test_matrix(comm, n, balanced_offsets(n, size));
  std::int64_t nz = static_cast<std::int64_t>(A.col.size());
  MPI_Allreduce(MPI_IN_PLACE, &nz, 1, MPI_INT64_T, MPI_SUM, comm);
  write_petsc_binary(A, dir.file("cut.petsc"));
  truncate_file(comm, dir.file("cut.petsc"), static_cast<std::uintmax_t>(16 + 4 * n + 5));
  expect_error(comm, [&] { read_matrix(comm, dir.file("cut.petsc")); },
               dir.file("cut.petsc") + ": truncated: expected " + std::to_string(4 * nz) +
                   " bytes of column indices, found 5");

  // More ranks than rows.
  if (size > 1) {
    const std::string rows = std::to_string(size - 1);
    const DistributedCsr small = test_matrix(MPI_COMM_SELF, size - 1, {0, size - 1});
    if (rank_of(comm) == 0) {
      write_petsc_binary(small, dir.file("small.petsc"));
      write_matrix_market(small, dir.file("small.mtx"), false);
    }
    MPI_Barrier(comm);
    const std::string message =
        std::to_string(size) + " ranks for a matrix of " + rows + " rows: use at most " + rows;
    expect_error(comm, [&] { read_matrix(comm, dir.file("small.petsc")); }, dir.file("small.petsc") + ": " + message);
    expect_error(comm, [&] { read_matrix(comm, dir.file("small.mtx")); }, dir.file("small.mtx") + ": " + message);
  }
}

TEST(SystemIo, MatrixMarketKinds) {
  TestComm comm;
  if (size_of(comm) > 4) GTEST_SKIP() << "the files hold 4 x 4 matrices, read on at most 4 ranks";
  ScratchDir dir(comm, "desync_io");
  // Refused kinds: {file, contents, the message after "FILE:"}.
  const std::array<std::array<const char*, 3>, 4> refused = {{
      {"pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n4 4 2\n1 1\n2 2\n",
       "1: pattern matrix: no values to solve with"},
      {"complex.mtx", "%%MatrixMarket matrix coordinate complex general\n4 4 1\n1 1 1.0 2.0\n", "1: complex matrix"},
      {"rect.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 1\n1 1 1.0\n",
       "2: matrix is not square (4 x 5)"},
      {"skew_diag.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n4 4 1\n2 2 1.0\n",
       "3: diagonal entry (2, 2)"},
  }};
  for (const auto& [name, contents, message] : refused) {
    const std::string path = dir.file(name);
    write_file(comm, path, contents);
    expect_error(comm, [&] { read_matrix(comm, path); }, path + ":" + message);
  }

  // Skew-symmetric (mirrored with the opposite sign), symmetric and integer storage, 4 x 4.
  const auto expect_dense = [&](const std::string& path, const std::vector<std::vector<double>>& dense) {
    const DistributedCsr A = read_matrix(comm, path);
    const std::int64_t first = A.row_offsets[rank_of(comm)];
    for (std::int64_t r = 0; r < A.local_block_rows(); ++r) {
      std::vector<double> row(4, 0.0);
      for (std::int64_t e = A.row_ptr[r]; e < A.row_ptr[r + 1]; ++e) row[static_cast<std::size_t>(A.col[e])] = A.val[e];
      EXPECT_EQ(row, dense[static_cast<std::size_t>(first + r)]) << path << " row " << first + r;
    }
  };
  const std::string skew = dir.file("skew.mtx");
  write_file(comm, skew, "%%MatrixMarket matrix coordinate real skew-symmetric\n4 4 3\n2 1 1.5\n4 1 -2\n4 3 0.25\n");
  expect_dense(skew, {{0, -1.5, 0, 2}, {1.5, 0, 0, 0}, {0, 0, 0, -0.25}, {-2, 0, 0.25, 0}});
  const std::string ints = dir.file("ints.mtx");
  write_file(comm, ints, "%%MatrixMarket matrix coordinate integer symmetric\n4 4 4\n1 1 3\n3 1 -1\n4 4 9\n3 1 -1\n");
  expect_dense(ints, {{3, 0, -2, 0}, {0, 0, 0, 0}, {-2, 0, 0, 0}, {0, 0, 0, 9}});
  // read_matrix_market itself still requires a symmetric positive-diagonal matrix (desync cg).
  expect_error(comm, [&] { desync::linalg::read_matrix_market(comm, skew); }, "unsupported symmetry 'skew-symmetric'");
}

TEST(SystemIo, CorruptVectorsAreRefused) {
  TestComm comm;
  ScratchDir dir(comm, "desync_io");
  const std::int64_t n = 13;
  const DistributedCsr layout = layout_of(comm, n);
  const std::vector<double> mine(static_cast<std::size_t>(layout.local_rows()), 2.0);
  // Wrong length, in every format: a vector of 12 entries for a matrix of 13 rows.
  const DistributedCsr short_layout = layout_of(comm, n - 1);
  const std::vector<double> short_mine(static_cast<std::size_t>(short_layout.local_rows()), 2.0);
  for (const char* name : {"short.npy", "short.mtx", "short.petsc"}) {
    write_vector(comm, dir.file(name), short_layout.row_offsets, short_mine);
    expect_error(comm, [&] { read_vector(comm, dir.file(name), layout); }, "the vector has 12 entries, the matrix 13 rows");
  }
  // Truncated values.
  write_vector(comm, dir.file("cut.petsc"), layout.row_offsets, mine);
  truncate_file(comm, dir.file("cut.petsc"), 8 + 8 * n - 3);
  expect_error(comm, [&] { read_vector(comm, dir.file("cut.petsc"), layout); },
               dir.file("cut.petsc") + ": truncated: expected 104 bytes of values, found 101");
  write_vector(comm, dir.file("cut.npy"), layout.row_offsets, mine);
  truncate_file(comm, dir.file("cut.npy"), 128 + 8 * 2);  // the header: 10 + 59 + 1 bytes, padded to 128
  expect_error(comm, [&] { read_vector(comm, dir.file("cut.npy"), layout); },
               dir.file("cut.npy") + ": truncated: expected 104 bytes of values, found 16");
  // A matrix where a vector is expected.
  write_petsc_binary(layout, dir.file("matrix.petsc"));
  expect_error(comm, [&] { read_vector(comm, dir.file("matrix.petsc"), layout); },
               ": not a PETSc binary vector (class id 1211216: a matrix)");
  // .npy of the wrong dtype or shape.
  const auto npy = [](const std::string& descr, const std::string& shape, int values) {
    ByteFile f;
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
    dict += '\n';
    f.text(std::string("\x93NUMPY\x01\x00", 8));
    f.bytes += static_cast<char>(dict.size());
    f.bytes += '\0';
    f.text(dict);
    for (int k = 0; k < values; ++k) f.le64(1.0);
    return f.bytes;
  };
  write_file(comm, dir.file("f4.npy"), npy("<f4", "(13,)", 7));
  expect_error(comm, [&] { read_vector(comm, dir.file("f4.npy"), layout); },
               dir.file("f4.npy") + ": .npy dtype '<f4' is not float64 ('<f8')");
  write_file(comm, dir.file("big_endian.npy"), npy(">f8", "(13,)", 13));
  expect_error(comm, [&] { read_vector(comm, dir.file("big_endian.npy"), layout); }, ".npy dtype '>f8' is not float64");
  write_file(comm, dir.file("matrix.npy"), npy("<f8", "(13, 2)", 26));
  expect_error(comm, [&] { read_vector(comm, dir.file("matrix.npy"), layout); },
               dir.file("matrix.npy") + ": .npy shape (13, 2) is not a vector ((n,) or (n, 1))");
  write_file(comm, dir.file("ok.npy"), npy("<f8", "(13,)", 13));
  expect_bitwise(read_vector(comm, dir.file("ok.npy"), layout), std::vector<double>(mine.size(), 1.0));
  expect_error(comm, [&] { read_matrix(comm, dir.file("ok.npy")); }, "a .npy file holds a dense array");
  // Writing: unknown extension, missing directory.
  expect_error(comm, [&] { write_vector(comm, dir.file("x.txt"), layout.row_offsets, mine); }, "unknown extension");
  expect_error(comm, [&] { write_vector(comm, dir.file("no/x.npy"), layout.row_offsets, mine); },
               "cannot write '" + dir.file("no/x.npy") + "': directory");
  expect_error(comm, [&] { write_matrix(layout, dir.file("A.npy")); }, ".npy holds vectors");
}

TEST(SystemIo, SymmetryCheck) {
  TestComm comm;
  const int size = size_of(comm);
  const std::int64_t n = 11;
  // A symmetric matrix: tridiagonal plus a long-range pair (0, 10) and an explicit zero pair.
  const auto build = [&](double perturb, bool drop_one_zero) {
    DistributedCsr A;
    A.comm = comm;
    A.row_offsets = balanced_offsets(n, size);
    A.row_ptr.push_back(0);
    for (std::int64_t i = A.row_offsets[rank_of(comm)]; i < A.row_offsets[rank_of(comm) + 1]; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t d = i > j ? i - j : j - i;
        const bool zero_pair = (i == 2 && j == 6) || (i == 6 && j == 2);
        if (zero_pair && drop_one_zero && i == 6) continue;
        if (d <= 1 || d == 10 || zero_pair) {
          A.col.push_back(j);
          double v = d == 0 ? 4.0 + static_cast<double>(i) : (zero_pair ? 0.0 : -1.0 / static_cast<double>(i + j + 1));
          if (i == 3 && j == 4) v += perturb;  // only a(3, 4), not a(4, 3)
          A.val.push_back(v);
        }
      }
      A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
    }
    return A;
  };
  EXPECT_TRUE(is_symmetric(build(0.0, false)));
  EXPECT_TRUE(is_symmetric(build(1e-13, false)));   // within 1e-12 max|a| (max|a| = 14)
  EXPECT_FALSE(is_symmetric(build(1e-9, false)));   // beyond it
  EXPECT_FALSE(is_symmetric(build(0.0, true)));     // a(2, 6) stored, a(6, 2) not: patterns differ
  // A block matrix (block size 2) with symmetric blocks on the diagonal and B, B^T off it.
  DistributedCsr B;
  B.comm = comm;
  B.block_size = 2;
  B.row_offsets = balanced_offsets(4, size);
  B.row_ptr.push_back(0);
  for (std::int64_t i = B.row_offsets[rank_of(comm)]; i < B.row_offsets[rank_of(comm) + 1]; ++i) {
    for (std::int64_t j = std::max<std::int64_t>(0, i - 1); j <= std::min<std::int64_t>(3, i + 1); ++j) {
      B.col.push_back(j);
      if (i == j) B.val.insert(B.val.end(), {5.0, 1.0, 1.0, 6.0});
      else if (j > i) B.val.insert(B.val.end(), {1.0, 2.0, 3.0, 4.0});   // B
      else B.val.insert(B.val.end(), {1.0, 3.0, 2.0, 4.0});               // B^T
    }
    B.row_ptr.push_back(static_cast<std::int64_t>(B.col.size()));
  }
  if (size <= 4) { EXPECT_TRUE(is_symmetric(B)); }
  if (size <= 4 && B.local_block_rows() > 0 && B.row_offsets[rank_of(comm)] == 0) B.val[4 + 1] = 2.5;  // B(0,1) block
  if (size <= 4) { EXPECT_FALSE(is_symmetric(B)); }
}
