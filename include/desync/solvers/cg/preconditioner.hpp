#pragma once
// Preconditioners of the CG family: u = M^-1 r on this rank's entries, without communication.
//
//   none          M = I
//   jacobi        M = diag(A) (point Jacobi)
//   bjacobi-ic0   block Jacobi: M is block diagonal with one block per rank, each rank's block being
//                 the IC(0) factorisation L L^T of its diagonal block of A (incomplete Cholesky with
//                 zero fill-in: L has the sparsity of the lower triangle of the block). Applying it
//                 is a forward and a backward triangular solve (Horikoshi et al., 2022, section 2: IC(0) with
//                 block-Jacobi localisation).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "desync/core/names.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/operator.hpp"

namespace desync::solvers {

enum class PcKind { none, jacobi, bjacobi_ic0 };
inline constexpr core::Named<PcKind> pc_names[] = {
    {PcKind::none, "none"}, {PcKind::jacobi, "jacobi"}, {PcKind::bjacobi_ic0, "bjacobi-ic0"}};
inline const char* to_string(PcKind kind) { return core::name_of(pc_names, kind); }
/// The command-line spelling (--pc); InputError naming the choices otherwise.
inline PcKind parse_pc(const std::string& name) { return core::parse_named(pc_names, name, "--pc", "preconditioner"); }
/// The simulation cost kind of an application of `kind`, per row: "pc.<name>" (core/simulation.hpp).
std::string pc_cost_kind(PcKind kind);
/// Those of every preconditioner.
std::vector<std::string> pc_cost_kinds();

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
  /// u = M^-1 r; r and u do not overlap.
  virtual void apply(std::span<const double> r, std::span<double> u) const = 0;
  /// u = M^-1 r and returns this rank's part of (r, u), in one pass where the method allows.
  virtual double apply_dot(std::span<const double> r, std::span<double> u) const = 0;
  /// jacobi only: 1 / diag(A); empty otherwise.
  virtual std::span<const double> inverse_diagonal() const { return {}; }
  /// Polls during every later application (none does not poll: it is a copy).
  void set_polls(PcPolls polls) { polls_ = std::move(polls); }

 protected:
  PcPolls polls_;
};

/// Builds the preconditioner of `kind` for `A` (local work only). Throws PcSetupError on this rank
/// if it breaks down; the caller agrees on failure across ranks.
std::unique_ptr<Preconditioner> make_preconditioner(PcKind kind, const linalg::Operator& A);

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
