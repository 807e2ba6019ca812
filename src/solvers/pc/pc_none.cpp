// The identity preconditioner, M = I: the unpreconditioned methods.
#include <memory>

#include "desync/linalg/vector.hpp"
#include "desync/solvers/pc/preconditioner.hpp"

namespace desync::solvers {

namespace {

class IdentityPc final : public Preconditioner {
 public:
  std::string description() const override { return "none"; }
  void apply(std::span<const double> r, std::span<double> u) const override { linalg::copy(r, u); }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    linalg::copy(r, u);
    return linalg::dot(r, r);
  }
};


std::unique_ptr<Preconditioner> make_none(const linalg::Operator&, const SchwarzPcSetup&, bool) {
  return std::make_unique<IdentityPc>();
}

}  // namespace

PcInfo none_pc() {
  return {.name = "none", .description = "M = I: no preconditioner", .identity = true, .cost = "pc.none",
          .make = &make_none};
}

}  // namespace desync::solvers
