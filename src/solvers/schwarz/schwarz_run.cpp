// The one run of every Schwarz iteration, grid or matrix, one level or two (Yamazaki et al., 2019,
// sections 3-4); see schwarz_run.hpp.
//
// Layout: x_ holds the subdomain's n values and one more, x_[n], the number exchange_carrying sends
// (and, two-level async, the sender's coarse version); the plan sends x_[send_offset + its send
// offsets] and receives into ghost_, which holds the ghosts and one more entry per plan neighbour
// after them, the numbers received.
#include "schwarz_run.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "desync/communication/plan_exchange.hpp"
#include "desync/core/comm.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "coarse/coarse_level.hpp"

namespace desync::solvers::detail {

DriverOptions schwarz_driver_options(const SchwarzOptions& o) {
  DriverOptions it;
  it.iteration = o.iteration;
  it.asynchronous = o.asynchronous();
  it.reduction = o.reduction;
  it.stop_rule = StopRule::every_rank_local;
  it.tree_termination = o.asynchronous() && o.tree_termination && o.detect_termination;
  it.detect_termination = o.detect_termination;
  it.termination_transport = o.transport;
  it.idle = o.idle;
  it.rank_history = true;  // the per-rank local residual histories (their Figures 15-16)
  return it;
}

namespace {

// One rank's run: the driver's loops around a subdomain solve (LocalIteration).
class SchwarzRun final : public LocalIteration {
 public:
  SchwarzRun(Subdomain& sub, const SchwarzOptions& o, std::span<const double> x0, CoarseLevel* coarse)
      : sub_(sub), opt_(o), it_(schwarz_driver_options(o)), comm_(sub.comm()), plan_(sub.ghost_plan()),
        n_(sub.size()), source_(sub.send_offset()), ghosts_(sub.ghost_count()), coarse_(coarse),
        driver_(comm_, it_, *this) {
    // The synchronous main phase carries the last iteration without termination detection and
    // with a time limit (driver/iteration_driver.hpp).
    carry_ = !it_.detect_termination && !it_.asynchronous && it_.iteration.time_limit > 0;
    x_.assign(n_ + 1, 0.0);
    next_.assign(n_ + 1, 0.0);
    rhs_.assign(n_, 0.0);
    exact_ = sub.solver().exact();
    if (!exact_) work_.assign(n_, 0.0);
    ghost_.assign(ghosts_ + plan_.neighbours.size(), 0.0);
    if (!x0.empty()) {  // the initial guess on the owned points, and its ghosts (one synchronous exchange)
      for (std::size_t k = 0; k < x0.size(); ++k) x_[sub_.owned_index(k)] = x0[k];
      ghost_ = current_ghosts();
    }
    if (coarse_) {
      if (o.coarse_form == CoarseForm::fixed_point)
        fixed_point_.emplace(*coarse_, o.transport);
      else
        sync_coarse_.emplace(*coarse_);
      if (o.asynchronous() && fixed_point_) fixed_point_->prepare_async(o.transport);
      if (o.asynchronous())
        tree_ = std::make_unique<AsyncCoarseTree>(*coarse_, o.coarse_reuse, o.coarse_fan_in,
                                                  fixed_point_ ? &*fixed_point_ : nullptr);
      // async: the halo values carry their sender's coarse version (x_[n_]) and are lifted to
      // this rank's (coarse_level.hpp); raw_ keeps them as received.
      carry_async_ = true;
      raw_ = ghost_;
    }
    auto& st = driver_.stats();
    st.rank = core::rank_of(comm_);
    st.coords = sub.coords();
    st.local = sub.extent();
    st.neighbours = plan_.remote_peers();
    driver_.start();
  }

