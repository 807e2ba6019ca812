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

  // Asynchronous and racy Jacobi with threads (3.3.2, 3.3.3); see omp_jacobi.hpp.
  void run_async() {
    auto& st = driver_.stats();
    const bool racy = opt_.mode == comm::HaloMode::racy;
    const bool hybrid = grid_.size() > 1;
    const int nthreads = threads_;
    const std::size_t plane_size = u_.stride_z();

    // Inter-thread plane buffers, initialised with the initial guess.
    std::vector<Boundary> boundaries(static_cast<std::size_t>(std::max(0, nthreads - 1)));
    for (int b = 0; b + 1 < nthreads; ++b) {
      const int k = slabs_[static_cast<std::size_t>(b) + 1].k0;  // first plane above the boundary
      auto& bd = boundaries[static_cast<std::size_t>(b)];
      bd.up.assign(plane(u_, k - 1), plane(u_, k - 1) + plane_size);
      bd.down.assign(plane(u_, k), plane(u_, k) + plane_size);
    }

    // Hybrid: the rank mailbox (boundary cells published by the threads, halo cells installed by
    // thread 0), thread 0's private copy for the halo layer, and which cells belong to which thread.
    std::optional<Field> mailbox, rank_buffer;
    std::vector<std::vector<std::size_t>> out_cells(static_cast<std::size_t>(nthreads)),
        in_cells(static_cast<std::size_t>(nthreads));
    std::vector<ThreadLock> rank_locks(static_cast<std::size_t>(nthreads));
    std::optional<comm::HaloExchange> halo;
    std::unique_ptr<comm::NonblockingReduction> reduction;
    if (hybrid) {
      mailbox.emplace(u_);
      rank_buffer.emplace(u_);
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
        u_.for_each_boundary(f, [&](std::size_t, std::size_t idx) { out_cells[owner_of(idx)].push_back(idx); });
        u_.for_each_halo(f, [&](std::size_t, std::size_t idx) { in_cells[owner_of(idx)].push_back(idx); });
      }
      halo.emplace(grid_, detail::async_halo_config(opt_));
      reduction = comm::make_reduction(opt_.reduction, grid_.comm(), IterationDriver::vote_count);
    }

    // Shared state of the threads.
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
    std::vector<PaddedCount> fresh_since(static_cast<std::size_t>(nthreads));
    std::vector<PaddedCount> finished(static_cast<std::size_t>(nthreads));
    std::atomic<int> threads_done{0};
    std::atomic<bool> timed_out{false}, non_finite{false};
    std::vector<std::int64_t> thread_iterations(static_cast<std::size_t>(nthreads), 0);
    Field& u = u_;

    // The first thread to call this decides why a one-rank run stops.
    auto claim = [&](StopReason reason, double residual) {
      int none = -1;
      if (claimed.compare_exchange_strong(none, static_cast<int>(reason), std::memory_order_acq_rel)) {
        claimed_residual = residual;
        stop_flag.store(true, std::memory_order_release);
      }
    };

