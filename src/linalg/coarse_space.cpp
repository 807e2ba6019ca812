// The coarse level of two-level Schwarz (coarse_space.hpp).
#include "desync/linalg/coarse_space.hpp"

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

namespace desync::linalg {

namespace {

/// The entries of a map from c * n + d to (A0)_cd, in the map's order.
std::vector<CoarseSolver::Entry> sparse_entries(const std::unordered_map<std::int64_t, double>& map, int n) {
  std::vector<CoarseSolver::Entry> out;
  out.reserve(map.size());
  for (const auto& [place, value] : map) out.push_back({static_cast<int>(place / n), static_cast<int>(place % n), value});
  return out;
}

}  // namespace

CoarseSpace::CoarseSpace(const DistributedCsr& A, const CoarseOptions& options) : comm_(A.comm), kind_(options.kind) {
  core::Stopwatch setup;
  const CoarseKind kind = options.kind;
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  CoarseSolver::check_ranks(options.coarse_ranks, ranks_);
  const bool sparse = options.coarse_ranks >= 1;  // A0's entries to MUMPS on the first coarse_ranks ranks
  agree_or_throw(comm_, A.block_size == 1, "the coarse space needs a matrix of block size 1");
  agree_or_throw(comm_, kind != CoarseKind::none, "CoarseSpace: kind none has no coarse space");
  local_rows_ = A.local_rows();
  offsets_ = A.row_offsets;
  if (kind == CoarseKind::nicolaides)
    build_nicolaides();
  else
    build_gdsw(A);
  // A0 = Phi^T A Phi, summed over the ranks' rows: (A0)_cd = sum_i phi_ic (A Phi)_id. (A Phi)_i reads
  // Phi's rows at i's columns: this rank's own rows, or, for another rank's row j, the one function
  // that is 1 there (ghost_function: j's owner for Nicolaides, j's interface component for GDSW).
  // Sparse: the same sums kept at their nonzero places only (a hash map) instead of the dense array.
  const auto N = static_cast<std::size_t>(n_);
  std::vector<double> a0(sparse ? 0 : N * N, 0.0), api(N, 0.0);
  std::unordered_map<std::int64_t, double> entries;  // sparse: (A0)_cd at c * n + d, this rank's rows' sum
  std::vector<char> seen(N, 0);
  std::vector<int> touched;
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank_)];
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
        add(ghost_function(j), a);
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
      solver_.factor_distributed(comm_, n_, options.coarse_ranks, sparse_entries(entries, n_));
    else
      solver_.factor_dense(a0_, n_);
  } catch (const std::runtime_error& e) {
    failure = fmt::format("--coarse {}: the coarse matrix A0 = Phi^T A Phi ({} x {}) is singular: {} (A is "
                          "singular on the coarse space, e.g. a pure Neumann problem)",
                          to_string(kind_), n_, n_, e.what());
  }
  agree_or_throw(comm_, failure.empty(), failure);
  if (sparse) {
    a0_nonzeros_ = solver_.nonzeros();
    if (n_ <= dense_copy_limit) a0_ = solver_.gather_dense(comm_);
  } else {
    a0_nonzeros_ = std::count_if(a0_.begin(), a0_.end(), [](double v) { return v != 0.0; });
  }
  for (const int c : phi_col_) local_functions_.push_back(c);
  std::sort(local_functions_.begin(), local_functions_.end());
  local_functions_.erase(std::unique(local_functions_.begin(), local_functions_.end()), local_functions_.end());
  setup_seconds_ = setup.seconds();
}

void CoarseSpace::build_nicolaides() {
  n_ = ranks_;  // phi_p: 1 on rank p's rows
  phi_ptr_.resize(static_cast<std::size_t>(local_rows_) + 1);
  for (std::int64_t i = 0; i <= local_rows_; ++i) phi_ptr_[static_cast<std::size_t>(i)] = i;
  phi_col_.assign(static_cast<std::size_t>(local_rows_), rank_);
  phi_val_.assign(static_cast<std::size_t>(local_rows_), 1.0);
}