  SchwarzResult run() {
    SchwarzResult r;
    r.run = driver_.run(*this);
    const auto& s = sub_.solver();
    r.local_solver = s.kind();
    r.local_solver_name = s.name();
    r.local_solver_reason = s.reason();
    r.factor_seconds = s.factor_seconds();
    r.factor_nonzeros = s.factor_nonzeros();
    r.extended_rows = static_cast<std::int64_t>(n_);
    r.spmv_seconds = spmv_s_;
    r.update_seconds = update_s_;
    r.solve_seconds = solve_s_;
    if (coarse_) {
      r.coarse_level = coarse_->space->summary();
      if (fixed_point_) fixed_point_->describe(r.coarse_level);  // B0, the matrix its coarse solves use
      const auto& st = coarse_->stats;
      r.coarse = {st.corrections,
                  st.solves,
                  st.contributions,
                  st.held,
                  tree_ ? tree_->tree().height : 0,
                  tree_ ? tree_->fan_in() : 0,
                  tree_ ? tree_->fan_in_model() : comm::TreeCosts{},
                  st.seconds,
                  st.delay};
    }
    return r;
  }

  /// This rank's owned values of the current iterate, in owned_index order.
  void copy_out(std::span<double> x) const {
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = x_[sub_.owned_index(k)];
  }

 private:
  double local_source_norm_sq() override { return sub_.source_norm_sq(); }
  // The global residual of the current iterate: the owners' values at the ghosts, exchanged
  // synchronously, then every rank's own points.
  double true_residual_sq() override {
    const std::vector<double> ghost = current_ghosts();
    const double r2 = sub_.local_residual_sq(x_.data(), ghost.data());
    core::charge("schwarz.residual", sub_.residual_work());  // simulated cluster: its cost
    return r2;
  }
  int exchange_hops() const override { return sub_.exchange_hops(); }

