// The coarse level of two-level Schwarz as a stationary iteration (coarse_level.hpp).
#include "coarse_level.hpp"

#include <algorithm>
#include <numeric>

#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"

namespace desync::solvers::detail {

namespace {

// Column k of a compressed Phi row set becomes its position in `needed` (ascending).
void to_positions(linalg::CoarseSpace::Rows& rows, const std::vector<int>& needed) {
  for (int& c : rows.cols)
    c = static_cast<int>(std::lower_bound(needed.begin(), needed.end(), c) - needed.begin());
}

// out[i] += sum_k phi(i, k) v[k] over the rows of `rows` (columns positions in v).
double row_dot(const linalg::CoarseSpace::Rows& rows, std::size_t i, const double* v) {
  double s = 0;
  for (auto m = rows.ptr[i]; m < rows.ptr[i + 1]; ++m)
    s += rows.vals[static_cast<std::size_t>(m)] * v[static_cast<std::size_t>(rows.cols[static_cast<std::size_t>(m)])];
  return s;
}

// A simulated cluster's clock: one solve with A0's factors is solve_multiply_adds() multiply-adds
// (linalg/coarse_solver.hpp: one or two per factor entry); a residual unit (one row of a sparse
// residual, about five couplings) about ten.
void charge_coarse_solve(const linalg::CoarseSpace& space) {
  core::charge("schwarz.residual", space.solve_multiply_adds() / 10.0);
}

std::vector<std::int32_t> iota(std::size_t first, std::size_t n) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), static_cast<std::int32_t>(first));
  return v;
}

}  // namespace

CoarseLevel::CoarseLevel(const linalg::DistributedCsr& A, const linalg::OverlappingSubdomain& sub,
                         const linalg::CoarseOptions& options, int reuse)
    : comm_(A.comm), sub_(sub), reuse_(reuse) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  core::Stopwatch t;
  space_ = std::make_unique<linalg::CoarseSpace>(A, options);
  own_ = space_->own_rows();
  ghost_rows_ = space_->basis_rows(sub.ghosts());  // Phi at the other ranks' rows this rank reads
  needed_ = own_.cols;
  needed_.insert(needed_.end(), ghost_rows_.cols.begin(), ghost_rows_.cols.end());
  std::sort(needed_.begin(), needed_.end());
  needed_.erase(std::unique(needed_.begin(), needed_.end()), needed_.end());
  // The contributions: this rank's part of Phi^T (b - A x) = Phi^T b - sum_j (A^T Phi)_j x_j over
  // its own rows j (reading its own values alone), at the functions contributed_.
  bt_ = space_->transposed_product(A);
  phi_b_ = own_;
  contributed_ = bt_.cols;
  contributed_.insert(contributed_.end(), own_.cols.begin(), own_.cols.end());
  std::sort(contributed_.begin(), contributed_.end());
  contributed_.erase(std::unique(contributed_.begin(), contributed_.end()), contributed_.end());
  to_positions(bt_, contributed_);
  to_positions(phi_b_, contributed_);
  to_positions(own_, needed_);
  to_positions(ghost_rows_, needed_);
  r_.assign(static_cast<std::size_t>(sub.owned()), 0.0);
  cumulative_.emplace_back(needed_.size(), 0.0);  // U_0 = 0
  stats_.seconds += t.seconds();
}

CoarseLevel::~CoarseLevel() = default;

void CoarseLevel::residual(const double* b_ext, const double* x, const double* ghost, std::vector<double>& r) const {
  const auto& ptr = sub_.residual_ptr();
  const auto& index = sub_.residual_index();
  const auto& value = sub_.residual_value();
  const auto own = static_cast<std::size_t>(sub_.own_begin());
  for (std::size_t k = 0; k < r.size(); ++k) {
    double v = b_ext[own + k];  // r_i = b_i - sum_j a_ij u_j
    for (auto p = ptr[k]; p < ptr[k + 1]; ++p) {
      const std::int32_t j = index[static_cast<std::size_t>(p)];
      v -= value[static_cast<std::size_t>(p)] * (j >= 0 ? x[j] : ghost[-j - 1]);
    }
    r[k] = v;
  }
}

