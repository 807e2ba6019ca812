// Jacobi with OpenMP threads inside each rank: Bethune et al. (2011), section 3.3 (see omp_jacobi.hpp).
#include "desync/core/timer.hpp"
#include "desync/solvers/jacobi/omp_jacobi.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/solvers/jacobi/sweep.hpp"
#include "jacobi_run_base.hpp"

namespace desync::solvers {

using decomposition::Field;
using decomposition::Index3;

namespace {

/// test_hooks::set_omp_thread_hook's hook (empty: none).
test_hooks::OmpThreadHook& omp_thread_hook() {
  static test_hooks::OmpThreadHook hook;
  return hook;
}

/// An OpenMP lock (Bethune et al. (2011) use omp_set_lock / omp_unset_lock), usable with std::lock_guard.
class OmpLock {
 public:
  OmpLock() { omp_init_lock(&lock_); }
  ~OmpLock() { omp_destroy_lock(&lock_); }
  OmpLock(const OmpLock&) = delete;
  OmpLock& operator=(const OmpLock&) = delete;
  void lock() { omp_set_lock(&lock_); }
  void unlock() { omp_unset_lock(&lock_); }

 private:
  omp_lock_t lock_;
};

/// The two planes that cross the boundary between thread b (below) and thread b + 1 (above), each
/// a whole storage plane of the block (halo ring included), and the lock that guards them (async).
struct alignas(64) Boundary {
  OmpLock lock;
  std::vector<double> up;    // thread b's top plane, read by thread b + 1
  std::vector<double> down;  // thread b + 1's bottom plane, read by thread b
};

struct alignas(64) ThreadLock {
  OmpLock lock;  // async hybrid: guards this thread's cells of the rank mailbox
};

/// Reads n doubles that another thread may write concurrently: element-wise relaxed atomic loads
/// (racy), or a plain copy (the caller holds the lock that guards them).
void read_shared(bool racy, double* shared, double* mine, std::size_t n) {
  if (racy) {
    for (std::size_t i = 0; i < n; ++i) mine[i] = std::atomic_ref<double>(shared[i]).load(std::memory_order_relaxed);
  } else {
    std::memcpy(mine, shared, n * sizeof(double));
  }
}

/// Writes n doubles that another thread may read concurrently (see read_shared).
void write_shared(bool racy, const double* mine, double* shared, std::size_t n) {
  if (racy) {
    for (std::size_t i = 0; i < n; ++i) std::atomic_ref<double>(shared[i]).store(mine[i], std::memory_order_relaxed);
  } else {
    std::memcpy(shared, mine, n * sizeof(double));
  }
}

/// Reads the cells `cells` of a buffer that another thread may write concurrently (see read_shared).
void read_cells(bool racy, const std::vector<std::size_t>& cells, double* shared, double* mine) {
  for (std::size_t idx : cells)
    mine[idx] = racy ? std::atomic_ref<double>(shared[idx]).load(std::memory_order_relaxed) : shared[idx];
}

/// Writes the cells `cells` of a buffer that another thread may read concurrently (see read_shared).
void write_cells(bool racy, const std::vector<std::size_t>& cells, const double* mine, double* shared) {
  for (std::size_t idx : cells) {
    if (racy)
      std::atomic_ref<double>(shared[idx]).store(mine[idx], std::memory_order_relaxed);
    else
      shared[idx] = mine[idx];
  }
}

/// Runs access() holding `lock` (async), or without it (racy: the access is made of atomics).
template <class Access>
void guarded(bool racy, OmpLock& lock, Access&& access) {
  if (racy) {
    access();
  } else {
    std::lock_guard<OmpLock> guard(lock);
    access();
  }
}

/// Storage plane k (halo ring included) of a field.
double* plane(Field& f, int k) { return f.data() + f.index(-1, -1, k); }

/// One rank: the threads' agreement that the run has converged. The running sum mixes slabs at
/// different iterations, and a thread that has not run for a while (more threads than free cores)
/// contributes an old value, so one thread seeing the sum below the tolerance is not enough. The
/// run stops after two rounds in which every thread, right after adding a fresh residual of its
/// own, saw the sum at or below the tolerance, nobody seeing it above in between (an epoch). A
/// second-round agreement counts only from an iteration that began after the first round was
/// complete, so every thread has then swept with planes its neighbours wrote after they agreed.
/// State: epoch in the high bits, agreements in this epoch in the low bits.
class Agreement {
 public:
  struct Mine {
    std::uint64_t epoch = ~std::uint64_t{0};
    int rounds = 0;  // agreements this thread has given in `epoch`
  };
  /// Read at the start of each of a thread's iterations; passed to agree().
  std::uint64_t snapshot() const { return state_.load(std::memory_order_relaxed); }
  /// Some thread has agreed in the epoch of `snapshot`, and nobody has disagreed since.
  static bool pending(std::uint64_t snapshot) { return (snapshot & count_mask) != 0; }
  /// The calling thread saw the sum at or below the tolerance; `at_start` is its snapshot at the
  /// start of the iteration. True for the thread that completes the agreement.
  bool agree(int threads, std::uint64_t at_start, Mine& mine) {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t epoch = s >> count_bits;
      const int rounds = epoch == mine.epoch ? mine.rounds : 0;
      const bool second_round_open =
          (at_start >> count_bits) == epoch && static_cast<int>(at_start & count_mask) >= threads;
      if (rounds >= 2 || (rounds == 1 && !second_round_open)) return false;
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_relaxed)) {
        mine.epoch = epoch;
        mine.rounds = rounds + 1;
        return static_cast<int>((s & count_mask) + 1) == 2 * threads;
      }
    }
  }
  /// The calling thread saw the sum above the tolerance: earlier agreements no longer count.
  void disagree() {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    while ((s & count_mask) != 0 &&
           !state_.compare_exchange_weak(s, ((s >> count_bits) + 1) << count_bits, std::memory_order_relaxed)) {
    }
  }

 private:
  static constexpr int count_bits = 24;  // 2 x threads per rank < 2^24
  static constexpr std::uint64_t count_mask = (std::uint64_t{1} << count_bits) - 1;
  std::atomic<std::uint64_t> state_{0};
};