  double update(std::int64_t, bool want_residual) override {
    double r2 = 0;
    if (want_residual) {
      core::Stopwatch t;
      r2 = sub_.local_residual_sq(x_.data(), ghost_.data());  // r_p = b_p - (A u)_p on the owned points
      core::charge("schwarz.residual", sub_.residual_work());
      spmv_s_ += t.seconds();
    }
    core::Stopwatch t_update;
    sub_.local_rhs(x_.data(), ghost_.data(), rhs_.data());  // rhs_i = b_i - a_ie (u_e - beta u_i)
    update_s_ += t_update.seconds();
    core::Stopwatch t_solve;
    if (exact_) {
      sub_.solver().solve(rhs_.data(), next_.data());  // y_p = A_p^-1 rhs
    } else {
      // An approximate solve M ~ A_p (ILU(k), or K pieces per rank): one correction step from the previous local values,
      // y_p = u_p + M^-1 (rhs - A_p u_p) (subdomain.hpp), which the exact solve's y_p leaves fixed.
      const linalg::LocalCsr& a = sub_.local_matrix();
      for (std::size_t i = 0; i < n_; ++i) {  // work_ = rhs - A_p u_p
        double r = rhs_[i];
        for (auto k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
          r -= a.val[static_cast<std::size_t>(k)] * x_[static_cast<std::size_t>(a.col[static_cast<std::size_t>(k)])];
        work_[i] = r;
      }
      sub_.solver().solve(work_.data(), next_.data());  // M d = work_
      for (std::size_t i = 0; i < n_; ++i) next_[i] += x_[i];
    }
    // --coarse-form fixed-point: y <- y + (Phi - W) c, c = B0^-1 Phi^T (y - u) (coarse_level.hpp)
    // (asynchronous: the tree's sums are Phi^T M^-1 (b - A u), its corrections Phi c, coarse_level.hpp)
    core::charge("schwarz.solve", static_cast<double>(n_));
    coarse_in_update_ = 0;
    if (fixed_point_ && !async_coarse_) {  // collective: halo time, not the sweep's (update_coarse_seconds)
      core::Stopwatch t_coarse;
      fixed_point_->correct(x_.data(), next_.data());
      coarse_in_update_ = t_coarse.seconds();
    }
    solve_s_ += t_solve.seconds() - coarse_in_update_;
    if (async_coarse_) tree_->after_solve();
    return r2;
  }
  // advance(): u_i <- y_p,i on the owned points (the rest of y_p is read by nobody: restricted
  // Schwarz; the grid's overlap values are the neighbours' ghosts, never read from here).
  void advance() override { std::swap(x_, next_); }
  double update_coarse_seconds() const override { return coarse_in_update_; }
  void perturb(double value) override { x_[sub_.owned_index(0)] = value; }
  // The candidate is A_p^-1 rhs, rhs from b and the ghosts alone, except where the Robin data reads
  // an owned u_i or the solve is approximate (its correction step reads u_p). Not with a coarse
  // level: a coarse correction changes the iterate without a halo message.
  bool update_repeats_without_new_data() const override {
    return !coarse_ && !sub_.solve_reads_own_values() && exact_;  // an approximate solve reads u_p
  }
  bool may_update() override { return !async_coarse_ || tree_->may_update(); }

  // One pass, timed: the time between a rank's looks for messages, which the asynchronous coarse
  // tree's fan-in model reads (coarse_level.hpp, rank_tree.hpp). Between two looks a rank sends its
  // halo messages and takes its neighbours' as well as solving (on the simulated cluster the
  // messages cost more than the solve), so the trial times a synchronous exchange over the run's
  // transport, the second of two (the first lines the neighbours up; the exchange's set-up is not
  // timed), then the local right-hand side and solve (charged as a pass's solve is) into the
  // scratch vectors. Collective between neighbours.
  double trial_pass() {
    comm::PlanExchange ex(comm_, plan_, exchange_config(comm::HaloMode::sync));
    std::vector<double> ghost(ghost_.size(), 0.0);
    ex.start(x_.data() + source_, 0);
    ex.finish(ghost.data(), 0);
    core::Stopwatch t;
    ex.start(x_.data() + source_, 1);
    ex.finish(ghost.data(), 1);
    sub_.local_rhs(x_.data(), ghost.data(), rhs_.data());
    sub_.solver().solve(rhs_.data(), next_.data());
    core::charge("schwarz.solve", static_cast<double>(n_));
    const double pass = t.seconds();
    ex.close();
    return pass;
  }

  comm::PlanExchangeConfig exchange_config(comm::HaloMode mode) const {
    comm::PlanExchangeConfig c;
    c.mode = mode;
    c.transport = opt_.transport;  // sync: one message in flight (the plan exchange's rule)
    c.wait_all = opt_.wait_all;
    return c;
  }
  /// The ghosts of the current iterate, exchanged synchronously outside the phases (the true
  /// residual, the initial guess). Collective between neighbours.
  std::vector<double> current_ghosts() const {
    comm::PlanExchange ex(comm_, plan_, exchange_config(comm::HaloMode::sync));
    std::vector<double> ghost(ghost_.size(), 0.0);
    ex.start(x_.data() + source_, 0);
    ex.finish(ghost.data(), 0);
    ex.close();
    return ghost;
  }
  // The plan with one more entry each way per neighbour: x_[n_] goes out, the neighbour's lands in
  // ghost_[ghosts_ + its index]. Every neighbour entry exists at both ends (the plans list a peer
  // that only sends or only receives on both sides), so both ends add it.
  comm::HaloPlan carrying_plan() const {
    comm::HaloPlan p = plan_;
    for (std::size_t j = 0; j < p.neighbours.size(); ++j) {
      p.neighbours[j].send.push_back(static_cast<std::int32_t>(n_ - source_));  // offsets from x_ + source_
      p.neighbours[j].recv.push_back(static_cast<std::int32_t>(ghosts_ + j));
    }
    return p;
  }

  void open_exchange(IterationPhase phase, bool synchronous) override {
    exchange_.reset();
    const bool carrying = (carry_ && synchronous && phase == IterationPhase::main) || (carry_async_ && !synchronous);
    exchange_.emplace(comm_, carrying ? carrying_plan() : plan_,
                      exchange_config(synchronous ? comm::HaloMode::sync : comm::HaloMode::async));
    // Two-level, asynchronous: the halo values as received go to raw_, the coarse level takes its
    // newest correction, and the ghosts are the received values lifted to this rank's version.
    async_coarse_ = tree_ && !synchronous;
    if (async_coarse_) tree_->open_async(opt_.transport, tree_->fan_in() == 0 ? trial_pass() : 0.0);
  }
  // Section 4.1: send the values the neighbours read, wait for theirs of the same iteration; then,
  // two-level, the coarse correction before the local solves (coarse_level.hpp):
  // u <- u + Phi A0^-1 Phi^T (b - A u), its ghosts corrected alike.
  void exchange(std::int64_t it) override {
    exchange_->start(x_.data() + source_, it);
    exchange_->finish(ghost_.data(), it);
    if (sync_coarse_) sync_coarse_->correct(sub_.rhs(), x_.data(), ghost_.data());
  }
  // The last iteration travels as a double (exact up to 2^53), none as +inf.
  std::int64_t exchange_carrying(std::int64_t it, std::int64_t level) override {
    constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
    x_[n_] = level == none ? HUGE_VAL : static_cast<double>(level);
    exchange(it);
    for (std::size_t j = 0; j < plan_.neighbours.size(); ++j) {
      const double v = ghost_[ghosts_ + j];
      if (v < static_cast<double>(level)) level = static_cast<std::int64_t>(v);
    }
    return level;
  }
  void refresh() override { exchange_->install(ghost_.data()); }
  // Section 4.2: push the newest values (two-level: with this rank's coarse version).
  void push(std::int64_t it) override {
    if (async_coarse_) x_[n_] = static_cast<double>(tree_->version());
    exchange_->start(x_.data() + source_, it);
  }
  // Section 4.2: pull whatever newest whole messages have arrived.
  void pull(std::int64_t it) override {
    if (!async_coarse_) return exchange_->finish(ghost_.data(), it);
    last_it_ = it;
    exchange_->finish(raw_.data(), it);
    tree_->pull(it, x_.data());
    tree_->lift(plan_, ghosts_, raw_.data(), ghost_.data());
    tree_->contribute_and_solve(it, sub_.rhs(), x_.data());
  }
  comm::ExchangeStats exchange_stats() const override { return exchange_->stats(); }
  void close_exchange() override {
    exchange_->close();
    if (async_coarse_) tree_->close_async(last_it_, x_.data());
    async_coarse_ = false;
  }
  void settle() override {
    if (async_coarse_) tree_->settle(last_it_, x_.data());
  }

  Subdomain& sub_;
  const SchwarzOptions& opt_;
  DriverOptions it_;
  MPI_Comm comm_;
  const comm::HaloPlan& plan_;
  std::size_t n_, source_, ghosts_;  // values on the subdomain, where the plan sends from, ghosts
  bool carry_ = false;
  bool carry_async_ = false;  // the asynchronous phase carries x_[n_] too (into ghost_[ghosts_ + j])
  std::vector<double> x_, next_, ghost_, rhs_, work_;
  bool exact_ = true;  // the local solver solves exactly (else the correction step of update())
  std::optional<comm::PlanExchange> exchange_;
  double spmv_s_ = 0, update_s_ = 0, solve_s_ = 0;
  double coarse_in_update_ = 0;  // the last update's fixed-point correction (update_coarse_seconds)
  CoarseLevel* coarse_;                          // two-level: what both forms share
  std::optional<SyncCoarseCorrection> sync_coarse_;  // the synchronous phases' hybrid step
  std::optional<FixedPointCoarseCorrection> fixed_point_;  // its fixed-point form, after the local solves
  std::unique_ptr<AsyncCoarseTree> tree_;       // async: the tree of sums and corrections
  bool async_coarse_ = false;  // the asynchronous phase is open with a coarse level
  std::int64_t last_it_ = 0;   // the iteration of the last pull (the final corrections' delays)
  std::vector<double> raw_;    // async two-level: the ghosts as received, the senders' versions after them
  IterationDriver driver_;
};

}  // namespace

SchwarzResult run_schwarz(Subdomain& sub, const SchwarzOptions& o, std::span<const double> x0, std::span<double> x,
                          CoarseLevel* coarse) {
  SchwarzRun run(sub, o, x0, coarse);
  SchwarzResult r = run.run();
  run.copy_out(x);
  return r;
}

}  // namespace desync::solvers::detail
