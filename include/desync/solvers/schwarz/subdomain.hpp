#pragma once
// One rank's subdomain of a Schwarz iteration, as the iteration sees it, whichever way it was built:
// the grid's boxes extended by gamma points (solvers::GridSchwarzSubdomain, schwarz.hpp) or an
// assembled matrix's rows extended by graph distance (solvers::OverlappingSubdomain, overlap.hpp).
// The one run of Yamazaki, Chow, Bouteiller and Dongarra (2019), sections 3-4 (schwarz_run.cpp),
// iterates over this interface alone:
//     rhs   = b_p - sum over dropped couplings e of a_ie (u_e - beta u_i)   (local_rhs: the Robin data)
//     y_p   = A_p^-1 rhs                                                    (solver())
//             or, where solver() is approximate (M ~ A_p, ILU(k)), one correction step from the
//             previous local values u_p: y_p = u_p + M^-1 (rhs - A_p u_p), whose fixed point is the
//             exact solve's (local_matrix())
//     u_i  <- y_p,i on the owned points                                     (owned_index)
//     r_p   = b_p - (A u)_p on the owned points                             (local_residual_sq)
// with u_e, u_i the owners' values in the ghost buffer, exchanged over ghost_plan().
//
// The Robin condition is one code path for both: a coupling a_ie that the subdomain drops at its
// outer boundary is moved onto A_p's diagonal times beta (shift_robin_diagonal, before A_p is
// factored), and its data enters the right-hand side through add_robin_data. The grid's OO0 condition du/dn + alpha u (their
// equation 2), discretised one-sided at the external point, is beta = 1/(1 + alpha h) per axis with
// a_ie = -1/h^2; the matrix's --robin is beta itself, the same for every coupling; beta = 0 is
// classical Schwarz (Dirichlet data u_e).
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "desync/communication/halo_plan.hpp"
#include "desync/linalg/local_solver.hpp"

namespace desync::solvers {

/// One coupling a_ie of local row `row` with a point e outside the subdomain: the Robin data reads
/// u_e at ghost[ghost_e] and u_i at ghost[ghost_i], or, where i is owned (ghost_i < 0), at the
/// local iterate's row.
struct RobinCoupling {
  std::int32_t row, ghost_e, ghost_i;
  double a;     ///< a_ie (the grid: -1/h^2)
  double beta;  ///< the factor of the diagonal shift and of u_i (0: Dirichlet data)
};

/// (A_p)_ii += beta * sum of the a_ie of row i that share that beta, for every row with couplings
/// (in row order; A_p holds the unshifted entries and a diagonal entry in every such row): the
/// diagonal shift of both subdomain kinds.
void shift_robin_diagonal(linalg::LocalCsr& A, std::span<const RobinCoupling> couplings);

/// rhs_row -= a_ie (u_e - beta u_i) for every coupling: the Robin data of both subdomain kinds.
void add_robin_data(std::span<const RobinCoupling> couplings, const double* x, const double* ghost, double* rhs);

/// What the Schwarz run needs of one rank's subdomain (see the top). Values live on the extended
/// subdomain: size() of them, the owned ones among them at owned_index(k); the ghost buffer holds
/// ghost_count() values, received through ghost_plan(), whose send offsets count from
/// x + send_offset().
class Subdomain {
 public:
  virtual ~Subdomain() = default;

  virtual MPI_Comm comm() const = 0;
  virtual std::size_t size() const = 0;
  virtual std::size_t owned() const = 0;
  /// The extended-subdomain index of owned point k (k in [0, owned()), the rank's own order).
  virtual std::size_t owned_index(std::size_t k) const = 0;
  virtual const comm::HaloPlan& ghost_plan() const = 0;
  virtual std::size_t send_offset() const = 0;
  virtual std::size_t ghost_count() const = 0;
  /// A_p, factored (or, --local-solver ilu0..ilu3, approximated: see the run's correction step).
  virtual linalg::LocalSolver& solver() const = 0;
  /// A_p itself (its Robin diagonal shifted), size() rows, the extended subdomain's columns.
  virtual const linalg::LocalCsr& local_matrix() const = 0;
  virtual std::span<const RobinCoupling> robin_couplings() const = 0;
  /// b_p on the extended subdomain (the physical boundary values folded in).
  virtual const double* rhs() const = 0;
  /// sum over the owned points of (b - A u)^2, u from x (the extended subdomain) and ghost.
  virtual double local_residual_sq(const double* x, const double* ghost) const = 0;
  /// sum over the owned points of b^2 (the scale of the local criterion).
  virtual double source_norm_sq() const = 0;
  /// The simulated cluster's charge for one local residual, in points (core::charge).
  virtual double residual_work() const { return static_cast<double>(owned()); }
  /// Whether the Robin data reads an owned u_i (overlap 0 with beta > 0): the solve's result then
  /// depends on the rank's own iterate too, not on the ghosts alone.
  virtual bool solve_reads_own_values() const = 0;
  /// Exchanges that bound the distance between any two ranks (the driver's agreement on the last
  /// iteration).
  virtual int exchange_hops() const = 0;
  /// Owned points per axis and the rank's place in its process grid (the record; a matrix: {owned, 1, 1}).
  virtual std::array<int, 3> extent() const = 0;
  virtual std::array<int, 3> coords() const { return {0, 0, 0}; }

  /// rhs = b_p + the Robin data (see the top).
  void local_rhs(const double* x, const double* ghost, double* out) const;
};

}  // namespace desync::solvers
