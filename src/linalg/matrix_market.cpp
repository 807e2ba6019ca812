#include "desync/linalg/matrix_market.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "desync/communication/reduction.hpp"
#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/communication/sparse_alltoall.hpp"
#include "file_pieces.hpp"

namespace desync::linalg {

namespace {

// ------------------------------------------------------------------------------------------------
// Small helpers

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

/// The line as quoted in a message: without the line break, shortened if long.
std::string quote(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  std::string s(text.substr(0, 60));
  if (text.size() > 60) s += "...";
  return "'" + s + "'";
}

std::string at(const std::string& path, std::int64_t line) { return path + ":" + std::to_string(line) + ": "; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// Parses a whole token as a non-negative decimal integer.
bool parse_count(const std::string& tok, std::int64_t& out) {
  if (tok.empty() || !std::isdigit(static_cast<unsigned char>(tok[0]))) return false;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return ec == std::errc() && p == tok.data() + tok.size();
}

/// Parses the token starting at text[*pos] (whitespace before it skipped) as a number of type T
/// (std::from_chars: decimal integers; reals in decimal or scientific notation, correctly rounded);
/// advances *pos past it. False if there is no token or it is not wholly such a number.
template <class T>
bool next_number(std::string_view text, std::size_t& pos, T& out) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  std::size_t end = pos;
  while (end < text.size() && !is_space(text[end])) ++end;
  if (end == pos) return false;
  const char* b = text.data() + pos;
  if (*b == '+' && end - pos > 1 && b[1] != '-' && b[1] != '+') ++b;  // from_chars takes no plus sign
  auto [p, ec] = std::from_chars(b, text.data() + end, out);
  if (ec != std::errc() || p != text.data() + end) return false;
  pos = end;
  return true;
}

/// An integer token (see next_number).
bool next_int(std::string_view text, std::size_t& pos, std::int64_t& out) { return next_number(text, pos, out); }

/// A real token (see next_number; inf and nan parse and are rejected later), read as an integer in
/// an integer field.
bool next_real(std::string_view text, std::size_t& pos, double& out, bool integer_field) {
  if (integer_field) {
    std::int64_t v = 0;
    if (!next_int(text, pos, v)) return false;
    out = static_cast<double>(v);
    return true;
  }
  return next_number(text, pos, out);
}

bool only_space_after(std::string_view text, std::size_t pos) {
  for (; pos < text.size(); ++pos)
    if (!is_space(text[pos])) return false;
  return true;
}

/// Owner of global row `i` when `n` rows are split over `p` ranks in contiguous balanced ranges
/// (the first n % p ranks one row more).
int balanced_owner(std::int64_t n, int p, std::int64_t i) {
  const std::int64_t q = n / p, rem = n % p;
  const std::int64_t big = rem * (q + 1);
  if (i < big) return static_cast<int>(i / (q + 1));
  return static_cast<int>(rem + (i - big) / q);  // q >= 1 here
}

std::vector<std::int64_t> balanced_offsets(std::int64_t n, int p) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) off[r + 1] = off[r] + n / p + (r < n % p ? 1 : 0);
  return off;
}

/// Owner of scalar row `i` of a matrix laid out like `layout`.
int layout_owner(const DistributedCsr& layout, std::int64_t i) {
  const std::int64_t block = i / layout.block_size;
  auto it = std::upper_bound(layout.row_offsets.begin(), layout.row_offsets.end(), block);
  return static_cast<int>(it - layout.row_offsets.begin()) - 1;
}

// ------------------------------------------------------------------------------------------------
// Header

struct Header {
  std::string object, format, field, symmetry;  // lower case
  std::int64_t rows = 0, cols = 0, entries = 0;  // entries: coordinate only; array: rows * cols
  std::int64_t size_line = 0;                    // line number of the size line
  std::int64_t data_offset = 0;                  // byte offset of the first line after it
  std::int64_t data_line = 0;                    // its line number
  std::int64_t file_size = 0;
};

