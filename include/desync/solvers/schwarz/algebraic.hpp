#pragma once
// Restricted additive Schwarz on an assembled matrix (solvers::OverlappingSubdomain), optionally
// optimized (Robin), synchronous and asynchronous: the algebraic counterpart of the grid solver of
// solvers/schwarz/schwarz.hpp, after Yamazaki, Chow, Bouteiller and Dongarra (2019), sections 3-4.
// Both are the one run of schwarz_run.cpp over a solvers::Subdomain (subdomain.hpp), with one
// options type and one result type (schwarz_options.hpp).
//
// Rank p holds its extended subdomain Omega_p (overlap delta by graph distance) and the factored
// local matrix A_p (dropped couplings moved onto the diagonal times robin). One iteration:
//     rhs_i  = b_i - sum over dropped e of a_ie (u_e - robin u_i)   (i in Omega_p)
//     y_p    = A_p^-1 rhs
//     u_i   <- y_p,i on the owned rows i                            (restricted: no sum)
// with u_e, u_i the owners' newest values: the synchronous exchange of their section 4.1 (values
// of exactly the previous iteration: the plain RAS iteration u_{k+1} = u_k + M_RAS^-1 (b - A u_k)
// when robin = 0) or the asynchronous one of 4.2 (the newest whole message, over p2p, rma or shmem
// through comm::PlanExchange). The run loop is solvers::IterationDriver's with
// StopRule::every_rank_local: each rank tests ||b_p - (A u)_p|| < tol ||b_p|| on its own rows, and
// async runs stop by the binary-tree termination detection of section 4.3 (or repeated
// non-blocking reductions).
//
//   mpirun -np 4 desync schwarz --matrix A.petsc --overlap 1 --robin 0 --mode async
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>

#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/waiting.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/schwarz/overlap.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"

namespace desync::solvers {

/// Solves A x = b (collective over A.comm). x: this rank's rows, the initial guess on entry, the
/// final iterate on return. Throws InputError for bad options or sizes, and (every rank) naming
/// the rank and subdomain size if a local matrix is singular.
SchwarzResult solve_algebraic_schwarz(const linalg::DistributedCsr& A, std::span<const double> b, std::span<double> x,
                                      const SchwarzOptions& options);

}  // namespace desync::solvers