/// A counter on its own cache line.
struct alignas(64) PaddedCount {
  std::atomic<std::int64_t> value{0};
};

struct Slab {
  int k0 = 0;  // first plane of the rank's block
  int nz = 0;  // planes
};

class OmpJacobiRun : public LocalProblem, private detail::JacobiRunBase {
 public:
  OmpJacobiRun(const decomposition::CartGrid& grid, const problems::Laplace3D& problem, const JacobiOptions& options,
               Field& u)
      : JacobiRunBase(grid, problem, options, u, *this), threads_(options.threads) {
    const int nz = grid.local()[2];
    agree_or_throw(grid.comm(), threads_ >= 1, fmt::format("--threads {}: must be >= 1", threads_));
    agree_or_throw(grid.comm(), threads_ <= nz,
                   fmt::format("--threads {}: more threads than planes along z ({} in rank {}'s block)", threads_,
                               nz, grid.rank()));
    int team = 0;
#pragma omp parallel num_threads(threads_)
    {
      if (omp_get_thread_num() == 0) team = omp_get_num_threads();
    }
    agree_or_throw(grid.comm(), team == threads_,
                   fmt::format("--threads {}: the OpenMP runtime provides only {} (see OMP_THREAD_LIMIT, OMP_DYNAMIC)",
                               threads_, team));
    for (int t = 0; t < threads_; ++t)
      slabs_.push_back({decomposition::block_start(nz, threads_, t), decomposition::block_size(nz, threads_, t)});
    start();
    driver_.stats().threads = threads_;
  }

