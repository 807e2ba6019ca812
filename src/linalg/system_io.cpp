#include "desync/linalg/system_io.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "desync/communication/reduction.hpp"
#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/linalg/matrix_market.hpp"
#include "desync/communication/sparse_alltoall.hpp"
#include "file_pieces.hpp"

namespace desync::linalg {

namespace {

constexpr std::int32_t petsc_mat_classid = 1211216;  // PETSc's MAT_FILE_CLASSID
constexpr std::int32_t petsc_vec_classid = 1211214;  // PETSc's VEC_FILE_CLASSID
constexpr std::int64_t no_error = std::numeric_limits<std::int64_t>::max();

// ------------------------------------------------------------------------------------------------
// Byte order: PETSc binary is big-endian, .npy little-endian ('<f8'). Built from shifts, so the
// code does not depend on the host's byte order.

std::uint32_t load_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}
std::int32_t load_be_int32(const unsigned char* p) { return static_cast<std::int32_t>(load_be32(p)); }
double load_be_double(const unsigned char* p) {
  const std::uint64_t bits = (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
  return std::bit_cast<double>(bits);
}
double load_le_double(const unsigned char* p) {
  std::uint64_t bits = 0;
  for (int k = 7; k >= 0; --k) bits = (bits << 8) | p[k];
  return std::bit_cast<double>(bits);
}
void store_be32(unsigned char* p, std::uint32_t v) {
  for (int k = 3; k >= 0; --k, v >>= 8) p[k] = static_cast<unsigned char>(v & 0xff);
}
void store_be_double(unsigned char* p, double v) {
  std::uint64_t bits = std::bit_cast<std::uint64_t>(v);
  for (int k = 7; k >= 0; --k, bits >>= 8) p[k] = static_cast<unsigned char>(bits & 0xff);
}
void store_le_double(unsigned char* p, double v) {
  std::uint64_t bits = std::bit_cast<std::uint64_t>(v);
  for (int k = 0; k < 8; ++k, bits >>= 8) p[k] = static_cast<unsigned char>(bits & 0xff);
}

using Bytes = std::vector<unsigned char>;

// ------------------------------------------------------------------------------------------------
// Small helpers

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

/// The format named by the path's extension; false if the extension names none.
bool format_by_extension(const std::string& path, SystemFormat& format) {
  const std::string ext = extension_of(path);
  if (ext == ".mtx" || ext == ".mm") format = SystemFormat::matrix_market;
  else if (ext == ".petsc" || ext == ".bin" || ext == ".dat") format = SystemFormat::petsc_binary;
  else if (ext == ".npy") format = SystemFormat::npy;
  else return false;
  return true;
}

/// Balanced contiguous row blocks: n / p rows per rank, the first n % p ranks one more.
std::vector<std::int64_t> balanced_offsets(std::int64_t n, int p) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) off[r + 1] = off[r] + n / p + (r < n % p ? 1 : 0);
  return off;
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

/// Throws on every rank the message of the rank holding the smallest `key` (no_error: no error
/// here), e.g. the file position of the first bad entry, so that the message names the first error
/// in file order whatever the number of ranks. Collective.
void agree_on_first(MPI_Comm comm, std::int64_t key, const std::string& message) {
  std::int64_t first = message.empty() ? no_error : key;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT64_T, MPI_MIN, comm);
  if (first == no_error) return;
  // agree_or_throw takes the lowest failing rank's message: fail only where the first error is.
  agree_or_throw(comm, message.empty() || key != first, message);
}

std::string bytes_found(std::int64_t file_size, std::int64_t section_start) {
  return std::to_string(std::max<std::int64_t>(0, file_size - section_start));
}

// ------------------------------------------------------------------------------------------------
// MPI-IO input

/// The first bytes of a file and its size. Headers are small, so every rank reads them with
/// ordinary I/O: a corrupt header is refused after one agreement, before any MPI-IO.
struct Head {
  std::int64_t size = 0;  ///< of the whole file
  Bytes bytes;            ///< its first min(size, max_bytes) bytes
};

/// Reads the head of `path` on every rank; a missing, unreadable or unopenable file is one agreed
/// InputError. Collective.
Head read_head(MPI_Comm comm, const std::string& path, std::int64_t max_bytes) {
  Head head;
  std::string error;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    error = "'" + path + "': no such file";
  } else if (std::filesystem::is_directory(status)) {
    error = "'" + path + "': is a directory";
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = "'" + path + "': cannot open: " + std::strerror(errno);
    } else {
      in.seekg(0, std::ios::end);
      head.size = static_cast<std::int64_t>(in.tellg());
      in.seekg(0, std::ios::beg);
      head.bytes.resize(static_cast<std::size_t>(std::min(head.size, max_bytes)));
      in.read(reinterpret_cast<char*>(head.bytes.data()), static_cast<std::streamsize>(head.bytes.size()));
      if (!in) error = "'" + path + "': read error";
    }
  }
  agree_or_throw(comm, error.empty(), error);
  return head;
}

