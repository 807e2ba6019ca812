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

/// The MUMPS instance on the coarse ranks' communicator (MPI_COMM_NULL elsewhere) and this coarse
/// rank's entries of A0: summed, at distinct places (the rows r with r % k == this rank).
struct CoarseSolver::Mumps {
  MPI_Comm sub = MPI_COMM_NULL;
  int rank = 0;  // in the whole communicator
  std::vector<CoarseSolver::Entry> entries;
#ifdef DESYNC_HAVE_MUMPS
  DMUMPS_STRUC_C id{};
  bool started = false;  // JOB = -1 ran: JOB = -2 frees it
  std::vector<MUMPS_INT> irn, jcn;
  std::vector<double> a;
  /// Runs `job` on the coarse ranks; returns INFOG(1) (the same on every coarse rank).
  int call(int job) {
    id.job = job;
    dmumps_c(&id);
    return id.infog[0];
  }
  /// The solve (JOB = 3) of the dense right-hand side rhs[0..n), centralised on rank 0, where the
  /// solution lands; returns INFOG(1).
  int solve_centralised(double* rhs, int n) {
    id.icntl[19] = 0;  // ICNTL(20): dense right-hand side
    id.icntl[20] = 0;  // ICNTL(21): centralised solution
    id.nrhs = 1;
    id.lrhs = static_cast<MUMPS_INT>(n);
    id.rhs = rhs;
    return call(3);
  }
#endif
  Mumps() = default;
  Mumps(const Mumps&) = delete;
  Mumps& operator=(const Mumps&) = delete;
  ~Mumps() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
#ifdef DESYNC_HAVE_MUMPS
    if (started) call(-2);
#endif
    if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  }
};

CoarseSolver::CoarseSolver() = default;
CoarseSolver::~CoarseSolver() = default;
CoarseSolver::CoarseSolver(CoarseSolver&&) noexcept = default;
CoarseSolver& CoarseSolver::operator=(CoarseSolver&&) noexcept = default;

void CoarseSolver::check_ranks(int k, int ranks) {
  if (k < 0) throw InputError(fmt::format("--coarse-ranks {}: must be >= 0 (0: every rank, dense LU)", k));
  if (k > ranks) throw InputError(fmt::format("--coarse-ranks {}: above the {} ranks of the run", k, ranks));
  if (k >= 2 && !have_mumps())
    throw InputError(fmt::format("--coarse-ranks {}: this desync was built without MUMPS (Debian: libmumps-dev, with "
                                 "Open MPI); --coarse-ranks 1 factors A0 on rank 0 with SuiteSparse",
                                 k));
}

void CoarseSolver::factor_dense(std::vector<double> a0, int n) {
  n_ = n;
  coarse_ranks_ = 0;
  mumps_.reset();
  rank0_.reset();
  lu_ = DenseLu(std::move(a0), n);
  name_ = "dense-lu";
  factor_nonzeros_ = static_cast<std::int64_t>(n) * n;
  solve_multiply_adds_ = static_cast<double>(factor_nonzeros_);  // L y = P b, U x = y: n^2 / 2 each
}

void CoarseSolver::factor_distributed(MPI_Comm comm, int n, int k, std::vector<Entry> entries) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  check_ranks(k, ranks);
  if (k < 1) throw std::logic_error("CoarseSolver::factor_distributed: k must be >= 1");
  n_ = n;
  coarse_ranks_ = k;
  rank0_.reset();
  distribute_entries(comm, k, std::move(entries));
  Mumps& m = *mumps_;
  MPI_Comm_split(comm, m.rank < k ? 0 : MPI_UNDEFINED, m.rank, &m.sub);
  // On rank 0, then on every rank: INFOG(1) and INFOG(2) (MUMPS) or the LocalSolverKind (SuiteSparse),
  // and the factors' entries.
  std::int64_t status[3] = {0, 0, 0};
  factor_mumps(n, status);
  std::string failure;  // rank 0's, without MUMPS
  factor_rank0(n, status, failure);
  MPI_Bcast(status, 3, MPI_INT64_T, 0, comm);
  if (status[0] < 0) {
    if (!have_mumps()) {
      // Rank 0's FactorisationError, on every rank.
      int length = static_cast<int>(failure.size());
      MPI_Bcast(&length, 1, MPI_INT, 0, comm);
      failure.resize(static_cast<std::size_t>(length));
      MPI_Bcast(failure.data(), length, MPI_CHAR, 0, comm);
      throw std::runtime_error(fmt::format("SuiteSparse's factorisation of A0 on rank 0: {}", failure));
    }
    const char* what = status[0] == -10 ? " (numerically singular)" : status[0] == -6 ? " (structurally singular)" : "";
    throw std::runtime_error(fmt::format("MUMPS on {} rank{} stopped with INFOG(1) = {}, INFOG(2) = {}{}", k,
                                         k == 1 ? "" : "s", status[0], status[1], what));
  }
  factor_nonzeros_ = status[2];
  if (have_mumps()) {
    name_ = "mumps";
    solve_multiply_adds_ = static_cast<double>(factor_nonzeros_);
  } else {
    const auto kind = static_cast<LocalSolverKind>(status[1]);
    name_ = fmt::format("{}-rank0", to_string(kind));
    solve_multiply_adds_ = static_cast<double>(factor_nonzeros_) * (kind == LocalSolverKind::umfpack ? 1.0 : 2.0);
  }
}

