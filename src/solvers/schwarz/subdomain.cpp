// The Robin data of every Schwarz subdomain; see include/desync/solvers/schwarz/subdomain.hpp.
#include "desync/solvers/schwarz/subdomain.hpp"

#include <algorithm>

#include <stdexcept>

#include <fmt/format.h>

namespace desync::solvers {

void add_robin_data(std::span<const RobinCoupling> couplings, const double* x, const double* ghost, double* rhs) {
  for (const auto& c : couplings) {
    const double ui = c.ghost_i < 0 ? x[c.row] : ghost[c.ghost_i];
    rhs[c.row] -= c.a * (ghost[c.ghost_e] - c.beta * ui);  // rhs_i = b_i - a_ie (u_e - beta u_i)
  }
}

void shift_robin_diagonal(linalg::LocalCsr& A, std::span<const RobinCoupling> couplings) {
  for (std::size_t k = 0; k < couplings.size();) {
    const RobinCoupling& c = couplings[k];
    double moved = 0;  // the a_ie of row i that share its beta
    std::size_t j = k;
    for (; j < couplings.size() && couplings[j].row == c.row && couplings[j].beta == c.beta; ++j) moved += couplings[j].a;
    k = j;
    if (c.beta == 0) continue;
    const auto first = A.col.begin() + A.row_ptr[static_cast<std::size_t>(c.row)];
    const auto last = A.col.begin() + A.row_ptr[static_cast<std::size_t>(c.row) + 1];
    const auto d = std::lower_bound(first, last, c.row);
    if (d == last || *d != c.row)
      throw std::logic_error(fmt::format("shift_robin_diagonal: row {} has no diagonal entry", c.row));
    A.val[static_cast<std::size_t>(d - A.col.begin())] += c.beta * moved;  // a_ii += beta * sum of the dropped a_ie
  }
}

void Subdomain::local_rhs(const double* x, const double* ghost, double* out) const {
  std::copy(rhs(), rhs() + size(), out);
  add_robin_data(robin_couplings(), x, ghost, out);
}

}  // namespace desync::solvers