/// Reads the banner, the comments and the size line. Returns an error message or "".
std::string read_header(const std::string& path, Header& h) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) return "'" + path + "': no such file";
  if (std::filesystem::is_directory(status)) return "'" + path + "': is a directory";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "'" + path + "': cannot open: " + std::strerror(errno);
  in.seekg(0, std::ios::end);
  h.file_size = static_cast<std::int64_t>(in.tellg());
  in.seekg(0, std::ios::beg);

  std::string line;
  if (!std::getline(in, line)) return at(path, 1) + "empty file: expected a '%%MatrixMarket' banner";
  const std::vector<std::string> banner = split(line);
  if (banner.size() != 5 || lower(banner[0]) != "%%matrixmarket")
    return at(path, 1) + "malformed banner " + quote(line) +
           ": expected '%%MatrixMarket matrix <format> <field> <symmetry>'";
  h.object = lower(banner[1]);
  h.format = lower(banner[2]);
  h.field = lower(banner[3]);
  h.symmetry = lower(banner[4]);
  if (h.object != "matrix") return at(path, 1) + "unsupported object '" + banner[1] + "' (only 'matrix')";
  if (h.format != "coordinate" && h.format != "array")
    return at(path, 1) + "unknown format '" + banner[2] + "' (expected 'coordinate' or 'array')";
  if (h.field != "real" && h.field != "integer" && h.field != "double" && h.field != "complex" &&
      h.field != "pattern")
    return at(path, 1) + "unknown field '" + banner[3] + "'";
  if (h.field == "double") h.field = "real";
  if (h.symmetry != "general" && h.symmetry != "symmetric" && h.symmetry != "skew-symmetric" &&
      h.symmetry != "hermitian")
    return at(path, 1) + "unknown symmetry '" + banner[4] + "'";

  std::int64_t number = 1;
  for (;;) {
    if (!std::getline(in, line))
      return at(path, number) + "file ends before the size line";
    ++number;
    if (!line.empty() && line[0] == '%') continue;
    if (split(line).empty()) continue;
    break;
  }
  h.size_line = number;
  const std::vector<std::string> t = split(line);
  const bool coordinate = h.format == "coordinate";
  const std::size_t want = coordinate ? 3 : 2;
  bool ok = t.size() == want && parse_count(t[0], h.rows) && parse_count(t[1], h.cols) &&
            (!coordinate || parse_count(t[2], h.entries));
  if (!ok)
    return at(path, number) + "malformed size line " + quote(line) + ": expected " +
           (coordinate ? "'rows columns entries'" : "'rows columns'") + " (non-negative integers)";
  if (!coordinate) {
    if (h.cols != 0 && h.rows > std::numeric_limits<std::int64_t>::max() / h.cols)
      return at(path, number) + "size " + quote(line) + " too large";
    h.entries = h.rows * h.cols;
  }
  if (in.eof()) {
    h.data_offset = h.file_size;
  } else {
    h.data_offset = static_cast<std::int64_t>(in.tellg());
  }
  h.data_line = number + 1;
  return {};
}

/// Every rank reads the header; errors are agreed on (the message of the lowest failing rank).
Header agree_header(MPI_Comm comm, const std::string& path) {
  Header h;
  std::string error = read_header(path, h);
  agree_or_throw(comm, error.empty(), error);
  return h;
}

// ------------------------------------------------------------------------------------------------
// The data lines this rank owns

struct Lines {
  std::string text;
  struct Line {
    std::size_t begin, end;  // in text, without the line break
    std::int64_t number;     // in the file
  };
  std::vector<Line> lines;         // owned lines that are neither blank nor comments
  std::int64_t first_entry = 0;    // ordinal (0-based, in file order) of lines[0]
  std::int64_t total_entries = 0;  // over all ranks
  std::int64_t last_line = 0;      // number of the file's last line (0 if no data lines)
};