void CoarseSolver::distribute_entries(MPI_Comm comm, int k, std::vector<Entry> entries) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  mumps_ = std::make_unique<Mumps>();
  Mumps& m = *mumps_;
  MPI_Comm_rank(comm, &m.rank);
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
  m.entries.resize(total);
  for (std::size_t t = 0; t < total; ++t) m.entries[t] = {recv_rc[2 * t], recv_rc[2 * t + 1], recv_v[t]};
  sum_equal(m.entries);
  // The coarse ranks own distinct places: A0's nonzeros are the sum of their counts.
  std::int64_t mine = std::count_if(m.entries.begin(), m.entries.end(), [](const Entry& e) { return e.value != 0.0; });
  MPI_Allreduce(&mine, &nonzeros_, 1, MPI_INT64_T, MPI_SUM, comm);

}

void CoarseSolver::factor_mumps([[maybe_unused]] int n, [[maybe_unused]] std::int64_t* status) {
  [[maybe_unused]] Mumps& m = *mumps_;
#ifdef DESYNC_HAVE_MUMPS
  if (m.sub != MPI_COMM_NULL) {
    m.id.comm_fortran = static_cast<MUMPS_INT>(MPI_Comm_c2f(m.sub));
    m.id.par = 1;  // the host (rank 0) works too
    m.id.sym = 0;  // general: A need not be symmetric
    status[0] = m.call(-1);
    m.started = true;
    status[1] = m.id.infog[1];
    if (status[0] >= 0) {
      m.id.icntl[0] = -1;  // ICNTL(1..4): no error, diagnostic or global output, print level 0
      m.id.icntl[1] = -1;
      m.id.icntl[2] = -1;
      m.id.icntl[3] = 0;
      m.id.icntl[4] = 0;   // ICNTL(5): assembled input
      m.id.icntl[17] = 3;  // ICNTL(18): distributed assembled input, irn_loc/jcn_loc/a_loc on every rank
      m.id.n = static_cast<MUMPS_INT>(n);
      for (const Entry& e : m.entries) {  // 1-based
        m.irn.push_back(static_cast<MUMPS_INT>(e.row + 1));
        m.jcn.push_back(static_cast<MUMPS_INT>(e.col + 1));
        m.a.push_back(e.value);
      }
      m.id.nnz_loc = static_cast<MUMPS_INT8>(m.a.size());
      m.id.irn_loc = m.irn.data();
      m.id.jcn_loc = m.jcn.data();
      m.id.a_loc = m.a.data();
      status[0] = m.call(4);  // analysis and factorisation
      // -8, -9: the workspace estimated in the analysis was too small; factor again with more.
      for (int again = 0; again < 3 && (status[0] == -8 || status[0] == -9); ++again) {
        m.id.icntl[13] = std::max<MUMPS_INT>(m.id.icntl[13], 20) * 2;  // ICNTL(14): workspace increase, percent
        status[0] = m.call(2);
      }
      status[1] = m.id.infog[1];
      // INFOG(29): the factors' entries over the coarse ranks; below zero, in millions.
      status[2] = m.id.infog[28] >= 0 ? m.id.infog[28] : -static_cast<std::int64_t>(m.id.infog[28]) * 1000000;
    }
  }
#endif
}