void CoarseLevel::correct_sync(const double* b_ext, double* x, double* ghost) {
  core::Stopwatch t;
  residual(b_ext, x, ghost, r_);                                  // r = b - A u
  const std::vector<double> c = space_->coarse_solution(r_);      // c = A0^-1 Phi^T r (one MPI_Allreduce)
  charge_coarse_solve(*space_);
  std::vector<double> cn(needed_.size());
  for (std::size_t k = 0; k < needed_.size(); ++k) cn[k] = c[static_cast<std::size_t>(needed_[k])];
  const auto own = static_cast<std::size_t>(sub_.own_begin());
  for (std::size_t i = 0; i < r_.size(); ++i) x[own + i] += row_dot(own_, i, cn.data());  // u <- u + Phi c
  for (std::size_t g = 0; g + 1 < ghost_rows_.ptr.size(); ++g) ghost[g] += row_dot(ghost_rows_, g, cn.data());
  core::charge("schwarz.residual", static_cast<double>(r_.size()));
  ++stats_.solves;
  ++stats_.corrections;
  stats_.seconds += t.seconds();
}

void CoarseLevel::open_async(const comm::TransportConfig& transport) {
  core::Stopwatch t;
  // Rank 0 learns every rank's local functions (what its contributions hold) and needed functions
  // (what its corrections must hold).
  const auto& mine = contributed_;
  int counts[2] = {static_cast<int>(mine.size()), static_cast<int>(needed_.size())};
  std::vector<int> all_counts(2 * static_cast<std::size_t>(ranks_));
  MPI_Gather(counts, 2, MPI_INT, all_counts.data(), 2, MPI_INT, 0, comm_);
  const auto gather_lists = [&](const std::vector<int>& list, int which, std::vector<std::vector<int>>& out) {
    std::vector<int> n(static_cast<std::size_t>(ranks_)), d(static_cast<std::size_t>(ranks_), 0), flat;
    if (rank_ == 0) {
      for (int q = 0; q < ranks_; ++q) n[static_cast<std::size_t>(q)] = all_counts[2 * static_cast<std::size_t>(q) + static_cast<std::size_t>(which)];
      for (int q = 1; q < ranks_; ++q) d[static_cast<std::size_t>(q)] = d[static_cast<std::size_t>(q) - 1] + n[static_cast<std::size_t>(q) - 1];
      flat.resize(static_cast<std::size_t>(d.back() + n.back()));
    }
    MPI_Gatherv(list.data(), static_cast<int>(list.size()), MPI_INT, flat.data(), n.data(), d.data(), MPI_INT, 0, comm_);
    if (rank_ == 0)
      for (int q = 0; q < ranks_; ++q)
        out.emplace_back(flat.begin() + d[static_cast<std::size_t>(q)], flat.begin() + d[static_cast<std::size_t>(q)] + n[static_cast<std::size_t>(q)]);
  };
  gather_lists(mine, 0, functions_of_);
  gather_lists(needed_, 1, needed_of_);

  // Contributions: [Phi^T r at the local functions..., version, iteration] to rank 0.
  contribution_.assign(mine.size() + 2, 0.0);
  // Corrections: [c at the needed functions..., the iteration of the contribution it answers].
  correction_.assign(needed_.size() + 1, 0.0);
  comm::HaloPlan gather, scatter;
  gather.rank = scatter.rank = rank_;
  if (rank_ == 0) {
    std::size_t g = 0, s = 0;
    for (int q = 0; q < ranks_; ++q) {
      const std::size_t gn = functions_of_[static_cast<std::size_t>(q)].size() + 2;
      const std::size_t sn = needed_of_[static_cast<std::size_t>(q)].size() + 1;
      gather_at_.push_back(g);
      scatter_at_.push_back(s);
      comm::PlanNeighbour in, out;
      in.peer = out.peer = q;
      in.recv = iota(g, gn);
      out.send = iota(s, sn);
      if (q == 0) {  // rank 0's own contribution and correction: local copies
        in.send = iota(0, gn);
        out.recv = iota(0, sn);
      }
      gather.neighbours.push_back(std::move(in));
      scatter.neighbours.push_back(std::move(out));
      g += gn;
      s += sn;
    }
    gathered_.assign(g, 0.0);
    scatter_buffer_.assign(s, 0.0);
  } else {
    comm::PlanNeighbour in, out;
    in.peer = out.peer = 0;
    in.send = iota(0, contribution_.size());
    out.recv = iota(0, correction_.size());
    gather.neighbours.push_back(std::move(in));
    scatter.neighbours.push_back(std::move(out));
  }
  comm::PlanExchangeConfig c;
  c.mode = comm::HaloMode::async;
  c.transport = transport;
  gather_ = std::make_unique<comm::PlanExchange>(comm_, std::move(gather), c);
  scatter_ = std::make_unique<comm::PlanExchange>(comm_, std::move(scatter), c);
  stats_.seconds += t.seconds();
}