/// Splits the data part of the file into byte ranges, one per rank; a line belongs to the rank
/// whose range holds its first byte. Collective.
Lines read_lines(MPI_Comm comm, const std::string& path, const Header& h) {
  const int rank = core::rank_of(comm), size = core::size_of(comm);
  const std::int64_t span = h.file_size - h.data_offset;
  const std::int64_t lo = h.data_offset + span / size * rank + std::min<std::int64_t>(rank, span % size);
  const std::int64_t hi = h.data_offset + span / size * (rank + 1) + std::min<std::int64_t>(rank + 1, span % size);

  Lines out;
  std::string error;
  std::int64_t owned_lines = 0;  // line starts in [lo, hi)
  std::vector<std::pair<std::size_t, std::size_t>> raw;  // owned lines, all of them
  if (hi > lo) {
    std::ifstream in(path, std::ios::binary);
    // Read from lo - 1 (to know whether lo starts a line) up to hi, then on to the end of the
    // line that holds byte hi - 1.
    const std::int64_t from = lo > h.data_offset ? lo - 1 : lo;
    out.text.resize(static_cast<std::size_t>(hi - from));
    in.seekg(from);
    in.read(out.text.data(), static_cast<std::streamsize>(out.text.size()));
    if (!in) {
      error = "'" + path + "': read error";
    } else if (out.text.back() != '\n' && hi < h.file_size) {
      std::string rest;
      std::getline(in, rest);
      out.text += rest;
      if (!in.eof()) out.text += '\n';
    }
    if (error.empty()) {
      std::size_t pos = static_cast<std::size_t>(lo - from);
      if (from < lo && out.text[0] != '\n') {  // lo is inside a line of the previous rank
        while (pos < out.text.size() && out.text[pos - 1] != '\n') ++pos;
      }
      const std::size_t limit = static_cast<std::size_t>(hi - from);
      while (pos < limit) {
        std::size_t end = out.text.find('\n', pos);
        if (end == std::string::npos) end = out.text.size();
        raw.emplace_back(pos, end);
        pos = end + 1;
      }
      owned_lines = static_cast<std::int64_t>(raw.size());
    }
  }
  agree_or_throw(comm, error.empty(), error);

  std::int64_t before = 0, total_lines = 0;
  before = comm::exclusive_prefix_sum(comm, owned_lines);
  MPI_Allreduce(&owned_lines, &total_lines, 1, MPI_INT64_T, MPI_SUM, comm);
  out.last_line = total_lines > 0 ? h.data_line + total_lines - 1 : h.data_line - 1;

  for (std::size_t q = 0; q < raw.size(); ++q) {
    const auto [b, e] = raw[q];
    std::size_t s = b;
    while (s < e && is_space(out.text[s])) ++s;
    if (s == e || out.text[s] == '%') continue;  // blank line or comment
    out.lines.push_back({b, e, h.data_line + before + static_cast<std::int64_t>(q)});
  }
  std::int64_t entries = static_cast<std::int64_t>(out.lines.size());
  out.first_entry = comm::exclusive_prefix_sum(comm, entries);
  MPI_Allreduce(&entries, &out.total_entries, 1, MPI_INT64_T, MPI_SUM, comm);
  return out;
}

/// Too many or too few entry lines: the same message on every rank.
void check_entry_count(MPI_Comm comm, const std::string& path, const Header& h, const Lines& lines) {
  if (lines.total_entries > h.entries) {
    // The first surplus line, known to the rank that owns it.
    std::string error;
    const std::int64_t surplus = h.entries - lines.first_entry;  // index into lines.lines
    if (surplus >= 0 && surplus < static_cast<std::int64_t>(lines.lines.size()))
      error = at(path, lines.lines[static_cast<std::size_t>(surplus)].number) + "more entries than the " +
              std::to_string(h.entries) + " declared on line " + std::to_string(h.size_line);
    agree_or_throw(comm, error.empty(), error);
  }
  if (lines.total_entries < h.entries)
    throw InputError(at(path, std::max(lines.last_line, h.size_line)) + "file ends after " +
                     std::to_string(lines.total_entries) + " of the " + std::to_string(h.entries) +
                     " entries declared on line " + std::to_string(h.size_line));
}

// ------------------------------------------------------------------------------------------------
// Entries and their redistribution

struct Entry {
  std::int64_t row, col;  // 0-based
  std::int64_t ordinal;   // position in the file: duplicates are summed in file order
  double val;
};