  IterationResult run() {
    return driver_.run([this](IterationPhase phase, std::int64_t& iterations,
                              TimeSplit& time) { return run_sync(phase, iterations, time); },
                       [this] { run_async(); });
  }

 private:
  double local_source_norm_sq() override { return source_norm_sq(); }
  double true_residual_sq() override { return residual_sq(); }
  void finish() override { final_field(); }

  // Figure 2 with the MPI solver's synchronous halo swap between ranks (done by thread 0). The
  // polish phase uses it too, exactly as the MPI solver's polish does.
  StopReason run_sync(IterationPhase which, std::int64_t& iterations, TimeSplit& time) {
    const IterationDriver::SyncPhase phase = driver_.begin_sync(which);
    const bool polishing = phase.polishing;
    const int period = phase.period;
    const int check_every = phase.check_every;
    comm::HaloExchange halo(grid_, detail::sync_halo_config(opt_));
    std::optional<StopReason> stop;  // set by thread 0 on a check iteration, read after a barrier
    double residual_sq = 0;          // the parallel loop's reduction variable
    Field* const start_cur = cur_;
    Field* const start_next = next_;
    core::Stopwatch t_sweep;
#pragma omp parallel num_threads(threads_) default(shared)
    {
      const int t = omp_get_thread_num();
      Field* c = start_cur;
      Field* n = start_next;
      for (std::int64_t it = 0;; ++it) {
        const bool at_limit = it >= opt_.iteration.max_iters;
        const bool check = it % check_every == 0 || at_limit;
        if (t == 0) {
          core::Stopwatch t_halo;
          if (it % period == 0)
            halo.exchange(*c, it);
          else
            halo.refresh(*c);
          time.halo += t_halo.seconds();
          if (!polishing && driver_.noise().perturb_now(it)) (*c)(0, 0, 0) = driver_.noise().perturb_value();
          residual_sq = 0;
          t_sweep = core::Stopwatch();
        }
#pragma omp barrier
        // One slab per thread (schedule static, 1); the implicit barrier at the end of the loop
        // makes the whole new iterate visible before anyone reads it.
#pragma omp for schedule(static, 1) reduction(+ : residual_sq)
        for (int s = 0; s < threads_; ++s) {
          const int k0 = slabs_[static_cast<std::size_t>(s)].k0;
          const int k1 = k0 + slabs_[static_cast<std::size_t>(s)].nz;
          if (check)
            residual_sq += jacobi_sweep_residual_planes(*c, *n, k0, k1, prefetch_);
          else
            jacobi_sweep_planes(*c, *n, k0, k1, prefetch_);
        }
        if (t == 0) {
          const double sweep_s = t_sweep.seconds();
          time.compute += sweep_s;
          time.noise += driver_.noise().after_sweep(sweep_s);
          if (check) {
            // The test judged *c; stopping keeps it and drops the sweep just made.
            stop = driver_.sync_test(residual_sq, at_limit, it, time);
            if (stop) {
              iterations = it;
              cur_ = c;
              next_ = n;
            }
          }
        }
        if (check) {
#pragma omp barrier
          if (stop) break;
        }
        std::swap(c, n);
      }
    }
    close_sync_halo(halo, phase, time);
    // Every thread made every iteration of the main phase.
    if (!polishing) driver_.stats().thread_iterations_min = driver_.stats().thread_iterations_max = iterations;
    return *stop;
  }

  // ---- Asynchronous and racy Jacobi with threads (3.3.2, 3.3.3); see omp_jacobi.hpp -------------

  // What the threads of an asynchronous run share.
  struct AsyncShared {
    AsyncShared(int nthreads, bool racy, bool hybrid)
        : racy(racy), hybrid(hybrid), boundaries(static_cast<std::size_t>(std::max(0, nthreads - 1))),
          out_cells(static_cast<std::size_t>(nthreads)), in_cells(static_cast<std::size_t>(nthreads)),
          rank_locks(static_cast<std::size_t>(nthreads)), fresh_since(static_cast<std::size_t>(nthreads)),
          finished(static_cast<std::size_t>(nthreads)), thread_iterations(static_cast<std::size_t>(nthreads), 0) {}

