#pragma once
// Overlapping subdomains of an assembled matrix and the one-level Schwarz preconditioner built on
// them: the algebraic counterpart of the grid subdomains of Yamazaki, Chow, Bouteiller and
// Dongarra (2019), sections 3-4 (solvers/schwarz/schwarz.hpp), for any row-distributed matrix.
//
// Rank p owns the rows [first, last) of A (its non-overlapping subdomain). Its extended set Omega_p
// is the owned rows and every row within `overlap` (delta) steps of them in the graph of A + A^T
// (the pattern symmetrised, so a non-symmetric pattern still gives the usual overlap). The local
// matrix is A restricted to Omega_p,
//     A_p = A(Omega_p, Omega_p) + robin * diag( sum over e not in Omega_p of a_ie ),
// that is, each coupling a_ie that the restriction drops at the outer boundary is moved onto the
// diagonal with the factor robin (beta, 0 <= beta < 1; 0: classical restricted additive Schwarz,
// the Dirichlet condition u_e = data). On the 5-point Poisson matrix, with beta = 1/(1 + alpha h),
// this is the OO0 Robin condition of Yamazaki et al. (2019, equation 2) discretised one-sided at the
// external point: A_p = L_p - D_p, the diagonal lowered by beta/h^2 per external neighbour.
// Given the current global iterate u, the local problem A_p y = rhs has
//     rhs_i = b_i - sum over dropped e of a_ie (u_e - robin * u_i),
// (the Robin data: for robin = 0 the Dirichlet data u_e), and the new iterate keeps y on the owned
// rows (restricted Schwarz). In exact arithmetic with robin = 0, y = u + A_p^-1 (b - A u)|Omega_p.
//
// A_p is factored once (linalg::make_local_solver), or with K subdomains per rank its K pieces are
// (linalg::make_block_solver). The exchange plans are built at construction
// (collective, MPI_Alltoallv at set-up only); the iterations move values through them with
// comm::PlanExchange.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "desync/communication/halo_plan.hpp"
#include "desync/communication/plan_exchange.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"
#include "desync/solvers/schwarz/subdomain.hpp"

namespace desync::solvers {

/// One rank's overlapping subdomain (see the header comment). Collective construction. As the
/// Schwarz run sees it (solvers::Subdomain), its right-hand side is b restricted to Omega_p, given
/// by set_rhs.
class OverlappingSubdomain final : public Subdomain {
 public:
  /// Collective over A.comm: builds Omega_p, A_p, the plans, and factors A_p. Throws InputError
  /// (every rank alike) for bad options or a matrix of block size other than 1, and InputError
  /// naming the rank and the subdomain size if a local matrix cannot be factored ("rank 2: the
  /// local matrix of its subdomain (1234 rows, overlap 1) is singular: ...").
  /// With options.subdomains_per_rank K > 1 the rank's solve is K pieces' (linalg::LocalBlocks),
  /// restricted (the stationary iteration, ras) or, with additive_pieces, additive (asm).
  OverlappingSubdomain(const linalg::DistributedCsr& A, const SubdomainOptions& options, bool additive_pieces = false);

  int rank() const { return rank_; }
  const SubdomainOptions& options() const { return opt_; }
  /// Omega_p, ascending global rows; the owned rows are rows()[own_begin(), own_begin() + owned()).
  const std::vector<std::int64_t>& rows() const { return rows_; }
  std::int64_t own_begin() const { return own_begin_; }
  /// A_p with local (Omega_p) columns, before factorisation.
  const linalg::LocalCsr& matrix() const { return matrix_; }
  /// The dropped couplings a_ie of the extended rows with the columns e outside Omega_p, beta =
  /// robin; u_i is read from the ghost buffer, or for an owned i (overlap 0) from the local iterate.
  const std::vector<RobinCoupling>& couplings() const { return couplings_; }
  /// The iteration's ghosts: the other ranks' values read by the local problem (u_e, and u_i where
  /// robin > 0) and by the owned rows' residual (their columns not owned), ascending global index.
  const std::vector<std::int64_t>& ghosts() const { return ghosts_; }
  /// The restriction's plan: send offsets into the owned part, receive offsets into a vector on
  /// Omega_p (the rows not owned); the owned part is copied locally.
  const comm::HaloPlan& restriction_plan() const { return restriction_plan_; }
  /// The prolongation's plan (the restriction reversed, for additive Schwarz): send offsets into a
  /// vector on Omega_p, receive offsets into a buffer of prolongation_rows().size() slots, slot s
  /// to be added to owned row prolongation_rows()[s] (local index).
  const comm::HaloPlan& prolongation_plan() const { return prolongation_plan_; }
  const std::vector<std::int32_t>& prolongation_rows() const { return prolongation_rows_; }

  /// The owned rows' couplings for the local residual r_i = b_i - sum_j a_ij u_j: entry k of
  /// owned row i reads the local iterate at residual_index[k] >= 0 or ghost[-residual_index[k] - 1].
  const std::vector<std::int64_t>& residual_ptr() const { return residual_ptr_; }
  const std::vector<std::int32_t>& residual_index() const { return residual_index_; }
  const std::vector<double>& residual_value() const { return residual_value_; }

