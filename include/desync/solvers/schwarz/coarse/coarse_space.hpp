#pragma once
// The coarse level of two-level Schwarz: a coarse space Phi and its Galerkin matrix A0 = Phi^T A Phi,
// so that the correction Phi A0^-1 Phi^T r carries information across every subdomain at once and
// the iteration count stops growing with the number of subdomains (Toselli and Widlund, 2005,
// chapter 3; Glusa, Boman, Chow, Rajamanickam and Szyld, 2020, section 2).
//
// The spaces (Phi) are registered by name, one file each (coarse_registry.hpp);
// this class forms A0 from whichever space --coarse names and applies the correction.
//
// Near-kernel vectors restricted to a subdomain (Nicolaides) or a component (GDSW) may be linearly
// dependent (one node's 3 displacements cannot carry 6 rigid-body modes) or zero: only an
// independent subset is kept (independent_columns on their Gram matrix, which for GDSW is summed
// over the ranks that own the component's rows, so that every rank keeps the same ones), and A0
// stays nonsingular. With no near-kernel vectors given, or the constant alone, the spaces are their
// scalar forms bitwise.
//
// A0 is small (one row and column per coarse function). By default every rank sums its rows' part of
// Phi^T A Phi into a dense matrix, one MPI_Allreduce makes the whole A0 on every rank, which factors it
// once (dense LU with partial pivoting, Golub and Van Loan, 2013, algorithm 3.4.1) and solves it
// redundantly: applying the correction costs one MPI_Allreduce of the coarse dimension and no other
// message. With CoarseOptions::coarse_ranks = k >= 1, every rank's part stays sparse (its entries),
// the first k ranks factor A0 with MUMPS, and a correction is an MPI_Reduce of Phi^T r to rank 0, the
// solve on the k ranks and an MPI_Bcast of the solution (coarse_solver.hpp).
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "desync/linalg/csr.hpp"
#include "desync/solvers/schwarz/coarse/coarse_solver.hpp"
#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "desync/solvers/schwarz/coarse/coarse_summary.hpp"

namespace desync::solvers {

/// What the coarse level is built from.
struct CoarseOptions {
  /// "none" (one level) or a registered coarse space's name (coarse_registry.hpp).
  std::string kind = std::string(no_coarse);
  /// The near-kernel: this rank's rows of each near-kernel vector (each local_rows long). Empty:
  /// the constant (a scalar problem). Nicolaides takes one function per subdomain and vector,
  /// GDSW one per interface component and vector.
  std::vector<std::vector<double>> near_kernel;
  /// The ranks that factor and solve A0: 0, every rank redundantly (dense LU); k >= 1, the first k
  /// ranks together with a distributed sparse direct solver.
  int coarse_ranks = 0;
  /// The subdomains the space is built on, K >= 1 per rank (SubdomainOptions::subdomains_per_rank):
  /// K > 1 splits each rank's rows into the pieces its local solves use (linalg::block_pieces), so
  /// that the coarse level spans the K p subdomains of the one-level method, as a coarse level should.
  int subdomains_per_rank = 1;
  /// A coarse level at all (kind is not "none").
  bool two_level() const { return kind != no_coarse; }
};

/// Phi, A0 and A0's factors for the partitioned matrix A (contiguous row blocks; a rank's rows are
/// its subdomain, or its K pieces with options.subdomains_per_rank K > 1). Collective construction; apply_correction is collective as well.
class CoarseSpace {
 public:
  /// Collective over A.comm. Throws InputError (every rank alike) for block size other than 1, a
  /// singular coarse matrix ("the coarse matrix A0 = Phi^T A Phi is singular ..."), coarse ranks
  /// that CoarseSolver::check_ranks refuses (above the ranks of A.comm; this build without MUMPS),
  /// and near-kernel vectors of another length than local_rows or different counts on the ranks.
  CoarseSpace(const linalg::DistributedCsr& A, const CoarseOptions& options);
  /// The same from a space given by its registration (options.kind is ignored): a space being
  /// written, before its line in register_all_coarse_spaces (docs/design.md, "Adding a coarse space").
  CoarseSpace(const linalg::DistributedCsr& A, const CoarseSpaceInfo& space, const CoarseOptions& options);
  CoarseSpace(const linalg::DistributedCsr& A, const std::string& kind) : CoarseSpace(A, CoarseOptions{kind, {}, 0}) {}

