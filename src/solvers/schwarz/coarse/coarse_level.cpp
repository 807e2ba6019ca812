// The coarse level of two-level Schwarz as a stationary iteration (coarse_level.hpp).
#include "coarse_level.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "desync/core/waiting.hpp"

namespace desync::solvers::detail {

namespace {

// The position of each entry of `list` in `in` (ascending, holding every entry).
std::vector<int> positions(const std::vector<int>& list, const std::vector<int>& in) {
  std::vector<int> p(list.size());
  for (std::size_t k = 0; k < list.size(); ++k)
    p[k] = static_cast<int>(std::lower_bound(in.begin(), in.end(), list[k]) - in.begin());
  return p;
}

// Column k of a compressed Phi row set becomes its position in `needed` (ascending).
void to_positions(solvers::CoarseSpace::Rows& rows, const std::vector<int>& needed) {
  rows.cols = positions(rows.cols, needed);
}

// out[i] += sum_k phi(i, k) v[k] over the rows of `rows` (columns positions in v).
/// Compressed rows from per-row lists of (column, value).
solvers::CoarseSpace::Rows compress_rows(const std::vector<std::vector<std::pair<int, double>>>& lists) {
  solvers::CoarseSpace::Rows r;
  r.ptr.assign(1, 0);
  for (const auto& row : lists) {
    for (const auto& [j, v] : row) {
      r.cols.push_back(j);
      r.vals.push_back(v);
    }
    r.ptr.push_back(static_cast<std::int64_t>(r.cols.size()));
  }
  return r;
}

double row_dot(const solvers::CoarseSpace::Rows& rows, std::size_t i, const double* v) {
  double s = 0;
  for (auto m = rows.ptr[i]; m < rows.ptr[i + 1]; ++m)
    s += rows.vals[static_cast<std::size_t>(m)] * v[static_cast<std::size_t>(rows.cols[static_cast<std::size_t>(m)])];
  return s;
}

// A simulated cluster's clock: one solve with the coarse matrix's factors (A0's, or the fixed-point
// form's B0's) is solve_multiply_adds() multiply-adds (solvers/schwarz/coarse/coarse_solver.hpp: one
// or two per factor entry); a residual unit (one row of a sparse residual, about five couplings) about ten.
void charge_coarse_solve(double solve_multiply_adds) { core::charge("schwarz.residual", solve_multiply_adds / 10.0); }

// (A u)_k = sum_j a_kj u_j at owned row k, u from the local iterate x (on Omega_p) and the ghosts.
double owned_row_product(const solvers::OverlappingSubdomain& sub, std::size_t k, const double* x,
                         const double* ghost) {
  const auto& ptr = sub.residual_ptr();
  const auto& index = sub.residual_index();
  const auto& value = sub.residual_value();
  double v = 0;
  for (auto p = ptr[k]; p < ptr[k + 1]; ++p) {
    const std::int32_t j = index[static_cast<std::size_t>(p)];
    v += value[static_cast<std::size_t>(p)] * (j >= 0 ? x[j] : ghost[-j - 1]);
  }
  return v;
}

std::vector<std::int32_t> iota(std::size_t first, std::size_t n) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), static_cast<std::int32_t>(first));
  return v;
}

}  // namespace

CoarseLevel::CoarseLevel(const linalg::DistributedCsr& A, const solvers::OverlappingSubdomain& s,
                         const solvers::CoarseOptions& options)
    : comm(A.comm), sub(s), owned(s.owned()) {
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  core::Stopwatch t;
  space = std::make_unique<solvers::CoarseSpace>(A, options);
  own = space->own_rows();
  ghost_rows = space->basis_rows(sub.ghosts());  // Phi at the other ranks' rows this rank reads
  needed = own.cols;
  needed.insert(needed.end(), ghost_rows.cols.begin(), ghost_rows.cols.end());
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  // The contributions: this rank's part of Phi^T (b - A x) = Phi^T b - sum_j (A^T Phi)_j x_j over
  // its own rows j (reading its own values alone), at the functions contributed.
  bt = space->transposed_product(A);
  phi_b = own;
  contributed = bt.cols;
  contributed.insert(contributed.end(), own.cols.begin(), own.cols.end());
  std::sort(contributed.begin(), contributed.end());
  contributed.erase(std::unique(contributed.begin(), contributed.end()), contributed.end());
  to_positions(bt, contributed);
  to_positions(phi_b, contributed);
  to_positions(own, needed);
  to_positions(ghost_rows, needed);
  stats.seconds += t.seconds();
}

