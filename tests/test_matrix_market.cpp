// Matrix Market input and output: exact round trips at every rank count (general and symmetric
// storage, block matrices, vectors), duplicates and ordering, and one InputError with the right
// line number for every malformed file.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/matrix_market.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/core/error.hpp"
#include "matrix_test_util.hpp"
#include "test_util.hpp"

#ifndef DESYNC_TEST_DATA_DIR
#error "DESYNC_TEST_DATA_DIR must name tests/data"
#endif

using desync::InputError;
using namespace desync::linalg;
using namespace desync_test;

namespace {

const std::string kData = DESYNC_TEST_DATA_DIR;

/// A symmetric test matrix of n rows with awkward values, distributed in balanced ranges like the
/// reader distributes: a tridiagonal band, some long-range couplings, an explicit zero pair.
DistributedCsr known_matrix(MPI_Comm comm, std::int64_t n) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  DistributedCsr A;
  A.comm = comm;
  A.block_size = 1;
  A.row_offsets.assign(static_cast<std::size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r) A.row_offsets[r + 1] = A.row_offsets[r] + n / size + (r < n % size ? 1 : 0);
  auto value = [](std::int64_t i, std::int64_t j) {  // symmetric in (i, j)
    const std::int64_t lo = std::min(i, j), hi = std::max(i, j);
    if (lo == hi) return 4.0 + 1.0 / 3.0 * static_cast<double>(lo % 7) + 1e-300;
    if (lo == 3 && hi == 17) return 0.0;  // explicit zero
    return -std::pow(0.1, static_cast<double>(hi - lo)) * (1.0 + 1.0 / static_cast<double>(lo + 3)) *
           (hi % 5 == 0 ? 1e17 : 1.0);
  };
  auto coupled = [](std::int64_t i, std::int64_t j) {
    const std::int64_t d = i > j ? i - j : j - i;
    const std::int64_t lo = std::min(i, j), hi = std::max(i, j);
    return d <= 1 || (d == 7 && lo % 3 == 0) || (lo == 3 && hi == 17);
  };
  A.row_ptr.push_back(0);
  for (std::int64_t i = A.row_offsets[rank]; i < A.row_offsets[rank + 1]; ++i) {
    for (std::int64_t j = 0; j < n; ++j)
      if (coupled(i, j)) {
        A.col.push_back(j);
        A.val.push_back(value(i, j));
      }
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  return A;
}

/// Every rank: (global row, column, value) of the whole matrix, sorted.
struct Entry {
  std::int64_t row, col;
  double val;
  bool operator==(const Entry& o) const { return row == o.row && col == o.col && std::memcmp(&val, &o.val, 8) == 0; }
};
std::vector<Entry> gather_scalar(const DistributedCsr& A) {
  int rank = 0, size = 1;
  MPI_Comm_rank(A.comm, &rank);
  MPI_Comm_size(A.comm, &size);
  const int bs = A.block_size;
  std::vector<Entry> mine;
  for (std::int64_t r = 0; r < A.local_block_rows(); ++r)
    for (int p = 0; p < bs; ++p)
      for (std::int64_t e = A.row_ptr[r]; e < A.row_ptr[r + 1]; ++e)
        for (int q = 0; q < bs; ++q)
          mine.push_back({(A.row_offsets[rank] + r) * bs + p, A.col[e] * bs + q,
                          A.val[static_cast<std::size_t>(e * bs * bs + p * bs + q)]});
  int bytes = static_cast<int>(mine.size() * sizeof(Entry));
  std::vector<int> counts(size), displs(size);
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, A.comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<Entry> all(static_cast<std::size_t>(total) / sizeof(Entry));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, A.comm);
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  return all;
}