  /// The space's registered name.
  const std::string& kind() const { return kind_; }
  /// The coarse dimension: the functions the space built (e.g. one per subdomain, or per interface
  /// component, and near-kernel vector independent there).
  int size() const { return n_; }
  /// The number of near-kernel vectors the space was built from (1: the constant).
  int near_kernel_vectors() const { return near_kernel_vectors_; }
  /// A0, n x n row-major, the same on every rank (for tests). With coarse ranks k >= 1 (A0 sparse,
  /// on the coarse ranks) it is gathered from them when size() <= dense_copy_limit, and empty
  /// otherwise. Collective.
  std::vector<double> matrix() const;
  static constexpr int dense_copy_limit = 1000;
  /// Phi on this rank's rows as a dense local_rows x size() row-major matrix (for tests).
  std::vector<double> local_basis() const;
  /// (Phi^T r)_c over this rank's rows only, all size() entries: this rank's part of Phi^T r.
  std::vector<double> local_sums(std::span<const double> r) const;
  /// c = Phi^T r, on every rank (one MPI_Allreduce). Collective.
  std::vector<double> restrict_to_coarse(std::span<const double> r) const;
  /// z += Phi c on this rank's rows.
  void add_prolongation(std::span<const double> c, std::span<double> z) const;
  /// z += Phi A0^-1 Phi^T r: the additive coarse correction. Collective.
  void add_correction(std::span<const double> r, std::span<double> z) const;
  /// c = A0^-1 Phi^T r, the whole coarse vector, on every rank. Collective.
  std::vector<double> coarse_solution(std::span<const double> r) const;
  /// c = A0^-1 c in place (c of length size()). Coarse ranks 0: on this rank alone (every rank holds
  /// A0's factors). Coarse ranks k >= 1: collective over ranks 0..k-1 (with k = 1, rank 0 alone), c
  /// read on rank 0 and the solution on each of them; std::logic_error on any other rank.
  void solve(std::span<double> c) const;
  /// Phi's rows at the given global rows of other ranks (or this rank's), compressed like
  /// Phi's own rows: row k's functions cols[ptr[k]..ptr[k+1]) with values vals. Collective (every
  /// rank calls it, each with its own list).
  struct Rows {
    std::vector<std::int64_t> ptr;
    std::vector<int> cols;
    std::vector<double> vals;
  };
  Rows basis_rows(const std::vector<std::int64_t>& global_rows) const;
  /// (A^T Phi) at this rank's rows j: sum over every row i (any rank's) of a_ij phi_i, compressed
  /// like Phi's rows. Then Phi^T A x = sum over ranks of sum over their rows j of (A^T Phi)_j x_j:
  /// each rank's part of the coarse residual Phi^T (b - A x) reads its own x_j alone. Collective.
  Rows transposed_product(const linalg::DistributedCsr& A) const;
  /// Phi's rows on this rank's rows.
  Rows own_rows() const { return {phi_ptr_, phi_col_, phi_val_}; }

  /// Set-up seconds on this rank (Phi, A0, its factorisation), A0's nonzeros (of size()^2),
  /// the seconds add_correction has taken so far and how many times it ran.
  double setup_seconds() const { return setup_seconds_; }
  std::int64_t matrix_nonzeros() const { return a0_nonzeros_; }
  double apply_seconds() const { return apply_seconds_; }
  long applications() const { return applications_; }
  /// The ranks that factor A0 (0: every rank, dense LU) and how (CoarseSolver::name: "dense-lu",
  /// "mumps", "cholmod-simplicial-rank0", ...), its factors' entries and one solve's multiply-adds.
  int coarse_ranks() const { return solver_->coarse_ranks(); }
  const char* solver_name() const { return solver_->name(); }
  std::int64_t factor_nonzeros() const { return solver_->factor_nonzeros(); }
  double solve_multiply_adds() const { return solver_->solve_multiply_adds(); }

  std::string description() const;
  /// What a run reports of this coarse level (this rank's set-up seconds).
  CoarseSummary summary() const;

 private:
  MPI_Comm comm_;
  std::string kind_;
  int n_ = 0, rank_ = 0, ranks_ = 1, near_kernel_vectors_ = 1, pieces_ = 1;
  std::int64_t local_rows_ = 0;
  /// Phi's rows on this rank, compressed: row i's coarse functions phi_col_[k] with value phi_val_[k]
  /// for k in [phi_ptr_[i], phi_ptr_[i + 1]).
  std::vector<std::int64_t> phi_ptr_;
  std::vector<int> phi_col_;
  std::vector<double> phi_val_;
  std::vector<std::int64_t> offsets_;
  /// K > 1 subdomains per rank: the pieces of this rank's rows and the subdomains of the other
  /// ranks' rows `ghosts` (ascending) into `input`. Collective.
  void subdomain_pieces(const linalg::DistributedCsr& A, int K, const std::vector<std::int64_t>& ghosts,
                        CoarseBasisInput& input) const;
  std::vector<double> a0_;
  std::unique_ptr<CoarseSolver> solver_;
  double setup_seconds_ = 0;
  std::int64_t a0_nonzeros_ = 0;
  mutable double apply_seconds_ = 0;
  mutable long applications_ = 0;
};

}  // namespace desync::solvers