/// A file opened collectively for reading with MPI-IO, from which each rank reads its own rows at
/// their offsets. An open error is agreed on. Closed by the destructor (collective: every rank
/// holds one and destroys it at the same point, also when an InputError unwinds every rank alike).
class InputFile {
 public:
  InputFile(MPI_Comm comm, const std::string& path) : path_(path) {
    std::string error;
    const int rc = MPI_File_open(comm, path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh_);
    if (rc != MPI_SUCCESS) {
      error = "'" + path + "': cannot open: " + mpi_error_text(rc);
      fh_ = MPI_FILE_NULL;
    }
    agree_or_throw(comm, error.empty(), error);
  }
  ~InputFile() {
    if (fh_ != MPI_FILE_NULL) MPI_File_close(&fh_);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Reads `bytes` bytes at `offset` into out (resized); not collective. False on a short read.
  bool read(std::int64_t offset, std::int64_t bytes, Bytes& out) {
    out.resize(static_cast<std::size_t>(bytes));
    constexpr std::int64_t chunk = std::int64_t{1} << 30;  // MPI counts are int
    for (std::int64_t done = 0; done < bytes; done += chunk) {
      const int n = static_cast<int>(std::min(chunk, bytes - done));
      MPI_Status st;
      if (MPI_File_read_at(fh_, static_cast<MPI_Offset>(offset + done), out.data() + done, n, MPI_BYTE, &st) !=
          MPI_SUCCESS)
        return false;
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      if (got != n) return false;
    }
    return true;
  }

  /// read(), with an agreed InputError naming the path if any rank's read fails. Collective.
  void read_all(MPI_Comm comm, std::int64_t offset, std::int64_t bytes, Bytes& out) {
    const bool ok = read(offset, bytes, out);
    agree_or_throw(comm, ok, "'" + path_ + "': read error");
  }

 private:
  std::string path_;
  MPI_File fh_ = MPI_FILE_NULL;
};

// ------------------------------------------------------------------------------------------------
// MPI-IO output

// ------------------------------------------------------------------------------------------------
// PETSc binary

/// Reads a PETSc binary AIJ matrix: each rank reads its row lengths, finds where its entries start
/// by an exclusive prefix sum of the lengths, and reads its column indices and values. Collective.
DistributedCsr read_petsc_matrix(MPI_Comm comm, const std::string& path) {
  const int rank = core::rank_of(comm), size = core::size_of(comm);
  const Head head = read_head(comm, path, 16);
  const std::int64_t file_size = head.size;
  if (file_size < 16)
    throw InputError(path + ": truncated: expected 16 bytes of header, found " + std::to_string(file_size));
  const Bytes& buf = head.bytes;
  const std::int32_t classid = load_be_int32(&buf[0]);
  const std::int64_t M = load_be_int32(&buf[4]), N = load_be_int32(&buf[8]), nz = load_be_int32(&buf[12]);
  if (classid == petsc_vec_classid)
    throw InputError(path + ": not a PETSc binary matrix (class id " + std::to_string(classid) + ": a vector)");
  if (classid != petsc_mat_classid)
    throw InputError(path + ": not a PETSc binary matrix (class id " + std::to_string(classid) + ")");
  if (M < 0 || N < 0)
    throw InputError(path + ": corrupt header: " + std::to_string(M) + " rows, " + std::to_string(N) + " columns");
  if (nz == -1)  // PETSc's MATRIX_BINARY_FORMAT_DENSE
    throw InputError(path + ": a dense PETSc matrix (MATDENSE): convert it to AIJ before saving it");
  if (nz < 0) throw InputError(path + ": corrupt header: " + std::to_string(nz) + " nonzeros");
  if (M != N)
    throw InputError(path + ": matrix is not square (" + std::to_string(M) + " x " + std::to_string(N) + ")");
  if (M == 0) throw InputError(path + ": empty matrix (0 x 0)");
  if (M < size)
    throw InputError(path + ": " + std::to_string(size) + " ranks for a matrix of " + std::to_string(M) +
                     " rows: use at most " + std::to_string(M));
  const std::int64_t lengths_at = 16, columns_at = lengths_at + 4 * M, values_at = columns_at + 4 * nz,
                     end = values_at + 8 * nz;
  if (file_size < columns_at)
    throw InputError(path + ": truncated: expected " + std::to_string(4 * M) + " bytes of row lengths, found " +
                     bytes_found(file_size, lengths_at));
  if (file_size < values_at)
    throw InputError(path + ": truncated: expected " + std::to_string(4 * nz) + " bytes of column indices, found " +
                     bytes_found(file_size, columns_at));
  if (file_size < end)
    throw InputError(path + ": truncated: expected " + std::to_string(8 * nz) + " bytes of values, found " +
                     bytes_found(file_size, values_at));

  DistributedCsr A;
  A.comm = comm;
  A.block_size = 1;
  A.row_offsets = balanced_offsets(M, size);
  const std::int64_t first = A.row_offsets[rank], rows = A.row_offsets[rank + 1] - first;

  // Row lengths: this rank's rows [first, first + rows).
  InputFile file(comm, path);
  Bytes lengths;
  file.read_all(comm, lengths_at + 4 * first, 4 * rows, lengths);
  std::vector<std::int64_t> in_file(static_cast<std::size_t>(rows) + 1, 0);  // row r: entries [in_file[r], in_file[r + 1])
  std::int64_t bad_key = no_error;
  std::string error;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t len = load_be_int32(&lengths[static_cast<std::size_t>(4 * r)]);
    if (len < 0 && error.empty()) {
      bad_key = first + r;
      error = path + ": row " + std::to_string(first + r) + " has a negative length (" + std::to_string(len) + ")";
    }
    in_file[r + 1] = in_file[r] + std::max<std::int64_t>(len, 0);
  }
  agree_on_first(comm, bad_key, error);
  const std::int64_t mine = in_file[rows];
  // entries_before = sum of the row lengths of the rows before `first` (exclusive prefix sum).
  const std::int64_t entries_before = comm::exclusive_prefix_sum(comm, mine);
  std::int64_t total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, comm);
  if (total != nz)
    throw InputError(path + ": the row lengths add up to " + std::to_string(total) + " nonzeros, the header says " +
                     std::to_string(nz));

  // Column indices and values of this rank's entries [entries_before, entries_before + mine).
  Bytes cols, vals;
  const bool read = file.read(columns_at + 4 * entries_before, 4 * mine, cols) &&
                    file.read(values_at + 8 * entries_before, 8 * mine, vals);
  agree_or_throw(comm, read, "'" + path + "': read error");
  A.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  A.col.reserve(static_cast<std::size_t>(mine));
  A.val.reserve(static_cast<std::size_t>(mine));
  std::vector<std::pair<std::int64_t, double>> row;  // (column, value) of one row, file order
  for (std::int64_t r = 0; r < rows && error.empty(); ++r) {
    row.clear();
    for (std::int64_t p = in_file[r]; p < in_file[r + 1]; ++p) {
      const std::int64_t c = load_be_int32(&cols[static_cast<std::size_t>(4 * p)]);
      const double v = load_be_double(&vals[static_cast<std::size_t>(8 * p)]);
      if ((c < 0 || c >= N) && error.empty()) {
        bad_key = entries_before + p;
        error = path + ": column index " + std::to_string(c) + " out of range in row " + std::to_string(first + r) +
                " (the matrix has " + std::to_string(N) + " columns, numbered from 0)";
      } else if (!std::isfinite(v) && error.empty()) {
        bad_key = entries_before + p;
        error = path + ": the value in row " + std::to_string(first + r) + ", column " + std::to_string(c) +
                " is not finite";
      }
      row.emplace_back(c, v);
    }
    // Columns ascending; duplicates summed in file order (stable sort keeps it).
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first) {
        A.val.back() += row[k].second;
      } else {
        A.col.push_back(row[k].first);
        A.val.push_back(row[k].second);
      }
    }
    A.row_ptr[r + 1] = static_cast<std::int64_t>(A.col.size());
  }
  agree_on_first(comm, bad_key, error);
  return A;
}