  /// b on Omega_p from this rank's rows of b (its rows not owned from their owners). Collective
  /// (one synchronous exchange through the restriction's plan).
  void set_rhs(std::span<const double> b, const comm::TransportConfig& transport = {});

  // solvers::Subdomain. The ghost plan sends from the owned part of a vector on Omega_p.
  MPI_Comm comm() const override { return comm_; }
  std::size_t size() const override { return rows_.size(); }
  std::size_t owned() const override { return static_cast<std::size_t>(owned_); }
  std::size_t owned_index(std::size_t k) const override { return static_cast<std::size_t>(own_begin_) + k; }
  const comm::HaloPlan& ghost_plan() const override { return ghost_plan_; }
  std::size_t send_offset() const override { return static_cast<std::size_t>(own_begin_); }
  std::size_t ghost_count() const override { return ghosts_.size(); }
  linalg::LocalSolver& solver() const override { return *solver_; }
  const linalg::LocalCsr& local_matrix() const override { return matrix_; }
  std::span<const RobinCoupling> robin_couplings() const override { return couplings_; }
  const double* rhs() const override { return b_ext_.data(); }
  double local_residual_sq(const double* x, const double* ghost) const override;
  double source_norm_sq() const override;
  bool solve_reads_own_values() const override { return opt_.robin != 0 && opt_.overlap == 0; }
  // Without structure, ranks - 1 exchanges bound the distance between any two ranks of a
  // connected neighbour graph.
  int exchange_hops() const override;
  std::array<int, 3> extent() const override { return {static_cast<int>(owned_), 1, 1}; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  SubdomainOptions opt_;
  std::vector<std::int64_t> rows_, ghosts_;
  std::int64_t own_begin_ = 0, owned_ = 0;
  linalg::LocalCsr matrix_;
  std::unique_ptr<linalg::LocalSolver> solver_;
  std::vector<RobinCoupling> couplings_;
  std::vector<double> b_ext_;
  comm::HaloPlan ghost_plan_, restriction_plan_, prolongation_plan_;
  std::vector<std::int32_t> prolongation_rows_;
  std::vector<std::int64_t> residual_ptr_;
  std::vector<std::int32_t> residual_index_;
  std::vector<double> residual_value_;
};

/// One-level Schwarz preconditioner z = M^-1 r on the subdomains of OverlappingSubdomain, applied
/// with r as the right-hand side and zero as the iterate (so no Robin data: y_p = A_p^-1 R_p r):
///   restricted (RAS)  z_i = y_p,i on each rank's own rows i (Cai and Sarkis, 1999)
///   additive  (ASM)   z = sum_p R_p^T y_p: the overlap parts are sent back to their owners and
///                     summed there; symmetric when A is (for CG).
/// With robin > 0 the local matrices keep their modified diagonal: M is then the optimized
/// (Robin) Schwarz preconditioner, still symmetric for ASM on a symmetric A.
/// With a coarse space (SubdomainOptions::coarse, coarse_space.hpp) the preconditioner is two-level
/// additive: M^-1 r = (one-level) r + Phi A0^-1 Phi^T r (Toselli and Widlund, 2005, section 3.2;
/// symmetric for ASM on a symmetric A); with coarse none it is the one-level method bitwise.
/// apply() is collective: a synchronous exchange through comm::PlanExchange (the restriction, and
/// for ASM the prolongation; the coarse level's MPI_Allreduce). Every rank must call it the same
/// number of times.
class SchwarzPreconditioner {
 public:
  /// Collective over A.comm (the subdomain's construction, the two exchanges opened).
  SchwarzPreconditioner(const linalg::DistributedCsr& A, const SubdomainOptions& o, bool restricted,
                        const comm::TransportConfig& transport = {});
  ~SchwarzPreconditioner();
  SchwarzPreconditioner(const SchwarzPreconditioner&) = delete;
  SchwarzPreconditioner& operator=(const SchwarzPreconditioner&) = delete;

  /// z = M^-1 r on this rank's rows (r and z of length owned(), not overlapping). Collective.
  void apply(std::span<const double> r, std::span<double> z);
  /// e.g. "ras, overlap 1, local solver cholmod-simplicial (4 of 4 ranks)". Collective.
  std::string description() const { return description_; }
  bool restricted() const { return restricted_; }
  const OverlappingSubdomain& subdomain() const { return sub_; }
  /// The coarse level, or nullptr (one level).
  const CoarseSpace* coarse() const { return coarse_.get(); }

  long applications() const { return applications_; }
  double seconds() const { return seconds_; }           ///< in apply(), exchanges included
  double exchange_seconds() const { return exchange_seconds_; }
  double solve_seconds() const { return solve_seconds_; }
  double factor_seconds() const { return sub_.solver().factor_seconds(); }
  std::int64_t factor_nonzeros() const { return sub_.solver().factor_nonzeros(); }
  const comm::ExchangeStats& exchange_stats() const;

 private:
  OverlappingSubdomain sub_;
  bool restricted_;
  std::unique_ptr<comm::PlanExchange> restrict_, prolong_;
  std::unique_ptr<CoarseSpace> coarse_;
  std::vector<double> r_ext_, y_ext_, back_;
  std::int64_t level_ = 0;
  long applications_ = 0;
  double seconds_ = 0, exchange_seconds_ = 0, solve_seconds_ = 0;
  std::string description_;
};

}  // namespace desync::solvers