CoarseLevel::~CoarseLevel() = default;

void SyncCoarseCorrection::residual(const double* b_ext, const double* x, const double* ghost) {
  const auto own = static_cast<std::size_t>(level_.sub.own_begin());
  for (std::size_t k = 0; k < r_.size(); ++k)
    r_[k] = b_ext[own + k] - owned_row_product(level_.sub, k, x, ghost);  // r_i = b_i - sum_j a_ij u_j
}

void SyncCoarseCorrection::correct(const double* b_ext, double* x, double* ghost) {
  core::Stopwatch t;
  auto& L = level_;
  residual(b_ext, x, ghost);                                     // r = b - A u
  const std::vector<double> c = L.space->coarse_solution(r_);   // c = A0^-1 Phi^T r (one MPI_Allreduce)
  charge_coarse_solve(L.space->solve_multiply_adds());
  std::vector<double> cn(L.needed.size());
  for (std::size_t k = 0; k < L.needed.size(); ++k) cn[k] = c[static_cast<std::size_t>(L.needed[k])];
  const auto own = static_cast<std::size_t>(L.sub.own_begin());
  for (std::size_t i = 0; i < r_.size(); ++i) x[own + i] += row_dot(L.own, i, cn.data());  // u <- u + Phi c
  for (std::size_t g = 0; g + 1 < L.ghost_rows.ptr.size(); ++g) ghost[g] += row_dot(L.ghost_rows, g, cn.data());
  core::charge("schwarz.residual", static_cast<double>(r_.size()));
  ++L.stats.solves;
  ++L.stats.corrections;
  L.stats.seconds += t.seconds();
}

