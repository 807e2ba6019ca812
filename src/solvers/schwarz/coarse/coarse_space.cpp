// The coarse level of two-level Schwarz (coarse_space.hpp).
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/linalg/ghost_requests.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/communication/sparse_alltoall.hpp"

namespace desync::solvers {

using namespace linalg;  // the matrices and factorisations this level is built from

namespace {
const CoarseSpaceInfo& registered(MPI_Comm comm, const CoarseOptions& options) {
  agree_or_throw(comm, options.two_level(), "CoarseSpace: kind none has no coarse space");
  return find_coarse_space(options.kind);
}
}  // namespace

CoarseSpace::CoarseSpace(const DistributedCsr& A, const CoarseOptions& options)
    : CoarseSpace(A, registered(A.comm, options), options) {}

CoarseSpace::CoarseSpace(const DistributedCsr& A, const CoarseSpaceInfo& space, const CoarseOptions& options)
    : comm_(A.comm), kind_(space.name) {
  core::Stopwatch setup;
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  agree_or_throw(comm_, A.block_size == 1, "the coarse space needs a matrix of block size 1");
  CoarseSolver::check_ranks(options.coarse_ranks, ranks_);
  const bool sparse = options.coarse_ranks >= 1;  // A0's entries to the first coarse_ranks ranks (coarse_solver.hpp)
  local_rows_ = A.local_rows();
  offsets_ = A.row_offsets;
  // The near-kernel: the constant when none is given; every rank the same number of vectors, each
  // of this rank's length.
  std::vector<std::vector<double>> constant;
  if (options.near_kernel.empty()) constant.assign(1, std::vector<double>(static_cast<std::size_t>(local_rows_), 1.0));
  const std::vector<std::vector<double>>& z = options.near_kernel.empty() ? constant : options.near_kernel;
  int m[2] = {static_cast<int>(z.size()), -static_cast<int>(z.size())};
  MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_INT, MPI_MIN, comm_);
  agree_or_throw(comm_, m[0] == -m[1], "the coarse space: the ranks hold different numbers of near-kernel vectors");
  bool lengths = true;
  for (const auto& v : z) lengths = lengths && static_cast<std::int64_t>(v.size()) == local_rows_;
  agree_or_throw(comm_, lengths,
                 fmt::format("the coarse space: a near-kernel vector on rank {} does not have the rank's {} rows",
                             rank_, local_rows_));
  near_kernel_vectors_ = m[0];
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank_)];
  std::vector<std::int64_t> ghosts;  // the other ranks' rows that this rank's rows couple to, ascending
  for (const std::int64_t j : A.col)
    if (j < first || j >= first + local_rows_) ghosts.push_back(j);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  CoarseBasisInput input{A, z, comm_, rank_, ranks_, 1, {}, {}, {}};
  pieces_ = options.subdomains_per_rank;
  if (pieces_ > 1) subdomain_pieces(A, options.subdomains_per_rank, ghosts, input);
  CoarseBasis phi = space.build(input);  // the space's own file
  n_ = phi.size;
  phi_ptr_ = std::move(phi.ptr);
  phi_col_ = std::move(phi.col);
  phi_val_ = std::move(phi.val);
  // A0 = Phi^T A Phi, summed over the ranks' rows: (A0)_cd = sum_i phi_ic (A Phi)_id. (A Phi)_i reads
  // Phi's rows at i's columns: this rank's own rows, or, for another rank's row j, j's row of Phi
  // from its owner (basis_rows, once for all the columns of other ranks). Sparse: the same sums
  // kept at their nonzero places only (a hash map) instead of the dense array.
  const Rows ghost_rows = basis_rows(ghosts);
  const auto N = static_cast<std::size_t>(n_);
  std::vector<double> a0(sparse ? 0 : N * N, 0.0), api(N, 0.0);
  std::unordered_map<std::int64_t, double> entries;  // sparse: (A0)_cd at c * n + d, this rank's rows' sum
  std::vector<char> seen(N, 0);
  std::vector<int> touched;
  for (std::int64_t i = 0; i < local_rows_; ++i) {
    touched.clear();
    auto add = [&](int d, double v) {
      if (!seen[static_cast<std::size_t>(d)]) {
        seen[static_cast<std::size_t>(d)] = 1;
        touched.push_back(d);
      }
      api[static_cast<std::size_t>(d)] += v;
    };
    for (auto k = A.row_ptr[static_cast<std::size_t>(i)]; k < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      const double a = A.val[static_cast<std::size_t>(k)];
      if (j >= first && j < first + local_rows_) {
        const auto lj = static_cast<std::size_t>(j - first);
        for (auto m = phi_ptr_[lj]; m < phi_ptr_[lj + 1]; ++m)
          add(phi_col_[static_cast<std::size_t>(m)], a * phi_val_[static_cast<std::size_t>(m)]);
      } else {
        const auto g = static_cast<std::size_t>(std::lower_bound(ghosts.begin(), ghosts.end(), j) - ghosts.begin());
        for (auto m = ghost_rows.ptr[g]; m < ghost_rows.ptr[g + 1]; ++m)
          add(ghost_rows.cols[static_cast<std::size_t>(m)], a * ghost_rows.vals[static_cast<std::size_t>(m)]);
      }
    }
    for (auto m = phi_ptr_[static_cast<std::size_t>(i)]; m < phi_ptr_[static_cast<std::size_t>(i) + 1]; ++m) {
      const auto c = static_cast<std::size_t>(phi_col_[static_cast<std::size_t>(m)]);
      if (sparse) {
        for (const int d : touched)
          entries[static_cast<std::int64_t>(c) * n_ + d] += phi_val_[static_cast<std::size_t>(m)] * api[static_cast<std::size_t>(d)];
        continue;
      }
      for (const int d : touched)
        a0[c * N + static_cast<std::size_t>(d)] += phi_val_[static_cast<std::size_t>(m)] * api[static_cast<std::size_t>(d)];
    }
    for (const int d : touched) {
      api[static_cast<std::size_t>(d)] = 0.0;
      seen[static_cast<std::size_t>(d)] = 0;
    }
  }
  if (!sparse) {
    a0_.assign(N * N, 0.0);
    MPI_Allreduce(a0.data(), a0_.data(), static_cast<int>(N * N), MPI_DOUBLE, MPI_SUM, comm_);
  }
  std::string failure;
  try {
    if (sparse)
      solver_ = make_distributed_coarse_solver(comm_, n_, options.coarse_ranks, sparse_entries(entries, n_));
    else
      solver_ = make_dense_coarse_solver(a0_, n_);
  } catch (const std::runtime_error& e) {
    failure = fmt::format("--coarse {}: the coarse matrix A0 = Phi^T A Phi ({} x {}) is singular: {} (A is "
                          "singular on the coarse space, e.g. a pure Neumann problem)",
                          kind_, n_, n_, e.what());
  }
  agree_or_throw(comm_, failure.empty(), failure);
  if (sparse) {
    a0_nonzeros_ = solver_->nonzeros();
  } else {
    a0_nonzeros_ = std::count_if(a0_.begin(), a0_.end(), [](double v) { return v != 0.0; });
  }
  setup_seconds_ = setup.seconds();
}

