#pragma once
// Preconditioners of the CG family: u = M^-1 r on this rank's entries, without communication
// (none, jacobi, bjacobi-ic0) or with a synchronous exchange (asm, ras: collective, every rank
// applies them the same number of times).
//
//   none          M = I
//   jacobi        M = diag(A) (point Jacobi)
//   bjacobi-ic0   block Jacobi: M is block diagonal with one block per rank, each rank's block being
//                 the IC(0) factorisation L L^T of its diagonal block of A (incomplete Cholesky with
//                 zero fill-in: L has the sparsity of the lower triangle of the block). Applying it
//                 is a forward and a backward triangular solve (Horikoshi et al., 2022, section 2: IC(0) with
//                 block-Jacobi localisation).
//   asm           one-level additive Schwarz on the assembled matrix (solvers::SchwarzPreconditioner):
//                 M^-1 = sum_p R_p^T A_p^-1 R_p over the subdomains extended by `overlap` layers of
//                 graph distance, exact local solves (linalg::make_local_solver); symmetric, for CG.
//   ras           restricted additive Schwarz: each rank keeps only its own rows of its local
//                 solution (Cai and Sarkis, 1999); not symmetric (for the methods that take any
//                 nonsingular preconditioner).
//                 With SchwarzPcSetup::coarse, either becomes two-level additive: the coarse
//                 correction Phi A0^-1 Phi^T r added (solvers/schwarz/coarse/coarse_space.hpp).
//                 Both need the assembled matrix (SchwarzPcSetup::matrix) and communicate in apply()
//                 (the restriction, and for asm the sums at the owners). They do not poll.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "desync/communication/transport_config.hpp"
#include "desync/core/names.hpp"
#include "desync/core/simulation.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/linalg/operator.hpp"

namespace desync::solvers {

enum class PcKind { none, jacobi, bjacobi_ic0, additive_schwarz, restricted_schwarz };
inline constexpr core::Named<PcKind> pc_names[] = {{PcKind::none, "none"},
                                                   {PcKind::jacobi, "jacobi"},
                                                   {PcKind::bjacobi_ic0, "bjacobi-ic0"},
                                                   {PcKind::additive_schwarz, "asm"},
                                                   {PcKind::restricted_schwarz, "ras"}};
/// asm and ras: they need the assembled matrix and communicate when applied.
inline bool is_schwarz(PcKind kind) {
  return kind == PcKind::additive_schwarz || kind == PcKind::restricted_schwarz;
}
inline const char* to_string(PcKind kind) { return core::name_of(pc_names, kind); }
/// The command-line spelling (--pc); InputError naming the choices otherwise.
inline PcKind parse_pc(const std::string& name) { return core::parse_named(pc_names, name, "--pc", "preconditioner"); }
/// The simulation cost kind of an application of `kind`, per row: "pc.<name>" (core/simulation.hpp).
std::string pc_cost_kind(PcKind kind);
/// Those of every preconditioner; pc.asm and pc.ras are optional (cost models recorded before them
/// lack them).
std::vector<core::CostKind> pc_cost_kinds();

/// Set-up failure of a preconditioner on this rank (a zero, negative or non-finite pivot or
/// diagonal entry). The message names the cause, the rank and the row.
class PcSetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Progress control inside an application (--progress test): every `interval` rows (0: never) an
/// application calls `poll(rows)` with the rows done since its previous call (a triangular solve's
/// forward and backward passes count half a row each), so that a reduction in flight advances while
/// the preconditioner works. The arithmetic is the same as without polls.
struct PcPolls {
  std::int64_t interval = 0;
  std::function<void(double rows)> poll;
  bool active() const { return interval > 0 && poll; }
};

class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  virtual PcKind kind() const = 0;
  /// u = M^-1 r; r and u do not overlap. const: the state an application changes (asm/ras: the
  /// exchange and its buffers) is held behind a pointer; asm and ras are collective.
  virtual void apply(std::span<const double> r, std::span<double> u) const = 0;
  /// u = M^-1 r and returns this rank's part of (r, u), in one pass where the method allows.
  virtual double apply_dot(std::span<const double> r, std::span<double> u) const = 0;
  /// Its name, and for asm/ras the overlap and the local solvers chosen ("asm, overlap 1, local
  /// solver cholmod-simplicial (4 of 4 ranks)"), the same on every rank.
  virtual std::string description() const { return to_string(kind()); }
  /// jacobi only: 1 / diag(A); empty otherwise.
  virtual std::span<const double> inverse_diagonal() const { return {}; }
  /// asm and ras with a coarse level: the coarse space; nullptr otherwise.
  virtual const solvers::CoarseSpace* coarse() const { return nullptr; }
  /// Polls during every later application (none does not poll: it is a copy).
  void set_polls(PcPolls polls) { polls_ = std::move(polls); }

 protected:
  PcPolls polls_;
};

/// What asm and ras are built from (CgOptions::pc_matrix, pc_overlap, pc_local_solver).
struct SchwarzPcSetup {
  const linalg::DistributedCsr* matrix = nullptr;  ///< the assembled A, distributed like the operator
  int overlap = 1;
  linalg::LocalSolverKind local_solver = linalg::LocalSolverKind::automatic;
  solvers::CoarseOptions coarse;  ///< the coarse level (two-level Schwarz)
  /// How the restriction and prolongation exchanges move data: the operator's --transport.
  comm::TransportConfig transport;
};

/// Builds the preconditioner of `kind` for `A` (local work only, but asm and ras: collective).
/// Throws PcSetupError on this rank if it breaks down; the caller agrees on failure across ranks.
/// asm/ras: InputError (every rank alike) without schwarz.matrix ("--pc asm needs an assembled
/// matrix (--matrix, or --operator csr)"), for a matrix distributed unlike A, or a singular local
/// matrix (naming the rank and the subdomain size). positive_definite: the method needs M
/// symmetric positive definite (jacobi: a positive diagonal); false (CgMethodInfo::positive_definite): a
/// non-zero one.
std::unique_ptr<Preconditioner> make_preconditioner(PcKind kind, const linalg::Operator& A,
                                                    const SchwarzPcSetup& schwarz = {}, bool positive_definite = true);

/// Zero fill-in incomplete Cholesky factor of a symmetric local matrix (only its lower triangle,
/// diagonal included, is read). Throws PcSetupError naming the row of a pivot that is not positive
/// (or a row without a diagonal entry). `rank` and `first_global_row` only label the message.
class Ic0Factor {
 public:
  Ic0Factor(const linalg::LocalCsr& a, int rank = 0, std::int64_t first_global_row = 0);
  /// u = (L L^T)^-1 r; returns (r, u) of the entries (accumulated during the backward solve).
  /// With active `polls`, polls every polls->interval rows of each pass (half a row each).
  double solve(std::span<const double> r, std::span<double> u, const PcPolls* polls = nullptr) const;
  std::int64_t rows() const { return n_; }

 private:
  std::int64_t n_ = 0;
  std::vector<std::int64_t> ptr_;  ///< strictly lower part of L, by rows
  std::vector<std::int32_t> col_;
  std::vector<double> val_;
  std::vector<double> inv_diag_;  ///< 1 / L_ii
};

}  // namespace desync::solvers