FixedPointCoarseCorrection::FixedPointCoarseCorrection(CoarseLevel& level, const comm::TransportConfig& transport)
    : level_(level), d_(level.owned, 0.0), cn_(level.needed.size(), 0.0) {
  core::Stopwatch t;
  auto& L = level_;
  const int n0 = L.space->size();
  const int coarse_ranks = L.space->coarse_ranks();  // where the Galerkin level factors A0, B0 too
  agree_or_throw(L.comm, coarse_ranks >= 1 || n0 <= max_dense_functions,
                 fmt::format("--coarse-form fixed-point with --coarse-ranks 0: B0 is dense on every rank, at most {} "
                             "coarse functions (this space has {}); --coarse-ranks 1 keeps it sparse on rank 0",
                             max_dense_functions, n0));
  const auto& sub = L.sub;
  const auto own = static_cast<std::size_t>(sub.own_begin());
  const std::size_t n_ext = sub.size(), ghosts = sub.ghost_count();
  std::vector<double> phi_ext(n_ext, 0.0), phi_ghost(ghosts, 0.0), a_phi(L.owned), r_ext(n_ext), y_ext(n_ext);
  std::vector<std::vector<std::pair<int, double>>> w_rows(L.owned);
  comm::PlanExchangeConfig config;
  config.mode = comm::HaloMode::sync;
  config.transport = transport;
  comm::PlanExchange restrict_to_subdomains(L.comm, sub.restriction_plan(), config);
  for (int j = 0; j < n0; ++j) {  // column j of W = M^-1 A phi_j
    const auto at = std::lower_bound(L.needed.begin(), L.needed.end(), j);
    const bool touches = at != L.needed.end() && *at == j;
    if (touches) cn_[static_cast<std::size_t>(at - L.needed.begin())] = 1.0;
    for (std::size_t i = 0; i < L.owned; ++i) phi_ext[own + i] = touches ? row_dot(L.own, i, cn_.data()) : 0.0;
    for (std::size_t g = 0; g < ghosts; ++g) phi_ghost[g] = touches ? row_dot(L.ghost_rows, g, cn_.data()) : 0.0;
    if (touches) cn_[static_cast<std::size_t>(at - L.needed.begin())] = 0.0;
    for (std::size_t k = 0; k < L.owned; ++k)  // (A phi_j)_k on the owned rows
      a_phi[k] = owned_row_product(sub, k, phi_ext.data(), phi_ghost.data());
    std::fill(r_ext.begin(), r_ext.end(), 0.0);  // R_p (A phi_j): the owned rows here, the others from their owners
    std::copy(a_phi.begin(), a_phi.end(), r_ext.begin() + static_cast<std::ptrdiff_t>(own));
    restrict_to_subdomains.start(a_phi.data(), j);
    restrict_to_subdomains.finish(r_ext.data(), j);
    // A_p^-1 R_p A phi_j (or the approximate solve's M_p^-1), where phi_j reaches Omega_p: a
    // solve of zero is zero, and most functions lie away from most subdomains.
    if (std::all_of(r_ext.begin(), r_ext.end(), [](double v) { return v == 0.0; })) continue;
    sub.solver().solve(r_ext.data(), y_ext.data());
    for (std::size_t i = 0; i < L.owned; ++i)  // restricted: the owned rows
      if (y_ext[own + i] != 0.0) w_rows[i].emplace_back(j, y_ext[own + i]);
  }
  restrict_to_subdomains.close();
  w_ = compress_rows(w_rows);
  // B0 = Phi^T W, summed over the ranks' rows: (B0)_fc = sum over owned rows i of phi_if w_ic.
  const auto n = static_cast<std::size_t>(n0);
  std::string singular;
  const auto singular_message = [](const std::exception& e) {
    return fmt::format("--coarse-form fixed-point: the coarse matrix B0 = Phi^T M^-1 A Phi is singular ({})", e.what());
  };
  const auto for_each_entry = [&](auto&& add) {
    for (std::size_t i = 0; i < L.owned; ++i)
      for (auto m = L.own.ptr[i]; m < L.own.ptr[i + 1]; ++m) {
        const auto f = static_cast<std::size_t>(L.needed[static_cast<std::size_t>(L.own.cols[static_cast<std::size_t>(m)])]);
        const double phi = L.own.vals[static_cast<std::size_t>(m)];
        for (auto q = w_.ptr[i]; q < w_.ptr[i + 1]; ++q)
          add(f, static_cast<std::size_t>(w_.cols[static_cast<std::size_t>(q)]), phi * w_.vals[static_cast<std::size_t>(q)]);
      }
  };
  if (coarse_ranks >= 1) {  // sparse: this rank's entries to the coarse ranks, factored there
    std::unordered_map<std::int64_t, double> mine;
    for_each_entry([&](std::size_t f, std::size_t c, double v) { mine[static_cast<std::int64_t>(f * n + c)] += v; });
    try {  // fails on every rank alike (make_distributed_coarse_solver)
      b0_ = solvers::make_distributed_coarse_solver(L.comm, n0, coarse_ranks, solvers::sparse_entries(mine, n0));
      b0_nonzeros_ = b0_->nonzeros();
    } catch (const std::runtime_error& e) {
      singular = singular_message(e);
    }
  } else {  // dense on every rank
    std::vector<double> b0(n * n, 0.0);
    for_each_entry([&](std::size_t f, std::size_t c, double v) { b0[f * n + c] += v; });
    MPI_Allreduce(MPI_IN_PLACE, b0.data(), static_cast<int>(b0.size()), MPI_DOUBLE, MPI_SUM, L.comm);
    b0_nonzeros_ = std::count_if(b0.begin(), b0.end(), [](double v) { return v != 0.0; });
    try {
      b0_ = solvers::make_dense_coarse_solver(std::move(b0), n0);
    } catch (const std::runtime_error& e) {
      singular = singular_message(e);
    }
  }
  agree_or_throw(L.comm, singular.empty(), singular);
  setup_seconds_ = t.seconds();
  L.stats.seconds += setup_seconds_;
}