/// Sends every entry to rank owner(entry); returns what this rank receives. Collective.
template <class Owner>
std::vector<Entry> redistribute(MPI_Comm comm, const std::vector<Entry>& entries, Owner owner) {
  const int size = core::size_of(comm);
  std::vector<std::int64_t> count(static_cast<std::size_t>(size), 0);
  std::vector<int> dest(entries.size());
  for (std::size_t e = 0; e < entries.size(); ++e) {
    dest[e] = owner(entries[e]);
    ++count[static_cast<std::size_t>(dest[e])];
  }
  std::vector<std::int64_t> incoming(static_cast<std::size_t>(size), 0);
  comm::sparse_alltoall(count.data(), incoming.data(), comm);
  std::int64_t total_out = 0, total_in = 0;
  for (int r = 0; r < size; ++r) {
    total_out += count[r];
    total_in += incoming[r];
  }
  const std::int64_t limit = std::numeric_limits<int>::max();
  agree_or_throw(comm, total_out <= limit && total_in <= limit,
                 "matrix too large for one rank's redistribution (more than 2^31 entries); use more ranks");

  std::vector<int> send_count(size), send_disp(size), recv_count(size), recv_disp(size);
  for (int r = 0, so = 0, ro = 0; r < size; ++r) {
    send_count[r] = static_cast<int>(count[r]);
    recv_count[r] = static_cast<int>(incoming[r]);
    send_disp[r] = so;
    recv_disp[r] = ro;
    so += send_count[r];
    ro += recv_count[r];
  }
  std::vector<Entry> send(entries.size());
  std::vector<int> fill(send_disp);
  for (std::size_t e = 0; e < entries.size(); ++e) send[static_cast<std::size_t>(fill[dest[e]]++)] = entries[e];
  std::vector<Entry> recv(static_cast<std::size_t>(total_in));

  comm::sparse_alltoallv_records(send.data(), send_count.data(), send_disp.data(), recv.data(), recv_count.data(),
                                 recv_disp.data(), comm);
  return recv;
}

/// Sorts entries of the rows [first, first + rows) by (row, column, file order): a counting sort by
/// row, then a sort of each row's (short) list.
void sort_entries(std::vector<Entry>& entries, std::int64_t first, std::int64_t rows) {
  std::vector<std::int64_t> start(static_cast<std::size_t>(rows) + 1, 0);
  for (const Entry& e : entries) ++start[static_cast<std::size_t>(e.row - first) + 1];
  for (std::int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  std::vector<Entry> sorted(entries.size());
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (const Entry& e : entries) sorted[static_cast<std::size_t>(fill[static_cast<std::size_t>(e.row - first)]++)] = e;
  for (std::int64_t r = 0; r < rows; ++r)
    std::sort(sorted.begin() + start[r], sorted.begin() + start[r + 1], [](const Entry& a, const Entry& b) {
      return a.col != b.col ? a.col < b.col : a.ordinal < b.ordinal;
    });
  entries.swap(sorted);
}

/// Keeps the first error in (row, column) order.
struct FirstError {
  std::int64_t row = std::numeric_limits<std::int64_t>::max(), col = 0;
  std::string message;
  void offer(std::int64_t r, std::int64_t c, std::string m) {
    if (message.empty() || r < row || (r == row && c < col)) {
      row = r;
      col = c;
      message = std::move(m);
    }
  }
};

std::string entry_name(std::int64_t i, std::int64_t j) {
  return "A(" + std::to_string(i + 1) + ", " + std::to_string(j + 1) + ")";
}

// ------------------------------------------------------------------------------------------------
// Writing

/// Every rank's bytes one after another, in rank order (file_pieces.hpp). Collective.
void write_parts(MPI_Comm comm, const std::string& path, const std::string& mine) {
  const std::int64_t bytes = static_cast<std::int64_t>(mine.size());
  const std::int64_t offset = comm::exclusive_prefix_sum(comm, bytes);
  detail::write_pieces(comm, path, {{offset, reinterpret_cast<const unsigned char*>(mine.data()), bytes}});
}

void append_double(std::string& s, double v) {
  char buf[40];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
  (void)ec;
  s.append(buf, p);
}

void append_int(std::string& s, std::int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  s.append(buf, p);
}

}  // namespace

// ------------------------------------------------------------------------------------------------