    const bool racy;    // racy mode: element-wise atomic reads and writes instead of locks
    const bool hybrid;  // more than one rank: the rank mailbox, halo exchange and reduction
    // Inter-thread plane buffers, initialised with the initial guess.
    std::vector<Boundary> boundaries;
    // Hybrid: the rank mailbox (boundary cells published by the threads, halo cells installed by
    // thread 0), thread 0's private copy for the halo layer, and which cells belong to which thread.
    std::optional<Field> mailbox, rank_buffer;
    std::vector<std::vector<std::size_t>> out_cells, in_cells;
    std::vector<ThreadLock> rank_locks;
    std::optional<comm::HaloExchange> halo;
    std::unique_ptr<comm::NonblockingReduction> reduction;

    std::atomic<bool> stop_flag{false};
    std::atomic<int> claimed{-1};  // one rank: the StopReason of the first thread to stop the run
    double claimed_residual = 0;   // written only by the thread that set `claimed`
    double running_sq = 0;         // async: guarded by the critical section
    std::atomic<double> running_sq_racy{0.0};
    std::atomic<int> contributed{0};  // threads whose residual is in the running sum
    Agreement agreement;              // one rank: see Agreement
    // Hybrid: thread 0 starts a convergence test only when every thread (not done yet) has added a
    // residual from an iteration that began after the previous test started, as every rank of the
    // MPI solver contributes a fresh residual to every test. tests_started counts the starts;
    // fresh_since[t] is the count thread t saw at the start of the iteration of its last residual.
    std::atomic<std::int64_t> tests_started{0};
    std::vector<PaddedCount> fresh_since;
    std::vector<PaddedCount> finished;
    std::atomic<int> threads_done{0};
    std::atomic<bool> timed_out{false}, non_finite{false};
    std::vector<std::int64_t> thread_iterations;
    test_hooks::OmpThreadHook hook;  // test_hooks::set_omp_thread_hook's, copied when the run starts

    // The first thread to call this decides why a one-rank run stops.
    void claim(StopReason reason, double residual) {
      int none = -1;
      if (claimed.compare_exchange_strong(none, static_cast<int>(reason), std::memory_order_acq_rel)) {
        claimed_residual = residual;
        stop_flag.store(true, std::memory_order_release);
      }
    }
  };

  // One thread's state: its slab, a private copy of it with its halo planes (two buffers), its
  // clock and its part of the running residual.
  struct ThreadState {
    ThreadState(int t, const Slab& slab, const Field& u, std::size_t plane_size)
        : t(t), ts(static_cast<std::size_t>(t)), slab(slab),
          shift(static_cast<std::ptrdiff_t>(slab.k0) * static_cast<std::ptrdiff_t>(plane_size)),
          a(Index3{u.extent()[0], u.extent()[1], slab.nz}), b(Index3{u.extent()[0], u.extent()[1], slab.nz}) {
      halo_at_last_test.fill(0);  // level 0 is the neighbour's initial guess: wait for a sweep of it
    }
    const int t;
    const std::size_t ts;
    const Slab slab;
    const std::ptrdiff_t shift;  // rank storage index - slab storage index
    Field a, b;
    Field* c = &a;
    Field* n = &b;
    solvers::TimeSplit own_time;
    solvers::TimeSplit* time = &own_time;  // thread 0: the rank's
    std::int64_t it = 0, next_test = 0;
    double my_sq = 0;
    bool first = true, ready = false, done = false;
    Agreement::Mine agreed;
    bool fresh = false;  // thread 0: this iteration put a new residual into the running sum
    // Thread 0, hybrid: time level of each face's halo when the previous test started.
    std::array<std::int64_t, decomposition::num_faces> halo_at_last_test;
  };