void FixedPointCoarseCorrection::prepare_async(const comm::TransportConfig& transport) {
  core::Stopwatch t;
  auto& L = level_;
  const auto& sub = L.sub;
  const auto own = static_cast<std::size_t>(sub.own_begin());
  const std::size_t n_ext = sub.size(), ghosts = sub.ghost_count();
  std::vector<double> z(n_ext), rhs(n_ext, 0.0), te(n_ext, 0.0), tg(ghosts, 0.0),
      slots(sub.prolongation_rows().size(), 0.0), t_own(L.owned);
  sub.solver().solve(sub.rhs(), z.data());  // v = M^-1 b: the restricted local solve of b
  v_.assign(z.begin() + static_cast<std::ptrdiff_t>(own), z.begin() + static_cast<std::ptrdiff_t>(own + L.owned));
  comm::PlanExchangeConfig config;
  config.mode = comm::HaloMode::sync;
  config.transport = transport;
  comm::PlanExchange prolong(L.comm, sub.prolongation_plan(), config);
  comm::PlanExchange halo(L.comm, sub.ghost_plan(), config);
  std::vector<std::vector<std::pair<int, double>>> rows(L.owned);
  const int n0 = L.space->size();
  for (int f = 0; f < n0; ++f) {  // column f of Wt = A^T M^-T phi_f
    const auto at = std::lower_bound(L.needed.begin(), L.needed.end(), f);
    const bool touches = at != L.needed.end() && *at == f;
    if (touches) cn_[static_cast<std::size_t>(at - L.needed.begin())] = 1.0;
    for (std::size_t i = 0; i < L.owned; ++i) rhs[own + i] = touches ? row_dot(L.own, i, cn_.data()) : 0.0;  // Rt_p phi_f
    if (touches) cn_[static_cast<std::size_t>(at - L.needed.begin())] = 0.0;
    if (touches)
      sub.solver().solve(rhs.data(), z.data());  // A_p^-1 Rt_p phi_f (A_p symmetric: A_p^-T)
    else
      std::fill(z.begin(), z.end(), 0.0);
    for (std::size_t i = 0; i < L.owned; ++i) t_own[i] = z[own + i];
    prolong.start(z.data(), f);  // the overlap rows' values to their owners, added there: R_p^T
    prolong.finish(slots.data(), f);
    for (std::size_t k = 0; k < slots.size(); ++k)
      t_own[static_cast<std::size_t>(sub.prolongation_rows()[k])] += slots[k];
    std::copy(t_own.begin(), t_own.end(), te.begin() + static_cast<std::ptrdiff_t>(own));
    halo.start(te.data() + own, f);  // (M^-T phi_f) at the ghosts
    halo.finish(tg.data(), f);
    for (std::size_t k = 0; k < L.owned; ++k) {  // (A^T M^-T phi_f)_k = (A M^-T phi_f)_k, A symmetric
      const double w = owned_row_product(sub, k, te.data(), tg.data());
      if (w != 0.0) rows[k].emplace_back(f, w);
    }
  }
  prolong.close();
  halo.close();
  wt_ = compress_rows(rows);
  setup_seconds_ += t.seconds();
  L.stats.seconds += t.seconds();
}

void FixedPointCoarseCorrection::charge_solve() const {
  charge_coarse_solve(b0_->solve_multiply_adds());
}

void FixedPointCoarseCorrection::describe(solvers::CoarseSummary& c) const {
  c.solver = b0_->name();
  c.nonzeros = b0_nonzeros_;
  c.factor_nonzeros = b0_->factor_nonzeros();
}

void FixedPointCoarseCorrection::correct(const double* x, double* y) {
  core::Stopwatch t;
  auto& L = level_;
  const auto own = static_cast<std::size_t>(L.sub.own_begin());
  for (std::size_t i = 0; i < L.owned; ++i) d_[i] = y[own + i] - x[own + i];  // d = M^-1 (b - A u)
  std::vector<double> c = L.space->local_sums(d_);  // this rank's part of Phi^T d
  b0_->solve_sum(L.comm, c);                         // c = B0^-1 Phi^T d, summed over the ranks
  charge_solve();
  for (std::size_t k = 0; k < L.needed.size(); ++k) cn_[k] = c[static_cast<std::size_t>(L.needed[k])];
  for (std::size_t i = 0; i < L.owned; ++i) {
    double wc = 0;
    for (auto q = w_.ptr[i]; q < w_.ptr[i + 1]; ++q)
      wc += w_.vals[static_cast<std::size_t>(q)] * c[static_cast<std::size_t>(w_.cols[static_cast<std::size_t>(q)])];
    y[own + i] += row_dot(L.own, i, cn_.data()) - wc;  // y <- y + (Phi - W) c
  }
  core::charge("schwarz.residual", static_cast<double>(L.owned));
  ++L.stats.solves;
  ++L.stats.corrections;
  L.stats.seconds += t.seconds();
}

AsyncCoarseTree::AsyncCoarseTree(CoarseLevel& level, int reuse, int fan_in, const FixedPointCoarseCorrection* fixed_point)
    : level_(level), reuse_(reuse), fan_in_(fan_in), fixed_point_(fixed_point) {
  cumulative_.emplace_back(level.needed.size(), 0.0);  // U_0 = 0
}

AsyncCoarseTree::~AsyncCoarseTree() = default;

