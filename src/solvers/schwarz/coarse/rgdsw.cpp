// The reduced-dimension GDSW coarse space, RGDSW (Dohrmann and Widlund, 2017, "On the design of small
// coarse spaces for domain decomposition algorithms", option 1; Heinlein, Klawonn, Rajamanickam and
// Rheinbach's FROSch builds it algebraically alike): of GDSW's interface components
// (interface_components.hpp) only the coarse nodes carry functions, the components whose key (the
// ranks that meet there) no other component's key strictly contains: the subdomain vertices, or an
// edge that ends on the domain's boundary at both ends. Every interface component c takes its values
// from its ancestors A(c), the nodes whose key contains c's: node n's function is 1/|A(c)| on the
// rows of each component c with n in A(c), 0 on the rest of the interface, and is extended into every
// subdomain's interior rows by the discrete harmonic extension phi_I = -A_II^-1 A_IG phi_G, as GDSW's.
// The functions sum to 1 on every interface row, so the space reproduces the constant where GDSW's
// does, with one function per node instead of one per component: A0 grows more slowly with the
// subdomain count (in 3D, GDSW also has one per face and edge). With near-kernel vectors z_k, node n
// has one function per z_k independent on its support (weighted Gram matrix), z_k times the weight.
#include <algorithm>
#include <utility>
#include <vector>

#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "interface_components.hpp"

namespace desync::solvers {

namespace {

CoarseBasis build_rgdsw(const CoarseBasisInput& in) {
  const interface::Components components = interface::number(interface::keys(in, "rgdsw"), in, true);
  const std::vector<int>& comp = components.of_row;
  auto ancestors = [&](std::size_t row) {  // the nodes of an interface row's component
    const auto c = static_cast<std::size_t>(comp[row]);
    return std::pair<const int*, const int*>{components.ancestors.data() + components.ancestor_ptr[c],
                                             components.ancestors.data() + components.ancestor_ptr[c + 1]};
  };
  // Each node n is a group: its support is the rows of the components it is an ancestor of, weight
  // w_n = 1/|A(c)| on component c's rows; its functions are z_k w_n for the z_k independent there.
  const interface::Support support = [&](std::size_t row) {
    const auto [begin, end] = ancestors(row);
    std::vector<std::pair<int, double>> out;
    for (const int* n = begin; n != end; ++n) out.emplace_back(*n, 1.0 / static_cast<double>(end - begin));
    return out;
  };
  const interface::GroupFunctions fns =
      interface::group_functions(in, comp, static_cast<std::size_t>(components.nodes), support);
  const std::vector<interface::LocalFunction> local_fns = interface::local_functions(fns, comp, support);
  // phi_G: z_k(row) w_n(row), 0 where node n is not among the row's ancestors.
  return interface::assemble(
      in, comp, fns.start.back(), local_fns, support,
      [&](std::size_t f, std::size_t row) {
        const auto [begin, end] = ancestors(row);
        if (!std::binary_search(begin, end, local_fns[f].owner)) return 0.0;
        return in.near_kernel[static_cast<std::size_t>(local_fns[f].vector)][row] / static_cast<double>(end - begin);
      },
      "rgdsw");
}

}  // namespace

CoarseSpaceInfo rgdsw_coarse_space() {
  return {"rgdsw",
          "GDSW reduced: one function per coarse node (subdomain vertex) and near-kernel vector, weighted "
          "1/(its nodes) on the interface around it and extended harmonically (Dohrmann and Widlund, 2017)",
          &build_rgdsw};
}

}  // namespace desync::solvers
