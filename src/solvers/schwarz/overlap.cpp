// Overlapping subdomains of an assembled matrix and the one-level Schwarz preconditioner; see
// include/desync/solvers/schwarz/overlap.hpp for the method (after Yamazaki et al., 2019, sections 3-4).
#include "desync/solvers/schwarz/overlap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/linalg/ghost_requests.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/communication/sparse_alltoall.hpp"

namespace desync::solvers {

using namespace linalg;  // the matrices and factorisations this level is built from

namespace {

using Index = std::int64_t;

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size() + 1, 0);
  for (std::size_t q = 0; q < counts.size(); ++q) d[q + 1] = d[q] + counts[q];
  return d;
}

/// Rows of a row-distributed sparse pattern (with values or not), as fetched from their owners.
struct Rows {
  std::vector<Index> ptr{0};
  std::vector<Index> col;
  std::vector<double> val;
};

/// Collective over comm: the rows `requested` (ascending global indices, none owned here) from
/// their owners, whose own rows are `mine` (local row k is global row first + k). Values travel
/// only if `with_values`. Every rank calls it the same number of times (comm::sparse_alltoallv, set-up only).
Rows fetch_rows(MPI_Comm comm, const std::vector<Index>& offsets, Index first, const std::vector<Index>& requested,
                const Rows& mine, bool with_values) {
  const std::size_t nranks = offsets.size() - 1;
  const GhostRequests req = request_entries(comm, offsets, requested);
  const auto &need = req.need, &give = req.give, &nd = req.need_displs, &gd = req.give_displs;
  const auto& asked = req.asked;
  // The answers: per asked row its length, then the entries, in the order asked.
  std::vector<Index> lengths(asked.size());
  std::vector<int> entries_out(nranks, 0), entries_in(nranks, 0);
  std::vector<Index> col_out;
  std::vector<double> val_out;
  for (std::size_t q = 0; q < nranks; ++q)
    for (int m = gd[q]; m < gd[q + 1]; ++m) {
      const auto k = static_cast<std::size_t>(asked[static_cast<std::size_t>(m)] - first);
      const Index b = mine.ptr[k], e = mine.ptr[k + 1];
      lengths[static_cast<std::size_t>(m)] = e - b;
      entries_out[q] += static_cast<int>(e - b);
      col_out.insert(col_out.end(), mine.col.begin() + b, mine.col.begin() + e);
      if (with_values) val_out.insert(val_out.end(), mine.val.begin() + b, mine.val.begin() + e);
    }
  std::vector<Index> got_lengths(requested.size());
  comm::sparse_alltoallv(lengths.data(), give.data(), gd.data(), MPI_INT64_T, got_lengths.data(), need.data(), nd.data(),
                MPI_INT64_T, comm);
  comm::sparse_alltoall(entries_out.data(), entries_in.data(), comm);
  const auto od = displacements(entries_out), id = displacements(entries_in);
  Rows out;
  out.col.resize(static_cast<std::size_t>(id.back()));
  comm::sparse_alltoallv(col_out.data(), entries_out.data(), od.data(), MPI_INT64_T, out.col.data(), entries_in.data(),
                id.data(), MPI_INT64_T, comm);
  if (with_values) {
    out.val.resize(out.col.size());
    comm::sparse_alltoallv(val_out.data(), entries_out.data(), od.data(), MPI_DOUBLE, out.val.data(), entries_in.data(),
                  id.data(), MPI_DOUBLE, comm);
  }
  for (Index l : got_lengths) out.ptr.push_back(out.ptr.back() + l);
  return out;
}

/// Collective: the plan that brings the values of `wanted` (ascending global indices, none owned
/// here) from their owners: send offsets into the owned part of a vector, receive offset k for
/// wanted[k] (callers remap them).
comm::HaloPlan plan_for(MPI_Comm comm, const std::vector<Index>& offsets, Index first,
                        const std::vector<Index>& wanted) {
  bool ok = true;
  const comm::GhostPlanSpec spec = request_entries(comm, offsets, wanted)
                                       .plan_spec(first, std::numeric_limits<Index>::max(), 1, ok);
  return comm::make_ghost_plan(comm, spec);
}