/// Reads `path` expecting an InputError whose message contains `expected`; the message must be
/// the same on every rank.
void expect_error(MPI_Comm comm, const std::string& path, const std::string& expected, bool vector = false,
                  const DistributedCsr* layout = nullptr) {
  std::string message;
  try {
    if (vector)
      read_matrix_market_vector(comm, path, *layout);
    else
      read_matrix_market(comm, path);
  } catch (const InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(expected), std::string::npos)
      << "file " << path << "\n  expected: " << expected << "\n  got:      " << message;
  // Identical on every rank.
  int len = static_cast<int>(message.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  std::string root(static_cast<std::size_t>(len), ' ');
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) root = message;
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, comm);
  EXPECT_EQ(message, root);
}

}  // namespace

TEST(MatrixMarket, RoundTripGeneralAndSymmetric) {
  TestComm comm;
  ScratchDir dir(comm, "desync_mm");
  for (std::int64_t n : {1, 5, 40}) {
    const DistributedCsr A = known_matrix(comm, n);
    for (bool symmetric : {false, true}) {
      const std::string path = dir.file("known_" + std::to_string(n) + (symmetric ? "_sym" : "_gen") + ".mtx");
      write_matrix_market(A, path, symmetric);
      const DistributedCsr B = read_matrix_market(comm, path);
      EXPECT_EQ(B.comm, static_cast<MPI_Comm>(comm));
      expect_same(A, B);
      // Read back on one rank: the whole matrix, the same entries.
      const DistributedCsr C = read_matrix_market(MPI_COMM_SELF, path);
      EXPECT_EQ(C.row_offsets, (std::vector<std::int64_t>{0, n}));
      const auto all = gather_scalar(A);
      EXPECT_EQ(gather_scalar(C), all);
    }
  }
}

TEST(MatrixMarket, OverwritesALongerFile) {
  TestComm comm;
  ScratchDir dir(comm, "desync_mm");
  const std::string path = dir.file("overwrite.mtx");
  write_file(comm, path, std::string(100000, '%') + "\n");
  const DistributedCsr A = known_matrix(comm, 9);
  write_matrix_market(A, path, true);
  expect_same(A, read_matrix_market(comm, path));
}

TEST(MatrixMarket, ElasticityBlockMatrixRoundTrip) {
  TestComm comm;
  ScratchDir dir(comm, "desync_mm");
  const int size = desync_test::world_size();
  desync::decomposition::CartGrid grid(comm, {4, 3, 5}, desync::decomposition::choose_dims(size, {0, 0, 0}));
  const auto sys = desync::problems::assemble_elasticity3d(grid);
  const auto expected = gather_scalar(sys.A);
  for (bool symmetric : {false, true}) {
    const std::string path = dir.file(symmetric ? "elasticity_sym.mtx" : "elasticity_gen.mtx");
    write_matrix_market(sys.A, path, symmetric);
    // Scalar rows; the general file passes the symmetry check (the matrix is bitwise symmetric).
    const DistributedCsr B = read_matrix_market(comm, path);
    EXPECT_EQ(B.block_size, 1);
    EXPECT_EQ(B.global_rows(), 3 * 4 * 3 * 5);
    EXPECT_EQ(gather_scalar(B), expected);
  }
  // The load vector.
  const std::string bpath = dir.file("elasticity_b.mtx");
  write_matrix_market_vector(sys.A, sys.b, bpath);
  const auto b = read_matrix_market_vector(comm, bpath, sys.A);
  ASSERT_EQ(b.size(), sys.b.size());
  if (!b.empty()) {
    EXPECT_EQ(std::memcmp(b.data(), sys.b.data(), b.size() * sizeof(double)), 0);
  }
}