void CoarseSpace::build_gdsw(const DistributedCsr& A) {
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank_)];
  const auto rows = static_cast<std::size_t>(local_rows_);
  // 1. The interface rows and their keys: the ranks among the row's own and its neighbours' owners.
  std::vector<std::vector<int>> key(rows);
  std::vector<std::int64_t> ghosts;
  for (std::size_t i = 0; i < rows; ++i) {
    std::set<int> owners{rank_};
    for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      if (j < first || j >= first + local_rows_) {
        owners.insert(owner_of(offsets_, j));
        ghosts.push_back(j);
      }
    }
    if (owners.size() > 1) key[i].assign(owners.begin(), owners.end());
  }
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  const bool has_interface = std::any_of(key.begin(), key.end(), [](const auto& k) { return !k.empty(); });
  agree_or_throw(comm_, has_interface || ranks_ == 1,
                 fmt::format("--coarse gdsw: rank {}'s subdomain has no interface (no row coupled to another rank's): "
                             "GDSW's coarse functions live on the interface",
                             rank_));
  agree_or_throw(comm_, ranks_ > 1, "--coarse gdsw: one subdomain has no interface (run on more than one rank)");
  // 2. The components, numbered alike on every rank: every rank's distinct keys, gathered and sorted.
  std::set<std::vector<int>> mine;
  for (const auto& k : key)
    if (!k.empty()) mine.insert(k);
  std::vector<int> flat;  // [length, ranks...] per key
  for (const auto& k : mine) {
    flat.push_back(static_cast<int>(k.size()));
    flat.insert(flat.end(), k.begin(), k.end());
  }
  int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(ranks_)), displs(static_cast<std::size_t>(ranks_), 0);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_);
  for (int q = 1; q < ranks_; ++q) displs[static_cast<std::size_t>(q)] = displs[static_cast<std::size_t>(q) - 1] + counts[static_cast<std::size_t>(q) - 1];
  std::vector<int> all(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(flat.data(), count, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, comm_);
  std::map<std::vector<int>, int> component;
  for (std::size_t p = 0; p < all.size();) {
    const auto len = static_cast<std::size_t>(all[p]);
    component.emplace(std::vector<int>(all.begin() + static_cast<std::ptrdiff_t>(p + 1),
                                       all.begin() + static_cast<std::ptrdiff_t>(p + 1 + len)), 0);
    p += len + 1;
  }
  n_ = 0;
  for (auto& [k, index] : component) index = n_++;
  std::vector<int> comp(rows, -1);
  for (std::size_t i = 0; i < rows; ++i)
    if (!key[i].empty()) comp[i] = component.at(key[i]);
  // 3. The components of the other ranks' rows this rank's rows couple to (each an interface row of
  //    its owner), from their owners.
  const GhostRequests req = request_entries(comm_, offsets_, ghosts);
  std::vector<int> give(req.asked.size()), got(ghosts.size());
  for (std::size_t a = 0; a < req.asked.size(); ++a) give[a] = comp[static_cast<std::size_t>(req.asked[a] - first)];
  MPI_Alltoallv(give.data(), req.give.data(), req.give_displs.data(), MPI_INT, got.data(), req.need.data(),
                req.need_displs.data(), MPI_INT, comm_);
  for (std::size_t g = 0; g < ghosts.size(); ++g) ghost_component_[ghosts[g]] = got[g];
  // 4. Phi on the interface rows: 1 for the row's component. On the interior rows: the discrete
  //    harmonic extension phi_I = -A_II^-1 A_IG phi_G, one local solve per component that touches this
  //    rank (interior rows couple to this rank's rows only).
  std::vector<int> local_comps;
  for (const int c : comp)
    if (c >= 0) local_comps.push_back(c);
  std::sort(local_comps.begin(), local_comps.end());
  local_comps.erase(std::unique(local_comps.begin(), local_comps.end()), local_comps.end());
  std::vector<std::int64_t> interior_index(rows, -1);
  LocalCsr aii;
  aii.row_ptr.push_back(0);
  for (std::size_t i = 0; i < rows; ++i)
    if (comp[i] < 0) interior_index[i] = aii.rows++;
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] >= 0) continue;
    for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
      if (interior_index[lj] >= 0) {
        aii.col.push_back(static_cast<std::int32_t>(interior_index[lj]));
        aii.val.push_back(A.val[static_cast<std::size_t>(k)]);
      }
    }
    aii.row_ptr.push_back(static_cast<std::int64_t>(aii.col.size()));
  }
  std::vector<std::vector<double>> extension(local_comps.size());  // per local component, on the interior rows
  if (aii.rows > 0) {
    std::unique_ptr<LocalSolver> solver;
    std::string failure;
    try {
      solver = make_local_solver(aii, LocalSolverKind::automatic);
    } catch (const std::exception& e) {
      failure = fmt::format("--coarse gdsw: rank {}: the interior block of its subdomain ({} rows) cannot be factored: {}",
                            rank_, aii.rows, e.what());
    }
    agree_or_throw(comm_, failure.empty(), failure);
    std::vector<double> rhs(static_cast<std::size_t>(aii.rows));
    for (std::size_t lc = 0; lc < local_comps.size(); ++lc) {
      std::fill(rhs.begin(), rhs.end(), 0.0);  // rhs = -A_IG phi_G for component local_comps[lc]
      for (std::size_t i = 0; i < rows; ++i) {
        if (comp[i] >= 0) continue;
        for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
          const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
          if (comp[lj] == local_comps[lc]) rhs[static_cast<std::size_t>(interior_index[i])] -= A.val[static_cast<std::size_t>(k)];
        }
      }
      extension[lc].resize(rhs.size());
      solver->solve(rhs.data(), extension[lc].data());
    }
  } else {
    agree_or_throw(comm_, true, "");  // the factorisation's agreement above, for a rank without interior rows
  }
  phi_ptr_.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] >= 0) {
      phi_col_.push_back(comp[i]);
      phi_val_.push_back(1.0);
    } else {
      for (std::size_t lc = 0; lc < local_comps.size(); ++lc) {
        const double v = extension[lc][static_cast<std::size_t>(interior_index[i])];
        if (v != 0.0) {
          phi_col_.push_back(local_comps[lc]);
          phi_val_.push_back(v);
        }
      }
    }
    phi_ptr_.push_back(static_cast<std::int64_t>(phi_col_.size()));
  }
}

