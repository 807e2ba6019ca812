#pragma once
// What a kernel needs to know about the cache it runs in: the last-level cache's size and how many
// CPUs share it, how many ranks of a job share a node, and from these whether a kernel's working set
// streams from memory. Kernels use the answer to choose memory-bound code paths (the Jacobi sweep's
// software prefetch, the PDE update's streaming stores), which pay off only when data comes from
// memory and cost time when it would have stayed in cache.
#include <mpi.h>

#include <cstddef>

namespace desync::core {

/// Size in bytes of the last-level cache of CPU 0 and the number of CPUs that share it, from
/// /sys/devices/system/cpu/cpu0/cache (the highest unified level); {0, 0} when unknown.
/// (glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) is only the fallback: on some AMD guests it reports ten
/// times the real size.)
struct CacheInfo {
  std::size_t bytes = 0;
  int shared_by = 0;
};
CacheInfo last_level_cache();

/// Collective over `comm`: how many of its ranks share this rank's node (MPI_COMM_TYPE_SHARED).
int ranks_on_node(MPI_Comm comm);

/// True when `bytes` (a kernel's working set on this rank) exceed this rank's share of the
/// last-level cache: the cache size times the cores the rank computes with (`threads_per_rank`) over
/// the cores that share the cache and run ranks of this job (at most `ranks_on_node` x threads).
/// False when the cache size is unknown.
bool exceeds_cache_share(double bytes, int ranks_on_node, int threads_per_rank, CacheInfo cache);

}  // namespace desync::core