TEST(MatrixMarket, DuplicatesSummedColumnsSorted) {
  TestComm comm;
  const DistributedCsr A = read_matrix_market(comm, kData + "/laplace4_symmetric.mtx");
  const DistributedCsr B = read_matrix_market(comm, kData + "/laplace4_general_no_final_newline.mtx");
  const auto a = gather_scalar(A);
  EXPECT_EQ(a, gather_scalar(B));
  std::vector<Entry> expected;
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = std::max<std::int64_t>(0, i - 1); j <= std::min<std::int64_t>(3, i + 1); ++j)
      expected.push_back({i, j, i == j ? 2.0 : -1.0});
  EXPECT_EQ(a, expected);
  for (std::int64_t r = 0; r < A.local_block_rows(); ++r)
    for (std::int64_t e = A.row_ptr[r] + 1; e < A.row_ptr[r + 1]; ++e) EXPECT_LT(A.col[e - 1], A.col[e]);
  // Balanced contiguous rows.
  const int size = desync_test::world_size();
  ASSERT_EQ(A.row_offsets.size(), static_cast<std::size_t>(size) + 1);
  for (int r = 0; r < size; ++r) EXPECT_EQ(A.row_offsets[r + 1] - A.row_offsets[r], 4 / size + (r < 4 % size ? 1 : 0));
}

TEST(MatrixMarket, Vectors) {
  TestComm comm;
  const DistributedCsr A = read_matrix_market(comm, kData + "/laplace4_symmetric.mtx");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::int64_t first = A.row_offsets[rank];
  const double arr[4] = {1.0, 2.5, -3.0, 0.4}, coo[4] = {0.0, 2.0, 0.0, 4.0};
  const auto x = read_matrix_market_vector(comm, kData + "/vec4_array.mtx", A);
  const auto y = read_matrix_market_vector(comm, kData + "/vec4_coordinate.mtx", A);
  ASSERT_EQ(x.size(), static_cast<std::size_t>(A.local_rows()));
  ASSERT_EQ(y.size(), static_cast<std::size_t>(A.local_rows()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i], arr[first + static_cast<std::int64_t>(i)]);
    EXPECT_EQ(y[i], coo[first + static_cast<std::int64_t>(i)]);
  }
  expect_error(comm, kData + "/vec3_array.mtx", "vec3_array.mtx:2: the vector has 3 entries, the matrix 4 rows", true,
               &A);
  expect_error(comm, kData + "/vec4_short.mtx", "vec4_short.mtx:5: file ends after 3 of the 4 entries declared on line 2",
               true, &A);
  expect_error(comm, kData + "/laplace4_symmetric.mtx", "unsupported symmetry 'symmetric' for a vector", true, &A);
  expect_error(comm, kData + "/laplace4_general_no_final_newline.mtx", ":2: expected a vector (n x 1)", true, &A);
}