namespace {

/// A general file must hold a symmetric matrix: every owner sends the transpose of its off-diagonal
/// entries to the owner of their column, which compares. Collective; InputError naming the lowest
/// (row, column) pair that differs, the same whatever the ranks.
void check_symmetric(const DistributedCsr& A, const std::string& path) {
  const MPI_Comm comm = A.comm;
  const int rank = core::rank_of(comm), size = core::size_of(comm);
  const std::int64_t n = A.row_offsets.back();
  const std::int64_t first = A.row_offsets[rank], rows = A.row_offsets[rank + 1] - first;
  double max_abs = 0;
  for (double v : A.val) max_abs = std::max(max_abs, std::abs(v));
  MPI_Allreduce(MPI_IN_PLACE, &max_abs, 1, MPI_DOUBLE, MPI_MAX, comm);
  const double tol = 1e-12 * max_abs;
  std::vector<Entry> transposed;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t p = A.row_ptr[r]; p < A.row_ptr[r + 1]; ++p)
      if (A.col[p] != first + r) transposed.push_back({A.col[p], first + r, 0, A.val[p]});
  std::vector<Entry> in =
      redistribute(comm, transposed, [&](const Entry& e) { return balanced_owner(n, size, e.row); });
  transposed.clear();
  std::vector<char> matched(A.col.size(), 0);
  FirstError sym;
  const std::string what = "'" + path + "': the matrix is declared 'general' but is not symmetric: ";
  for (const Entry& t : in) {  // t = (i, j, a(j, i)); row i is ours
    const std::int64_t r = t.row - first;
    const auto b = A.col.begin() + A.row_ptr[r], e = A.col.begin() + A.row_ptr[r + 1];
    const auto it = std::lower_bound(b, e, t.col);
    if (it == e || *it != t.col) {
      sym.offer(std::min(t.row, t.col), std::max(t.row, t.col),
                what + entry_name(t.col, t.row) + " is stored but " + entry_name(t.row, t.col) + " is not");
      continue;
    }
    const std::size_t p = static_cast<std::size_t>(it - A.col.begin());
    matched[p] = 1;
    if (!(std::abs(A.val[p] - t.val) <= tol)) {
      // Named with the smaller index first, so both owners word it the same way.
      const bool lower_first = t.row < t.col;
      const std::int64_t i = lower_first ? t.row : t.col, j = lower_first ? t.col : t.row;
      const double aij = lower_first ? A.val[p] : t.val, aji = lower_first ? t.val : A.val[p];
      sym.offer(i, j, what + entry_name(i, j) + " = " + num(aij) + " but " + entry_name(j, i) + " = " + num(aji));
    }
  }
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t p = A.row_ptr[r]; p < A.row_ptr[r + 1]; ++p)
      if (A.col[p] != first + r && !matched[static_cast<std::size_t>(p)])
        sym.offer(std::min(first + r, A.col[p]), std::max(first + r, A.col[p]),
                  what + entry_name(first + r, A.col[p]) + " is stored but " + entry_name(A.col[p], first + r) + " is not");
  // The lowest (row, column) pair over all ranks, so the message does not depend on the ranks.
  const std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t best_row = sym.message.empty() ? none : sym.row;
  MPI_Allreduce(MPI_IN_PLACE, &best_row, 1, MPI_INT64_T, MPI_MIN, comm);
  std::int64_t best_col = (!sym.message.empty() && sym.row == best_row) ? sym.col : none;
  MPI_Allreduce(MPI_IN_PLACE, &best_col, 1, MPI_INT64_T, MPI_MIN, comm);
  const bool mine_is_first = !sym.message.empty() && sym.row == best_row && sym.col == best_col;
  // agree_or_throw takes the lowest failing rank's message: fail only on ranks holding the first.
  agree_or_throw(comm, !mine_is_first, sym.message);
}

}  // namespace

