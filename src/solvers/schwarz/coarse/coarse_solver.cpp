// The coarse matrix's factors: dense LU on every rank, MUMPS on the first k ranks, or SuiteSparse on rank 0
// (coarse_solver.hpp).
#include "desync/solvers/schwarz/coarse/coarse_solver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "desync/core/error.hpp"
#include "desync/communication/sparse_alltoall.hpp"

#ifdef DESYNC_HAVE_MUMPS
#include <dmumps_c.h>
#endif

namespace desync::solvers {

using namespace linalg;  // the matrices and factorisations this level is built from

DenseLu::DenseLu(std::vector<double> a, int n) : n_(n), lu_(std::move(a)), pivot_(static_cast<std::size_t>(n)) {
  const auto N = static_cast<std::size_t>(n);
  for (std::size_t k = 0; k < N; ++k) {
    // Partial pivoting: the largest |a_ik| of column k at or below the diagonal.
    std::size_t p = k;
    for (std::size_t i = k + 1; i < N; ++i)
      if (std::abs(lu_[i * N + k]) > std::abs(lu_[p * N + k])) p = i;
    pivot_[k] = static_cast<int>(p);
    if (lu_[p * N + k] == 0.0 || !std::isfinite(lu_[p * N + k]))
      throw std::runtime_error(fmt::format("zero or non-finite pivot in column {} of {}", k, n));
    if (p != k)
      for (std::size_t j = 0; j < N; ++j) std::swap(lu_[k * N + j], lu_[p * N + j]);
    const double inv = 1.0 / lu_[k * N + k];
    for (std::size_t i = k + 1; i < N; ++i) {
      const double l = lu_[i * N + k] *= inv;  // L below the diagonal
      if (l != 0.0)
        for (std::size_t j = k + 1; j < N; ++j) lu_[i * N + j] -= l * lu_[k * N + j];
    }
  }
}

void DenseLu::solve(std::span<double> b) const {
  const auto N = static_cast<std::size_t>(n_);
  for (std::size_t k = 0; k < N; ++k) std::swap(b[k], b[static_cast<std::size_t>(pivot_[k])]);  // P b
  for (std::size_t i = 0; i < N; ++i)  // L y = P b (unit diagonal)
    for (std::size_t j = 0; j < i; ++j) b[i] -= lu_[i * N + j] * b[j];
  for (std::size_t i = N; i-- > 0;) {  // U x = y
    for (std::size_t j = i + 1; j < N; ++j) b[i] -= lu_[i * N + j] * b[j];
    b[i] /= lu_[i * N + i];
  }
}

bool have_mumps() {
#ifdef DESYNC_HAVE_MUMPS
  return true;
#else
  return false;
#endif
}

CoarseSolver::~CoarseSolver() = default;

void CoarseSolver::check_ranks(int k, int ranks) {
  if (k < 0) throw InputError(fmt::format("--coarse-ranks {}: must be >= 0 (0: every rank, dense LU)", k));
  if (k > ranks) throw InputError(fmt::format("--coarse-ranks {}: above the {} ranks of the run", k, ranks));
  if (k >= 2 && !have_mumps())
    throw InputError(fmt::format("--coarse-ranks {}: this desync was built without MUMPS (Debian: libmumps-dev, with "
                                 "Open MPI); --coarse-ranks 1 factors A0 on rank 0 with SuiteSparse",
                                 k));
}

namespace {

using Entry = CoarseSolver::Entry;

// Strategy 1: every rank holds A0 dense and its LU factors; a solve needs no message beyond the sum.
class DenseCoarseSolver final : public CoarseSolver {
 public:
  DenseCoarseSolver(std::vector<double> a0, int n) : lu_(std::move(a0), n) {
    n_ = n;
    name_ = "dense-lu";
    factor_nonzeros_ = static_cast<std::int64_t>(n) * n;
    solve_multiply_adds_ = static_cast<double>(factor_nonzeros_);  // L y = P b, U x = y: n^2 / 2 each
  }
  void solve(std::span<double> c) const override { lu_.solve(c); }
  void solve_sum(MPI_Comm comm, std::span<double> c) const override {
    std::vector<double> sum(static_cast<std::size_t>(n_));
    MPI_Allreduce(c.data(), sum.data(), n_, MPI_DOUBLE, MPI_SUM, comm);  // sum over the ranks of Phi^T r
    lu_.solve(sum);
    std::copy(sum.begin(), sum.end(), c.begin());
  }
  std::vector<double> gather_dense(MPI_Comm) const override {
    return std::vector<double>(static_cast<std::size_t>(n_) * static_cast<std::size_t>(n_), 0.0);
  }