  // The shared state: plane buffers between threads and, with several ranks, the mailbox, the cells
  // of each thread, the halo exchange and the reduction.
  void set_up_async(AsyncShared& sh) {
    const int nthreads = threads_;
    const std::size_t plane_size = u_.stride_z();
    for (int b = 0; b + 1 < nthreads; ++b) {
      const int k = slabs_[static_cast<std::size_t>(b) + 1].k0;  // first plane above the boundary
      auto& bd = sh.boundaries[static_cast<std::size_t>(b)];
      bd.up.assign(plane(u_, k - 1), plane(u_, k - 1) + plane_size);
      bd.down.assign(plane(u_, k), plane(u_, k) + plane_size);
    }
    if (!sh.hybrid) return;
    sh.mailbox.emplace(u_);
    sh.rank_buffer.emplace(u_);
    std::vector<int> owner(static_cast<std::size_t>(u_.extent()[2]));
    for (int t = 0; t < nthreads; ++t)
      for (int k = 0; k < slabs_[static_cast<std::size_t>(t)].nz; ++k)
        owner[static_cast<std::size_t>(slabs_[static_cast<std::size_t>(t)].k0 + k)] = t;
    const int nz = u_.extent()[2];
    auto owner_of = [&](std::size_t idx) {
      const int k = static_cast<int>(idx / plane_size) - 1;
      return static_cast<std::size_t>(owner[static_cast<std::size_t>(std::clamp(k, 0, nz - 1))]);
    };
    for (int f = 0; f < decomposition::num_faces; ++f) {
      if (grid_.on_global_boundary(f)) continue;
      u_.for_each_boundary(f, [&](std::size_t, std::size_t idx) { sh.out_cells[owner_of(idx)].push_back(idx); });
      u_.for_each_halo(f, [&](std::size_t, std::size_t idx) { sh.in_cells[owner_of(idx)].push_back(idx); });
    }
    sh.halo.emplace(grid_, detail::async_halo_config(opt_));
    sh.reduction = comm::make_reduction(opt_.reduction, grid_.comm(), IterationDriver::vote_count);
  }

  // Thread 0, hybrid: the rank's halo traffic, published boundary cells out, received halos in.
  void rank_halo_traffic(AsyncShared& sh, ThreadState& me) {
    core::Stopwatch t_halo;
    double* mb = sh.mailbox->data();
    double* rb = sh.rank_buffer->data();
    if (!me.done && me.it % opt_.halo_period == 0) {
      for (std::size_t s = 0; s < sh.out_cells.size(); ++s)
        guarded(sh.racy, sh.rank_locks[s].lock, [&] { read_cells(sh.racy, sh.out_cells[s], mb, rb); });
      sh.halo->push(*sh.rank_buffer, me.it);
    }
    sh.halo->pull(*sh.rank_buffer, me.it);
    for (std::size_t s = 0; s < sh.in_cells.size(); ++s)
      guarded(sh.racy, sh.rank_locks[s].lock, [&] { write_cells(sh.racy, sh.in_cells[s], rb, mb); });
    me.time->halo += t_halo.seconds();
  }