#pragma omp parallel num_threads(nthreads) default(shared)
    {
      const int t = omp_get_thread_num();
      const auto ts = static_cast<std::size_t>(t);
      const Slab slab = slabs_[ts];
      const std::ptrdiff_t shift = static_cast<std::ptrdiff_t>(slab.k0) * static_cast<std::ptrdiff_t>(plane_size);
      // Private copy of the slab with its halo planes (first touch by its own thread).
      Field a(Index3{u.extent()[0], u.extent()[1], slab.nz});
      std::memcpy(plane(a, -1), plane(u, slab.k0 - 1), (static_cast<std::size_t>(slab.nz) + 2) * plane_size * sizeof(double));
      Field b = a;
      // Nobody writes the rank's field (below, after its loop) before every thread has its copy.
#pragma omp barrier
      Field* c = &a;
      Field* n = &b;
      solvers::TimeSplit own_time;
      solvers::TimeSplit& time = t == 0 ? st.time : own_time;
      std::int64_t it = 0, next_test = 0;
      double my_sq = 0;
      bool first = true, ready = false, done = false;
      Agreement::Mine agreed;
      bool fresh = false;  // thread 0: this iteration put a new residual into the running sum
      // Thread 0, hybrid: time level of each face's halo when the previous test started.
      std::array<std::int64_t, decomposition::num_faces> halo_at_last_test;
      halo_at_last_test.fill(0);  // level 0 is the neighbour's initial guess: wait for a sweep of it

      for (;;) {
        if (stop_flag.load(std::memory_order_acquire)) break;
        if (t == 0 && hybrid) {
          // The rank's halo traffic: published boundary cells out, received halos in.
          core::Stopwatch t_halo;
          double* mb = mailbox->data();
          double* rb = rank_buffer->data();
          if (!done && it % opt_.halo_period == 0) {
            for (std::size_t s = 0; s < out_cells.size(); ++s)
              guarded(racy, rank_locks[s].lock, [&] { read_cells(racy, out_cells[s], mb, rb); });
            halo->push(*rank_buffer, it);
          }
          halo->pull(*rank_buffer, it);
          for (std::size_t s = 0; s < in_cells.size(); ++s)
            guarded(racy, rank_locks[s].lock, [&] { write_cells(racy, in_cells[s], rb, mb); });
          time.halo += t_halo.seconds();
        }

        fresh = false;
        if (!done) {
          const std::uint64_t agreement_at_start = hybrid ? 0 : agreement.snapshot();
          const std::int64_t tests_at_start = hybrid ? tests_started.load(std::memory_order_relaxed) : 0;
          // Neighbour threads' latest planes into this slab's halo planes.
          core::Stopwatch t_halo;
          if (t > 0) {
            auto& bd = boundaries[ts - 1];
            guarded(racy, bd.lock, [&] { read_shared(racy, bd.up.data(), plane(*c, -1), plane_size); });
          }
          if (t + 1 < nthreads) {
            auto& bd = boundaries[ts];
            guarded(racy, bd.lock, [&] { read_shared(racy, bd.down.data(), plane(*c, slab.nz), plane_size); });
          }
          if (hybrid && !in_cells[ts].empty()) {
            double* mb = mailbox->data();
            double* cd = c->data() - shift;  // rank storage index -> slab storage index
            guarded(racy, rank_locks[ts].lock, [&] { read_cells(racy, in_cells[ts], mb, cd); });
          }
          time.halo += t_halo.seconds();
          if (t == 0 && driver_.noise().perturb_now(it)) (*c)(0, 0, 0) = driver_.noise().perturb_value();

          // A residual every --check-every sweeps, and (one rank) after every sweep while an
          // agreement is being gathered: once some thread has seen the sum at or below the
          // tolerance, every thread adds a fresh residual after each sweep until the run stops or
          // someone sees the sum above it again, so the two agreement rounds take a few sweeps, not
          // two --check-every periods.
          const bool with_residual = it >= next_test || (!hybrid && Agreement::pending(agreement_at_start));
          core::Stopwatch t_sweep;
          double sq = 0;
          if (with_residual) {
            sq = jacobi_sweep_residual(*c, *n, prefetch_);
            next_test = it + opt_.iteration.check_every;
          } else {
            jacobi_sweep(*c, *n, prefetch_);
          }
          const double sweep_s = t_sweep.seconds();
          time.compute += sweep_s;
          time.noise += driver_.noise().after_sweep(sweep_s);
          std::swap(c, n);
          ++it;

          // This slab's new boundary planes out to the neighbour threads.
          core::Stopwatch t_publish;
          if (t > 0) {
            auto& bd = boundaries[ts - 1];
            guarded(racy, bd.lock, [&] { write_shared(racy, plane(*c, 0), bd.down.data(), plane_size); });
          }
          if (t + 1 < nthreads) {
            auto& bd = boundaries[ts];
            guarded(racy, bd.lock, [&] { write_shared(racy, plane(*c, slab.nz - 1), bd.up.data(), plane_size); });
          }
          if (hybrid && !out_cells[ts].empty()) {
            double* mb = mailbox->data();
            const double* cd = c->data() - shift;
            guarded(racy, rank_locks[ts].lock, [&] { write_cells(racy, out_cells[ts], cd, mb); });
          }
          time.halo += t_publish.seconds();

          if (with_residual) {
            // The running residual: add this slab's change, keep a copy of the sum (3.3.2).
            core::Stopwatch t_red;
            const double delta = sq - my_sq;
            my_sq = sq;
            double sum = 0;
            if (racy) {
              sum = running_sq_racy.fetch_add(delta, std::memory_order_relaxed) + delta;
            } else {
#pragma omp critical(desync_omp_jacobi_residual)
              {
                running_sq += delta;
                sum = running_sq;
              }
            }
            if (first) {
              first = false;
              contributed.fetch_add(1, std::memory_order_relaxed);
            }
            if (hybrid) fresh_since[ts].value.store(tests_at_start, std::memory_order_relaxed);
            if (!ready) ready = contributed.load(std::memory_order_relaxed) == nthreads;
            if (!std::isfinite(sq)) {
              non_finite.store(true, std::memory_order_relaxed);
              if (!hybrid) claim(StopReason::non_finite, sq);
            }
            if (ready) {
              fresh = true;
              const double residual = std::sqrt(std::max(sum, 0.0)) / driver_.source_norm();
              if (!hybrid) {
                if (t == 0) record(it, residual);
                if (!std::isfinite(residual))
                  claim(StopReason::non_finite, residual);
                else if (residual > opt_.iteration.divergence_factor * driver_.initial_residual())
                  claim(StopReason::diverged, residual);
                else if (residual > opt_.iteration.tol)
                  agreement.disagree();
                else if (agreement.agree(nthreads, agreement_at_start, agreed))
                  claim(StopReason::converged, residual);
              }
            }
            time.reduction += t_red.seconds();
          }
          const bool late = driver_.over_time();
          if (late) timed_out.store(true, std::memory_order_relaxed);
          if (it >= opt_.iteration.max_iters || late) {
            done = true;
            finished[ts].value.store(1, std::memory_order_relaxed);
            threads_done.fetch_add(1, std::memory_order_relaxed);
          }
        }

        if (t == 0 && hybrid) {
          // The rank's part of the convergence test, as the MPI async solver runs it.
          core::Stopwatch t_red;
          const bool all_done = threads_done.load(std::memory_order_relaxed) == nthreads;
          // New halo data from every neighbour rank since the previous test started: a rank that
          // has not heard from its neighbours for a while has only solved its own block against
          // old halos, and its residual says nothing about the global problem.
          bool new_halos = true;
          for (int f = 0; f < decomposition::num_faces; ++f)
            if (!grid_.on_global_boundary(f) && halo->halo_level(f) <= halo_at_last_test[static_cast<std::size_t>(f)])
              new_halos = false;
          bool round_complete = (fresh && ready && new_halos) || all_done;
          const std::int64_t started = tests_started.load(std::memory_order_relaxed);
          for (int s = 0; s < nthreads && round_complete && !all_done; ++s) {
            const auto ss = static_cast<std::size_t>(s);
            round_complete = finished[ss].value.load(std::memory_order_relaxed) != 0 ||
                             fresh_since[ss].value.load(std::memory_order_relaxed) >= started;
          }
          if (!reduction->active() && round_complete) {
            tests_started.store(started + 1, std::memory_order_relaxed);
            for (int f = 0; f < decomposition::num_faces; ++f)
              halo_at_last_test[static_cast<std::size_t>(f)] = halo->halo_level(f);
            double sum = 0;  // the latest sum: every thread's newest residual
            if (racy) {
              sum = running_sq_racy.load(std::memory_order_relaxed);
            } else {
#pragma omp critical(desync_omp_jacobi_residual)
              sum = running_sq;
            }
            // Rounding in the running sum can leave a fully converged rank a tiny negative value.
            double votes[IterationDriver::vote_count];
            IterationDriver::fill_votes(votes, std::max(sum, 0.0), all_done,
                                        timed_out.load(std::memory_order_relaxed),
                                        non_finite.load(std::memory_order_relaxed));
            reduction->start(votes);
          }
          const bool complete = reduction->test();
          time.reduction += t_red.seconds();
          if (complete) {
            if (const auto stop = driver_.completed_test(*reduction, it)) {
              driver_.result().stop = *stop;
              stop_flag.store(true, std::memory_order_release);
              break;
            }
          }
        } else if (done) {
          break;
        }
      }
      thread_iterations[ts] = it;
      // The slab's final iterate back into the rank's field (disjoint planes per thread).
      std::memcpy(plane(u, slab.k0), plane(*c, 0), static_cast<std::size_t>(slab.nz) * plane_size * sizeof(double));
    }

    if (hybrid) {
      core::Stopwatch t_finish;
      reduction->finish();
      halo->close();
      st.time.finish += t_finish.seconds();
      st.halo = halo->stats();
    } else {
      auto& result = driver_.result();
      const int reason = claimed.load();
      if (reason >= 0) {
        result.stop = static_cast<StopReason>(reason);
        driver_.set_last_tested(claimed_residual);
        if (result.history.empty() || result.history.back().residual != claimed_residual)
          result.history.push_back({driver_.seconds(), thread_iterations[0], claimed_residual});
        if (result.stop == StopReason::non_finite) {
          result.message = "non-finite value (NaN or Inf) in the solution at iteration " +
                           std::to_string(thread_iterations[0]) + " of thread 0";
        } else if (result.stop == StopReason::diverged) {
          result.message = divergence_message(driver_.initial_residual(), claimed_residual, opt_.iteration.divergence_factor);
        }
      } else {
        result.stop = timed_out.load() ? StopReason::time_limit : StopReason::max_iters;
      }
      st.reductions = static_cast<long>(result.history.size());
    }
    cur_ = &u_;
    next_ = &v_;
    st.thread_iterations_min = *std::min_element(thread_iterations.begin(), thread_iterations.end());
    st.thread_iterations_max = *std::max_element(thread_iterations.begin(), thread_iterations.end());
    st.iterations = st.thread_iterations_min;
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

}  // namespace desync::solvers
