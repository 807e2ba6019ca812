#include "desync/linalg/csr_operator.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/linalg/ghost_requests.hpp"

namespace desync::linalg {

namespace {

/// s += B xb for one stored 3x3 block B (row-major) and the three entries xb of x it multiplies:
/// each row's products added one by one in ascending column order, the order that makes the
/// product bitwise the same in every engine.
[[gnu::always_inline]] inline void add_block3(const double* B, const double* xb, double& s0, double& s1,
                                              double& s2) {
  const double x0 = xb[0], x1 = xb[1], x2 = xb[2];
  s0 += B[0] * x0;
  s0 += B[1] * x1;
  s0 += B[2] * x2;
  s1 += B[3] * x0;
  s1 += B[4] * x1;
  s1 += B[5] * x2;
  s2 += B[6] * x0;
  s2 += B[7] * x1;
  s2 += B[8] * x2;
}

// Empty when A is a valid row-distributed matrix on this rank, otherwise the reason.
std::string check_matrix(const DistributedCsr& A, int rank, int nranks) {
  if (A.block_size != 1 && A.block_size != 3)
    return "block size " + std::to_string(A.block_size) + ": only 1 (CSR) and 3 (3x3 BCSR) are supported";
  if (A.row_offsets.size() != static_cast<std::size_t>(nranks) + 1)
    return "row_offsets must have one entry per rank plus one";
  if (A.row_offsets.front() != 0) return "row_offsets must start at 0";
  for (int r = 0; r < nranks; ++r)
    if (A.row_offsets[static_cast<std::size_t>(r) + 1] < A.row_offsets[static_cast<std::size_t>(r)])
      return "row_offsets must not decrease";
  if (A.row_ptr.empty()) return "row_ptr must have local rows + 1 entries";
  const std::int64_t n = A.local_block_rows();
  if (A.row_offsets[static_cast<std::size_t>(rank) + 1] - A.row_offsets[static_cast<std::size_t>(rank)] != n)
    return "rank " + std::to_string(rank) + " has " + std::to_string(n) + " rows but row_offsets gives it " +
           std::to_string(A.row_offsets[static_cast<std::size_t>(rank) + 1] - A.row_offsets[static_cast<std::size_t>(rank)]);
  if (A.row_ptr.front() != 0 || A.row_ptr.back() != static_cast<std::int64_t>(A.col.size()))
    return "row_ptr must start at 0 and end at the number of entries";
  const std::size_t per = static_cast<std::size_t>(A.block_size) * static_cast<std::size_t>(A.block_size);
  if (A.val.size() != A.col.size() * per) return "val must hold block_size^2 values per entry";
  const std::int64_t global = A.global_block_rows();
  for (std::int64_t r = 0; r < n; ++r) {
    const auto b = A.row_ptr[static_cast<std::size_t>(r)], e = A.row_ptr[static_cast<std::size_t>(r) + 1];
    if (e < b) return "row_ptr must not decrease";
    for (auto p = b; p < e; ++p) {
      const std::int64_t c = A.col[static_cast<std::size_t>(p)];
      if (c < 0 || c >= global)
        return "column " + std::to_string(c) + " out of range in row " + std::to_string(A.first_block_row() + r);
      if (p > b && c <= A.col[static_cast<std::size_t>(p) - 1])
        return "columns must be strictly ascending within a row (row " + std::to_string(A.first_block_row() + r) + ")";
    }
  }
  return {};
}

}  // namespace

std::unique_ptr<Operator> make_csr_operator(const DistributedCsr& A, const SpmvConfig& cfg) {
  return std::make_unique<CsrOperator>(A, cfg);
}

CsrOperator::CsrOperator(const DistributedCsr& A, const SpmvConfig& cfg) : comm_(A.comm), cfg_(cfg) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &nranks);
  std::string problem = check_matrix(A, rank, nranks);
  if (problem.empty() && cfg_.test_interval < 1)
    problem = "test interval " + std::to_string(cfg_.test_interval) + ": must be >= 1";
  // Every rank must hold the same row_offsets.
  {
    std::vector<std::int64_t> lo(static_cast<std::size_t>(nranks) + 1, 0), hi = lo, mine = lo;
    if (A.row_offsets.size() == mine.size()) mine = A.row_offsets;
    MPI_Allreduce(mine.data(), lo.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_MIN, comm_);
    MPI_Allreduce(mine.data(), hi.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_MAX, comm_);
    if (problem.empty() && lo != hi) problem = "row_offsets differ between ranks";
  }
  agree_or_throw(comm_, problem.empty(), "csr operator: " + problem);

  bs_ = A.block_size;
  n_rows_ = A.local_block_rows();
  global_rows_ = A.global_block_rows();
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank)];
  const std::int64_t last = first + n_rows_;

  // Ghost columns, ascending (hence grouped by owner, ascending).
  std::vector<std::int64_t> ghosts;
  for (std::int64_t c : A.col)
    if (c < first || c >= last) ghosts.push_back(c);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  const bool fits = n_rows_ + static_cast<std::int64_t>(ghosts.size()) <= std::numeric_limits<std::int32_t>::max() &&
                    (n_rows_ + static_cast<std::int64_t>(ghosts.size())) * bs_ <= std::numeric_limits<int>::max();
  agree_or_throw(comm_, fits, "csr operator: too many owned plus ghost columns on one rank for 32-bit indices");

  row_ptr_ = A.row_ptr;
  col_.resize(A.col.size());
  for (std::size_t p = 0; p < A.col.size(); ++p) {
    const std::int64_t c = A.col[p];
    if (c >= first && c < last) {
      col_[p] = static_cast<std::int32_t>(c - first);
    } else {
      const auto g = std::lower_bound(ghosts.begin(), ghosts.end(), c) - ghosts.begin();
      col_[p] = static_cast<std::int32_t>(n_rows_ + g);
    }
  }

  // Who owns each ghost; tell the owners which of their entries are needed here.
  const GhostRequests requests = request_entries(comm_, A.row_offsets, ghosts);
  bool requests_ok = true;
  comm::GhostPlanSpec spec = requests.plan_spec(first, last, bs_, requests_ok);
  agree_or_throw(comm_, requests_ok, "csr operator: a rank asked for entries another rank does not own");
  exchange_ = std::make_unique<comm::GhostExchange>(comm_, std::move(spec), cfg_.engine, cfg_.progress,
                                                  cfg_.transport);

  // Interior rows (no ghost column) as runs; boundary rows as a list.
  std::int64_t interior = 0;
  for (std::int64_t r = 0; r < n_rows_; ++r) {
    bool has_ghost = false;
    for (auto p = row_ptr_[static_cast<std::size_t>(r)]; p < row_ptr_[static_cast<std::size_t>(r) + 1]; ++p)
      if (col_[static_cast<std::size_t>(p)] >= n_rows_) {
        has_ghost = true;
        break;
      }
    const auto r32 = static_cast<std::int32_t>(r);
    if (has_ghost) {
      boundary_.push_back(r32);
    } else {
      ++interior;
      if (!interior_runs_.empty() && interior_runs_.back() == r32)
        interior_runs_.back() = r32 + 1;
      else {
        interior_runs_.push_back(r32);
        interior_runs_.push_back(r32 + 1);
      }
    }
  }
  // The boundary rows move to arrays of their own (and are left empty in the main ones): the pass
  // after the exchange then streams through them instead of picking scattered rows out of the
  // whole matrix.
  {
    const std::size_t per = static_cast<std::size_t>(bs_) * static_cast<std::size_t>(bs_);
    std::vector<std::int64_t> rp{0};
    std::vector<std::int32_t> ci;
    std::vector<double> v;
    ci.reserve(col_.size());
    v.reserve(A.val.size());
    bnd_row_ptr_.assign(1, 0);
    std::size_t q = 0;
    for (std::int64_t r = 0; r < n_rows_; ++r) {
      const bool is_boundary = q < boundary_.size() && boundary_[q] == r;
      auto& to_col = is_boundary ? bnd_col_ : ci;
      auto& to_val = is_boundary ? bnd_val_ : v;
      for (auto p = row_ptr_[static_cast<std::size_t>(r)]; p < row_ptr_[static_cast<std::size_t>(r) + 1]; ++p) {
        to_col.push_back(col_[static_cast<std::size_t>(p)]);
        const auto at = A.val.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(p) * per);
        to_val.insert(to_val.end(), at, at + static_cast<std::ptrdiff_t>(per));
      }
      if (is_boundary) {
        bnd_row_ptr_.push_back(static_cast<std::int64_t>(bnd_col_.size()));
        ++q;
      }
      rp.push_back(static_cast<std::int64_t>(ci.size()));
    }
    row_ptr_ = std::move(rp);
    col_ = std::move(ci);
    val_ = std::move(v);
  }
  layout_.interior_rows = interior * bs_;
  layout_.boundary_rows = static_cast<std::int64_t>(boundary_.size()) * bs_;
  layout_.ghost_entries = static_cast<std::int64_t>(exchange_->ghost_count());
  layout_.neighbours = exchange_->neighbours();
}

