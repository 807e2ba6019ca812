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
#include "desync/communication/sparse_alltoall.hpp"

namespace desync::linalg {

std::vector<int> independent_columns(std::vector<double> gram, int m, double tolerance) {
  // Pivoted Cholesky of the Gram matrix (Higham, 1990): each step takes the column whose part
  // orthogonal to the columns taken so far is the largest relative to its own norm (the Schur
  // complement's diagonal over the original diagonal; the first on a tie), and stops when that
  // ratio is <= tolerance or no column with a nonzero norm is left.
  const auto M = static_cast<std::size_t>(m);
  if (gram.size() != M * M) throw std::invalid_argument("independent_columns: the Gram matrix is not m x m");
  std::vector<double> norm(M);
  for (std::size_t k = 0; k < M; ++k) norm[k] = gram[k * M + k];
  std::vector<char> taken(M, 0);
  std::vector<int> kept;
  for (;;) {
    std::size_t best = M;
    double best_ratio = 0.0;
    for (std::size_t k = 0; k < M; ++k) {
      if (taken[k] || !(norm[k] > 0.0)) continue;
      const double ratio = gram[k * M + k] / norm[k];
      if (ratio > best_ratio) {
        best_ratio = ratio;
        best = k;
      }
    }
    if (best == M || !(best_ratio > tolerance)) break;
    taken[best] = 1;
    kept.push_back(static_cast<int>(best));
    const double pivot = gram[best * M + best];
    for (std::size_t i = 0; i < M; ++i) {  // the Schur complement of the pivot
      if (taken[i]) continue;
      const double l = gram[i * M + best] / pivot;
      for (std::size_t j = 0; j < M; ++j)
        if (!taken[j]) gram[i * M + j] -= l * gram[best * M + j];
    }
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

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
  agree_or_throw(comm_, A.block_size == 1, "the coarse space needs a matrix of block size 1");
  agree_or_throw(comm_, kind != CoarseKind::none, "CoarseSpace: kind none has no coarse space");
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
  if (kind == CoarseKind::nicolaides)
    build_nicolaides(z);
  else
    build_gdsw(A, z);
  // A0 = Phi^T A Phi, summed over the ranks' rows: (A0)_cd = sum_i phi_ic (A Phi)_id. (A Phi)_i reads
  // Phi's rows at i's columns: this rank's own rows, or, for another rank's row j, j's row of Phi
  // from its owner (basis_rows, once for all the columns of other ranks). Sparse: the same sums
  // kept at their nonzero places only (a hash map) instead of the dense array.
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank_)];
  std::vector<std::int64_t> ghosts;
  for (const std::int64_t j : A.col)
    if (j < first || j >= first + local_rows_) ghosts.push_back(j);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
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
  } else {
    a0_nonzeros_ = std::count_if(a0_.begin(), a0_.end(), [](double v) { return v != 0.0; });
  }
  setup_seconds_ = setup.seconds();
}

void CoarseSpace::build_nicolaides(const std::vector<std::vector<double>>& z) {
  // phi_{p,k}: z_k on rank p's rows, 0 elsewhere, for the z_k independent on p's rows (their Gram
  // matrix over p's rows, independent_columns). The functions are numbered by rank, then k.
  const std::size_t M = z.size(), rows = static_cast<std::size_t>(local_rows_);
  std::vector<double> gram(M * M, 0.0);
  for (std::size_t a = 0; a < M; ++a)
    for (std::size_t b = 0; b < M; ++b)
      for (std::size_t i = 0; i < rows; ++i) gram[a * M + b] += z[a][i] * z[b][i];
  const std::vector<int> kept = independent_columns(gram, static_cast<int>(M));
  int count = static_cast<int>(kept.size());
  std::vector<int> counts(static_cast<std::size_t>(ranks_));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_);
  int start = 0;
  n_ = 0;
  for (int q = 0; q < ranks_; ++q) {
    if (q == rank_) start = n_;
    n_ += counts[static_cast<std::size_t>(q)];
  }
  phi_ptr_.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t t = 0; t < kept.size(); ++t) {
      const double v = z[static_cast<std::size_t>(kept[t])][i];
      if (v != 0.0) {
        phi_col_.push_back(start + static_cast<int>(t));
        phi_val_.push_back(v);
      }
    }
    phi_ptr_.push_back(static_cast<std::int64_t>(phi_col_.size()));
  }
}

