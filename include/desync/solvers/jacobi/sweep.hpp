#pragma once
// One Jacobi sweep for the 7-point Laplacian (Bethune et al., 2011, Figure 1):
//   u_new(i,j,k) = 1/6 * (u(i-1,j,k) + u(i+1,j,k) + u(i,j-1,k) + u(i,j+1,k) + u(i,j,k-1) + u(i,j,k+1))
// over the interior, reading u's halo. The neighbours are always added in this order, so every
// implementation gives bitwise the same u_new.
//
// jacobi_sweep is the optimised kernel; jacobi_sweep_ref (sweep_ref.cpp) is the plain reference the
// tests compare it with.
#include <cstddef>

#include "desync/core/cache.hpp"
#include "desync/decomposition/field.hpp"

namespace desync::solvers {

/// Software prefetch in the sweep kernels. `on`: while computing row j of plane k, the kernel asks
/// for the same row of u about 640 KiB ahead (at least two planes) and, for writing, of u_new about
/// 320 KiB ahead (at least one plane). It
/// only moves loads earlier, never changes a value. When the two fields stream from memory it made
/// one AMD EPYC core sweep about a third faster, while on the Intel Xeon machines of
/// docs/benchmarks.md ("Sweep kernel vs STREAM", which runs both settings) off streams as fast or
/// faster; when they fit in the last-level cache it costs some 10 %, so solvers choose with
/// sweep_prefetch_for().
enum class SweepPrefetch { off, on };

/// u_new <- Jacobi update of u (interior only; u_new's halo is left untouched).
void jacobi_sweep(const decomposition::Field& u, decomposition::Field& u_new,
                  SweepPrefetch prefetch = SweepPrefetch::off);
/// The same update, fused with the local residual of u: returns sum over cells of
/// (sum of neighbours - 6 u)^2, i.e. the local part of ||b - A u||^2.
double jacobi_sweep_residual(const decomposition::Field& u, decomposition::Field& u_new,
                             SweepPrefetch prefetch = SweepPrefetch::off);
/// The same two kernels restricted to the interior planes k_begin <= k < k_end (a thread's slab,
/// see omp_jacobi.hpp); every cell is computed exactly as by the whole-block kernels.
void jacobi_sweep_planes(const decomposition::Field& u, decomposition::Field& u_new, int k_begin, int k_end,
                         SweepPrefetch prefetch = SweepPrefetch::off);
double jacobi_sweep_residual_planes(const decomposition::Field& u, decomposition::Field& u_new, int k_begin,
                                    int k_end, SweepPrefetch prefetch = SweepPrefetch::off);

/// The cache facts the prefetch choice rests on live in core (cache.hpp).
using core::CacheInfo;
using core::last_level_cache;
using core::ranks_on_node;

/// The prefetch choice for sweeping `u` into a field of the same shape: `on` when the two fields
/// exceed this rank's share of the last-level cache, i.e. when the sweep streams from memory.
/// A rank's share is the cache size times the cores it sweeps with (`threads_per_rank`) over the
/// cores that share the cache and run ranks of this job (at most `ranks_on_node` x threads);
/// `off` when the cache size is unknown.
SweepPrefetch sweep_prefetch_for(const decomposition::Field& u, int ranks_on_node, int threads_per_rank,
                                 CacheInfo cache = last_level_cache());

/// Reference implementations, element by element through Field::operator().
void jacobi_sweep_ref(const decomposition::Field& u, decomposition::Field& u_new);
double jacobi_residual_sq_ref(const decomposition::Field& u);

/// Bytes a sweep must move per cell update: read u, write u_new with write-allocate (3 x 8 B).
inline constexpr double sweep_bytes_per_update = 24.0;

}  // namespace desync::solvers
