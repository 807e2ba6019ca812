// The algebraic GDSW coarse space (Dohrmann, Klawonn and Widlund, 2008; the algebraic interface of
// Heinlein, Klawonn, Rajamanickam and Rheinbach's FROSch, interface_components.hpp): a row is on the
// interface when it couples to another rank's row; the interface rows are grouped into components by
// the set of ranks among their own and their neighbours' owners (edges between two subdomains,
// vertices where more meet); each component's function is 1 on its rows, 0 on the rest of the
// interface, and extended into every subdomain's interior rows by the local discrete harmonic
// extension phi_I = -A_II^-1 A_IG phi_G (interior rows couple to their own rank's rows only, so the extension
// is a local solve; A_II is factored once for these few solves, LocalSolverUse::few_solves). With
// near-kernel vectors z_k, each component C has one function per z_k independent on C, z_k on C's
// rows and 0 on the rest of the interface, extended alike (Dohrmann, Klawonn and Widlund, 2008,
// section 3; FROSch does the same).
#include <utility>
#include <vector>

#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "interface_components.hpp"

namespace desync::solvers {

namespace {

using interface::Components;

CoarseBasis build_gdsw(const CoarseBasisInput& in) {
  const interface::Components components = interface::number(interface::keys(in, "gdsw"), in, false);
  const std::vector<int>& comp = components.of_row;
  // Each component C is a group: its support is its own rows, weight 1; its functions are the z_k
  // independent on C, z_k on C's rows, 0 on the rest of the interface, extended harmonically inside.
  const interface::Support support = [&](std::size_t row) { return std::vector<std::pair<int, double>>{{comp[row], 1.0}}; };
  const interface::GroupFunctions fns =
      interface::group_functions(in, comp, static_cast<std::size_t>(components.count), support);
  const std::vector<interface::LocalFunction> local_fns = interface::local_functions(fns, comp, support);
  return interface::assemble(
      in, comp, fns.start.back(), local_fns, support,
      [&](std::size_t f, std::size_t row) {
        return comp[row] == local_fns[f].owner ? in.near_kernel[static_cast<std::size_t>(local_fns[f].vector)][row] : 0.0;
      },
      "gdsw");
}

}  // namespace

CoarseSpaceInfo gdsw_coarse_space() {
  return {"gdsw",
          "one function per interface component and near-kernel vector, extended harmonically into the subdomains "
          "(Dohrmann, Klawonn and Widlund, 2008)",
          &build_gdsw};
}

}  // namespace desync::solvers