CsrOperator::~CsrOperator() = default;

// Rows [begin, end), all of whose columns are owned. Each row: 0.0 + a_1 x_1 + ... in the stored
// (ascending) column order; inside a 3x3 block the scalar columns ascend too.
template <int BS>
void CsrOperator::rows(std::int32_t begin, std::int32_t end, const double* __restrict x, double* __restrict y) const {
  const std::int64_t* __restrict rp = row_ptr_.data();
  const std::int32_t* __restrict ci = col_.data();
  const double* __restrict v = val_.data();
  for (std::int32_t r = begin; r < end; ++r) {
    const std::int64_t pe = rp[r + 1];
    if constexpr (BS == 1) {
      double s = 0.0;
      for (std::int64_t p = rp[r]; p < pe; ++p) s += v[p] * x[ci[p]];
      y[r] = s;
    } else {
      double s0 = 0.0, s1 = 0.0, s2 = 0.0;
      for (std::int64_t p = rp[r]; p < pe; ++p)
        add_block3(v + 9 * p, x + 3 * static_cast<std::int64_t>(ci[p]), s0, s1, s2);
      y[3 * static_cast<std::int64_t>(r)] = s0;
      y[3 * static_cast<std::int64_t>(r) + 1] = s1;
      y[3 * static_cast<std::int64_t>(r) + 2] = s2;
    }
  }
}

