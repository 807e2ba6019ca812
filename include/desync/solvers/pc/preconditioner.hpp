#pragma once
// Preconditioners of the Krylov family: u = M^-1 r on this rank's entries, without communication
// (none, jacobi, bjacobi-ic0) or with a synchronous exchange (asm, ras: collective, every rank
// applies them the same number of times). Each lives in its own file, src/solvers/pc/pc_<name>.cpp,
// which cites what it follows and registers it once with its traits (PcInfo: whether it solves
// overlapping subdomains, whether it is the identity, its simulation cost kind, its factory);
// register_all_preconditioners (src/solvers/pc/pc_registry.cpp) lists the registrations, like PETSc's
// PCRegisterAll. `--pc`, its help and checks, and the Schwarz options' checks come from the registry.
//
//   none          M = I (pc_none.cpp)
//   jacobi        M = diag(A), point Jacobi (pc_jacobi.cpp)
//   bjacobi-ic0   block Jacobi with IC(0) blocks (pc_bjacobi_ic0.cpp, Horikoshi et al., 2022)
//   asm, ras      one- or two-level additive and restricted additive Schwarz on the assembled
//                 matrix (pc_schwarz.cpp, solvers::SchwarzPreconditioner)
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "desync/communication/transport_config.hpp"
#include "desync/core/registry.hpp"
#include "desync/core/simulation.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/linalg/operator.hpp"

namespace desync::solvers {

class Preconditioner;
struct SchwarzPcSetup;

/// A preconditioner as it registers itself, in its own file.
struct PcInfo {
  std::string name;         ///< --pc, the run record's "pc"
  std::string description;  ///< one line for --pc's help
  /// It solves overlapping subdomains of the assembled matrix (asm, ras): it needs the matrix
  /// (SchwarzPcSetup::matrix), communicates when applied, and --overlap, --local-solver and the
  /// --coarse options apply to it.
  bool subdomains = false;
  /// M = I: applying it copies r (the methods skip the copy where they can).
  bool identity = false;
  /// Its application's simulation cost kind, per row ("pc.<name>"; core/simulation.hpp), optional
  /// where it came after cost models that runs still use were recorded (docs/data).
  core::CostKind cost = "";
  /// Builds it for `A` (local work only, but the subdomain ones: collective). Throws PcSetupError on
  /// this rank if it breaks down; InputError (every rank alike) for input it cannot take.
  /// positive_definite: the method needs M symmetric positive definite; false: a nonsingular one.
  std::unique_ptr<Preconditioner> (*make)(const linalg::Operator& A, const SchwarzPcSetup& setup,
                                          bool positive_definite) = nullptr;
};

/// The preconditioners by name, in registration order.
class PcRegistry : public core::Registry<PcInfo> {
 public:
  PcRegistry() : Registry("preconditioner") {}
  const std::vector<PcInfo>& preconditioners() const { return items(); }
};

/// Registers every preconditioner, one line each (an explicit function, not static
/// self-registration, which a static library would drop at link time).
void register_all_preconditioners(PcRegistry& registry);
/// The registry with register_all_preconditioners() applied, built on first use.
const PcRegistry& pc_registry();
/// The registered preconditioner called `name`; InputError "--pc 'x': unknown preconditioner
/// (expected none, jacobi, ...)" otherwise.
const PcInfo& find_pc(std::string_view name);
/// "none | jacobi | ...", then a line "  name: description" per preconditioner: --pc's help.
std::string pc_help();
/// The names of the preconditioners with the trait `subdomains`, joined by `separator` ("asm or
/// ras"), for help texts and messages.
std::string subdomain_pcs(std::string_view separator = " or ");
/// The simulation cost kinds of every preconditioner's application.
std::vector<core::CostKind> pc_cost_kinds();

// The registrations, each in its preconditioner's file.
PcInfo none_pc();         ///< pc_none.cpp
PcInfo jacobi_pc();       ///< pc_jacobi.cpp
PcInfo bjacobi_ic0_pc();  ///< pc_bjacobi_ic0.cpp
PcInfo asm_pc();          ///< pc_schwarz.cpp
PcInfo ras_pc();          ///< pc_schwarz.cpp

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
  /// u = M^-1 r; r and u do not overlap. const: the state an application changes (asm/ras: the
  /// exchange and its buffers) is held behind a pointer; asm and ras are collective.
  virtual void apply(std::span<const double> r, std::span<double> u) const = 0;
  /// u = M^-1 r and returns this rank's part of (r, u), in one pass where the method allows.
  virtual double apply_dot(std::span<const double> r, std::span<double> u) const = 0;
  /// Its name, and for asm/ras the overlap and the local solvers chosen ("asm, overlap 1, local
  /// solver cholmod-simplicial (4 of 4 ranks)"), the same on every rank.
  virtual std::string description() const = 0;
  /// jacobi only: 1 / diag(A); empty otherwise.
  virtual std::span<const double> inverse_diagonal() const { return {}; }
  /// asm and ras with a coarse level: the coarse space; nullptr otherwise.
  virtual const solvers::CoarseSpace* coarse() const { return nullptr; }
  /// Polls during every later application (none does not poll: it is a copy).
  void set_polls(PcPolls polls) { polls_ = std::move(polls); }

 protected:
  PcPolls polls_;
};

/// What asm and ras are built from (CgOptions::pc_matrix, pc_subdomains, pc_transport).
struct SchwarzPcSetup {
  const linalg::DistributedCsr* matrix = nullptr;  ///< the assembled A, distributed like the operator
  /// The subdomains' group (schwarz_options.hpp): overlap, robin, local solver, coarse level.
  SubdomainOptions subdomains;
  /// How the restriction and prolongation exchanges move data: the operator's --transport.
  comm::TransportConfig transport;
};

/// Builds the registered preconditioner `name` for `A` (find_pc(name).make; local work only, but the
/// subdomain ones: collective). Throws PcSetupError on this rank if it breaks down; the caller
/// agrees on failure across ranks. asm/ras: InputError (every rank alike) without schwarz.matrix
/// ("--pc asm needs an assembled matrix (--matrix, or --operator csr)"), for a matrix distributed
/// unlike A, or a singular local matrix (naming the rank and the subdomain size).
/// positive_definite: the method needs M symmetric positive definite (jacobi: a positive
/// diagonal); false (CgMethodInfo::positive_definite): a non-zero one.
std::unique_ptr<Preconditioner> make_preconditioner(std::string_view name, const linalg::Operator& A,
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