int CoarseSpace::ghost_function(std::int64_t j) const {
  if (kind_ == CoarseKind::nicolaides) return owner_of(offsets_, j);
  return ghost_component_.at(j);
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
  solver_.solve_sum(comm_, c);            // c = A0^-1 Phi^T r on every rank (coarse_solver.hpp)
  return c;
}

void CoarseSpace::solve(std::span<double> c) const { solver_.solve(c); }

std::vector<double> CoarseSpace::local_restriction(std::span<const double> r) const {
  std::vector<double> out(local_functions_.size(), 0.0);
  for (std::int64_t i = 0; i < local_rows_; ++i)
    for (auto m = phi_ptr_[static_cast<std::size_t>(i)]; m < phi_ptr_[static_cast<std::size_t>(i) + 1]; ++m) {
      const int c = phi_col_[static_cast<std::size_t>(m)];
      const auto k = static_cast<std::size_t>(
          std::lower_bound(local_functions_.begin(), local_functions_.end(), c) - local_functions_.begin());
      out[k] += phi_val_[static_cast<std::size_t>(m)] * r[static_cast<std::size_t>(i)];
    }
  return out;
}

CoarseSpace::Rows CoarseSpace::transposed_product(const DistributedCsr& A) const {
  // Each a_ij phi_ic of this rank's rows i goes to j's owner as (j, c, a_ij phi_ic); one
  // MPI_Alltoall of the counts and three MPI_Alltoallv of the triplets.
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
  MPI_Alltoall(send_n.data(), 1, MPI_INT, recv_n.data(), 1, MPI_INT, comm_);
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
  MPI_Alltoallv(sj.data(), send_n.data(), send_d.data(), MPI_INT64_T, rj.data(), recv_n.data(), recv_d.data(),
                MPI_INT64_T, comm_);
  MPI_Alltoallv(sc.data(), send_n.data(), send_d.data(), MPI_INT, rc.data(), recv_n.data(), recv_d.data(), MPI_INT, comm_);
  MPI_Alltoallv(sv.data(), send_n.data(), send_d.data(), MPI_DOUBLE, rv.data(), recv_n.data(), recv_d.data(),
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

CoarseSpace::Rows CoarseSpace::basis_rows(const std::vector<std::int64_t>& global_rows) const {
  // Each owner sends, per asked row, its count of functions, then the (function, value) pairs:
  // two rounds of MPI_Alltoallv (the counts, then the pairs).
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
  MPI_Alltoallv(give_count.data(), req.give.data(), req.give_displs.data(), MPI_INT, got_count.data(), req.need.data(),
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
  MPI_Alltoallv(send_col.data(), send_n.data(), send_d.data(), MPI_INT, recv_col.data(), recv_n.data(), recv_d.data(),
                MPI_INT, comm_);
  MPI_Alltoallv(send_val.data(), send_n.data(), send_d.data(), MPI_DOUBLE, recv_val.data(), recv_n.data(),
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
  if (solver_.distributed() && !have_mumps())
    return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) dense LU on rank 0", to_string(kind_), n_,
                       a0_nonzeros_);
  if (solver_.distributed())
    return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) MUMPS on {} rank{}", to_string(kind_), n_,
                       a0_nonzeros_, solver_.coarse_ranks(), solver_.coarse_ranks() == 1 ? "" : "s");
  return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) dense LU on every rank", to_string(kind_), n_,
                     a0_nonzeros_);
}

}  // namespace desync::linalg