std::int32_t position(const std::vector<Index>& sorted, Index g) {
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), g);
  return it != sorted.end() && *it == g ? static_cast<std::int32_t>(it - sorted.begin()) : -1;
}

/// The input checks of the construction (every rank alike): the options, and the layout the
/// construction relies on (this rank's rows as row_offsets says, columns ascending).
void check_input(MPI_Comm comm, int rank, const DistributedCsr& A, const SubdomainOptions& o) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  agree_or_throw(comm, o.overlap >= 0, fmt::format("--overlap {}: must be >= 0", o.overlap));
  agree_or_throw(comm, o.robin >= 0 && o.robin < 1, fmt::format("--robin {}: must be in [0, 1)", o.robin));
  agree_or_throw(comm, A.block_size == 1,
                 fmt::format("overlapping subdomains: block size {}, only 1 (scalar CSR) is supported", A.block_size));
  agree_or_throw(comm, A.row_offsets.size() == static_cast<std::size_t>(nranks) + 1,
                 "overlapping subdomains: row_offsets must have one entry per rank plus one");
  agree_or_throw(comm, A.local_block_rows() > 0,
                 fmt::format("rank {} owns no row: more ranks than rows ({})", rank, A.global_rows()));
  agree_or_throw(comm, o.subdomains_per_rank >= 1,
                 fmt::format("--subdomains-per-rank {}: must be >= 1", o.subdomains_per_rank));
  agree_or_throw(comm, o.subdomains_per_rank <= A.local_block_rows(),
                 fmt::format("--subdomains-per-rank {}: rank {} owns only {} rows (at most one subdomain per row)",
                             o.subdomains_per_rank, rank, A.local_block_rows()));
  const Index first = A.row_offsets[static_cast<std::size_t>(rank)];
  const Index owned = A.local_block_rows();
  std::string bad;
  if (A.row_offsets[static_cast<std::size_t>(rank) + 1] - first != owned || A.row_ptr.front() != 0 ||
      A.row_ptr.back() != static_cast<Index>(A.col.size()) || A.val.size() != A.col.size())
    bad = fmt::format("rank {}: the matrix's rows do not match its row_offsets", rank);
  for (Index k = 0; k < owned && bad.empty(); ++k)
    for (Index p = A.row_ptr[static_cast<std::size_t>(k)]; p < A.row_ptr[static_cast<std::size_t>(k) + 1]; ++p) {
      const Index c = A.col[static_cast<std::size_t>(p)];
      if (c < 0 || c >= A.global_rows() || (p > A.row_ptr[static_cast<std::size_t>(k)] && c <= A.col[static_cast<std::size_t>(p) - 1])) {
        bad = fmt::format("row {}: columns must lie in [0, {}) and ascend", first + k, A.global_rows());
        break;
      }
    }
  agree_or_throw(comm, bad.empty(), "overlapping subdomains: " + bad);
}

/// Collective: the graph of A + A^T on the owned rows (rows first.., neighbours other than the row
/// itself, ascending): A's columns, and each entry a_ji of another rank's row j (or of ours)
/// reported to the owner of i.
Rows symmetric_adjacency(MPI_Comm comm, const DistributedCsr& A, Index first, Index owned) {
  const auto& offsets = A.row_offsets;
  Rows adjacency;
  std::vector<int> count(offsets.size() - 1, 0), in(count.size(), 0);
  std::vector<std::vector<Index>> pairs(count.size());  // (column, row) to the column's owner
  for (Index k = 0; k < owned; ++k)
    for (Index p = A.row_ptr[static_cast<std::size_t>(k)]; p < A.row_ptr[static_cast<std::size_t>(k) + 1]; ++p) {
      const Index c = A.col[static_cast<std::size_t>(p)];
      if (c == first + k) continue;
      auto& to = pairs[static_cast<std::size_t>(owner_of(offsets, c))];
      to.push_back(c);
      to.push_back(first + k);
    }
  std::vector<Index> out;
  for (std::size_t q = 0; q < pairs.size(); ++q) {
    count[q] = static_cast<int>(pairs[q].size());
    out.insert(out.end(), pairs[q].begin(), pairs[q].end());
  }
  comm::sparse_alltoall(count.data(), in.data(), comm);
  const auto od = displacements(count), id = displacements(in);
  std::vector<Index> got(static_cast<std::size_t>(id.back()));
  comm::sparse_alltoallv(out.data(), count.data(), od.data(), MPI_INT64_T, got.data(), in.data(), id.data(), MPI_INT64_T,
                         comm);
  std::vector<std::vector<Index>> nb(static_cast<std::size_t>(owned));
  for (Index k = 0; k < owned; ++k)
    for (Index p = A.row_ptr[static_cast<std::size_t>(k)]; p < A.row_ptr[static_cast<std::size_t>(k) + 1]; ++p)
      if (A.col[static_cast<std::size_t>(p)] != first + k)
        nb[static_cast<std::size_t>(k)].push_back(A.col[static_cast<std::size_t>(p)]);
  for (std::size_t m = 0; m + 1 < got.size(); m += 2) nb[static_cast<std::size_t>(got[m] - first)].push_back(got[m + 1]);
  for (auto& v : nb) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    adjacency.col.insert(adjacency.col.end(), v.begin(), v.end());
    adjacency.ptr.push_back(static_cast<Index>(adjacency.col.size()));
  }
  return adjacency;
}