 private:
  DenseLu lu_;
};

// Strategies 2 and 3: A0's entries summed on the coarse ranks 0..k-1 (the rows r with r % k == the
// rank), factored there, the right-hand side and the solution centralised on rank 0.
class GatheredCoarseSolver : public CoarseSolver {
 public:
  ~GatheredCoarseSolver() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && sub_ != MPI_COMM_NULL) MPI_Comm_free(&sub_);
  }

  /// Collective over comm: the entries to the coarse ranks, their communicator, the factorisation.
  void factor(MPI_Comm comm, int n, int k, std::vector<Entry> entries) {
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    check_ranks(k, ranks);
    if (k < 1) throw std::logic_error("make_distributed_coarse_solver: k must be >= 1");
    n_ = n;
    coarse_ranks_ = k;
    distribute_entries(comm, k, std::move(entries));
    MPI_Comm_split(comm, rank_ < k ? 0 : MPI_UNDEFINED, rank_, &sub_);
    // On rank 0, then on every rank: a status below 0 for a failure, a detail, the factors' entries.
    std::int64_t status[3] = {0, 0, 0};
    std::string failure;  // rank 0's message
    if (sub_ != MPI_COMM_NULL) factor_here(status, failure);
    MPI_Bcast(status, 3, MPI_INT64_T, 0, comm);
    if (status[0] < 0) throw std::runtime_error(failure_text(comm, status, std::move(failure)));
    factor_nonzeros_ = status[2];
    describe(status);
  }

  void solve(std::span<double> c) const override {
    if (sub_ == MPI_COMM_NULL)
      throw std::logic_error(fmt::format("CoarseSolver::solve: rank {} is not one of the {} coarse ranks", rank_,
                                         coarse_ranks_));
    // The right-hand side and the solution centralised on rank 0, the status after them.
    const auto N = static_cast<std::size_t>(n_);
    std::vector<double> buf(N + 1, 0.0);
    std::copy_n(c.data(), N, buf.data());
    buf[N] = static_cast<double>(solve_centralised(buf.data()));
    if (coarse_ranks_ > 1) MPI_Bcast(buf.data(), n_ + 1, MPI_DOUBLE, 0, sub_);
    if (buf[N] < 0) throw std::runtime_error(fmt::format("MUMPS's coarse solve stopped with INFOG(1) = {}", buf[N]));
    std::copy_n(buf.data(), N, c.data());
  }

