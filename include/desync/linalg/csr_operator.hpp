#pragma once
// The assembled operator: y = A x for a row-distributed CSR (block size 1) or BCSR (block size 3)
// matrix, with the ghost exchange hidden behind the interior rows (Hoefler et al., 2007, Listings 3-5).
//
// Setup (collective): the owned block columns get local indices 0..n-1, the other columns
// ("ghosts") are numbered n, n+1, ... in ascending global order, which groups them by owning rank.
// Each rank tells the owners which of their entries it needs (MPI_Alltoall of counts, then
// MPI_Alltoallv of global indices) and builds a comm::GhostExchange plan from the answers. Rows
// with no ghost column are interior; the others are boundary rows.
//
// apply(): start the exchange, compute the interior rows (polling the exchange every
// test_interval rows with Progress::test), finish the exchange, compute the boundary rows.
// Every row is summed as 0.0 + a_1 x_1 + a_2 x_2 + ... in ascending global scalar column order,
// whatever the engine, the progress mode or the number of ranks, so y is bitwise the same as
// the serial product that sums in that order. Column indices are 32-bit (local + ghost columns
// must fit in an int32_t; InputError otherwise).
#include <cstdint>
#include <memory>
#include <vector>

#include "desync/communication/ghost_exchange.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/operator.hpp"

namespace desync::linalg {

/// How the rows of an operator split (for reports and tests).
struct OperatorLayout {
  std::int64_t interior_rows = 0;  ///< scalar rows computed while the exchange is in flight
  std::int64_t boundary_rows = 0;  ///< scalar rows that wait for ghost values
  std::int64_t ghost_entries = 0;  ///< doubles received per apply()
  int neighbours = 0;              ///< ranks exchanged with
};

/// Collective over A.comm. Validates A (InputError on bad sizes, unsorted or out-of-range columns,
/// block size other than 1 or 3, test_interval < 1, Progress::thread without MPI_THREAD_MULTIPLE).
/// A is copied; the operator does not refer to it afterwards. The operator's communicator is A.comm
/// (not owned: it must outlive the operator).
std::unique_ptr<Operator> make_csr_operator(const DistributedCsr& A, const SpmvConfig& cfg);

class CsrOperator final : public Operator {
 public:
  CsrOperator(const DistributedCsr& A, const SpmvConfig& cfg);
  ~CsrOperator() override;

  MPI_Comm comm() const override { return comm_; }
  std::int64_t local_size() const override { return n_rows_ * bs_; }
  std::int64_t global_size() const override { return global_rows_ * bs_; }
  void apply(std::span<const double> x, std::span<double> y) override;
  std::vector<double> diagonal() const override;
  LocalCsr diagonal_block() const override;
  const SpmvStats& stats() const override;
  void reset_stats() override;
  std::string name() const override { return bs_ == 1 ? "csr" : "bcsr3"; }

  const OperatorLayout& layout() const { return layout_; }
  const SpmvConfig& config() const { return cfg_; }

 private:
  template <int BS>
  void rows(std::int32_t begin, std::int32_t end, const double* x, double* y) const;
  template <int BS>
  void boundary_rows(const double* x, const double* g, double* y) const;

  MPI_Comm comm_;
  SpmvConfig cfg_;
  int bs_ = 1;
  std::int64_t n_rows_ = 0;       // owned block rows
  std::int64_t global_rows_ = 0;  // block rows
  std::vector<std::int64_t> row_ptr_;
  // Interior rows. Block column: < n_rows_ an owned block (local index), otherwise ghost
  // n_rows_ + (index among the ghost blocks).
  std::vector<std::int32_t> col_;
  std::vector<double> val_;
  template <class F>
  void for_each_row(F&& f) const;  // f(row, cols, values, entries) for every owned row, in order

  std::vector<std::int32_t> interior_runs_;  // [begin, end) pairs of consecutive interior rows
  // Boundary block rows, ascending, with their entries in arrays of their own (empty rows in the
  // main arrays above).
  std::vector<std::int32_t> boundary_;
  std::vector<std::int64_t> bnd_row_ptr_;
  std::vector<std::int32_t> bnd_col_;
  std::vector<double> bnd_val_;
  std::unique_ptr<comm::GhostExchange> exchange_;
  OperatorLayout layout_;
  mutable SpmvStats stats_;
};

}  // namespace desync::linalg