void AsyncCoarseTree::open_async(const comm::TransportConfig& transport, double pass) {
  core::Stopwatch t;
  if (fan_in_ == 0) {
    // The fan-in from the model (rank_tree.hpp): the costs measured with messages of the longest
    // sum a leaf sends up (rank 0's measurements, on every rank), and a message's wait for its
    // receiver, which looks once per pass (halo exchange and local solve): half the slowest rank's pass.
    int longest = static_cast<int>(level_.contributed.size());
    MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_INT, MPI_MAX, level_.comm);
    MPI_Allreduce(MPI_IN_PLACE, &pass, 1, MPI_DOUBLE, MPI_MAX, level_.comm);
    model_ = comm::measure_tree_costs(level_.comm, longest + 1);  // + 1: the version
    model_.poll_wait = level_.ranks > 1 ? pass / 2 : 0.0;
    fan_in_ = comm::model_fan_in(level_.ranks, model_);
  }
  tree_ = comm::rank_tree(level_.rank, level_.ranks, fan_in_);
  const std::size_t m = tree_.children.size();
  // The subtree's lists, bottom up: each rank receives its children's (the unions over their
  // subtrees), merges its own and sends the result to its parent (blocking: the tree has no cycle).
  std::vector<std::vector<int>> child_up(m), child_down(m);
  up_functions_ = level_.contributed;
  down_needed_ = level_.needed;
  if (fixed_point_) {  // the sums reach Wt's columns too
    const auto& wc = fixed_point_->wt().cols;
    up_functions_.insert(up_functions_.end(), wc.begin(), wc.end());
    std::sort(up_functions_.begin(), up_functions_.end());
    up_functions_.erase(std::unique(up_functions_.begin(), up_functions_.end()), up_functions_.end());
  }
  MPI_Comm tc = MPI_COMM_NULL;
  MPI_Comm_dup(level_.comm, &tc);
  for (std::size_t j = 0; j < m; ++j) {
    int n[2] = {0, 0};
    const int c = tree_.children[j];
    MPI_Recv(n, 2, MPI_INT, c, 0, tc, MPI_STATUS_IGNORE);
    child_up[j].resize(static_cast<std::size_t>(n[0]));
    child_down[j].resize(static_cast<std::size_t>(n[1]));
    MPI_Recv(child_up[j].data(), n[0], MPI_INT, c, 1, tc, MPI_STATUS_IGNORE);
    MPI_Recv(child_down[j].data(), n[1], MPI_INT, c, 2, tc, MPI_STATUS_IGNORE);
    up_functions_.insert(up_functions_.end(), child_up[j].begin(), child_up[j].end());
    down_needed_.insert(down_needed_.end(), child_down[j].begin(), child_down[j].end());
  }
  for (auto* v : {&up_functions_, &down_needed_}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  if (tree_.parent >= 0) {
    int n[2] = {static_cast<int>(up_functions_.size()), static_cast<int>(down_needed_.size())};
    MPI_Send(n, 2, MPI_INT, tree_.parent, 0, tc);
    MPI_Send(up_functions_.data(), n[0], MPI_INT, tree_.parent, 1, tc);
    MPI_Send(down_needed_.data(), n[1], MPI_INT, tree_.parent, 2, tc);
  }
  MPI_Comm_free(&tc);
  own_up_pos_ = positions(level_.contributed, up_functions_);
  if (fixed_point_) {
    phi_up_ = level_.own;  // columns: positions in needed -> function numbers -> positions in up_functions_
    for (auto& c : phi_up_.cols) c = level_.needed[static_cast<std::size_t>(c)];
    phi_up_.cols = positions(phi_up_.cols, up_functions_);
    wt_up_ = fixed_point_->wt();
    wt_up_.cols = positions(wt_up_.cols, up_functions_);
  }
  own_down_pos_ = positions(level_.needed, down_needed_);
  // Messages: up [sum at the subtree's functions..., version], down [c at the functions the
  // subtree needs..., version]; the trailing version keeps every message non-empty.
  up_out_.assign(up_functions_.size() + 1, 0.0);
  down_in_.assign(down_needed_.size() + 1, 0.0);
  comm::HaloPlan up, down;
  up.rank = down.rank = level_.rank;
  if (tree_.parent >= 0) {
    comm::PlanNeighbour to, from;
    to.peer = from.peer = tree_.parent;
    to.send = iota(0, up_out_.size());
    from.recv = iota(0, down_in_.size());
    up.neighbours.push_back(std::move(to));
    down.neighbours.push_back(std::move(from));
  }
  std::size_t ua = 0, da = 0;
  child_up_pos_.clear();
  child_down_pos_.clear();
  child_up_at_.clear();
  child_down_at_.clear();
  for (std::size_t j = 0; j < m; ++j) {
    child_up_pos_.push_back(positions(child_up[j], up_functions_));
    child_down_pos_.push_back(positions(child_down[j], down_needed_));
    child_up_at_.push_back(ua);
    child_down_at_.push_back(da);
    comm::PlanNeighbour from, to;
    from.peer = to.peer = tree_.children[j];
    from.recv = iota(ua, child_up[j].size() + 1);
    to.send = iota(da, child_down[j].size() + 1);
    up.neighbours.push_back(std::move(from));
    down.neighbours.push_back(std::move(to));
    ua += child_up[j].size() + 1;
    da += child_down[j].size() + 1;
  }
  up_in_.assign(ua, 0.0);
  down_out_.assign(da, 0.0);
  comm::PlanExchangeConfig c;
  c.mode = comm::HaloMode::async;
  c.transport = transport;
  gather_ = std::make_unique<comm::PlanExchange>(level_.comm, std::move(up), c);
  scatter_ = std::make_unique<comm::PlanExchange>(level_.comm, std::move(down), c);
  level_.stats.seconds += t.seconds();
}