// Boundary rows: a column is an owned entry of x or a ghost; same summation order as rows().
template <int BS>
void CsrOperator::boundary_rows(const double* x, const double* g, double* y) const {
  const std::int64_t* rp = bnd_row_ptr_.data();
  const std::int32_t* ci = bnd_col_.data();
  const double* v = bnd_val_.data();
  const std::int32_t n = static_cast<std::int32_t>(n_rows_);
  const std::size_t nb = boundary_.size();
  for (std::size_t q = 0; q < nb; ++q) {
    const std::int32_t r = boundary_[q];
    const std::int64_t pe = rp[q + 1];
    if constexpr (BS == 1) {
      double s = 0.0;
      for (std::int64_t p = rp[q]; p < pe; ++p) {
        const std::int32_t c = ci[p];
        s += v[p] * (c < n ? x[c] : g[c - n]);
      }
      y[r] = s;
    } else {
      double s0 = 0.0, s1 = 0.0, s2 = 0.0;
      for (std::int64_t p = rp[q]; p < pe; ++p) {
        const std::int32_t c = ci[p];
        const double* xb = c < n ? x + 3 * static_cast<std::int64_t>(c) : g + 3 * static_cast<std::int64_t>(c - n);
        add_block3(v + 9 * p, xb, s0, s1, s2);
      }
      y[3 * static_cast<std::int64_t>(r)] = s0;
      y[3 * static_cast<std::int64_t>(r) + 1] = s1;
      y[3 * static_cast<std::int64_t>(r) + 2] = s2;
    }
  }
}

