#pragma once
// One Jacobi sweep for the 7-point Laplacian (paper 000, Figure 1):
//   u_new(i,j,k) = 1/6 * (u(i-1,j,k) + u(i+1,j,k) + u(i,j-1,k) + u(i,j+1,k) + u(i,j,k-1) + u(i,j,k+1))
// over the interior, reading u's halo. The neighbours are always added in this order, so every
// implementation gives bitwise the same u_new.
//
// jacobi_sweep is the optimised kernel; jacobi_sweep_ref (sweep_ref.cpp) is the plain reference the
// tests compare it with.
#include "desync/decomposition/field.hpp"

namespace desync::solvers {

/// u_new <- Jacobi update of u (interior only; u_new's halo is left untouched).
void jacobi_sweep(const decomposition::Field& u, decomposition::Field& u_new);
/// The same update, fused with the local residual of u: returns sum over cells of
/// (sum of neighbours - 6 u)^2, i.e. the local part of ||b - A u||^2.
double jacobi_sweep_residual(const decomposition::Field& u, decomposition::Field& u_new);
/// The same two kernels restricted to the interior planes k_begin <= k < k_end (a thread's slab,
/// see omp_jacobi.hpp); every cell is computed exactly as by the whole-block kernels.
void jacobi_sweep_planes(const decomposition::Field& u, decomposition::Field& u_new, int k_begin, int k_end);
double jacobi_sweep_residual_planes(const decomposition::Field& u, decomposition::Field& u_new, int k_begin,
                                    int k_end);

/// Reference implementations, element by element through Field::operator().
void jacobi_sweep_ref(const decomposition::Field& u, decomposition::Field& u_new);
double jacobi_residual_sq_ref(const decomposition::Field& u);

/// Bytes a sweep must move per cell update: read u, write u_new with write-allocate (3 x 8 B).
inline constexpr double sweep_bytes_per_update = 24.0;

}  // namespace desync::solvers