namespace {

/// What a caller requires of the matrix beyond being square and real.
enum class Require { spd_candidate, nothing };

/// The parallel coordinate reader behind read_matrix_market (Require::spd_candidate: symmetric
/// storage or a numerically symmetric general file, positive diagonal) and
/// read_matrix_market_square (Require::nothing: also skew-symmetric storage, no value checks).
DistributedCsr read_coordinate(MPI_Comm comm, const std::string& path, Require require) {
  const int rank = core::rank_of(comm), size = core::size_of(comm);
  const bool any = require == Require::nothing;
  const Header h = agree_header(comm, path);
  if (h.format == "array")
    throw InputError(at(path, 1) + "dense 'array' matrices are not supported (use 'coordinate')");
  if (any && h.field == "pattern") throw InputError(at(path, 1) + "pattern matrix: no values to solve with");
  if (any && h.field == "complex") throw InputError(at(path, 1) + "complex matrix: desync solves real systems");
  if (h.field == "complex" || h.field == "pattern")
    throw InputError(at(path, 1) + "unsupported field '" + h.field + "' (expected 'real' or 'integer')");
  if (any && h.symmetry != "general" && h.symmetry != "symmetric" && h.symmetry != "skew-symmetric")
    throw InputError(at(path, 1) + "unsupported symmetry '" + h.symmetry +
                     "' (expected 'general', 'symmetric' or 'skew-symmetric')");
  if (!any && h.symmetry != "general" && h.symmetry != "symmetric")
    throw InputError(at(path, 1) + "unsupported symmetry '" + h.symmetry + "' (expected 'general' or 'symmetric')");
  if (h.rows != h.cols)
    throw InputError(at(path, h.size_line) + "matrix is not square (" + std::to_string(h.rows) + " x " +
                     std::to_string(h.cols) + ")");
  if (h.rows == 0) throw InputError(at(path, h.size_line) + "empty matrix (0 x 0)");
  if (any && h.rows < size)
    throw InputError(path + ": " + std::to_string(size) + " ranks for a matrix of " + std::to_string(h.rows) +
                     " rows: use at most " + std::to_string(h.rows));
  const std::int64_t n = h.rows;
  const bool symmetric = h.symmetry == "symmetric";
  const bool skew = h.symmetry == "skew-symmetric";  // a(j, i) = -a(i, j); only i > j stored
  const bool mirrored = symmetric || skew;
  const bool integer = h.field == "integer";

  const Lines lines = read_lines(comm, path, h);
  // Parse the owned entry lines; stop at the first error.
  std::vector<Entry> entries;
  entries.reserve(lines.lines.size() * (mirrored ? 2 : 1));
  std::string error;
  for (std::size_t q = 0; q < lines.lines.size(); ++q) {
    const auto& L = lines.lines[q];
    const std::int64_t ordinal = lines.first_entry + static_cast<std::int64_t>(q);
    if (ordinal >= h.entries) break;  // surplus lines: reported by check_entry_count
    const std::string_view text(lines.text.data() + L.begin, L.end - L.begin);
    std::size_t pos = 0;
    std::int64_t i = 0, j = 0;
    double v = 0;
    if (!next_int(text, pos, i) || !next_int(text, pos, j) || !next_real(text, pos, v, integer) ||
        !only_space_after(text, pos)) {
      error = at(path, L.number) + "malformed entry " + quote(text) + ": expected 'row column value' (" +
              (integer ? "integers" : "integer indices and a real value") + ")";
      break;
    }
    if (i < 1 || i > n || j < 1 || j > n) {
      error = at(path, L.number) + "index (" + std::to_string(i) + ", " + std::to_string(j) +
              ") out of range: the matrix is " + std::to_string(n) + " x " + std::to_string(n);
      break;
    }
    if (!std::isfinite(v)) {
      error = at(path, L.number) + "value " + quote(text) + " is not finite";
      break;
    }
    if (mirrored && i < j) {
      error = at(path, L.number) + "entry (" + std::to_string(i) + ", " + std::to_string(j) +
              ") above the diagonal in a '" + h.symmetry + "' file (only row >= column may be stored)";
      break;
    }
    if (skew && i == j) {
      error = at(path, L.number) + "diagonal entry (" + std::to_string(i) + ", " + std::to_string(j) +
              ") in a 'skew-symmetric' file (only row > column may be stored)";
      break;
    }
    entries.push_back({i - 1, j - 1, ordinal, v});
    if (symmetric && i != j) entries.push_back({j - 1, i - 1, ordinal, v});
    if (skew) entries.push_back({j - 1, i - 1, ordinal, -v});
  }
  agree_or_throw(comm, error.empty(), error);
  check_entry_count(comm, path, h, lines);

  // Owners sort by (row, column, file order) and sum duplicates.
  std::vector<Entry> mine =
      redistribute(comm, entries, [&](const Entry& e) { return balanced_owner(n, size, e.row); });
  entries.clear();
  entries.shrink_to_fit();

  DistributedCsr A;
  A.comm = comm;
  A.block_size = 1;
  A.row_offsets = balanced_offsets(n, size);
  const std::int64_t first = A.row_offsets[rank], rows = A.row_offsets[rank + 1] - first;
  sort_entries(mine, first, rows);
  A.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (std::size_t e = 0; e < mine.size();) {
    std::size_t f = e;
    double sum = mine[e].val;  // not 0 + ...: a lone -0.0 stays -0.0, so round trips are bitwise
    for (++f; f < mine.size() && mine[f].row == mine[e].row && mine[f].col == mine[e].col; ++f) sum += mine[f].val;
    A.col.push_back(mine[e].col);
    A.val.push_back(sum);
    ++A.row_ptr[static_cast<std::size_t>(mine[e].row - first) + 1];
    e = f;
  }
  for (std::int64_t r = 0; r < rows; ++r) A.row_ptr[r + 1] += A.row_ptr[r];
  mine.clear();
  mine.shrink_to_fit();
  if (any) return A;

  // Positive diagonal (a necessary condition for positive definiteness).
  FirstError diag;
  for (std::int64_t r = 0; r < rows && diag.message.empty(); ++r) {
    const auto b = A.col.begin() + A.row_ptr[r], e = A.col.begin() + A.row_ptr[r + 1];
    const auto it = std::lower_bound(b, e, first + r);
    if (it == e || *it != first + r)
      diag.offer(first + r, first + r,
                 "'" + path + "': the matrix is not positive definite: diagonal entry " + entry_name(first + r, first + r) +
                     " is missing");
    else if (!(A.val[static_cast<std::size_t>(it - A.col.begin())] > 0))
      diag.offer(first + r, first + r,
                 "'" + path + "': the matrix is not positive definite: diagonal entry " + entry_name(first + r, first + r) +
                     " = " + num(A.val[static_cast<std::size_t>(it - A.col.begin())]) + " is not positive");
  }
  agree_or_throw(comm, diag.message.empty(), diag.message);

  // A general file must hold a symmetric matrix.
  if (!symmetric) check_symmetric(A, path);
  return A;
}

}  // namespace