void CsrOperator::apply(std::span<const double> x, std::span<double> y) {
  if (static_cast<std::int64_t>(x.size()) != local_size() || static_cast<std::int64_t>(y.size()) != local_size())
    throw std::invalid_argument("csr operator apply: vectors must have local_size() entries");
  const double t0 = MPI_Wtime();
  exchange_->start(x.data());
  const double t1 = MPI_Wtime();
  const bool testing = cfg_.progress == Progress::test && cfg_.engine != ExchangeEngine::blocking;
  // Progress::test: poll after every chunk of about test_interval scalar rows.
  const std::int32_t chunk = testing ? std::max(1, cfg_.test_interval / bs_) : std::numeric_limits<std::int32_t>::max();
  std::int32_t since = 0;
  // Simulated cluster: with Progress::test the entries of each chunk are charged before its poll,
  // so that the poll, and the reduction rounds it advances, happen at the simulated time the rows
  // took; what is left (all of it without polls) is charged after the loop.
  std::int64_t pending = 0, charged = 0;
  for (std::size_t q = 0; q + 1 < interior_runs_.size(); q += 2) {
    std::int32_t b = interior_runs_[q];
    const std::int32_t e = interior_runs_[q + 1];
    while (b < e) {
      const std::int32_t stop = testing ? std::min(e, b + (chunk - since)) : e;
      if (bs_ == 1)
        rows<1>(b, stop, x.data(), y.data());
      else
        rows<3>(b, stop, x.data(), y.data());
      if (testing) {
        since += stop - b;
        pending += row_ptr_[static_cast<std::size_t>(stop)] - row_ptr_[static_cast<std::size_t>(b)];
        if (since >= chunk) {
          core::charge("csr.entry", static_cast<double>(pending) * bs_ * bs_);
          charged += pending;
          pending = 0;
          exchange_->poll();
          since = 0;
        }
      }
      b = stop;
    }
  }
  // Simulated cluster: the interior entries' cost, charged while the halos travel (block entries
  // count bs^2 scalar entries).
  core::charge("csr.entry", static_cast<double>((row_ptr_.empty() ? 0 : row_ptr_.back()) - charged) * bs_ * bs_);
  const double t2 = MPI_Wtime();
  exchange_->finish();
  const double t3 = MPI_Wtime();
  if (bs_ == 1)
    boundary_rows<1>(x.data(), exchange_->ghosts(), y.data());
  else
    boundary_rows<3>(x.data(), exchange_->ghosts(), y.data());
  core::charge("csr.entry", static_cast<double>(bnd_row_ptr_.empty() ? 0 : bnd_row_ptr_.back()) * bs_ * bs_);
  const double t4 = MPI_Wtime();
  ++stats_.applications;
  stats_.interior_seconds += t2 - t1;
  stats_.boundary_seconds += t4 - t3;
  stats_.wait_seconds += (t1 - t0) + (t3 - t2);
}

template <class F>
void CsrOperator::for_each_row(F&& f) const {
  std::size_t q = 0;
  for (std::int64_t r = 0; r < n_rows_; ++r) {
    if (q < boundary_.size() && boundary_[q] == r) {
      const auto b = bnd_row_ptr_[q], e = bnd_row_ptr_[q + 1];
      f(r, bnd_col_.data() + b, bnd_val_.data() + b * bs_ * bs_, e - b);
      ++q;
    } else {
      const auto b = row_ptr_[static_cast<std::size_t>(r)], e = row_ptr_[static_cast<std::size_t>(r) + 1];
      f(r, col_.data() + b, val_.data() + b * bs_ * bs_, e - b);
    }
  }
}

std::vector<double> CsrOperator::diagonal() const {
  std::vector<double> d(static_cast<std::size_t>(local_size()), 0.0);
  for_each_row([&](std::int64_t r, const std::int32_t* c, const double* v, std::int64_t m) {
    for (std::int64_t p = 0; p < m; ++p) {
      if (c[p] != r) continue;
      for (int b = 0; b < bs_; ++b) d[static_cast<std::size_t>(r * bs_ + b)] = v[p * bs_ * bs_ + b * bs_ + b];
    }
  });
  return d;
}

LocalCsr CsrOperator::diagonal_block() const {
  LocalCsr D;
  D.rows = local_size();
  D.row_ptr.reserve(static_cast<std::size_t>(D.rows) + 1);
  D.row_ptr.push_back(0);
  for_each_row([&](std::int64_t, const std::int32_t* c, const double* v, std::int64_t m) {
    for (int b = 0; b < bs_; ++b) {
      for (std::int64_t p = 0; p < m; ++p) {
        if (c[p] >= n_rows_) continue;
        for (int cc = 0; cc < bs_; ++cc) {
          D.col.push_back(c[p] * bs_ + cc);
          D.val.push_back(v[p * bs_ * bs_ + b * bs_ + cc]);
        }
      }
      D.row_ptr.push_back(static_cast<std::int64_t>(D.col.size()));
    }
  });
  return D;
}

const SpmvStats& CsrOperator::stats() const {
  stats_.exchange = exchange_->stats();
  return stats_;
}

void CsrOperator::reset_stats() {
  stats_ = SpmvStats{};
  exchange_->reset_stats();
}

}  // namespace desync::linalg