void CoarseSolver::factor_rank0([[maybe_unused]] int n, [[maybe_unused]] std::int64_t* status,
                                [[maybe_unused]] std::string& failure) {
  [[maybe_unused]] Mumps& m = *mumps_;
#ifndef DESYNC_HAVE_MUMPS
  // Without MUMPS (k = 1): rank 0 holds every entry, summed and in (row, column) order: the CSR of A0,
  // factored by SuiteSparse (auto: CHOLMOD if A0 is symmetric positive definite, UMFPACK otherwise).
  if (m.sub != MPI_COMM_NULL) {
    LocalCsr a0;
    a0.rows = n;
    a0.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
    for (const Entry& e : m.entries) {
      ++a0.row_ptr[static_cast<std::size_t>(e.row) + 1];
      a0.col.push_back(e.col);
      a0.val.push_back(e.value);
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) a0.row_ptr[i + 1] += a0.row_ptr[i];
    try {
      rank0_ = make_local_solver(a0, LocalSolverKind::automatic);
      status[1] = static_cast<std::int64_t>(rank0_->kind());
      status[2] = rank0_->factor_nonzeros();
    } catch (const std::exception& e) {
      status[0] = -10;
      failure = e.what();
    }
  }
#endif
}

void CoarseSolver::solve(std::span<double> c) const {
  if (!distributed()) {
    lu_.solve(c);
    return;
  }
  const Mumps& m = *mumps_;
  if (m.sub == MPI_COMM_NULL)
    throw std::logic_error(fmt::format("CoarseSolver::solve: rank {} is not one of the {} coarse ranks", m.rank,
                                       coarse_ranks_));
#ifndef DESYNC_HAVE_MUMPS
  rank0_solve(c.data());  // k = 1 without MUMPS: SuiteSparse on rank 0
#else
  // The right-hand side and the solution centralised on rank 0, INFOG(1) after them.
  std::vector<double> buf(static_cast<std::size_t>(n_) + 1, 0.0);
  std::copy(c.begin(), c.begin() + n_, buf.begin());
  buf[static_cast<std::size_t>(n_)] = static_cast<double>(mumps_->solve_centralised(buf.data(), n_));
  if (coarse_ranks_ > 1) MPI_Bcast(buf.data(), n_ + 1, MPI_DOUBLE, 0, m.sub);
  if (buf[static_cast<std::size_t>(n_)] < 0)
    throw std::runtime_error(fmt::format("MUMPS's coarse solve stopped with INFOG(1) = {}", buf[static_cast<std::size_t>(n_)]));
  std::copy(buf.begin(), buf.begin() + n_, c.begin());
#endif
}

void CoarseSolver::rank0_solve(double* c) const {
  std::vector<double> b(c, c + n_);
  rank0_->solve(b.data(), c);
}

void CoarseSolver::solve_sum(MPI_Comm comm, std::span<double> c) const {
  const auto N = static_cast<std::size_t>(n_);
  if (!distributed()) {
    std::vector<double> sum(N);
    MPI_Allreduce(c.data(), sum.data(), n_, MPI_DOUBLE, MPI_SUM, comm);
    lu_.solve(sum);
    std::copy(sum.begin(), sum.end(), c.begin());
    return;
  }
  const Mumps& m = *mumps_;
  // The sum on rank 0, solved on the coarse ranks, the solution and INFOG(1) broadcast.
  std::vector<double> buf(N + 1, 0.0);
  MPI_Reduce(c.data(), buf.data(), n_, MPI_DOUBLE, MPI_SUM, 0, comm);
#ifdef DESYNC_HAVE_MUMPS
  if (m.sub != MPI_COMM_NULL) buf[N] = static_cast<double>(mumps_->solve_centralised(buf.data(), n_));
#else
  if (m.sub != MPI_COMM_NULL) rank0_solve(buf.data());  // k = 1: SuiteSparse on rank 0
#endif
  (void)m;
  MPI_Bcast(buf.data(), n_ + 1, MPI_DOUBLE, 0, comm);
  if (buf[N] < 0) throw std::runtime_error(fmt::format("MUMPS's coarse solve stopped with INFOG(1) = {}", buf[N]));
  std::copy(buf.begin(), buf.begin() + n_, c.begin());
}

std::vector<double> CoarseSolver::gather_dense(MPI_Comm comm) const {
  const auto N = static_cast<std::size_t>(n_);
  std::vector<double> out(N * N, 0.0);
  if (!mumps_) return out;
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  const auto& e = mumps_->entries;
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

}  // namespace desync::solvers