DistributedCsr read_matrix_market(MPI_Comm comm, const std::string& path) {
  return read_coordinate(comm, path, Require::spd_candidate);
}

DistributedCsr read_matrix_market_square(MPI_Comm comm, const std::string& path) {
  return read_coordinate(comm, path, Require::nothing);
}

std::vector<double> read_matrix_market_vector(MPI_Comm comm, const std::string& path, const DistributedCsr& layout) {
  return read_matrix_market_columns(comm, path, layout, false).front();
}

std::vector<std::vector<double>> read_matrix_market_columns(MPI_Comm comm, const std::string& path,
                                                            const DistributedCsr& layout, bool several) {
  const int rank = core::rank_of(comm);
  const Header h = agree_header(comm, path);
  if (h.field == "complex" || h.field == "pattern")
    throw InputError(at(path, 1) + "unsupported field '" + h.field + "' for a vector (expected 'real' or 'integer')");
  if (h.symmetry != "general")
    throw InputError(at(path, 1) + "unsupported symmetry '" + h.symmetry + "' for a vector (expected 'general')");
  const std::int64_t n = layout.global_rows();
  if (!several && h.cols != 1)
    throw InputError(at(path, h.size_line) + "expected a vector (n x 1), the file holds " + std::to_string(h.rows) +
                     " x " + std::to_string(h.cols));
  if (several && h.cols < 1) throw InputError(at(path, h.size_line) + "no columns: expected n x m vectors, m >= 1");
  if (several && h.rows != n)
    throw InputError(at(path, h.size_line) + std::to_string(h.rows) + " rows, the matrix has " + std::to_string(n));
  if (h.rows != n)
    throw InputError(at(path, h.size_line) + "the vector has " + std::to_string(h.rows) + " entries, the matrix " +
                     std::to_string(n) + " rows");
  const std::int64_t m = h.cols;
  const bool coordinate = h.format == "coordinate";
  const bool integer = h.field == "integer";

  const Lines lines = read_lines(comm, path, h);
  std::vector<Entry> entries;
  entries.reserve(lines.lines.size());
  std::string error;
  for (std::size_t q = 0; q < lines.lines.size(); ++q) {
    const auto& L = lines.lines[q];
    const std::int64_t ordinal = lines.first_entry + static_cast<std::int64_t>(q);
    if (ordinal >= h.entries) break;
    const std::string_view text(lines.text.data() + L.begin, L.end - L.begin);
    std::size_t pos = 0;
    std::int64_t i = ordinal % n + 1, j = ordinal / n + 1;  // an array lists column after column
    double v = 0;
    const bool ok = coordinate ? next_int(text, pos, i) && next_int(text, pos, j) && next_real(text, pos, v, integer) &&
                                     only_space_after(text, pos)
                               : next_real(text, pos, v, integer) && only_space_after(text, pos);
    if (!ok) {
      error = at(path, L.number) + "malformed entry " + quote(text) + ": expected " +
              (coordinate ? "'row column value'" : "one value");
      break;
    }
    if (i < 1 || i > n || j < 1 || j > m) {
      error = at(path, L.number) + "index (" + std::to_string(i) + ", " + std::to_string(j) + ") out of range: the " +
              (several ? "vectors are " : "vector is ") + std::to_string(n) + " x " + std::to_string(m);
      break;
    }
    if (!std::isfinite(v)) {
      error = at(path, L.number) + "value " + quote(text) + " is not finite";
      break;
    }
    entries.push_back({i - 1, j - 1, ordinal, v});
  }
  agree_or_throw(comm, error.empty(), error);
  check_entry_count(comm, path, h, lines);

  std::vector<Entry> mine = redistribute(comm, entries, [&](const Entry& e) { return layout_owner(layout, e.row); });
  const std::int64_t first = layout.row_offsets[rank] * layout.block_size;
  sort_entries(mine, first, layout.local_rows());
  const auto rows = static_cast<std::size_t>(layout.local_rows());
  std::vector<std::vector<double>> out(static_cast<std::size_t>(m), std::vector<double>(rows, 0.0));
  // The first entry is assigned (a lone -0.0 stays -0.0), later ones added.
  std::vector<std::vector<char>> seen(static_cast<std::size_t>(m), std::vector<char>(rows, 0));
  for (const Entry& e : mine) {
    const std::size_t i = static_cast<std::size_t>(e.row - first), c = static_cast<std::size_t>(e.col);
    out[c][i] = seen[c][i] ? out[c][i] + e.val : e.val;
    seen[c][i] = 1;
  }
  return out;
}