  // The slab's exchange with the neighbour threads and the rank's mailbox. in: their latest planes,
  // and the rank's halo cells, into this slab's halo planes; out: its new boundary planes to the
  // neighbour threads, and its boundary cells to the mailbox.
  void slab_exchange(AsyncShared& sh, ThreadState& me, bool in) {
    const std::size_t plane_size = u_.stride_z();
    core::Stopwatch t_halo;
    if (me.t > 0) {  // the plane below: its `up` is the halo plane -1, its `down` my plane 0
      auto& bd = sh.boundaries[me.ts - 1];
      guarded(sh.racy, bd.lock, [&] {
        if (in)
          read_shared(sh.racy, bd.up.data(), plane(*me.c, -1), plane_size);
        else
          write_shared(sh.racy, plane(*me.c, 0), bd.down.data(), plane_size);
      });
    }
    if (me.t + 1 < threads_) {  // the plane above: its `down` is the halo plane nz, its `up` my plane nz - 1
      auto& bd = sh.boundaries[me.ts];
      guarded(sh.racy, bd.lock, [&] {
        if (in)
          read_shared(sh.racy, bd.down.data(), plane(*me.c, me.slab.nz), plane_size);
        else
          write_shared(sh.racy, plane(*me.c, me.slab.nz - 1), bd.up.data(), plane_size);
      });
    }
    const auto& cells = in ? sh.in_cells[me.ts] : sh.out_cells[me.ts];
    if (sh.hybrid && !cells.empty()) {
      double* mb = sh.mailbox->data();
      double* cd = me.c->data() - me.shift;  // rank storage index -> slab storage index
      guarded(sh.racy, sh.rank_locks[me.ts].lock, [&] {
        if (in)
          read_cells(sh.racy, cells, mb, cd);
        else
          write_cells(sh.racy, cells, cd, mb);
      });
    }
    me.time->halo += t_halo.seconds();
  }

  // The running residual (3.3.2): add this slab's change sq - my_sq, keep a copy of the sum; one rank:
  // the thread judges the sum itself and claims the stop.
  void add_residual(AsyncShared& sh, ThreadState& me, double sq, std::uint64_t agreement_at_start,
                    std::int64_t tests_at_start) {
    core::Stopwatch t_red;
    const double delta = sq - me.my_sq;
    me.my_sq = sq;
    double sum = 0;
    if (sh.racy) {
      sum = sh.running_sq_racy.fetch_add(delta, std::memory_order_relaxed) + delta;
    } else {
#pragma omp critical(desync_omp_jacobi_residual)
      {
        sh.running_sq += delta;
        sum = sh.running_sq;
      }
    }
    if (me.first) {
      me.first = false;
      sh.contributed.fetch_add(1, std::memory_order_relaxed);
    }
    if (sh.hybrid) sh.fresh_since[me.ts].value.store(tests_at_start, std::memory_order_relaxed);
    if (!me.ready) me.ready = sh.contributed.load(std::memory_order_relaxed) == threads_;
    if (!std::isfinite(sq)) {
      sh.non_finite.store(true, std::memory_order_relaxed);
      if (!sh.hybrid) sh.claim(StopReason::non_finite, sq);
    }
    if (me.ready) {
      me.fresh = true;
      const double residual = std::sqrt(std::max(sum, 0.0)) / driver_.source_norm();
      if (!sh.hybrid) {
        if (me.t == 0) record(me.it, residual);
        if (!std::isfinite(residual))
          sh.claim(StopReason::non_finite, residual);
        else if (residual > opt_.iteration.divergence_factor * driver_.initial_residual())
          sh.claim(StopReason::diverged, residual);
        else if (residual > opt_.iteration.tol)
          sh.agreement.disagree();
        else if (sh.agreement.agree(threads_, agreement_at_start, me.agreed))
          sh.claim(StopReason::converged, residual);
      }
    }
    me.time->reduction += t_red.seconds();
  }