void CoarseLevel::close_async(std::int64_t it, double* x) {
  // The run is over: every rank takes the corrections it has not applied yet (at most the newest
  // one, rank 0's), so that the final iterate is one version everywhere. Collective.
  std::int64_t target = rank_ == 0 ? root_version_ : version_;
  MPI_Allreduce(MPI_IN_PLACE, &target, 1, MPI_INT64_T, MPI_MAX, comm_);
  for (int all_there = 0; !all_there;) {
    if (rank_ == 0 && scatter_pending_) {
      const long skipped = scatter_->stats().sends_skipped;
      scatter_->start(scatter_buffer_.data(), root_version_);
      scatter_pending_ = scatter_->stats().sends_skipped != skipped;
    }
    pull(it, x);
    int here = version_ >= target ? 1 : 0;
    MPI_Allreduce(&here, &all_there, 1, MPI_INT, MPI_LAND, comm_);
  }
  if (gather_) gather_->close();
  if (scatter_) scatter_->close();
}

void CoarseLevel::contribute(std::int64_t it, const double* b_ext, const double* x) {
  // g = Phi_p^T b_p - sum over own rows j of (A^T Phi)_j x_j: summed over the ranks, Phi^T (b - A x)
  // for the iterate made of every rank's own values, whatever their age (no ghost value enters).
  const std::size_t m = contributed_.size();
  std::fill(contribution_.begin(), contribution_.begin() + static_cast<std::ptrdiff_t>(m), 0.0);
  const auto own = static_cast<std::size_t>(sub_.own_begin());
  for (std::size_t j = 0; j < r_.size(); ++j) {
    for (auto k = phi_b_.ptr[j]; k < phi_b_.ptr[j + 1]; ++k)
      contribution_[static_cast<std::size_t>(phi_b_.cols[static_cast<std::size_t>(k)])] +=
          phi_b_.vals[static_cast<std::size_t>(k)] * b_ext[own + j];
    for (auto k = bt_.ptr[j]; k < bt_.ptr[j + 1]; ++k)
      contribution_[static_cast<std::size_t>(bt_.cols[static_cast<std::size_t>(k)])] -=
          bt_.vals[static_cast<std::size_t>(k)] * x[own + j];
  }
  contribution_[m] = static_cast<double>(version_);
  contribution_[m + 1] = static_cast<double>(it);
  core::charge("schwarz.residual", static_cast<double>(r_.size()));
  contribution_pending_ = true;
  applied_since_contribution_ = false;
  ++stats_.contributions;
}

void CoarseLevel::after_solve() {
  ++updates_;
  ++solves_since_apply_;
  contribution_due_ = true;
}

bool CoarseLevel::may_update() {
  if (reuse_ > 0 && solves_since_apply_ >= reuse_) {
    ++stats_.held;
    return false;
  }
  return true;
}

void CoarseLevel::root_pass() {
  gather_->finish(gathered_.data(), root_version_);
  // Every rank's newest contribution must be of the current version (computed after it applied
  // the newest correction; a contribution of an older version does not know that correction).
  for (int q = 0; q < ranks_; ++q) {
    const auto n = static_cast<std::size_t>(q);
    if (gather_->time_level(n) < 0) return;
    const std::size_t m = functions_of_[n].size();
    if (static_cast<std::int64_t>(gathered_[gather_at_[n] + m]) != root_version_) return;
  }
  {
    std::vector<double> c(static_cast<std::size_t>(space_->size()), 0.0);
    for (int q = 0; q < ranks_; ++q) {  // Phi^T r = sum over ranks of their contributions
      const auto n = static_cast<std::size_t>(q);
      const auto& f = functions_of_[n];
      for (std::size_t k = 0; k < f.size(); ++k) c[static_cast<std::size_t>(f[k])] += gathered_[gather_at_[n] + k];
    }
    space_->solve(c);  // c_{v+1} = A0^-1 Phi^T r
    charge_coarse_solve(*space_);
    ++root_version_;
    ++stats_.solves;
    for (int q = 0; q < ranks_; ++q) {
      const auto n = static_cast<std::size_t>(q);
      const auto& need = needed_of_[n];
      for (std::size_t k = 0; k < need.size(); ++k) scatter_buffer_[scatter_at_[n] + k] = c[static_cast<std::size_t>(need[k])];
      scatter_buffer_[scatter_at_[n] + need.size()] = gathered_[gather_at_[n] + functions_of_[n].size() + 1];
    }
    scatter_pending_ = true;
  }
}