/// Reads this rank's part of a PETSc binary Vec. Collective.
std::vector<double> read_petsc_vector(MPI_Comm comm, const std::string& path, std::int64_t n, std::int64_t first,
                                      std::int64_t count) {
  const Head head = read_head(comm, path, 8);
  const std::int64_t file_size = head.size;
  if (file_size < 8)
    throw InputError(path + ": truncated: expected 8 bytes of header, found " + std::to_string(file_size));
  Bytes buf = head.bytes;
  const std::int32_t classid = load_be_int32(&buf[0]);
  const std::int64_t length = load_be_int32(&buf[4]);
  if (classid == petsc_mat_classid)
    throw InputError(path + ": not a PETSc binary vector (class id " + std::to_string(classid) + ": a matrix)");
  if (classid != petsc_vec_classid)
    throw InputError(path + ": not a PETSc binary vector (class id " + std::to_string(classid) + ")");
  if (length != n)
    throw InputError(path + ": the vector has " + std::to_string(length) + " entries, the matrix " +
                     std::to_string(n) + " rows");
  if (file_size < 8 + 8 * n)
    throw InputError(path + ": truncated: expected " + std::to_string(8 * n) + " bytes of values, found " +
                     bytes_found(file_size, 8));
  InputFile file(comm, path);
  file.read_all(comm, 8 + 8 * first, 8 * count, buf);
  std::vector<double> out(static_cast<std::size_t>(count));
  std::int64_t bad_key = no_error;
  std::string error;
  for (std::int64_t i = 0; i < count; ++i) {
    out[static_cast<std::size_t>(i)] = load_be_double(&buf[static_cast<std::size_t>(8 * i)]);
    if (!std::isfinite(out[static_cast<std::size_t>(i)]) && error.empty()) {
      bad_key = first + i;
      error = path + ": entry " + std::to_string(first + i) + " is not finite";
    }
  }
  agree_on_first(comm, bad_key, error);
  return out;
}