  void solve_sum(MPI_Comm comm, std::span<double> c) const override {
    const auto N = static_cast<std::size_t>(n_);
    // The sum on rank 0, solved on the coarse ranks, the solution and the status broadcast.
    std::vector<double> buf(N + 1, 0.0);
    MPI_Reduce(c.data(), buf.data(), n_, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (sub_ != MPI_COMM_NULL) buf[N] = static_cast<double>(solve_centralised(buf.data()));
    MPI_Bcast(buf.data(), n_ + 1, MPI_DOUBLE, 0, comm);
    if (buf[N] < 0) throw std::runtime_error(fmt::format("MUMPS's coarse solve stopped with INFOG(1) = {}", buf[N]));
    std::copy(buf.begin(), buf.begin() + n_, c.begin());
  }

  std::vector<double> gather_dense(MPI_Comm comm) const override {
    const auto N = static_cast<std::size_t>(n_);
    std::vector<double> out(N * N, 0.0);
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    const auto& e = entries_;
  int count = static_cast<int>(e.size());
    std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks), 0);
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    for (std::size_t q = 1; q < counts.size(); ++q) displs[q] = displs[q - 1] + counts[q - 1];
    const auto total = static_cast<std::size_t>(displs.back() + counts.back());
    std::vector<std::int64_t> place(e.size()), all_place(total);
    std::vector<double> value(e.size()), all_value(total);
    for (std::size_t t = 0; t < e.size(); ++t) {
      place[t] = static_cast<std::int64_t>(e[t].row) * n_ + e[t].col;
      value[t] = e[t].value;
    }
    MPI_Allgatherv(place.data(), count, MPI_INT64_T, all_place.data(), counts.data(), displs.data(), MPI_INT64_T,
                   comm);
    MPI_Allgatherv(value.data(), count, MPI_DOUBLE, all_value.data(), counts.data(), displs.data(), MPI_DOUBLE, comm);
    for (std::size_t t = 0; t < total; ++t) out[static_cast<std::size_t>(all_place[t])] = all_value[t];
    return out;
  }

 protected:
  /// On the coarse ranks: factors their entries; status[0] < 0 for a failure (with `failure`),
  /// status[1] a detail, status[2] the factors' entries.
  virtual void factor_here(std::int64_t* status, std::string& failure) = 0;
  /// The failure's message on every rank (collective over comm).
  virtual std::string failure_text(MPI_Comm comm, const std::int64_t* status, std::string failure) const = 0;
  /// name_ and solve_multiply_adds_ from rank 0's status.
  virtual void describe(const std::int64_t* status) = 0;
  /// On the coarse ranks: rhs[0..n) = A0^-1 rhs on rank 0 (read there, solved there); returns a
  /// status (below 0: a failure).
  virtual int solve_centralised(double* rhs) const = 0;

  MPI_Comm sub_ = MPI_COMM_NULL;  // the coarse ranks' communicator (MPI_COMM_NULL elsewhere)
  int rank_ = 0;                  // in the whole communicator
  std::vector<Entry> entries_;    // this coarse rank's entries of A0: summed, at distinct places

 private:
  void distribute_entries(MPI_Comm comm, int k, std::vector<Entry> entries) {
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    MPI_Comm_rank(comm, &rank_);
    // This rank's entries, summed at equal places, to the coarse rank row % k (one comm::sparse_alltoallv of
    // (row, col) pairs and one of values); each coarse rank sums what it received again.
    const auto by_place = [](const Entry& x, const Entry& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; };
    const auto sum_equal = [&](std::vector<Entry>& e) {
      std::sort(e.begin(), e.end(), by_place);
      std::size_t out = 0;
      for (std::size_t i = 0; i < e.size(); ++i) {
        if (out > 0 && e[out - 1].row == e[i].row && e[out - 1].col == e[i].col)
          e[out - 1].value += e[i].value;
        else
          e[out++] = e[i];
      }
      e.resize(out);
    };
    sum_equal(entries);
    std::stable_sort(entries.begin(), entries.end(), [k](const Entry& x, const Entry& y) { return x.row % k < y.row % k; });
    const auto P = static_cast<std::size_t>(ranks);
    std::vector<int> send_n(P, 0), send_d(P, 0), recv_n(P, 0), recv_d(P, 0);
    for (const Entry& e : entries) ++send_n[static_cast<std::size_t>(e.row % k)];
    comm::sparse_alltoall(send_n.data(), recv_n.data(), comm);
    for (std::size_t q = 1; q < P; ++q) {
      send_d[q] = send_d[q - 1] + send_n[q - 1];
      recv_d[q] = recv_d[q - 1] + recv_n[q - 1];
    }
    const auto total = static_cast<std::size_t>(recv_d[P - 1] + recv_n[P - 1]);
    std::vector<int> send_rc, recv_rc(2 * total);
    std::vector<double> send_v, recv_v(total);
    for (const Entry& e : entries) {
      send_rc.push_back(e.row);
      send_rc.push_back(e.col);
      send_v.push_back(e.value);
    }
    entries.clear();
    entries.shrink_to_fit();
    std::vector<int> send_n2(P), send_d2(P), recv_n2(P), recv_d2(P);
    for (std::size_t q = 0; q < P; ++q) {
      send_n2[q] = 2 * send_n[q];
      send_d2[q] = 2 * send_d[q];
      recv_n2[q] = 2 * recv_n[q];
      recv_d2[q] = 2 * recv_d[q];
    }
    comm::sparse_alltoallv(send_rc.data(), send_n2.data(), send_d2.data(), MPI_INT, recv_rc.data(), recv_n2.data(),
                  recv_d2.data(), MPI_INT, comm);
    comm::sparse_alltoallv(send_v.data(), send_n.data(), send_d.data(), MPI_DOUBLE, recv_v.data(), recv_n.data(), recv_d.data(),
                  MPI_DOUBLE, comm);
    entries_.resize(total);
    for (std::size_t t = 0; t < total; ++t) entries_[t] = {recv_rc[2 * t], recv_rc[2 * t + 1], recv_v[t]};
    sum_equal(entries_);
    // The coarse ranks own distinct places: A0's nonzeros are the sum of their counts.
    std::int64_t mine = std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.value != 0.0; });
    MPI_Allreduce(&mine, &nonzeros_, 1, MPI_INT64_T, MPI_SUM, comm);
  }
};

