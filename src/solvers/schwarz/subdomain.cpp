// The Robin data of every Schwarz subdomain; see include/desync/solvers/schwarz/subdomain.hpp.
#include "desync/solvers/schwarz/subdomain.hpp"

#include <algorithm>

namespace desync::solvers {

void add_robin_data(std::span<const RobinCoupling> couplings, const double* x, const double* ghost, double* rhs) {
  for (const auto& c : couplings) {
    const double ui = c.ghost_i < 0 ? x[c.row] : ghost[c.ghost_i];
    rhs[c.row] -= c.a * (ghost[c.ghost_e] - c.beta * ui);  // rhs_i = b_i - a_ie (u_e - beta u_i)
  }
}

void Subdomain::local_rhs(const double* x, const double* ghost, double* out) const {
  std::copy(rhs(), rhs() + size(), out);
  add_robin_data(robin_couplings(), x, ghost, out);
}

}  // namespace desync::solvers