void CoarseSpace::build_gdsw(const DistributedCsr& A, const std::vector<std::vector<double>>& z) {
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank_)];
  const auto rows = static_cast<std::size_t>(local_rows_);
  // 1. The interface rows and their keys: the ranks among the row's own and its neighbours' owners.
  std::vector<std::vector<int>> key(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    std::set<int> owners{rank_};
    for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      if (j < first || j >= first + local_rows_) owners.insert(owner_of(offsets_, j));
    }
    if (owners.size() > 1) key[i].assign(owners.begin(), owners.end());
  }
  const bool has_interface = std::any_of(key.begin(), key.end(), [](const auto& k) { return !k.empty(); });
  agree_or_throw(comm_, has_interface || ranks_ == 1,
                 fmt::format("--coarse gdsw: rank {}'s subdomain has no interface (no row coupled to another rank's): "
                             "GDSW's coarse functions live on the interface",
                             rank_));
  agree_or_throw(comm_, ranks_ > 1, "--coarse gdsw: one subdomain has no interface (run on more than one rank)");
  // 2. The components, numbered alike on every rank in the ascending order of their keys: rank 0
  //    gathers every rank's distinct keys, numbers them, and returns each rank its keys' numbers
  //    (MPI_Gatherv, MPI_Scatterv; an MPI_Allgatherv of the keys would post P^2 messages, hours of
  //    host time for 1024 simulated ranks).
  std::set<std::vector<int>> mine;
  for (const auto& k : key)
    if (!k.empty()) mine.insert(k);
  std::vector<int> flat;  // [length, ranks...] per key
  for (const auto& k : mine) {
    flat.push_back(static_cast<int>(k.size()));
    flat.insert(flat.end(), k.begin(), k.end());
  }
  int count = static_cast<int>(flat.size());
  const auto P = static_cast<std::size_t>(ranks_);
  std::vector<int> counts(rank_ == 0 ? P : 0), displs(rank_ == 0 ? P : 0, 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_);
  std::vector<int> all;
  if (rank_ == 0) {
    for (std::size_t q = 1; q < P; ++q) displs[q] = displs[q - 1] + counts[q - 1];
    all.resize(static_cast<std::size_t>(displs.back() + counts.back()));
  }
  MPI_Gatherv(flat.data(), count, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, 0, comm_);
  int components = 0;
  std::vector<int> numbers, number_counts(rank_ == 0 ? P : 0), number_displs(rank_ == 0 ? P : 0, 0);
  if (rank_ == 0) {
    std::map<std::vector<int>, int> component;
    std::vector<std::vector<int>> keys;  // every rank's, in the gathered order
    for (std::size_t q = 0; q < P; ++q) {
      const auto end = static_cast<std::size_t>(displs[q] + counts[q]);
      for (auto p = static_cast<std::size_t>(displs[q]); p < end;) {
        const auto len = static_cast<std::size_t>(all[p]);
        keys.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(p + 1), all.begin() + static_cast<std::ptrdiff_t>(p + 1 + len));
        component.emplace(keys.back(), 0);
        ++number_counts[q];
        p += len + 1;
      }
      if (q > 0) number_displs[q] = number_displs[q - 1] + number_counts[q - 1];
    }
    for (auto& [k, index] : component) index = components++;
    for (const auto& k : keys) numbers.push_back(component.at(k));
  }
  MPI_Bcast(&components, 1, MPI_INT, 0, comm_);
  std::vector<int> my_numbers(mine.size());
  MPI_Scatterv(numbers.data(), number_counts.data(), number_displs.data(), MPI_INT, my_numbers.data(),
               static_cast<int>(my_numbers.size()), MPI_INT, 0, comm_);
  std::map<std::vector<int>, int> component;  // this rank's keys and their numbers
  {
    std::size_t t = 0;
    for (const auto& k : mine) component.emplace(k, my_numbers[t++]);
  }
  std::vector<int> comp(rows, -1);
  for (std::size_t i = 0; i < rows; ++i)
    if (!key[i].empty()) comp[i] = component.at(key[i]);
  // 3. The functions of each component C: z_k on C's rows for the z_k independent there, chosen
  //    from C's Gram matrix Z_C^T Z_C summed over the ranks that own C's rows (one MPI_Allreduce of
  //    every component's m x m Gram matrix), so that every rank chooses alike. They are numbered
  //    by component, then k.
  const std::size_t M = z.size(), C = static_cast<std::size_t>(components);
  std::vector<double> grams(C * M * M, 0.0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] < 0) continue;
    double* g = grams.data() + static_cast<std::size_t>(comp[i]) * M * M;
    for (std::size_t a = 0; a < M; ++a)
      for (std::size_t b = 0; b < M; ++b) g[a * M + b] += z[a][i] * z[b][i];
  }
  MPI_Allreduce(MPI_IN_PLACE, grams.data(), static_cast<int>(grams.size()), MPI_DOUBLE, MPI_SUM, comm_);
  std::vector<std::vector<int>> kept(C);
  std::vector<int> start(C + 1, 0);
  for (std::size_t c = 0; c < C; ++c) {
    kept[c] = independent_columns(std::vector<double>(grams.begin() + static_cast<std::ptrdiff_t>(c * M * M),
                                                      grams.begin() + static_cast<std::ptrdiff_t>((c + 1) * M * M)),
                                  static_cast<int>(M));
    start[c + 1] = start[c] + static_cast<int>(kept[c].size());
  }
  n_ = start[C];
  // 4. Phi on the interface rows: z_k on the row's component's functions. On the interior rows: the
  //    discrete harmonic extension phi_I = -A_II^-1 A_IG phi_G, one local solve per function of a
  //    component that touches this rank (interior rows couple to this rank's rows only).
  std::vector<int> local_comps;
  for (const int c : comp)
    if (c >= 0) local_comps.push_back(c);
  std::sort(local_comps.begin(), local_comps.end());
  local_comps.erase(std::unique(local_comps.begin(), local_comps.end()), local_comps.end());
  struct Function {
    int index;  // in Phi's columns
    int comp;   // its component
    int vector; // its near-kernel vector
  };
  std::vector<Function> local_fns;  // ascending
  for (const int c : local_comps)
    for (std::size_t t = 0; t < kept[static_cast<std::size_t>(c)].size(); ++t)
      local_fns.push_back({start[static_cast<std::size_t>(c)] + static_cast<int>(t), c, kept[static_cast<std::size_t>(c)][t]});
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
  std::vector<std::vector<double>> extension(local_fns.size());  // per local function, on the interior rows
  if (aii.rows > 0) {
    std::unique_ptr<LocalSolver> solver;
    std::string failure;
    try {
      solver = make_local_solver(aii, LocalSolverKind::automatic, LocalSolverUse::few_solves);
    } catch (const std::exception& e) {
      failure = fmt::format("--coarse gdsw: rank {}: the interior block of its subdomain ({} rows) cannot be factored: {}",
                            rank_, aii.rows, e.what());
    }
    agree_or_throw(comm_, failure.empty(), failure);
    std::vector<double> rhs(static_cast<std::size_t>(aii.rows));
    for (std::size_t f = 0; f < local_fns.size(); ++f) {
      std::fill(rhs.begin(), rhs.end(), 0.0);  // rhs = -A_IG phi_G for the function local_fns[f]
      const std::vector<double>& zk = z[static_cast<std::size_t>(local_fns[f].vector)];
      for (std::size_t i = 0; i < rows; ++i) {
        if (comp[i] >= 0) continue;
        for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
          const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
          if (comp[lj] == local_fns[f].comp)
            rhs[static_cast<std::size_t>(interior_index[i])] -= A.val[static_cast<std::size_t>(k)] * zk[lj];
        }
      }
      extension[f].resize(rhs.size());
      solver->solve(rhs.data(), extension[f].data());
    }
  } else {
    agree_or_throw(comm_, true, "");  // the factorisation's agreement above, for a rank without interior rows
  }
  phi_ptr_.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] >= 0) {
      const auto c = static_cast<std::size_t>(comp[i]);
      for (std::size_t t = 0; t < kept[c].size(); ++t) {
        const double v = z[static_cast<std::size_t>(kept[c][t])][i];
        if (v != 0.0) {
          phi_col_.push_back(start[c] + static_cast<int>(t));
          phi_val_.push_back(v);
        }
      }
    } else {
      for (std::size_t f = 0; f < local_fns.size(); ++f) {
        const double v = extension[f][static_cast<std::size_t>(interior_index[i])];
        if (v != 0.0) {
          phi_col_.push_back(local_fns[f].index);
          phi_val_.push_back(v);
        }
      }
    }
    phi_ptr_.push_back(static_cast<std::int64_t>(phi_col_.size()));
  }
}

std::vector<double> CoarseSpace::matrix() const {
  if (!solver_.distributed()) return a0_;
  return n_ <= dense_copy_limit ? solver_.gather_dense(comm_) : std::vector<double>{};
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
  const std::int64_t fill = solver_.factor_nonzeros();
  if (solver_.distributed() && !have_mumps())
    return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) {} on rank 0 ({} in its factors)",
                       to_string(kind_), n_, a0_nonzeros_, solver_.name(), fill);
  if (solver_.distributed())
    return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) MUMPS on {} rank{} ({} in its factors)",
                       to_string(kind_), n_, a0_nonzeros_, solver_.coarse_ranks(), solver_.coarse_ranks() == 1 ? "" : "s",
                       fill);
  return fmt::format("{} coarse space, {} functions, A0 ({} nonzeros) dense LU on every rank", to_string(kind_), n_,
                     a0_nonzeros_);
}

}  // namespace desync::linalg