std::vector<double> CoarseSpace::matrix() const {
  if (!solver_->distributed()) return a0_;
  return n_ <= dense_copy_limit ? solver_->gather_dense(comm_) : std::vector<double>{};
}

std::vector<double> CoarseSpace::local_basis() const {
  const auto N = static_cast<std::size_t>(n_);
  std::vector<double> out(static_cast<std::size_t>(local_rows_) * N, 0.0);
  for (std::int64_t i = 0; i < local_rows_; ++i)
    for (auto m = phi_ptr_[static_cast<std::size_t>(i)]; m < phi_ptr_[static_cast<std::size_t>(i) + 1]; ++m)
      out[static_cast<std::size_t>(i) * N + static_cast<std::size_t>(phi_col_[static_cast<std::size_t>(m)])] =
          phi_val_[static_cast<std::size_t>(m)];
  return out;
}

std::vector<double> CoarseSpace::local_sums(std::span<const double> r) const {
  std::vector<double> mine(static_cast<std::size_t>(n_), 0.0);
  for (std::int64_t i = 0; i < local_rows_; ++i)  // (Phi^T r)_c = sum_i phi_ic r_i over this rank's rows
    for (auto m = phi_ptr_[static_cast<std::size_t>(i)]; m < phi_ptr_[static_cast<std::size_t>(i) + 1]; ++m)
      mine[static_cast<std::size_t>(phi_col_[static_cast<std::size_t>(m)])] +=
          phi_val_[static_cast<std::size_t>(m)] * r[static_cast<std::size_t>(i)];
  return mine;
}