void AsyncCoarseTree::close_async(std::int64_t it, double* x) {
  // The run is over: the final iterate is one version everywhere (settle; a no-op after the
  // settle that confirmed the stop: no sum is made in between), then nothing is left pending.
  settle(it, x);
  if (gather_) gather_->close();
  if (scatter_) scatter_->close();
}

void AsyncCoarseTree::settle(std::int64_t it, double* x) {
  // Every rank takes the corrections it has not applied yet (at most the newest one, rank 0's, on
  // its way down the tree): a correction applied on some ranks' rows and not on others' leaves an
  // iterate no rank ever read. No sum is made here, so no version is made either.
  // Every round makes progress on both exchanges: a correction sent down (or a sum sent up) is
  // announced at the next call on its channel under the overlap completion schemes, and a parent
  // with nothing left to send makes no other call on them (without this, the child waited for its
  // last correction forever: a livelock, every allreduce completing). The rounds are one wait for
  // the watchdog (DESYNC_WAIT_LIMIT): a round that never ends the loop is reported, not repeated
  // forever.
  std::int64_t target = level_.rank == 0 ? root_version_ : version_;
  MPI_Allreduce(MPI_IN_PLACE, &target, 1, MPI_INT64_T, MPI_MAX, level_.comm);
  core::WaitScope closing("the newest coarse correction to reach every rank (closing the asynchronous coarse level)");
  for (int all_there = 0; !all_there;) {
    pull(it, x);  // applies and forwards (again, while a child's slot was busy)
    if (gather_) gather_->progress();
    if (scatter_) scatter_->progress();
    int here = version_ >= target && !down_pending_ ? 1 : 0;
    MPI_Allreduce(&here, &all_there, 1, MPI_INT, MPI_LAND, level_.comm);
  }
}

