#pragma once
// Burgers' equation with K passive scalars, Equation 4 of Aditya, Gysi, Kranzlmüller and Hoefler
// (2019), on a periodic box:
//     u_i,t + u_j u_i,j = ν ∇²u_i (i = 1..3),    φ_k,t + u_j φ_k,j = α_k ∇²φ_k (k = 1..K),
// from a multi-scale sinusoidal initial field. Variable q of the state is u_1, u_2, u_3 for q < 3 and
// φ_{q-2} after them.
//
// The box. The initial field is 2π-periodic in every coordinate; a box of whole periods,
// [0, 2π p_x) x [0, 2π p_y) x [0, 2π p_z), keeps it periodic and smooth. The paper's box is the cube
// (p = 1, 1, 1); desync pde --local on a process grid that is not cubic uses p_a proportional to the
// ranks along axis a. The grid spacing h is the same on every axis.
//
// The discretisation: second-order central differences in space, forward Euler in time,
//     q^{n+1} = q + Δt (-(u_1 q_x + u_2 q_y + u_3 q_z) + D_q ∇²q),
// one step per call of burgers_step on a block whose halos (width 1) are filled. desync pde fills
// them from the neighbours, synchronously or with the asynchrony-tolerant approximation.
#include <vector>

#include "desync/core/cache.hpp"
#include "desync/decomposition/field.hpp"

namespace desync::problems {

struct Burgers3D {
  double viscosity = 0.1;         ///< ν
  int scalars = 2;                ///< K
  std::vector<double> diffusivity;  ///< α_k, k = 1..K; missing entries ν / k

  /// A bound of |u_1| + |u_2| + |u_3| of the initial field: the advective stability limit's U.
  static constexpr double speed_bound = 1.75 * 2.5;

  int variables() const { return 3 + scalars; }
  /// D_q: ν for the velocities, α_k for scalar k = q - 2.
  double diffusivity_of(int q) const;
  /// The initial value of variable q at (x, y, z): modes m = 1, 2, 4 with amplitudes 1/m, the
  /// scalars phase-shifted copies; 2π-periodic in x, y and z.
  double initial(int q, double x, double y, double z) const;
  /// The stability limit of forward Euler with central differences at spacing h:
  /// min(h² / (6 D_max), 2 D_min / U²).
  double stable_dt(double h) const;
};

/// How burgers_step writes the new state. `regular`: ordinary stores; the kernel sweeps tiles of
/// rows through z and prefetches the planes two ahead. `streaming`: non-temporal stores, which skip
/// the write-allocate read of every new value (16 B of memory traffic per point and variable instead
/// of 24) and leave the cache to the planes being read; whole planes in order, each row through a
/// small buffer and written out with its two x-halo cells, which get `in`'s halo values (so that
/// whole cache lines stream; the exchange refills them before a stencil reads them). Streaming pays
/// only when the two states stream from memory: on a state that fits in cache it sends to memory what
/// the next step would have found in cache (burgers_stores_for chooses).
enum class BurgersStores { regular, streaming };
const char* to_string(BurgersStores s);

/// One forward Euler step of Equation 4 on a block stored as `layout` (halo width 1, the halos of
/// `in` filled), variable q of `in` and `out` at q * layout.storage_size(), D_q = diffusivity[q].
/// Writes `out`'s interior only, except with BurgersStores::streaming, which also copies `in`'s
/// x-halo cells into `out`'s. OpenMP over `threads` threads (0 or 1: none).
void burgers_step(const decomposition::Field& layout, const double* in, double* out, int variables,
                  const double* diffusivity, double dt, double h, int threads,
                  BurgersStores stores = BurgersStores::regular);
/// The same step written as Equation 4 reads, one point at a time: the reference the fused,
/// tiled and prefetched burgers_step is tested against (equal up to rounding).
void burgers_step_reference(const decomposition::Field& layout, const double* in, double* out, int variables,
                            const double* diffusivity, double dt, double h);
/// Whether this build has streaming stores (x86-64); without, burgers_step writes with regular
/// stores whatever it is asked.
bool burgers_streaming_available();
/// `streaming` when available and the two states (2 x variables x storage) exceed this rank's share
/// of the last-level cache (core::exceeds_cache_share), `regular` otherwise.
BurgersStores burgers_stores_for(const decomposition::Field& layout, int variables, int ranks_on_node,
                                 int threads_per_rank, core::CacheInfo cache = core::last_level_cache());
/// Memory traffic of one point update per variable, as the Jacobi sweep's: read the old value, write
/// the new one plus its write-allocate read (neighbours come from cache).
inline constexpr double burgers_bytes_per_update_per_variable = 24.0;

}  // namespace desync::problems