/// Collective: Omega_p, the owned rows [first, first + owned) and `overlap` layers of graph
/// distance around them, ascending. Each layer is the neighbours of the previous one not yet in the
/// set; the adjacency of a layer's rows not owned here is fetched from their owners (every rank the
/// same number of rounds).
std::vector<Index> overlap_rows(MPI_Comm comm, const std::vector<Index>& offsets, Index first, Index owned,
                                const Rows& adjacency, int overlap) {
  std::vector<Index> rows;
  for (Index g = first; g < first + owned; ++g) rows.push_back(g);
  std::vector<Index> frontier = rows;
  Rows frontier_adj = adjacency;  // rows of `frontier`, in its order
  for (int layer = 1; layer <= overlap; ++layer) {
    std::vector<Index> next;
    for (std::size_t f = 0; f < frontier.size(); ++f)
      for (Index p = frontier_adj.ptr[f]; p < frontier_adj.ptr[f + 1]; ++p) {
        const Index c = frontier_adj.col[static_cast<std::size_t>(p)];
        if (!std::binary_search(rows.begin(), rows.end(), c)) next.push_back(c);
      }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    if (layer < overlap) frontier_adj = fetch_rows(comm, offsets, first, next, adjacency, false);
    const auto middle = static_cast<std::ptrdiff_t>(rows.size());
    rows.insert(rows.end(), next.begin(), next.end());
    std::inplace_merge(rows.begin(), rows.begin() + middle, rows.end());
    frontier = std::move(next);
  }
  return rows;
}

/// A coupling a_ie of row `row` of Omega_p to a column e outside it.
struct Dropped {
  std::int32_t row;
  Index e;
  double a;
};

/// A(Omega_p, Omega_p) into `matrix`, with a diagonal entry (0 where A has none) in every row that
/// drops a coupling when robin > 0, for shift_robin_diagonal. `local`: the owned rows (Omega_p's
/// rows own_begin.. own_begin + owned), `fetched`: the others in order. Returns the dropped
/// couplings a_ie, e not in Omega_p.
std::vector<Dropped> assemble_subdomain(const std::vector<Index>& rows, Index own_begin, Index owned, const Rows& local,
                                        const Rows& fetched, double robin, linalg::LocalCsr& matrix) {
  std::vector<Dropped> dropped;
  const auto n = static_cast<Index>(rows.size());
  matrix.rows = n;
  matrix.row_ptr.assign(1, 0);
  for (Index r = 0; r < n; ++r) {
    const bool own = r >= own_begin && r < own_begin + owned;
    const Rows& src = own ? local : fetched;
    const auto k = static_cast<std::size_t>(own ? r - own_begin : (r < own_begin ? r : r - owned));
    std::vector<std::pair<std::int32_t, double>> entries;
    bool dropped_any = false;
    for (Index p = src.ptr[k]; p < src.ptr[k + 1]; ++p) {
      const Index c = src.col[static_cast<std::size_t>(p)];
      const double v = src.val[static_cast<std::size_t>(p)];
      const std::int32_t lc = position(rows, c);
      if (lc >= 0) {
        entries.push_back({lc, v});
      } else {
        dropped.push_back({static_cast<std::int32_t>(r), c, v});
        dropped_any = true;
      }
    }
    const bool has_diagonal = std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.first == r; });
    if (dropped_any && robin != 0 && !has_diagonal) {
      entries.push_back({static_cast<std::int32_t>(r), 0.0});
      std::sort(entries.begin(), entries.end());
    }
    for (const auto& [c, v] : entries) {
      matrix.col.push_back(c);
      matrix.val.push_back(v);
    }
    matrix.row_ptr.push_back(static_cast<Index>(matrix.col.size()));
  }
  return dropped;
}

}  // namespace