void AsyncCoarseTree::sum_up(std::int64_t it, const double* b_ext, const double* x) {
  // This rank's part: Phi_p^T b_p - sum over own rows j of (A^T Phi)_j x_j; summed over the ranks,
  // Phi^T (b - A x) for the iterate made of every rank's own values, whatever their age (no ghost
  // value enters).
  std::fill(up_out_.begin(), up_out_.end(), 0.0);
  double* g = up_out_.data();
  const auto own = static_cast<std::size_t>(level_.sub.own_begin());
  if (fixed_point_) {  // Phi^T M^-1 (b - A u): sum over owned rows j of Phi_j v_j - Wt_j u_j
    const auto& v = fixed_point_->v();
    for (std::size_t j = 0; j < level_.owned; ++j) {
      for (auto k = phi_up_.ptr[j]; k < phi_up_.ptr[j + 1]; ++k)
        g[phi_up_.cols[static_cast<std::size_t>(k)]] += phi_up_.vals[static_cast<std::size_t>(k)] * v[j];
      for (auto k = wt_up_.ptr[j]; k < wt_up_.ptr[j + 1]; ++k)
        g[wt_up_.cols[static_cast<std::size_t>(k)]] -= wt_up_.vals[static_cast<std::size_t>(k)] * x[own + j];
    }
  }
  for (std::size_t j = 0; j < level_.owned && !fixed_point_; ++j) {
    for (auto k = level_.phi_b.ptr[j]; k < level_.phi_b.ptr[j + 1]; ++k)
      g[own_up_pos_[static_cast<std::size_t>(level_.phi_b.cols[static_cast<std::size_t>(k)])]] +=
          level_.phi_b.vals[static_cast<std::size_t>(k)] * b_ext[own + j];
    for (auto k = level_.bt.ptr[j]; k < level_.bt.ptr[j + 1]; ++k)
      g[own_up_pos_[static_cast<std::size_t>(level_.bt.cols[static_cast<std::size_t>(k)])]] -=
          level_.bt.vals[static_cast<std::size_t>(k)] * x[own + j];
  }
  double added = 0;  // the children's subtree sums of this version
  for (std::size_t j = 0; j < tree_.children.size(); ++j) {
    const auto& pos = child_up_pos_[j];
    const double* in = up_in_.data() + child_up_at_[j];
    for (std::size_t k = 0; k < pos.size(); ++k) g[pos[k]] += in[k];
    added += static_cast<double>(pos.size());
  }
  core::charge("schwarz.residual", static_cast<double>(level_.owned) + added / 10.0);
  sent_version_ = version_;
  sum_iteration_ = it;
  ++level_.stats.contributions;
  if (tree_.parent >= 0) {
    up_out_.back() = static_cast<double>(version_);
    up_pending_ = true;
    return;
  }
  // Rank 0: c_{v+1} = A0^-1 Phi^T r, kept as its own correction (applied and sent down by pull).
  std::vector<double> c(static_cast<std::size_t>(level_.space->size()), 0.0);
  for (std::size_t k = 0; k < up_functions_.size(); ++k) c[static_cast<std::size_t>(up_functions_[k])] = g[k];
  if (fixed_point_) {
    fixed_point_->solve(c);  // c_{v+1} = B0^-1 Phi^T M^-1 (b - A u)
    fixed_point_->charge_solve();
  } else {
    level_.space->solve(c);
    charge_coarse_solve(level_.space->solve_multiply_adds());
  }
  ++root_version_;
  ++level_.stats.solves;
  for (std::size_t k = 0; k < down_needed_.size(); ++k) down_in_[k] = c[static_cast<std::size_t>(down_needed_[k])];
  down_in_.back() = static_cast<double>(root_version_);
}

void AsyncCoarseTree::after_solve() {
  ++updates_;
  ++solves_since_apply_;
}

bool AsyncCoarseTree::may_update() {
  held_ = reuse_ > 0 && solves_since_apply_ >= reuse_;
  if (held_) ++level_.stats.held;
  return !held_;
}

bool AsyncCoarseTree::pull(std::int64_t it, double* x) {
  core::Stopwatch t;
  const auto send_down = [&] {
    if (tree_.children.empty()) return;
    const long skipped = scatter_->stats().sends_skipped;
    scatter_->start(down_out_.data(), version_);
    down_pending_ = scatter_->stats().sends_skipped != skipped;  // a child's slot busy: again next pass
    down_unannounced_ = true;
  };
  if (down_pending_) {
    send_down();
  } else if (down_unannounced_) {
    scatter_->progress();  // the last correction sent is announced now, not with the next one
    down_unannounced_ = false;
  }
  std::int64_t level = root_version_;
  if (tree_.parent >= 0) {
    scatter_->finish(down_in_.data(), it);
    level = std::max<std::int64_t>(scatter_->time_level(0), 0);
  }
  bool applied = false;
  if (level > version_) {
    // Versions come one at a time: rank 0 makes v + 1 only from sums of version v, which every
    // rank made after it applied v.
    const std::size_t n = level_.needed.size();
    std::vector<double> cn(n);
    for (std::size_t k = 0; k < n; ++k) cn[k] = down_in_[static_cast<std::size_t>(own_down_pos_[k])];
    const auto own = static_cast<std::size_t>(level_.sub.own_begin());
    for (std::size_t i = 0; i < level_.owned; ++i) x[own + i] += row_dot(level_.own, i, cn.data());  // u_i += (Phi c)_i
    version_ = level;
    // Forward c_{v+1} to the children, each its subtree's functions.
    double forwarded = 0;
    for (std::size_t j = 0; j < tree_.children.size(); ++j) {
      const auto& pos = child_down_pos_[j];
      double* out = down_out_.data() + child_down_at_[j];
      for (std::size_t k = 0; k < pos.size(); ++k) out[k] = down_in_[static_cast<std::size_t>(pos[k])];
      out[pos.size()] = static_cast<double>(level);
      forwarded += static_cast<double>(pos.size());
    }
    send_down();
    std::vector<double> next = cumulative_.back();  // U_{v+1} = U_v + c_{v+1}
    for (std::size_t k = 0; k < n; ++k) next[k] += cn[k];
    cumulative_.push_back(std::move(next));
    constexpr std::size_t kept = 16;  // versions a halo value may lag and still be lifted exactly
    if (cumulative_.size() > kept) {
      cumulative_.pop_front();
      ++front_version_;
    }
    level_.stats.delay.record(it - sum_iteration_);
    ++level_.stats.corrections;
    solves_since_apply_ = 0;
    core::charge("schwarz.residual", static_cast<double>(level_.owned) + forwarded / 10.0);
    applied = true;
  }
  level_.stats.seconds += t.seconds();
  return applied;
}