bool CoarseLevel::pull(std::int64_t it, double* x) {
  core::Stopwatch t;
  scatter_->finish(correction_.data(), it);
  const std::int64_t level = scatter_->time_level(0);
  bool applied = false;
  if (level > version_) {
    // Versions come one at a time: rank 0 makes v + 1 only from contributions of version v.
    const std::size_t n = needed_.size();
    const auto own = static_cast<std::size_t>(sub_.own_begin());
    for (std::size_t i = 0; i < r_.size(); ++i) x[own + i] += row_dot(own_, i, correction_.data());  // u_i += (Phi c)_i
    std::vector<double> next = cumulative_.back();  // U_{v+1} = U_v + c_{v+1}
    for (std::size_t k = 0; k < n; ++k) next[k] += correction_[k];
    cumulative_.push_back(std::move(next));
    constexpr std::size_t kept = 16;  // versions a halo value may lag and still be lifted exactly
    if (cumulative_.size() > kept) {
      cumulative_.pop_front();
      ++front_version_;
    }
    version_ = level;
    stats_.delay.record(it - static_cast<std::int64_t>(correction_[n]));
    ++stats_.corrections;
    solves_since_apply_ = 0;
    contribution_due_ = false;
    applied_since_contribution_ = true;
    core::charge("schwarz.residual", static_cast<double>(r_.size()));
    applied = true;
  }
  stats_.seconds += t.seconds();
  return applied;
}

void CoarseLevel::contribute_and_solve(std::int64_t it, const double* b_ext, const double* x) {
  core::Stopwatch t;
  // The coarse residual of this rank's values as they stand, after at least one local solve on
  // the newest correction; or, at rest (no update since the last pass: at its limit), as they are.
  const bool at_rest = updates_ == updates_at_pull_ && applied_since_contribution_;
  if ((contribution_due_ && solves_since_apply_ >= 1) || at_rest) {
    contribute(it, b_ext, x);
    contribution_due_ = false;
  }
  updates_at_pull_ = updates_;
  if (contribution_pending_) {
    const long skipped = gather_->stats().sends_skipped;
    gather_->start(contribution_.data(), ++contribution_level_);
    contribution_pending_ = gather_->stats().sends_skipped != skipped;  // no free slot: again next pass
  }
  if (rank_ == 0) {
    root_pass();
    if (scatter_pending_) {
      const long skipped = scatter_->stats().sends_skipped;
      scatter_->start(scatter_buffer_.data(), root_version_);
      scatter_pending_ = scatter_->stats().sends_skipped != skipped;
    }
  }
  stats_.seconds += t.seconds();
}

void CoarseLevel::lift(const comm::HaloPlan& plan, std::size_t ghosts, const double* raw, double* ghost) const {
  std::vector<double> d;
  std::int64_t d_from = -1;
  for (std::size_t j = 0; j < plan.neighbours.size(); ++j) {
    const auto& recv = plan.neighbours[j].recv;
    for (const auto g : recv) ghost[g] = raw[g];
    // The sender's version; one older than this rank's is lifted by Phi (U_v - U_s) at its rows
    // (one beyond the versions kept is lifted from the oldest kept).
    const std::int64_t s = std::max(static_cast<std::int64_t>(raw[ghosts + j]), front_version_);
    if (s >= version_) continue;
    if (s != d_from) {
      const auto& now = cumulative_.back();
      const auto& then = cumulative_[static_cast<std::size_t>(s - front_version_)];
      d.resize(now.size());
      for (std::size_t k = 0; k < d.size(); ++k) d[k] = now[k] - then[k];
      d_from = s;
    }
    for (const auto g : recv) ghost[g] += row_dot(ghost_rows_, static_cast<std::size_t>(g), d.data());
  }
}

}  // namespace desync::solvers::detail