#ifdef DESYNC_HAVE_MUMPS
// Strategy 2: MUMPS on the k coarse ranks, distributed assembled input, unsymmetric.
class MumpsCoarseSolver final : public GatheredCoarseSolver {
 public:
  ~MumpsCoarseSolver() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && started_) call(-2);
  }

 private:
  void factor_here(std::int64_t* status, std::string&) override {
    id_.comm_fortran = static_cast<MUMPS_INT>(MPI_Comm_c2f(sub_));
    id_.par = 1;  // the host (rank 0) works too
    id_.sym = 0;  // general: A need not be symmetric
    status[0] = call(-1);
    started_ = true;
    status[1] = id_.infog[1];
    if (status[0] >= 0) {
      id_.icntl[0] = -1;  // ICNTL(1..4): no error, diagnostic or global output, print level 0
      id_.icntl[1] = -1;
      id_.icntl[2] = -1;
      id_.icntl[3] = 0;
      id_.icntl[4] = 0;   // ICNTL(5): assembled input
      id_.icntl[17] = 3;  // ICNTL(18): distributed assembled input, irn_loc/jcn_loc/a_loc on every rank
      id_.n = static_cast<MUMPS_INT>(n_);
      for (const Entry& e : entries_) {  // 1-based
        irn_.push_back(static_cast<MUMPS_INT>(e.row + 1));
        jcn_.push_back(static_cast<MUMPS_INT>(e.col + 1));
        a_.push_back(e.value);
      }
      id_.nnz_loc = static_cast<MUMPS_INT8>(a_.size());
      id_.irn_loc = irn_.data();
      id_.jcn_loc = jcn_.data();
      id_.a_loc = a_.data();
      status[0] = call(4);  // analysis and factorisation
      // -8, -9: the workspace estimated in the analysis was too small; factor again with more.
      for (int again = 0; again < 3 && (status[0] == -8 || status[0] == -9); ++again) {
        id_.icntl[13] = std::max<MUMPS_INT>(id_.icntl[13], 20) * 2;  // ICNTL(14): workspace increase, percent
        status[0] = call(2);
      }
      status[1] = id_.infog[1];
      // INFOG(29): the factors' entries over the coarse ranks; below zero, in millions.
      status[2] = id_.infog[28] >= 0 ? id_.infog[28] : -static_cast<std::int64_t>(id_.infog[28]) * 1000000;
    }
  }
  std::string failure_text(MPI_Comm, const std::int64_t* status, std::string) const override {
    const char* what = status[0] == -10 ? " (numerically singular)" : status[0] == -6 ? " (structurally singular)" : "";
    return fmt::format("MUMPS on {} rank{} stopped with INFOG(1) = {}, INFOG(2) = {}{}", coarse_ranks_,
                       coarse_ranks_ == 1 ? "" : "s", status[0], status[1], what);
  }
  void describe(const std::int64_t*) override {
    name_ = "mumps";
    solve_multiply_adds_ = static_cast<double>(factor_nonzeros_);
  }
  // The solve (JOB = 3) of the dense right-hand side, centralised on rank 0; returns INFOG(1).
  int solve_centralised(double* rhs) const override {
    id_.icntl[19] = 0;  // ICNTL(20): dense right-hand side
    id_.icntl[20] = 0;  // ICNTL(21): centralised solution
    id_.nrhs = 1;
    id_.lrhs = static_cast<MUMPS_INT>(n_);
    id_.rhs = rhs;
    return call(3);
  }
  /// Runs `job` on the coarse ranks; returns INFOG(1) (the same on every coarse rank).
  int call(int job) const {
    id_.job = job;
    dmumps_c(&id_);
    return id_.infog[0];
  }

  mutable DMUMPS_STRUC_C id_{};  // MUMPS's instance (its solve writes into it)
  bool started_ = false;         // JOB = -1 ran: JOB = -2 frees it
  std::vector<MUMPS_INT> irn_, jcn_;
  std::vector<double> a_;
};
#endif

