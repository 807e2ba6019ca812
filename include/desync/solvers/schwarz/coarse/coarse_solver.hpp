#pragma once
// The coarse matrix A0 = Phi^T A Phi of two-level Schwarz (coarse_space.hpp), factored and solved by
// one of three strategies, each an implementation of the CoarseSolver interface:
//
//   dense LU    (coarse ranks 0) every rank holds the whole A0 as a dense matrix, factors it (LU with
//               partial pivoting, Golub and Van Loan, 2013, algorithm 3.4.1) and solves redundantly:
//               a solve needs no message beyond the MPI_Allreduce that sums Phi^T r.
//   MUMPS       (coarse ranks k >= 1) A0 stays sparse: every rank's entries go to the coarse rank
//               row % k, and the first k ranks factor A0 with MUMPS, the multifrontal distributed
//               sparse direct solver (Amestoy, Duff, L'Excellent and Koster, 2001), on their own
//               communicator, from distributed assembled input (ICNTL(18) = 3), unsymmetric (SYM = 0).
//               A solve sums Phi^T r on rank 0 (MPI_Reduce), solves on the k ranks with the
//               right-hand side centralised on rank 0, and broadcasts the solution (MPI_Bcast).
//
//   SuiteSparse (coarse ranks 1, a build without MUMPS) A0's entries are gathered on rank 0, which
//   on rank 0   factors the sparse A0 alone (make_local_solver, auto: CHOLMOD for a symmetric positive
//               definite A0, UMFPACK otherwise); the same messages in every solve as MUMPS on one
//               rank, A0 and its factors on one rank only.
//
// MUMPS is used where the build found Debian's libmumps (built with Open MPI) and this build's MPI is
// Open MPI (DESYNC_HAVE_MUMPS). Elsewhere (MPICH, SimGrid's SMPI) coarse ranks 1 is SuiteSparse on
// rank 0, and coarse ranks k >= 2 are refused with InputError. make_dense_coarse_solver and
// make_distributed_coarse_solver choose; a new strategy (a coarse problem solved iteratively, say) is
// one more implementation.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "desync/linalg/local_solver.hpp"

namespace desync::solvers {

/// A dense LU factorisation with partial pivoting of a small square matrix (the coarse matrix).
class DenseLu {
 public:
  DenseLu() = default;
  /// Factors the n x n row-major matrix `a`; throws std::runtime_error naming the column if a pivot
  /// is exactly zero or not finite (a singular matrix).
  DenseLu(std::vector<double> a, int n);
  /// x = A^-1 b in place (b of length n).
  void solve(std::span<double> b) const;
  int size() const { return n_; }

 private:
  int n_ = 0;
  std::vector<double> lu_;
  std::vector<int> pivot_;
};

/// Whether this build can factor the coarse matrix on k >= 1 ranks (MUMPS, see above).
bool have_mumps();

/// A0's factors, by one of the strategies above.
class CoarseSolver {
 public:
  /// One entry of A0 (0-based row and column); entries at the same place are summed.
  struct Entry {
    int row = 0, col = 0;
    double value = 0;
  };

  virtual ~CoarseSolver();

  /// InputError (the same on every rank) unless 0 <= k <= ranks and, for k >= 2, this build has
  /// MUMPS: "--coarse-ranks K: above the N ranks of the run", "--coarse-ranks: this desync was built
  /// without MUMPS ...".
  static void check_ranks(int k, int ranks);

  /// c = A0^-1 c in place. Dense LU: on this rank alone. On coarse ranks: collective over them
  /// (with k = 1, rank 0 alone); c is read on rank 0 and the solution lands on every coarse rank.
  /// std::logic_error on a rank that is not a coarse rank.
  virtual void solve(std::span<double> c) const = 0;
  /// c = A0^-1 (sum over the ranks of c), on every rank: the sum of each rank's contributions
  /// (Phi^T r over its rows), solved. Collective over the communicator (dense: `comm`; on coarse
  /// ranks: the one they were chosen from, which `comm` must be). Dense LU: one MPI_Allreduce and
  /// the solve on every rank; on coarse ranks: MPI_Reduce to rank 0, the solve, MPI_Bcast.
  virtual void solve_sum(MPI_Comm comm, std::span<double> c) const = 0;
  /// On coarse ranks: the whole A0, n x n row-major, on every rank (gathered from the coarse ranks;
  /// for tests and small n). Collective. Dense LU: zeros (the caller holds A0).
  virtual std::vector<double> gather_dense(MPI_Comm comm) const = 0;

  /// Whether A0 is factored on coarse ranks (MUMPS, or SuiteSparse on rank 0), not on every rank.
  bool distributed() const { return coarse_ranks_ > 0; }
  /// 0 (dense LU on every rank) or k.
  int coarse_ranks() const { return coarse_ranks_; }
  /// Coarse ranks: A0's nonzero entries (after summing), the same on every rank; dense: 0 (not counted here).
  std::int64_t nonzeros() const { return nonzeros_; }
  /// Entries of A0's factors, the same on every rank: dense LU n^2; SuiteSparse on rank 0 its L (CHOLMOD)
  /// or L and U (UMFPACK); MUMPS INFOG(29), the entries of its factors over the coarse ranks.
  std::int64_t factor_nonzeros() const { return factor_nonzeros_; }
  /// Multiply-adds of one solve with those factors: dense LU and UMFPACK's and MUMPS's LU one per
  /// factor entry (L y = b, U x = y), CHOLMOD's L D L^T two (L, then L^T). What a simulated cluster's
  /// clock charges for a coarse solve.
  double solve_multiply_adds() const { return solve_multiply_adds_; }
  /// "dense-lu" (every rank) | "mumps" | "<factorisation>-rank0" (coarse ranks 1 without MUMPS:
  /// "cholmod-simplicial-rank0", "cholmod-supernodal-rank0" or "umfpack-rank0", rank 0's choice).
  const char* name() const { return name_.c_str(); }

 protected:
  int n_ = 0;
  int coarse_ranks_ = 0;
  std::int64_t nonzeros_ = 0, factor_nonzeros_ = 0;
  double solve_multiply_adds_ = 0;
  std::string name_;
};

/// The entries of a map from c * n + d to the coarse matrix's (c, d) entry, in the map's order (a
/// rank's summed contributions, for make_distributed_coarse_solver).
std::vector<CoarseSolver::Entry> sparse_entries(const std::unordered_map<std::int64_t, double>& map, int n);

/// Dense LU of the n x n row-major `a0` (the same on every rank) on every rank. Throws
/// std::runtime_error if A0 is singular (DenseLu).
std::unique_ptr<CoarseSolver> make_dense_coarse_solver(std::vector<double> a0, int n);
/// A0 on ranks 0..k-1 of `comm` (k >= 1, check_ranks passed): MUMPS where this build has it,
/// SuiteSparse on rank 0 otherwise. `entries`: this rank's contributions to A0 (n x n). Collective
/// over comm; throws std::runtime_error on every rank alike if the factorisation fails (e.g. a
/// singular A0), naming MUMPS's INFOG(1) and INFOG(2) or SuiteSparse's message.
std::unique_ptr<CoarseSolver> make_distributed_coarse_solver(MPI_Comm comm, int n, int k,
                                                             std::vector<CoarseSolver::Entry> entries);

}  // namespace desync::solvers