std::vector<double> CoarseSpace::restrict_to_coarse(std::span<const double> r) const {
  const std::vector<double> mine = local_sums(r);
  std::vector<double> c(static_cast<std::size_t>(n_));
  MPI_Allreduce(mine.data(), c.data(), n_, MPI_DOUBLE, MPI_SUM, comm_);
  return c;
}

void CoarseSpace::add_prolongation(std::span<const double> c, std::span<double> z) const {
  for (std::int64_t i = 0; i < local_rows_; ++i)  // (Phi c)_i = sum_c phi_ic c_c
    for (auto m = phi_ptr_[static_cast<std::size_t>(i)]; m < phi_ptr_[static_cast<std::size_t>(i) + 1]; ++m)
      z[static_cast<std::size_t>(i)] +=
          phi_val_[static_cast<std::size_t>(m)] * c[static_cast<std::size_t>(phi_col_[static_cast<std::size_t>(m)])];
}

void CoarseSpace::add_correction(std::span<const double> r, std::span<double> z) const {
  core::Stopwatch t;
  const std::vector<double> c = coarse_solution(r);  // c = A0^-1 Phi^T r on every rank
  add_prolongation(c, z);                            // z += Phi A0^-1 Phi^T r
  apply_seconds_ += t.seconds();
  ++applications_;
}

std::vector<double> CoarseSpace::coarse_solution(std::span<const double> r) const {
  std::vector<double> c = local_sums(r);  // this rank's part of Phi^T r
  solver_->solve_sum(comm_, c);            // c = A0^-1 Phi^T r on every rank (coarse_solver.hpp)
  return c;
}

void CoarseSpace::solve(std::span<double> c) const { solver_->solve(c); }