  // One sweep of the thread's slab: halo planes in, the sweep (with a residual every --check-every
  // sweeps, and, one rank, after every sweep while an agreement is being gathered), boundary out,
  // the running residual, the limits.
  void sweep_step(AsyncShared& sh, ThreadState& me) {
    const std::uint64_t agreement_at_start = sh.hybrid ? 0 : sh.agreement.snapshot();
    const std::int64_t tests_at_start = sh.hybrid ? sh.tests_started.load(std::memory_order_relaxed) : 0;
    slab_exchange(sh, me, true);
    if (me.t == 0 && driver_.noise().perturb_now(me.it)) (*me.c)(0, 0, 0) = driver_.noise().perturb_value();
    // Once some thread has seen the sum at or below the tolerance, every thread adds a fresh residual
    // after each sweep until the run stops or someone sees the sum above it again, so the two
    // agreement rounds take a few sweeps, not two --check-every periods.
    const bool with_residual = me.it >= me.next_test || (!sh.hybrid && Agreement::pending(agreement_at_start));
    core::Stopwatch t_sweep;
    double sq = 0;
    if (with_residual) {
      sq = jacobi_sweep_residual(*me.c, *me.n, prefetch_);
      me.next_test = me.it + opt_.iteration.check_every;
    } else {
      jacobi_sweep(*me.c, *me.n, prefetch_);
    }
    const double sweep_s = t_sweep.seconds();
    me.time->compute += sweep_s;
    me.time->noise += driver_.noise().after_sweep(sweep_s);
    std::swap(me.c, me.n);
    ++me.it;
    slab_exchange(sh, me, false);
    if (with_residual) add_residual(sh, me, sq, agreement_at_start, tests_at_start);
    const bool late = driver_.over_time();
    if (late) sh.timed_out.store(true, std::memory_order_relaxed);
    if (me.it >= opt_.iteration.max_iters || late) {
      me.done = true;
      sh.finished[me.ts].value.store(1, std::memory_order_relaxed);
      sh.threads_done.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Thread 0, hybrid: the rank's part of the convergence test, as the MPI async solver runs it.
  // Returns true when the run stops.
  bool rank_test(AsyncShared& sh, ThreadState& me) {
    core::Stopwatch t_red;
    const bool all_done = sh.threads_done.load(std::memory_order_relaxed) == threads_;
    // New halo data from every neighbour rank since the previous test started: a rank that has not
    // heard from its neighbours for a while has only solved its own block against old halos, and
    // its residual says nothing about the global problem.
    bool new_halos = true;
    for (int f = 0; f < decomposition::num_faces; ++f)
      if (!grid_.on_global_boundary(f) && sh.halo->halo_level(f) <= me.halo_at_last_test[static_cast<std::size_t>(f)])
        new_halos = false;
    bool round_complete = (me.fresh && me.ready && new_halos) || all_done;
    const std::int64_t started = sh.tests_started.load(std::memory_order_relaxed);
    for (int s = 0; s < threads_ && round_complete && !all_done; ++s) {
      const auto ss = static_cast<std::size_t>(s);
      round_complete = sh.finished[ss].value.load(std::memory_order_relaxed) != 0 ||
                       sh.fresh_since[ss].value.load(std::memory_order_relaxed) >= started;
    }
    if (!sh.reduction->active() && round_complete) {
      sh.tests_started.store(started + 1, std::memory_order_relaxed);
      for (int f = 0; f < decomposition::num_faces; ++f)
        me.halo_at_last_test[static_cast<std::size_t>(f)] = sh.halo->halo_level(f);
      double sum = 0;  // the latest sum: every thread's newest residual
      if (sh.racy) {
        sum = sh.running_sq_racy.load(std::memory_order_relaxed);
      } else {
#pragma omp critical(desync_omp_jacobi_residual)
        sum = sh.running_sq;
      }
      // Rounding in the running sum can leave a fully converged rank a tiny negative value.
      double votes[IterationDriver::vote_count];
      IterationDriver::fill_votes(votes, std::max(sum, 0.0), all_done, sh.timed_out.load(std::memory_order_relaxed),
                                  sh.non_finite.load(std::memory_order_relaxed));
      sh.reduction->start(votes);
    }
    const bool complete = sh.reduction->test();
    me.time->reduction += t_red.seconds();
    if (!complete) return false;
    const auto stop = driver_.completed_test(*sh.reduction, me.it);
    if (!stop) return false;
    driver_.result().stop = *stop;
    sh.stop_flag.store(true, std::memory_order_release);
    return true;
  }

  // One thread's run: its private slab, sweeps until the run stops, the slab back into the rank's field.
  void thread_run(AsyncShared& sh) {
    const int t = omp_get_thread_num();
    const std::size_t plane_size = u_.stride_z();
    ThreadState me(t, slabs_[static_cast<std::size_t>(t)], u_, plane_size);
    if (t == 0) me.time = &driver_.stats().time;
    // Private copy of the slab with its halo planes (first touch by its own thread).
    std::memcpy(plane(me.a, -1), plane(u_, me.slab.k0 - 1),
                (static_cast<std::size_t>(me.slab.nz) + 2) * plane_size * sizeof(double));
    me.b = me.a;
    // Nobody writes the rank's field (below, after its loop) before every thread has its copy.
#pragma omp barrier
    for (;;) {
      if (sh.hook) sh.hook(t, false);
      if (sh.stop_flag.load(std::memory_order_acquire)) break;
      if (t == 0 && sh.hybrid) rank_halo_traffic(sh, me);
      me.fresh = false;
      if (!me.done) sweep_step(sh, me);
      if (t == 0 && sh.hybrid) {
        if (rank_test(sh, me)) break;
      } else if (me.done) {
        break;
      }
    }
    if (sh.hook) sh.hook(t, true);
    sh.thread_iterations[me.ts] = me.it;
    // The slab's final iterate back into the rank's field (disjoint planes per thread).
    std::memcpy(plane(u_, me.slab.k0), plane(*me.c, 0), static_cast<std::size_t>(me.slab.nz) * plane_size * sizeof(double));
  }

  // After the threads: close the rank's exchange (hybrid) or settle why a one-rank run stopped.
  void finish_async(AsyncShared& sh) {
    auto& st = driver_.stats();
    if (sh.hybrid) {
      core::Stopwatch t_finish;
      sh.reduction->finish();
      sh.halo->close();
      st.time.finish += t_finish.seconds();
      st.halo = sh.halo->stats();
    } else {
      auto& result = driver_.result();
      const int reason = sh.claimed.load();
      if (reason >= 0) {
        result.stop = static_cast<StopReason>(reason);
        driver_.set_last_tested(sh.claimed_residual);
        if (result.history.empty() || result.history.back().residual != sh.claimed_residual)
          result.history.push_back({driver_.seconds(), sh.thread_iterations[0], sh.claimed_residual});
        if (result.stop == StopReason::non_finite) {
          result.message = "non-finite value (NaN or Inf) in the solution at iteration " +
                           std::to_string(sh.thread_iterations[0]) + " of thread 0";
        } else if (result.stop == StopReason::diverged) {
          result.message =
              divergence_message(driver_.initial_residual(), sh.claimed_residual, opt_.iteration.divergence_factor);
        }
      } else {
        result.stop = sh.timed_out.load() ? StopReason::time_limit : StopReason::max_iters;
      }
      st.reductions = static_cast<long>(result.history.size());
    }
    cur_ = &u_;
    next_ = &v_;
    const auto& its = sh.thread_iterations;
    st.thread_iterations_min = *std::min_element(its.begin(), its.end());
    st.thread_iterations_max = *std::max_element(its.begin(), its.end());
    st.iterations = st.thread_iterations_min;
  }

  void run_async() {
    AsyncShared sh(threads_, opt_.mode == comm::HaloMode::racy, grid_.size() > 1);
    sh.hook = omp_thread_hook();
    set_up_async(sh);
#pragma omp parallel num_threads(threads_) default(shared)
    thread_run(sh);
    finish_async(sh);
  }

  // One rank, thread 0: a history point (and --monitor line) for a residual it saw.
  void record(std::int64_t it, double residual) {
    driver_.set_last_tested(residual);
    driver_.record_point(it, residual);
  }

  int threads_;
  std::vector<Slab> slabs_;
};

}  // namespace

IterationResult solve_jacobi_omp(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                              const JacobiOptions& options, Field& u) {
  OmpJacobiRun run(grid, problem, options, u);
  return run.run();
}

void test_hooks::set_omp_thread_hook(OmpThreadHook hook) { omp_thread_hook() = std::move(hook); }

}  // namespace desync::solvers