OverlappingSubdomain::OverlappingSubdomain(const DistributedCsr& A, const SubdomainOptions& o, bool additive_pieces)
    : comm_(A.comm), opt_(o) {
  MPI_Comm_rank(comm_, &rank_);
  check_input(comm_, rank_, A, o);
  const auto& offsets = A.row_offsets;
  const Index first = offsets[static_cast<std::size_t>(rank_)];
  owned_ = A.local_block_rows();
  const Index last = first + owned_;
  auto is_owned = [&](Index g) { return g >= first && g < last; };
  rows_ = overlap_rows(comm_, offsets, first, owned_, symmetric_adjacency(comm_, A, first, owned_), o.overlap);
  own_begin_ = position(rows_, first);
  const bool fits = static_cast<Index>(rows_.size()) < std::numeric_limits<std::int32_t>::max() / 2;
  agree_or_throw(comm_, fits, fmt::format("rank {}: its subdomain has too many rows for 32-bit indices", rank_));

  // A's rows of Omega_p: the owned ones here, the others from their owners.
  std::vector<Index> remote;
  for (Index g : rows_)
    if (!is_owned(g)) remote.push_back(g);
  Rows local;
  local.ptr = A.row_ptr;
  local.col = A.col;
  local.val = A.val;
  const Rows fetched = fetch_rows(comm_, offsets, first, remote, local, true);

  const std::vector<Dropped> dropped = assemble_subdomain(rows_, own_begin_, owned_, local, fetched, o.robin, matrix_);
  const auto n = static_cast<Index>(rows_.size());

  // The ghosts: u_e of the dropped couplings, u_i of their rows not owned (robin > 0), and the
  // owned rows' columns not owned (the local residual).
  for (const auto& d : dropped) {
    ghosts_.push_back(d.e);
    if (o.robin != 0 && !is_owned(rows_[static_cast<std::size_t>(d.row)])) ghosts_.push_back(rows_[static_cast<std::size_t>(d.row)]);
  }
  for (Index c : A.col)
    if (!is_owned(c)) ghosts_.push_back(c);
  std::sort(ghosts_.begin(), ghosts_.end());
  ghosts_.erase(std::unique(ghosts_.begin(), ghosts_.end()), ghosts_.end());
  for (const auto& d : dropped) {
    const Index gi = rows_[static_cast<std::size_t>(d.row)];
    couplings_.push_back(
        {d.row, position(ghosts_, d.e), is_owned(gi) || o.robin == 0 ? -1 : position(ghosts_, gi), d.a, o.robin});
  }
  shift_robin_diagonal(matrix_, couplings_);  // (A_p)_ii = a_ii + robin * sum over e not in Omega_p of a_ie
  residual_ptr_.assign(1, 0);
  for (Index k = 0; k < owned_; ++k) {
    for (Index p = A.row_ptr[static_cast<std::size_t>(k)]; p < A.row_ptr[static_cast<std::size_t>(k) + 1]; ++p) {
      const Index c = A.col[static_cast<std::size_t>(p)];
      residual_index_.push_back(is_owned(c) ? static_cast<std::int32_t>(own_begin_ + (c - first))
                                            : -position(ghosts_, c) - 1);
      residual_value_.push_back(A.val[static_cast<std::size_t>(p)]);
    }
    residual_ptr_.push_back(static_cast<Index>(residual_index_.size()));
  }

  // The plans (collective).
  ghost_plan_ = plan_for(comm_, offsets, first, ghosts_);
  restriction_plan_ = plan_for(comm_, offsets, first, remote);
  for (auto& nb : restriction_plan_.neighbours)  // remote[k] -> its row in Omega_p
    for (auto& k : nb.recv) k = k < own_begin_ ? k : static_cast<std::int32_t>(k + owned_);
  prolongation_plan_.rank = restriction_plan_.rank;
  for (const auto& nb : restriction_plan_.neighbours) {
    comm::PlanNeighbour back;
    back.peer = nb.peer;
    back.send_tag = nb.recv_tag;
    back.recv_tag = nb.send_tag;
    back.send = nb.recv;  // our solution's rows the peer owns go back to it
    for (const auto s : nb.send) {  // its solution's rows we own arrive, one slot each
      back.recv.push_back(static_cast<std::int32_t>(prolongation_rows_.size()));
      prolongation_rows_.push_back(s);
    }
    prolongation_plan_.neighbours.push_back(std::move(back));
  }

  // Factor A_p once; a failure on any rank is reported by every rank, with the rank and the size.
  std::string failure;
  try {
    if (o.subdomains_per_rank > 1) {  // K pieces of the owned rows, each extended by delta (local_solver.hpp)
      LocalBlocks pieces;
      pieces.blocks = o.subdomains_per_rank;
      pieces.overlap = o.overlap;
      pieces.first = own_begin_;
      pieces.rows = owned_;
      pieces.restricted = !additive_pieces;
      solver_ = make_block_solver(matrix_, pieces, o.local_solver, o.ilu_relax);
    } else {
      solver_ = make_local_solver(matrix_, o.local_solver, LocalSolverUse::many_solves, o.ilu_relax);
    }
  } catch (const FactorisationError& e) {
    const std::string why = e.what();
    failure = fmt::format("rank {}: the local matrix of its subdomain ({} rows, overlap {}) {}: {}", rank_, n,
                          o.overlap, why.rfind("singular", 0) == 0 ? "is singular" : "could not be factored", why);
  }
  agree_or_throw(comm_, failure.empty(), failure);
}

