// Schwarz preconditioners on the assembled matrix (solvers::SchwarzPreconditioner, schwarz/overlap.hpp):
//   asm  one-level additive Schwarz, M^-1 = sum_p R_p^T A_p^-1 R_p over the subdomains extended by
//        `overlap` layers of graph distance, exact local solves (linalg::make_local_solver);
//        symmetric, for CG.
//   ras  restricted additive Schwarz: each rank keeps only its own rows of its local solution (Cai
//        and Sarkis, 1999); not symmetric (for the methods that take any nonsingular preconditioner).
// With SchwarzPcSetup::coarse either becomes two-level additive: the coarse correction
// Phi A0^-1 Phi^T r added (schwarz/coarse/coarse_space.hpp). Both need the assembled matrix
// (SchwarzPcSetup::matrix) and communicate in apply() (the restriction, and for asm the sums at
// the owners). They do not poll.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "desync/core/error.hpp"
#include "desync/linalg/vector.hpp"
#include "desync/solvers/pc/preconditioner.hpp"
#include "desync/solvers/schwarz/overlap.hpp"

namespace desync::solvers {

namespace {

/// asm / ras: SchwarzPreconditioner behind the const interface (its exchange and buffers
/// change in apply, which is collective).
class SchwarzPc final : public Preconditioner {
 public:
  explicit SchwarzPc(std::unique_ptr<SchwarzPreconditioner> pc) : pc_(std::move(pc)) {}
  std::string description() const override { return pc_->description(); }
  const CoarseSpace* coarse() const override { return pc_->coarse(); }
  void apply(std::span<const double> r, std::span<double> u) const override { pc_->apply(r, u); }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    pc_->apply(r, u);
    return linalg::dot(r, u);
  }

 private:
  std::unique_ptr<SchwarzPreconditioner> pc_;
};


// asm (restricted = false) and ras differ in name, description and the restriction only.
template <bool restricted>
std::unique_ptr<Preconditioner> make_schwarz(const linalg::Operator& A, const SchwarzPcSetup& schwarz, bool) {
  const char* name = restricted ? "ras" : "asm";
  if (!schwarz.matrix)
    throw InputError(fmt::format("--pc {} needs an assembled matrix (--matrix, or --operator csr)", name));
  agree_or_throw(A.comm(), schwarz.matrix->local_rows() == A.local_size(),
                 fmt::format("--pc {}: the assembled matrix is distributed unlike the operator", name));
  return std::make_unique<SchwarzPc>(
      std::make_unique<SchwarzPreconditioner>(*schwarz.matrix, schwarz.subdomains, restricted, schwarz.transport));
}

// pc.asm and pc.ras are optional: they came after cost models that runs still use were recorded (docs/data).
template <bool restricted>
PcInfo schwarz_pc(const char* description) {
  const char* name = restricted ? "ras" : "asm";
  return {.name = name, .description = description, .subdomains = true,
          .cost = {fmt::format("pc.{}", name), true}, .make = &make_schwarz<restricted>};
}

}  // namespace

PcInfo asm_pc() {
  return schwarz_pc<false>("additive Schwarz on overlapping subdomains, exact local solves, symmetric");
}

PcInfo ras_pc() { return schwarz_pc<true>("restricted additive Schwarz (Cai and Sarkis, 1999), not symmetric"); }

}  // namespace desync::solvers