void AsyncCoarseTree::contribute_and_solve(std::int64_t it, const double* b_ext, const double* x) {
  core::Stopwatch t;
  // At rest: no update since the last pass although none was held back (at its limit: it no longer
  // solves), so the values are final for this version; otherwise at least one local solve on the
  // newest correction. A pass held by --coarse-reuse is not rest: the rank solves again once the
  // next correction is in, and its sum must come after that solve (a sum taken before it, on the
  // values the correction was computed from, would have the next correction undo what the solve
  // did: with --coarse-reuse 1 the iteration diverged on 4 ranks).
  // With --coarse-reuse r >= 1 the sum is taken after the r-th solve, the last before the rank
  // holds: the rank's values then stay as they were summed until the correction built from them
  // arrives, so the correction is applied to the iterate it was computed from, the hybrid's
  // multiplicative coarse step (Toselli and Widlund, 2005, section 2.5.2) with asynchronous local
  // solves between. With r = 0 (never wait) the sum is taken after the first solve and the rank
  // goes on solving: the correction then lands on an iterate the local solves have moved since, the
  // two corrections add up (an additive two-level iteration), and as a stationary iteration that may
  // diverge (measured: a k-nearest-neighbour graph Laplacian, 2 ranks, diverged in 1 of 10 runs and
  // stopped unconverged in 4 more; r = 1 converged in 28 iterations in each of 10).
  const bool at_rest = updates_ == updates_at_pull_ && !held_;
  held_ = false;
  updates_at_pull_ = updates_;
  if (!tree_.children.empty()) gather_->finish(up_in_.data(), it);
  if (sent_version_ < version_ && (solves_since_apply_ >= std::max(reuse_, 1) || at_rest)) {
    bool children_in = true;  // every child's newest sum is of this version
    for (std::size_t j = 0; j < tree_.children.size() && children_in; ++j)
      children_in = gather_->time_level(child_index(j)) == version_ + 1;
    if (children_in) sum_up(it, b_ext, x);
  }
  if (up_pending_) {
    const long skipped = gather_->stats().sends_skipped;
    gather_->start(up_out_.data(), sent_version_ + 1);  // time level: the version + 1 (levels start at 1)
    up_pending_ = gather_->stats().sends_skipped != skipped;  // no free slot: again next pass
    up_unannounced_ = true;
  } else if (up_unannounced_) {
    gather_->progress();  // the last sum sent is announced now, not with the next one
    up_unannounced_ = false;
  }
  level_.stats.seconds += t.seconds();
}

void AsyncCoarseTree::lift(const comm::HaloPlan& plan, std::size_t ghosts, const double* raw, double* ghost) const {
  std::vector<double> d;
  std::int64_t d_from = -1;
  for (std::size_t j = 0; j < plan.neighbours.size(); ++j) {
    const auto& recv = plan.neighbours[j].recv;
    for (const auto g : recv) ghost[g] = raw[g];
    // The sender's version; one older than this rank's is lifted by Phi (U_v - U_s) at its rows
    // (one beyond the versions kept is lifted from the oldest kept). One newer (at most v + 1: rank
    // 0 makes v + 2 only from sums every rank made on v + 1) is read as it is, c_{v+1} not yet known
    // here: holding the local solves until c_{v+1} arrives instead measured no gain (asynchronous
    // GDSW, 64 simulated ranks: 2.76 ms against 2.73).
    const std::int64_t s = std::max(static_cast<std::int64_t>(raw[ghosts + j]), front_version_);
    if (s >= version_) continue;
    if (s != d_from) {
      const auto& now = cumulative_.back();
      const auto& then = cumulative_[static_cast<std::size_t>(s - front_version_)];
      d.resize(now.size());
      for (std::size_t k = 0; k < d.size(); ++k) d[k] = now[k] - then[k];
      d_from = s;
    }
    for (const auto g : recv) ghost[g] += row_dot(level_.ghost_rows, static_cast<std::size_t>(g), d.data());
  }
}

}  // namespace desync::solvers::detail
