#pragma once
// Jacobi's method with OpenMP threads inside each rank (Bethune et al., 2011, section 3.3): alone on one rank,
// or hybrid on several ranks with halos between ranks through the halo layer (comm::HaloExchange).
//
// Each rank's block is split into T slabs along z, one per thread: slab t holds the planes
// [block_start(nz, T, t), block_start(nz, T, t) + block_size(nz, T, t)) (sizes differ by at most one
// plane). Only thread 0, the thread that initialised MPI, calls MPI (MPI_THREAD_FUNNELED).
//
//   sync   Figure 2: the threads sweep the rank's shared pair of buffers in one parallel loop (slab
//          s by thread s) whose reduction clause sums the residual; thread 0 swaps halos with the
//          neighbouring ranks and runs the blocking convergence test while the others wait at a
//          barrier. Every cell is computed as by the plain MPI solver, so the field is bitwise the
//          same for any T and any number of ranks.
//   async  (3.3.2) each thread sweeps a private copy of its slab and never waits for another
//          thread except on short locks: one lock per inter-thread boundary guards the two planes
//          that cross it. A thread writes its own boundary plane into the shared plane buffer under
//          that lock, and copies its neighbour's plane out of it under the same lock, so every
//          plane it reads comes whole from one iteration of its neighbour. The rank's squared
//          residual is a running sum that each thread corrects by the change of its own part (a
//          delta) in a critical section, taking a copy of the sum in the same section, after every
//          check_every of its sweeps (the paper: every sweep), and after every sweep while an
//          agreement that the sum is at or below the tolerance is being gathered. When every thread
//          has agreed twice (see Agreement in omp_jacobi.cpp) the shared (atomic) stop flag is set;
//          every thread leaves its loop when it sees the flag.
//   racy   (3.3.3) as async without locks or critical section: the shared plane buffers are read
//          and written element by element with relaxed atomic loads and stores (std::atomic_ref),
//          so a plane may mix iterations element by element but there is no data race; the deltas
//          are atomic additions to a std::atomic<double>.
//
// Hybrid async / racy (several ranks): thread 0 also drives the rank's halo traffic and its
// convergence test. Every thread publishes the cells of its slab that neighbouring ranks need
// into a shared mailbox field and takes its slab's part of the rank's halo from it, under a lock
// per thread (async) or with atomic element access (racy). Thread 0 copies the published cells
// into a private field and push()es it every --halo-period of its own iterations, pull()s into that
// private field every iteration and copies the received halos into the mailbox. A rank's halo
// message therefore holds each thread's part from one iteration of that thread (async), the parts
// possibly from different iterations; halo ages are counted in thread 0's iterations. With
// several ranks the threads do not stop on their own: thread 0 feeds the rank's running residual
// into the non-blocking reduction of the MPI async solver, and every rank stops on the same result.
// Thread 0 starts a test only when every thread has added a residual since the previous test
// started and new halo data has arrived from every neighbour rank since then.
//
// After the main phase the slabs are copied back into the rank's field; the true residual and the
// --polish phase (synchronous, threaded) are computed as by the MPI solver. Statistics: the rank's
// `iterations` is the fewest sweeps any of its threads made (thread extremes in
// thread_iterations_min / _max); the time split is thread 0's.
#include <functional>

#include "desync/solvers/jacobi/jacobi.hpp"

namespace desync::solvers {

/// solve_jacobi with options.threads >= 1 OpenMP threads per rank (see above). Collective over the
/// grid. Throws InputError (on every rank) if a rank's block has fewer planes along z than
/// threads, or if the OpenMP runtime gives fewer threads than asked for.
IterationResult solve_jacobi_omp(const decomposition::CartGrid& grid, const problems::Laplace3D& problem,
                              const JacobiOptions& options, decomposition::Field& u);

namespace test_hooks {

/// Test hook (tests/test_omp_jacobi.cpp): lets a test fix how the threads of an asynchronous or
/// racy run interleave, so that what it asserts does not depend on the scheduler. While a hook is
/// set, every thread of such a run calls hook(thread, false) at the top of each pass of its loop,
/// before it looks at the stop flag (so before each sweep), and hook(thread, true) once after it
/// has left the loop. A std::barrier of `threads` participants (arrive_and_wait, then
/// arrive_and_drop when leaving) makes the threads sweep in lockstep. The hook is copied when a run
/// starts; an empty one (the default) costs one untaken branch per sweep. Not for production use.
using OmpThreadHook = std::function<void(int thread, bool leaving)>;
void set_omp_thread_hook(OmpThreadHook hook);

}  // namespace test_hooks

}  // namespace desync::solvers