// Strategy 3: SuiteSparse on rank 0 (k = 1 without MUMPS): rank 0 holds every entry, summed and in
// (row, column) order: the CSR of A0, factored by make_local_solver (auto: CHOLMOD if A0 is
// symmetric positive definite, UMFPACK otherwise).
class Rank0CoarseSolver final : public GatheredCoarseSolver {
 private:
  void factor_here(std::int64_t* status, std::string& failure) override {
    LocalCsr a0;
    a0.rows = n_;
    a0.row_ptr.assign(static_cast<std::size_t>(n_) + 1, 0);
    for (const Entry& e : entries_) {
      ++a0.row_ptr[static_cast<std::size_t>(e.row) + 1];
      a0.col.push_back(e.col);
      a0.val.push_back(e.value);
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(n_); ++i) a0.row_ptr[i + 1] += a0.row_ptr[i];
    try {
      factors_ = make_local_solver(a0, LocalSolverKind::automatic);
      status[1] = static_cast<std::int64_t>(factors_->kind());
      status[2] = factors_->factor_nonzeros();
    } catch (const std::exception& e) {
      status[0] = -10;
      failure = e.what();
    }
  }
  // Rank 0's FactorisationError, on every rank.
  std::string failure_text(MPI_Comm comm, const std::int64_t*, std::string failure) const override {
    int length = static_cast<int>(failure.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, comm);
    failure.resize(static_cast<std::size_t>(length));
    MPI_Bcast(failure.data(), length, MPI_CHAR, 0, comm);
    return fmt::format("SuiteSparse's factorisation of A0 on rank 0: {}", failure);
  }
  void describe(const std::int64_t* status) override {
    const auto kind = static_cast<LocalSolverKind>(status[1]);
    name_ = fmt::format("{}-rank0", to_string(kind));
    solve_multiply_adds_ = static_cast<double>(factor_nonzeros_) * (kind == LocalSolverKind::umfpack ? 1.0 : 2.0);
  }
  int solve_centralised(double* rhs) const override {
    std::vector<double> b(rhs, rhs + n_);
    factors_->solve(b.data(), rhs);
    return 0;
  }

  std::unique_ptr<LocalSolver> factors_;
};

}  // namespace

std::vector<CoarseSolver::Entry> sparse_entries(const std::unordered_map<std::int64_t, double>& map, int n) {
  std::vector<CoarseSolver::Entry> out;
  out.reserve(map.size());
  for (const auto& [place, value] : map) out.push_back({static_cast<int>(place / n), static_cast<int>(place % n), value});
  return out;
}

std::unique_ptr<CoarseSolver> make_dense_coarse_solver(std::vector<double> a0, int n) {
  return std::make_unique<DenseCoarseSolver>(std::move(a0), n);
}

std::unique_ptr<CoarseSolver> make_distributed_coarse_solver(MPI_Comm comm, int n, int k, std::vector<Entry> entries) {
#ifdef DESYNC_HAVE_MUMPS
  auto s = std::make_unique<MumpsCoarseSolver>();
#else
  auto s = std::make_unique<Rank0CoarseSolver>();
#endif
  s->factor(comm, n, k, std::move(entries));
  return s;
}

}  // namespace desync::solvers