void OverlappingSubdomain::set_rhs(std::span<const double> b, const comm::TransportConfig& transport) {
  b_ext_.assign(rows_.size(), 0.0);
  std::copy(b.begin(), b.end(), b_ext_.begin() + own_begin_);
  comm::PlanExchangeConfig c;
  c.mode = comm::HaloMode::sync;
  c.transport = transport;
  comm::PlanExchange ex(comm_, restriction_plan_, c);
  ex.start(b.data(), 0);
  ex.finish(b_ext_.data(), 0);
  ex.close();
}

double OverlappingSubdomain::source_norm_sq() const {
  double b2 = 0;
  for (Index k = 0; k < owned_; ++k) b2 += b_ext_[static_cast<std::size_t>(own_begin_ + k)] * b_ext_[static_cast<std::size_t>(own_begin_ + k)];
  return b2;
}

int OverlappingSubdomain::exchange_hops() const {
  int n = 1;
  MPI_Comm_size(comm_, &n);
  return n - 1;
}

double OverlappingSubdomain::local_residual_sq(const double* x, const double* ghost) const {
  double sum = 0;
  for (Index k = 0; k < owned_; ++k) {
    double r = b_ext_[static_cast<std::size_t>(own_begin_ + k)];  // r_i = b_i - sum_j a_ij u_j
    for (Index p = residual_ptr_[static_cast<std::size_t>(k)]; p < residual_ptr_[static_cast<std::size_t>(k) + 1]; ++p) {
      const std::int32_t j = residual_index_[static_cast<std::size_t>(p)];
      r -= residual_value_[static_cast<std::size_t>(p)] * (j >= 0 ? x[j] : ghost[-j - 1]);
    }
    sum += r * r;
  }
  return sum;
}