/// A PETSc binary Vec of the entries [offsets[r], offsets[r+1]) held by each rank r. Collective.
void write_petsc_vector(MPI_Comm comm, const std::string& path, const std::vector<std::int64_t>& offsets,
                        std::span<const double> local) {
  const int rank = core::rank_of(comm);
  const std::int64_t n = offsets.back();
  agree_or_throw(comm, n <= std::numeric_limits<std::int32_t>::max(),
                 "cannot write '" + path + "': " + std::to_string(n) + " entries do not fit PETSc's 32-bit sizes");
  Bytes header(8), data(local.size() * 8);
  store_be32(&header[0], static_cast<std::uint32_t>(petsc_vec_classid));
  store_be32(&header[4], static_cast<std::uint32_t>(n));
  for (std::size_t i = 0; i < local.size(); ++i) store_be_double(&data[8 * i], local[i]);
  std::vector<detail::FilePiece> pieces;
  if (rank == 0) pieces.push_back({0, header.data(), 8});
  pieces.push_back({8 + 8 * offsets[rank], data.data(), static_cast<std::int64_t>(data.size())});
  detail::write_pieces(comm, path, pieces);
}

// ------------------------------------------------------------------------------------------------
// .npy

constexpr unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/// The value of `key` in a .npy header dict, as its source text ('<f8', False, (3,)); "" if absent.
std::string npy_field(const std::string& header, const std::string& key) {
  std::size_t p = header.find("'" + key + "'");
  if (p == std::string::npos) p = header.find("\"" + key + "\"");
  if (p == std::string::npos) return {};
  p = header.find(':', p);
  if (p == std::string::npos) return {};
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p >= header.size()) return {};
  std::size_t e = p;
  if (header[p] == '(') {
    e = header.find(')', p);
    return e == std::string::npos ? std::string{} : header.substr(p, e - p + 1);
  }
  if (header[p] == '\'' || header[p] == '"') {
    e = header.find(header[p], p + 1);
    return e == std::string::npos ? std::string{} : header.substr(p, e - p + 1);
  }
  while (e < header.size() && header[e] != ',' && header[e] != '}') ++e;
  std::string v = header.substr(p, e - p);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