void write_matrix_market(const DistributedCsr& A, const std::string& path, bool symmetric) {
  const int rank = core::rank_of(A.comm);
  const int bs = A.block_size;
  const std::int64_t first = A.row_offsets[rank];
  std::string body;
  body.reserve(static_cast<std::size_t>(A.val.size()) * 32);
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < A.local_block_rows(); ++r)
    for (int p = 0; p < bs; ++p) {
      const std::int64_t row = (first + r) * bs + p;
      for (std::int64_t e = A.row_ptr[r]; e < A.row_ptr[r + 1]; ++e)
        for (int q = 0; q < bs; ++q) {
          const std::int64_t col = A.col[e] * bs + q;
          if (symmetric && col > row) continue;
          append_int(body, row + 1);
          body += ' ';
          append_int(body, col + 1);
          body += ' ';
          append_double(body, A.val[static_cast<std::size_t>(e * bs * bs + p * bs + q)]);
          body += '\n';
          ++count;
        }
    }
  std::int64_t total = 0;
  MPI_Allreduce(&count, &total, 1, MPI_INT64_T, MPI_SUM, A.comm);
  if (rank == 0) {
    const std::int64_t n = A.global_rows();
    std::string head = std::string("%%MatrixMarket matrix coordinate real ") + (symmetric ? "symmetric" : "general") +
                       "\n% written by desync (block size " + std::to_string(bs) + ")\n" + std::to_string(n) + " " +
                       std::to_string(n) + " " + std::to_string(total) + "\n";
    body.insert(0, head);
  }
  write_parts(A.comm, path, body);
}

void write_matrix_market_vector(const DistributedCsr& layout, std::span<const double> local, const std::string& path) {
  const int rank = core::rank_of(layout.comm);
  std::string body;
  if (rank == 0)
    body = "%%MatrixMarket matrix array real general\n% written by desync\n" + std::to_string(layout.global_rows()) +
           " 1\n";
  for (double v : local) {
    append_double(body, v);
    body += '\n';
  }
  write_parts(layout.comm, path, body);
}

}  // namespace desync::linalg