CoarseSpace::Rows CoarseSpace::transposed_product(const DistributedCsr& A) const {
  // Each a_ij phi_ic of this rank's rows i goes to j's owner as (j, c, a_ij phi_ic); one
  // comm::sparse_alltoall of the counts and three comm::sparse_alltoallv of the triplets.
  const std::int64_t first = offsets_[static_cast<std::size_t>(rank_)];
  const auto P = static_cast<std::size_t>(ranks_);
  std::vector<std::vector<std::int64_t>> js(P);
  std::vector<std::vector<int>> cs(P);
  std::vector<std::vector<double>> vs(P);
  for (std::int64_t i = 0; i < local_rows_; ++i) {
    const auto li = static_cast<std::size_t>(i);
    for (auto k = A.row_ptr[li]; k < A.row_ptr[li + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      const double a = A.val[static_cast<std::size_t>(k)];
      const auto q = static_cast<std::size_t>(j >= first && j < first + local_rows_ ? rank_ : owner_of(offsets_, j));
      for (auto m = phi_ptr_[li]; m < phi_ptr_[li + 1]; ++m) {
        js[q].push_back(j);
        cs[q].push_back(phi_col_[static_cast<std::size_t>(m)]);
        vs[q].push_back(a * phi_val_[static_cast<std::size_t>(m)]);
      }
    }
  }
  std::vector<int> send_n(P), send_d(P, 0), recv_n(P), recv_d(P, 0);
  for (std::size_t q = 0; q < P; ++q) send_n[q] = static_cast<int>(js[q].size());
  comm::sparse_alltoall(send_n.data(), recv_n.data(), comm_);
  for (std::size_t q = 1; q < P; ++q) {
    send_d[q] = send_d[q - 1] + send_n[q - 1];
    recv_d[q] = recv_d[q - 1] + recv_n[q - 1];
  }
  std::vector<std::int64_t> sj, rj(static_cast<std::size_t>(recv_d[P - 1] + recv_n[P - 1]));
  std::vector<int> sc, rc(rj.size());
  std::vector<double> sv, rv(rj.size());
  for (std::size_t q = 0; q < P; ++q) {
    sj.insert(sj.end(), js[q].begin(), js[q].end());
    sc.insert(sc.end(), cs[q].begin(), cs[q].end());
    sv.insert(sv.end(), vs[q].begin(), vs[q].end());
  }
  comm::sparse_alltoallv(sj.data(), send_n.data(), send_d.data(), MPI_INT64_T, rj.data(), recv_n.data(), recv_d.data(),
                MPI_INT64_T, comm_);
  comm::sparse_alltoallv(sc.data(), send_n.data(), send_d.data(), MPI_INT, rc.data(), recv_n.data(), recv_d.data(), MPI_INT, comm_);
  comm::sparse_alltoallv(sv.data(), send_n.data(), send_d.data(), MPI_DOUBLE, rv.data(), recv_n.data(), recv_d.data(),
                MPI_DOUBLE, comm_);
  // Summed per (row, function), in the order the triplets arrived (the same on every run).
  std::vector<std::map<int, double>> rows(static_cast<std::size_t>(local_rows_));
  for (std::size_t t = 0; t < rj.size(); ++t) rows[static_cast<std::size_t>(rj[t] - first)][rc[t]] += rv[t];
  Rows out;
  out.ptr.push_back(0);
  for (const auto& r : rows) {
    for (const auto& [c, v] : r) {
      out.cols.push_back(c);
      out.vals.push_back(v);
    }
    out.ptr.push_back(static_cast<std::int64_t>(out.cols.size()));
  }
  return out;
}

void CoarseSpace::subdomain_pieces(const DistributedCsr& A, int K, const std::vector<std::int64_t>& ghosts,
                                   CoarseBasisInput& input) const {
  agree_or_throw(comm_, K <= local_rows_,
                 fmt::format("--subdomains-per-rank {}: rank {} owns only {} rows (at most one subdomain per row)", K,
                             rank_, local_rows_));
  // The pieces of the one-level method's local solves: block_pieces splits the own rows by their
  // graph alone, so the own rows' block here gives the pieces the overlapping block gives there.
  const std::int64_t first = offsets_[static_cast<std::size_t>(rank_)];
  const LocalCsr own = owned_block(A, rank_);
  input.pieces_per_rank = K;
  input.piece = block_pieces(own, 0, own.rows, K);
  // The other ranks' rows' subdomains, from their owners (one comm::sparse_alltoallv).
  const GhostRequests req = request_entries(comm_, offsets_, ghosts);
  std::vector<int> give(req.asked.size());
  for (std::size_t a = 0; a < req.asked.size(); ++a)
    give[a] = input.subdomain(static_cast<std::size_t>(req.asked[a] - first));
  input.ghost_rows = ghosts;
  input.ghost_subdomain.assign(ghosts.size(), -1);
  comm::sparse_alltoallv(give.data(), req.give.data(), req.give_displs.data(), MPI_INT, input.ghost_subdomain.data(),
                         req.need.data(), req.need_displs.data(), MPI_INT, comm_);
}

CoarseSpace::Rows CoarseSpace::basis_rows(const std::vector<std::int64_t>& global_rows) const {
  // Each owner sends, per asked row, its count of functions, then the (function, value) pairs:
  // two rounds of comm::sparse_alltoallv (the counts, then the pairs).
  const std::int64_t first = offsets_[static_cast<std::size_t>(rank_)];
  const auto own = [&](std::int64_t g) { return g >= first && g < first + local_rows_; };
  std::vector<std::int64_t> sorted;  // the other ranks' rows asked for, ascending
  for (const std::int64_t g : global_rows)
    if (!own(g)) sorted.push_back(g);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const GhostRequests req = request_entries(comm_, offsets_, sorted);
  const auto P = static_cast<std::size_t>(ranks_);
  std::vector<int> give_count(req.asked.size()), got_count(sorted.size());
  for (std::size_t a = 0; a < req.asked.size(); ++a) {
    const auto i = static_cast<std::size_t>(req.asked[a] - first);
    give_count[a] = static_cast<int>(phi_ptr_[i + 1] - phi_ptr_[i]);
  }
  comm::sparse_alltoallv(give_count.data(), req.give.data(), req.give_displs.data(), MPI_INT, got_count.data(), req.need.data(),
                req.need_displs.data(), MPI_INT, comm_);
  // The pairs: per peer, the sums of its rows' counts.
  std::vector<int> send_n(P, 0), send_d(P, 0), recv_n(P, 0), recv_d(P, 0);
  for (std::size_t q = 0; q < P; ++q) {
    for (int a = req.give_displs[q]; a < req.give_displs[q] + req.give[q]; ++a) send_n[q] += give_count[static_cast<std::size_t>(a)];
    for (int g = req.need_displs[q]; g < req.need_displs[q] + req.need[q]; ++g) recv_n[q] += got_count[static_cast<std::size_t>(g)];
    if (q > 0) {
      send_d[q] = send_d[q - 1] + send_n[q - 1];
      recv_d[q] = recv_d[q - 1] + recv_n[q - 1];
    }
  }
  std::vector<int> send_col;
  std::vector<double> send_val;
  for (std::size_t a = 0; a < req.asked.size(); ++a) {
    const auto i = static_cast<std::size_t>(req.asked[a] - first);
    for (auto m = phi_ptr_[i]; m < phi_ptr_[i + 1]; ++m) {
      send_col.push_back(phi_col_[static_cast<std::size_t>(m)]);
      send_val.push_back(phi_val_[static_cast<std::size_t>(m)]);
    }
  }
  const auto total = static_cast<std::size_t>(recv_d[P - 1] + recv_n[P - 1]);
  std::vector<int> recv_col(total);
  std::vector<double> recv_val(total);
  comm::sparse_alltoallv(send_col.data(), send_n.data(), send_d.data(), MPI_INT, recv_col.data(), recv_n.data(), recv_d.data(),
                MPI_INT, comm_);
  comm::sparse_alltoallv(send_val.data(), send_n.data(), send_d.data(), MPI_DOUBLE, recv_val.data(), recv_n.data(),
                recv_d.data(), MPI_DOUBLE, comm_);
  // request_entries orders the needed rows by owner, ascending within each: sorted's order.
  std::vector<std::int64_t> start(sorted.size() + 1, 0);
  for (std::size_t g = 0; g < sorted.size(); ++g) start[g + 1] = start[g] + got_count[g];
  Rows out;
  out.ptr.push_back(0);
  for (const std::int64_t row : global_rows) {
    if (own(row)) {
      const auto i = static_cast<std::size_t>(row - first);
      for (auto m = phi_ptr_[i]; m < phi_ptr_[i + 1]; ++m) {
        out.cols.push_back(phi_col_[static_cast<std::size_t>(m)]);
        out.vals.push_back(phi_val_[static_cast<std::size_t>(m)]);
      }
      out.ptr.push_back(static_cast<std::int64_t>(out.cols.size()));
      continue;
    }
    const auto g = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), row) - sorted.begin());
    for (auto k = start[g]; k < start[g + 1]; ++k) {
      out.cols.push_back(recv_col[static_cast<std::size_t>(k)]);
      out.vals.push_back(recv_val[static_cast<std::size_t>(k)]);
    }
    out.ptr.push_back(static_cast<std::int64_t>(out.cols.size()));
  }
  return out;
}

std::string CoarseSpace::description() const {
  const std::int64_t fill = solver_->factor_nonzeros();
  const std::string kind =
      pieces_ > 1 ? fmt::format("{} ({} subdomains, {} per rank)", kind_, pieces_ * ranks_, pieces_) : kind_;
  if (solver_->distributed() && !have_mumps())
    return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) {} on rank 0 ({} in its factors)",
                       kind, n_, a0_nonzeros_, solver_->name(), fill);
  if (solver_->distributed())
    return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) MUMPS on {} rank{} ({} in its factors)",
                       kind, n_, a0_nonzeros_, solver_->coarse_ranks(), solver_->coarse_ranks() == 1 ? "" : "s",
                       fill);
  return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) dense LU on every rank", kind, n_,
                     a0_nonzeros_);
}

CoarseSummary CoarseSpace::summary() const {
  return {kind_,        n_,           near_kernel_vectors_, a0_nonzeros_, solver_->factor_nonzeros(),
          solver_->name(), coarse_ranks(), description(),      setup_seconds_};
}

}  // namespace desync::solvers