/// Parses a shape tuple "(3,)" or "(3, 1)"; false if it is not a tuple of non-negative integers.
bool parse_shape(const std::string& text, std::vector<std::int64_t>& shape) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return false;
  std::string item;
  for (std::size_t k = 1; k < text.size(); ++k) {
    const char c = text[k];
    if (c == ',' || c == ')') {
      if (!item.empty()) {
        std::int64_t v = 0;
        for (char d : item) {
          if (!std::isdigit(static_cast<unsigned char>(d))) return false;
          v = v * 10 + (d - '0');
          if (v > (std::int64_t{1} << 50)) return false;
        }
        shape.push_back(v);
      } else if (c == ',') {
        return false;  // "(,)"
      }
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  return true;
}

/// Reads this rank's part [first, first + count) of a .npy float64 vector of n entries. Collective.
std::vector<double> read_npy_vector(MPI_Comm comm, const std::string& path, std::int64_t n, std::int64_t first,
                                    std::int64_t count) {
  constexpr std::int64_t longest_header = 12 + 65536;  // NumPy writes headers of a few hundred bytes
  const Head head = read_head(comm, path, longest_header);
  const std::int64_t file_size = head.size;
  if (file_size < 10)
    throw InputError(path + ": truncated: expected at least 10 bytes of .npy header, found " +
                     std::to_string(file_size));
  Bytes buf = head.bytes;
  if (!std::equal(npy_magic, npy_magic + 6, buf.begin())) throw InputError(path + ": not a .npy file (no NumPy magic)");
  const int major = buf[6];
  std::int64_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = buf[8] | (buf[9] << 8);
    header_at = 10;
  } else if ((major == 2 || major == 3) && file_size >= 12) {
    header_len = static_cast<std::int64_t>(buf[8]) | (static_cast<std::int64_t>(buf[9]) << 8) |
                 (static_cast<std::int64_t>(buf[10]) << 16) | (static_cast<std::int64_t>(buf[11]) << 24);
    header_at = 12;
  } else {
    throw InputError(path + ": unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(buf[7]));
  }
  if (file_size < header_at + header_len)
    throw InputError(path + ": truncated: expected " + std::to_string(header_len) + " bytes of .npy header, found " +
                     bytes_found(file_size, header_at));
  if (header_at + header_len > longest_header)
    throw InputError(path + ": .npy header of " + std::to_string(header_len) + " bytes: too long for a vector");
  const std::string header(buf.begin() + header_at, buf.begin() + header_at + header_len);
  const std::string descr = npy_field(header, "descr"), order = npy_field(header, "fortran_order"),
                    shape_text = npy_field(header, "shape");
  std::vector<std::int64_t> shape;
  if (descr.empty() || order.empty() || !parse_shape(shape_text, shape))
    throw InputError(path + ": corrupt .npy header '" + header.substr(0, 80) + "'");
  if (descr.size() < 2 || descr.substr(1, descr.size() - 2) != "<f8")
    throw InputError(path + ": .npy dtype " + descr + " is not float64 ('<f8')");
  const bool vector_shape = shape.size() == 1 || (shape.size() == 2 && shape[1] == 1);
  if (!vector_shape)
    throw InputError(path + ": .npy shape " + shape_text + " is not a vector ((n,) or (n, 1))");
  // (n, 1) holds the same bytes in C and Fortran order.
  if (shape[0] != n)
    throw InputError(path + ": the vector has " + std::to_string(shape[0]) + " entries, the matrix " +
                     std::to_string(n) + " rows");
  const std::int64_t data_at = header_at + header_len;
  if (file_size < data_at + 8 * n)
    throw InputError(path + ": truncated: expected " + std::to_string(8 * n) + " bytes of values, found " +
                     bytes_found(file_size, data_at));
  InputFile file(comm, path);
  file.read_all(comm, data_at + 8 * first, 8 * count, buf);
  std::vector<double> out(static_cast<std::size_t>(count));
  std::int64_t bad_key = no_error;
  std::string error;
  for (std::int64_t i = 0; i < count; ++i) {
    out[static_cast<std::size_t>(i)] = load_le_double(&buf[static_cast<std::size_t>(8 * i)]);
    if (!std::isfinite(out[static_cast<std::size_t>(i)]) && error.empty()) {
      bad_key = first + i;
      error = path + ": entry " + std::to_string(first + i) + " is not finite";
    }
  }
  agree_on_first(comm, bad_key, error);
  return out;
}

/// A .npy format 1.0 float64 vector of shape (n,). Collective.
void write_npy_vector(MPI_Comm comm, const std::string& path, const std::vector<std::int64_t>& offsets,
                      std::span<const double> local) {
  const int rank = core::rank_of(comm);
  const std::int64_t n = offsets.back();
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  // Magic (6) + version (2) + length (2) + dict + spaces + '\n' is a multiple of 64 bytes.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  Bytes header(npy_magic, npy_magic + 6);
  header.push_back(1);
  header.push_back(0);
  header.push_back(static_cast<unsigned char>(dict.size() & 0xff));
  header.push_back(static_cast<unsigned char>(dict.size() >> 8));
  header.insert(header.end(), dict.begin(), dict.end());
  Bytes data(local.size() * 8);
  for (std::size_t i = 0; i < local.size(); ++i) store_le_double(&data[8 * i], local[i]);
  std::vector<detail::FilePiece> pieces;
  if (rank == 0) pieces.push_back({0, header.data(), static_cast<std::int64_t>(header.size())});
  pieces.push_back({static_cast<std::int64_t>(header.size()) + 8 * offsets[rank], data.data(),
                    static_cast<std::int64_t>(data.size())});
  detail::write_pieces(comm, path, pieces);
}

/// detect_format, with its error agreed on by every rank. Collective.
SystemFormat agree_format(MPI_Comm comm, const std::string& path) {
  SystemFormat format = SystemFormat::matrix_market;
  std::string error;
  try {
    format = detect_format(path);
  } catch (const InputError& e) {
    error = e.what();
  }
  agree_or_throw(comm, error.empty(), error);
  return format;
}

/// The format of a file to be written, by extension only; InputError on every rank otherwise.
SystemFormat output_format(MPI_Comm comm, const std::string& path) {
  SystemFormat format = SystemFormat::matrix_market;
  agree_or_throw(comm, format_by_extension(path, format),
                 "cannot write '" + path + "': unknown extension (use .mtx or .mm for Matrix Market, .petsc, .bin or "
                 ".dat for PETSc binary, .npy for NumPy)");
  return format;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// MPI-IO output (file_pieces.hpp)

namespace detail {

void write_pieces(MPI_Comm comm, const std::string& path, const std::vector<FilePiece>& pieces) {
  std::string error;
  if (core::rank_of(comm) == 0) {
    std::error_code ec;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      error = "cannot write '" + path + "': directory '" + parent.string() + "' does not exist";
    else if (std::filesystem::is_directory(path, ec))
      error = "cannot write '" + path + "': is a directory";
    else if (!std::ofstream(path, std::ios::binary | std::ios::trunc))
      error = "cannot write '" + path + "': " + std::strerror(errno);
  }
  agree_or_throw(comm, error.empty(), error);
  MPI_File fh = MPI_FILE_NULL;
  const int rc = MPI_File_open(comm, path.c_str(), MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  if (rc != MPI_SUCCESS) error = "cannot write '" + path + "': " + mpi_error_text(rc);
  agree_or_throw(comm, error.empty(), error);
  constexpr std::int64_t chunk = std::int64_t{1} << 30;
  for (const FilePiece& p : pieces)
    for (std::int64_t done = 0; done < p.bytes && error.empty(); done += chunk) {
      const int n = static_cast<int>(std::min(chunk, p.bytes - done));
      MPI_Status st;
      if (MPI_File_write_at(fh, static_cast<MPI_Offset>(p.offset + done), p.data + done, n, MPI_BYTE, &st) !=
          MPI_SUCCESS)
        error = "cannot write '" + path + "': write error";
    }
  MPI_File_close(&fh);
  agree_or_throw(comm, error.empty(), error);
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------

const char* format_name(SystemFormat format) {
  switch (format) {
    case SystemFormat::matrix_market: return "Matrix Market";
    case SystemFormat::petsc_binary: return "PETSc binary";
    case SystemFormat::npy: return ".npy";
  }
  return "?";
}

SystemFormat detect_format(const std::string& path) {
  SystemFormat format = SystemFormat::matrix_market;
  if (format_by_extension(path, format)) return format;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw InputError("'" + path + "': no such file");
  if (std::filesystem::is_directory(status)) throw InputError("'" + path + "': is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("'" + path + "': cannot open: " + std::strerror(errno));
  unsigned char head[16] = {0};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const std::size_t got = static_cast<std::size_t>(in.gcount());
  std::string banner(reinterpret_cast<const char*>(head), std::min<std::size_t>(got, 14));
  for (char& c : banner) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (banner == "%%matrixmarket") return SystemFormat::matrix_market;
  if (got >= 4) {
    const std::int32_t classid = load_be_int32(head);
    if (classid == petsc_mat_classid || classid == petsc_vec_classid) return SystemFormat::petsc_binary;
  }
  if (got >= 6 && std::equal(npy_magic, npy_magic + 6, head)) return SystemFormat::npy;
  if (got >= 2 && head[0] == 0x1f && head[1] == 0x8b)
    throw InputError("'" + path + "': a gzip-compressed file: decompress it first");
  throw InputError("'" + path +
                   "': unknown format (expected Matrix Market, PETSc binary or .npy; by extension .mtx/.mm, "
                   ".petsc/.bin/.dat, .npy)");
}

DistributedCsr read_matrix(MPI_Comm comm, const std::string& path) {
  switch (agree_format(comm, path)) {
    case SystemFormat::matrix_market: return read_matrix_market_square(comm, path);
    case SystemFormat::petsc_binary: return read_petsc_matrix(comm, path);
    case SystemFormat::npy: break;
  }
  throw InputError(path + ": a .npy file holds a dense array: give the matrix as Matrix Market or PETSc binary");
}

std::vector<double> read_vector(MPI_Comm comm, const std::string& path, const DistributedCsr& layout) {
  const int rank = core::rank_of(comm);
  const std::int64_t n = layout.global_rows();
  const std::int64_t first = layout.row_offsets[rank] * layout.block_size, count = layout.local_rows();
  switch (agree_format(comm, path)) {
    case SystemFormat::matrix_market: return read_matrix_market_vector(comm, path, layout);
    case SystemFormat::petsc_binary: return read_petsc_vector(comm, path, n, first, count);
    case SystemFormat::npy: return read_npy_vector(comm, path, n, first, count);
  }
  throw std::logic_error("read_vector: unknown format");
}

std::vector<std::vector<double>> read_vectors(MPI_Comm comm, const std::string& path, const DistributedCsr& layout) {
  if (agree_format(comm, path) == SystemFormat::matrix_market)
    return read_matrix_market_columns(comm, path, layout, true);
  return {read_vector(comm, path, layout)};
}

void write_vector(MPI_Comm comm, const std::string& path, const std::vector<std::int64_t>& offsets,
                  std::span<const double> local) {
  const int rank = core::rank_of(comm), size = core::size_of(comm);
  if (offsets.size() != static_cast<std::size_t>(size) + 1 ||
      static_cast<std::int64_t>(local.size()) != offsets[rank + 1] - offsets[rank])
    throw std::invalid_argument("write_vector: offsets do not describe this rank's part");
  switch (output_format(comm, path)) {
    case SystemFormat::npy: write_npy_vector(comm, path, offsets, local); return;
    case SystemFormat::petsc_binary: write_petsc_vector(comm, path, offsets, local); return;
    case SystemFormat::matrix_market: {
      DistributedCsr layout;  // only the row distribution, which is all the writer reads
      layout.comm = comm;
      layout.row_offsets = offsets;
      layout.row_ptr.assign(static_cast<std::size_t>(offsets[rank + 1] - offsets[rank]) + 1, 0);
      write_matrix_market_vector(layout, local, path);
      return;
    }
  }
}

void write_petsc_binary(const DistributedCsr& A, const std::string& path) {
  const MPI_Comm comm = A.comm;
  const int rank = core::rank_of(comm);
  const int bs = A.block_size;
  const std::int64_t M = A.global_rows(), rows = A.local_rows(), first = A.row_offsets[rank] * bs;
  const std::int64_t mine = A.nonzero_blocks() * bs * bs;
  std::int64_t nz = 0;
  MPI_Allreduce(&mine, &nz, 1, MPI_INT64_T, MPI_SUM, comm);
  const std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
  agree_or_throw(comm, M <= int32_max && nz <= int32_max,
                 "cannot write '" + path + "': " + std::to_string(M) + " rows and " + std::to_string(nz) +
                     " nonzeros do not fit PETSc's 32-bit indices");
  const std::int64_t entries_before = comm::exclusive_prefix_sum(comm, mine);

  // Scalar row (first block row + r) * bs + p holds, for every stored block e of block row r, the
  // bs values of the block's row p, at columns col[e] * bs + q.
  Bytes header(16), lengths(static_cast<std::size_t>(4 * rows)), cols(static_cast<std::size_t>(4 * mine)),
      vals(static_cast<std::size_t>(8 * mine));
  store_be32(&header[0], static_cast<std::uint32_t>(petsc_mat_classid));
  store_be32(&header[4], static_cast<std::uint32_t>(M));
  store_be32(&header[8], static_cast<std::uint32_t>(M));
  store_be32(&header[12], static_cast<std::uint32_t>(nz));
  std::size_t k = 0;
  for (std::int64_t r = 0; r < A.local_block_rows(); ++r)
    for (int p = 0; p < bs; ++p) {
      const std::int64_t length = (A.row_ptr[r + 1] - A.row_ptr[r]) * bs;
      store_be32(&lengths[static_cast<std::size_t>(4 * (r * bs + p))], static_cast<std::uint32_t>(length));
      for (std::int64_t e = A.row_ptr[r]; e < A.row_ptr[r + 1]; ++e)
        for (int q = 0; q < bs; ++q, ++k) {
          store_be32(&cols[4 * k], static_cast<std::uint32_t>(A.col[e] * bs + q));
          store_be_double(&vals[8 * k], A.val[static_cast<std::size_t>(e * bs * bs + p * bs + q)]);
        }
    }
  const std::int64_t columns_at = 16 + 4 * M, values_at = columns_at + 4 * nz;
  std::vector<detail::FilePiece> pieces;
  if (rank == 0) pieces.push_back({0, header.data(), 16});
  pieces.push_back({16 + 4 * first, lengths.data(), 4 * rows});
  pieces.push_back({columns_at + 4 * entries_before, cols.data(), 4 * mine});
  pieces.push_back({values_at + 8 * entries_before, vals.data(), 8 * mine});
  detail::write_pieces(comm, path, pieces);
}

void write_matrix(const DistributedCsr& A, const std::string& path) {
  switch (output_format(A.comm, path)) {
    case SystemFormat::matrix_market: write_matrix_market(A, path, false); return;
    case SystemFormat::petsc_binary: write_petsc_binary(A, path); return;
    case SystemFormat::npy: break;
  }
  throw InputError("cannot write '" + path + "': .npy holds vectors; write the matrix as .mtx or .petsc");
}

bool is_symmetric(const DistributedCsr& A) {
  const MPI_Comm comm = A.comm;
  const int rank = core::rank_of(comm), size = core::size_of(comm);
  const int bs = A.block_size;
  const std::int64_t first_block = A.row_offsets[rank];
  double max_abs = 0;
  for (double v : A.val) max_abs = std::max(max_abs, std::abs(v));
  MPI_Allreduce(MPI_IN_PLACE, &max_abs, 1, MPI_DOUBLE, MPI_MAX, comm);
  const double tol = 1e-12 * max_abs;

  // Every stored scalar entry a_ij goes to the owner of (block) row j as (i, j, a_ij).
  struct Triple {
    std::int64_t row, col;  // scalar indices
    double val;
  };
  const auto owner = [&](std::int64_t block_row) {
    return static_cast<int>(std::upper_bound(A.row_offsets.begin(), A.row_offsets.end(), block_row) -
                            A.row_offsets.begin()) - 1;
  };
  std::vector<std::vector<Triple>> out(static_cast<std::size_t>(size));
  for (std::int64_t r = 0; r < A.local_block_rows(); ++r)
    for (std::int64_t e = A.row_ptr[r]; e < A.row_ptr[r + 1]; ++e)
      for (int p = 0; p < bs; ++p)
        for (int q = 0; q < bs; ++q)
          out[static_cast<std::size_t>(owner(A.col[e]))].push_back(
              {(first_block + r) * bs + p, A.col[e] * bs + q, A.val[static_cast<std::size_t>(e * bs * bs + p * bs + q)]});
  std::vector<int> send_count(size), send_disp(size), recv_count(size), recv_disp(size);
  std::vector<Triple> send;
  for (int r = 0; r < size; ++r) {
    send_disp[r] = static_cast<int>(send.size());
    send_count[r] = static_cast<int>(out[r].size());
    send.insert(send.end(), out[r].begin(), out[r].end());
    out[r].clear();
  }
  comm::sparse_alltoall(send_count.data(), recv_count.data(), comm);
  int received = 0;
  for (int r = 0; r < size; ++r) {
    recv_disp[r] = received;
    received += recv_count[r];
  }
  std::vector<Triple> in(static_cast<std::size_t>(received));
  comm::sparse_alltoallv_records(send.data(), send_count.data(), send_disp.data(), in.data(), recv_count.data(),
                                 recv_disp.data(), comm);

  // (i, j, a_ij) with block row j ours: compare with our a_ji. The same pattern means every
  // stored entry finds its transpose, and the counts agree (so nothing of ours is left unmatched).
  bool symmetric = static_cast<std::int64_t>(in.size()) == A.nonzero_blocks() * bs * bs;
  for (const Triple& t : in) {
    if (!symmetric) break;
    const std::int64_t r = t.col / bs - first_block, p = t.col % bs;  // our block row, row inside it
    const std::int64_t block_col = t.row / bs, q = t.row % bs;
    const auto b = A.col.begin() + A.row_ptr[r], e = A.col.begin() + A.row_ptr[r + 1];
    const auto it = std::lower_bound(b, e, block_col);
    if (it == e || *it != block_col) {
      symmetric = false;
      break;
    }
    const double aji = A.val[static_cast<std::size_t>((it - A.col.begin()) * bs * bs + p * bs + q)];
    if (!(std::abs(aji - t.val) <= tol)) symmetric = false;
  }
  int all = symmetric ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace desync::linalg