TEST(MatrixMarket, MalformedFilesNameFileAndLine) {
  TestComm comm;
  struct Case {
    const char* file;
    const char* message;
  };
  const Case cases[] = {
      {"bad_banner.mtx", "bad_banner.mtx:1: malformed banner"},
      {"not_matrix_market.mtx", "not_matrix_market.mtx:1: malformed banner 'hello world'"},
      {"empty.mtx", "empty.mtx:1: empty file"},
      {"complex.mtx", "complex.mtx:1: unsupported field 'complex'"},
      {"pattern.mtx", "pattern.mtx:1: unsupported field 'pattern'"},
      {"array_matrix.mtx", "array_matrix.mtx:1: dense 'array' matrices are not supported"},
      {"skew.mtx", "skew.mtx:1: unsupported symmetry 'skew-symmetric'"},
      {"vector_object.mtx", "vector_object.mtx:1: unsupported object 'vector'"},
      {"bad_size_line.mtx", "bad_size_line.mtx:5: malformed size line '3 3'"},
      {"negative_size.mtx", "negative_size.mtx:3: malformed size line '3 -3 4'"},
      {"no_size_line.mtx", "no_size_line.mtx:3: file ends before the size line"},
      {"non_square.mtx", "non_square.mtx:3: matrix is not square (3 x 4)"},
      {"bad_entry.mtx", "bad_entry.mtx:6: malformed entry '1 x 2.0'"},
      {"extra_token.mtx", "extra_token.mtx:4: malformed entry '2 2 4.0 7'"},
      {"missing_value.mtx", "missing_value.mtx:5: malformed entry '3 3'"},
      {"integer_with_fraction.mtx", "integer_with_fraction.mtx:4: malformed entry '2 2 4.5'"},
      {"nan_value.mtx", "nan_value.mtx:4: value '2 2 nan' is not finite"},
      {"row_out_of_range.mtx", "row_out_of_range.mtx:7: index (4, 1) out of range: the matrix is 3 x 3"},
      {"col_out_of_range.mtx", "col_out_of_range.mtx:5: index (3, 0) out of range"},
      {"upper_in_symmetric.mtx", "upper_in_symmetric.mtx:6: entry (1, 2) above the diagonal in a 'symmetric' file"},
      {"too_many_entries.mtx", "too_many_entries.mtx:6: more entries than the 3 declared on line 2"},
      {"too_few_entries.mtx", "too_few_entries.mtx:6: file ends after 3 of the 5 entries declared on line 3"},
      {"nonsymmetric_values.mtx", "not symmetric: A(1, 2) = 1 but A(2, 1) = 2"},
      {"nonsymmetric_structure.mtx", "not symmetric: A(3, 1) is stored but A(1, 3) is not"},
      {"missing_diagonal.mtx", "not positive definite: diagonal entry A(2, 2) is missing"},
      {"negative_diagonal.mtx", "not positive definite: diagonal entry A(2, 2) = -4 is not positive"},
  };
  for (const Case& c : cases) expect_error(comm, kData + "/" + c.file, c.message);
  expect_error(comm, kData + "/does_not_exist.mtx", "does_not_exist.mtx': no such file");
  expect_error(comm, kData, "': is a directory");
}

TEST(MatrixMarket, LineNumbersInLargeFiles) {
  // Errors anywhere in a file split over the ranks' byte ranges carry the file's line number.
  TestComm comm;
  ScratchDir dir(comm, "desync_mm");
  const int n = 300;
  for (int bad : {0, 1, 137, 298, 299}) {  // entry index with the error
    std::string text = "%%MatrixMarket matrix coordinate real symmetric\n% comment\n%\n" + std::to_string(n) + " " +
                       std::to_string(n) + " " + std::to_string(n) + "\n";
    for (int i = 0; i < n; ++i) {
      if (i == 100) text += "% a comment inside the data\n\n";
      text += (i == bad ? std::to_string(i + 1) + " " + std::to_string(i + 1) + " 1.0.0\n"
                        : std::to_string(i + 1) + " " + std::to_string(i + 1) + " 2.0\n");
    }
    const std::string path = dir.file("bad" + std::to_string(bad) + ".mtx");
    write_file(comm, path, text);
    const int line = 5 + bad + (bad >= 100 ? 2 : 0);
    expect_error(comm, path, "bad" + std::to_string(bad) + ".mtx:" + std::to_string(line) + ": malformed entry");
  }
  // Several errors: the first in file order is reported, whatever the number of ranks.
  std::string text = "%%MatrixMarket matrix coordinate real general\n" + std::to_string(n) + " " +
                     std::to_string(n) + " " + std::to_string(n) + "\n";
  for (int i = 0; i < n; ++i)
    text += (i % 50 == 49 ? std::to_string(n + 1) : std::to_string(i + 1)) + " " + std::to_string(i + 1) + " 2\n";
  write_file(comm, dir.file("many.mtx"), text);
  expect_error(comm, dir.file("many.mtx"), "many.mtx:52: index (301, 50) out of range");
}

TEST(MatrixMarket, WriteErrors) {
  TestComm comm;
  const DistributedCsr A = known_matrix(comm, 6);
  try {
    write_matrix_market(A, "/nonexistent_desync_dir/x.mtx", false);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("directory '/nonexistent_desync_dir' does not exist"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(write_matrix_market(A, "/", false), InputError);
}