SchwarzPreconditioner::SchwarzPreconditioner(const DistributedCsr& A, const SubdomainOptions& o, bool restricted,
                                             const comm::TransportConfig& transport)
    : sub_(A, o, /*additive_pieces=*/!restricted), restricted_(restricted) {
  comm::PlanExchangeConfig c;
  c.mode = comm::HaloMode::sync;
  c.transport = transport;
  restrict_ = std::make_unique<comm::PlanExchange>(sub_.comm(), sub_.restriction_plan(), c);
  if (!restricted_) prolong_ = std::make_unique<comm::PlanExchange>(sub_.comm(), sub_.prolongation_plan(), c);
  r_ext_.assign(static_cast<std::size_t>(sub_.size()), 0.0);
  y_ext_ = r_ext_;
  back_.assign(sub_.prolongation_rows().size(), 0.0);
  // Which factorisation each rank chose, for the description.
  constexpr std::size_t kinds = std::size(local_solver_names);
  std::array<int, kinds> count{};
  for (std::size_t k = 0; k < kinds; ++k) count[k] = local_solver_names[k].value == sub_.solver().kind() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, count.data(), static_cast<int>(kinds), MPI_INT, MPI_SUM, sub_.comm());
  int nranks = 1;
  MPI_Comm_size(sub_.comm(), &nranks);
  description_ = fmt::format("{}, overlap {}, ", restricted_ ? "ras" : "asm", o.overlap);
  if (o.subdomains_per_rank > 1) description_ += fmt::format("{} subdomains per rank, ", o.subdomains_per_rank);
  description_ += "local solver";
  bool firstkind = true;
  for (std::size_t k = 0; k < kinds; ++k)
    if (count[k] > 0) {
      description_ += fmt::format("{} {} ({} of {} ranks)", firstkind ? "" : ",", local_solver_names[k].name, count[k], nranks);
      firstkind = false;
    }
  if (o.ilu_relax != 0) description_ += fmt::format(", ILU relaxed {}", o.ilu_relax);
  if (o.robin != 0) description_ += fmt::format(", robin {}", o.robin);
  // The transport the exchanges were built with (not the argument: what they use).
  const comm::Transport used = restrict_->config().transport.kind;
  if (used != comm::Transport::p2p) description_ += fmt::format(", exchanges over {}", comm::to_string(used));
  if (o.coarse.two_level()) {
    CoarseOptions coarse = o.coarse;  // on the subdomains the local solves use
    coarse.subdomains_per_rank = o.subdomains_per_rank;
    coarse_ = std::make_unique<CoarseSpace>(A, coarse);
    description_ += ", " + coarse_->description();
  }
}

SchwarzPreconditioner::~SchwarzPreconditioner() = default;

const comm::ExchangeStats& SchwarzPreconditioner::exchange_stats() const { return restrict_->stats(); }

void SchwarzPreconditioner::apply(std::span<const double> r, std::span<double> z) {
  core::Stopwatch total;
  const auto own = static_cast<std::size_t>(sub_.own_begin());
  const auto owned = static_cast<std::size_t>(sub_.owned());
  // r_p = R_p r: the owned part copied, the rest from its owners (a synchronous exchange).
  std::copy(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(owned), r_ext_.begin() + static_cast<std::ptrdiff_t>(own));
  {
    core::Stopwatch t;
    restrict_->start(r.data(), level_);
    restrict_->finish(r_ext_.data(), level_);
    exchange_seconds_ += t.seconds();
  }
  {
    core::Stopwatch t;
    sub_.solver().solve(r_ext_.data(), y_ext_.data());  // y_p = A_p^-1 r_p
    solve_seconds_ += t.seconds();
  }
  // RAS: z_i = y_p,i on the own rows.
  std::copy(y_ext_.begin() + static_cast<std::ptrdiff_t>(own), y_ext_.begin() + static_cast<std::ptrdiff_t>(own + owned),
            z.begin());
  if (!restricted_) {  // ASM: z = sum_q R_q^T y_q, the other ranks' parts on our rows added in slot order
    core::Stopwatch t;
    prolong_->start(y_ext_.data(), level_);
    prolong_->finish(back_.data(), level_);
    exchange_seconds_ += t.seconds();
    const auto& rows = sub_.prolongation_rows();
    for (std::size_t s = 0; s < rows.size(); ++s) z[static_cast<std::size_t>(rows[s])] += back_[s];
  }
  if (coarse_) coarse_->add_correction(r, z);  // two-level additive: z += Phi A0^-1 Phi^T r
  ++level_;
  ++applications_;
  seconds_ += total.seconds();
}

}  // namespace desync::solvers
