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
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "interface_components.hpp"

namespace desync::solvers {

namespace {

using interface::Components;

/// The functions of each component C: z_k on C's rows for the z_k independent there, chosen from
/// C's Gram matrix Z_C^T Z_C summed over the ranks that own C's rows (one MPI_Allreduce of every
/// component's m x m Gram matrix), so that every rank chooses alike. They are numbered by component,
/// then k: component c's are start[c] .. start[c + 1) and carry the vectors kept[c].
struct ComponentFunctions {
  std::vector<std::vector<int>> kept;
  std::vector<int> start;
};

ComponentFunctions component_functions(const Components& comp, const CoarseBasisInput& in) {
  const auto& z = in.near_kernel;
  const std::size_t M = z.size(), C = static_cast<std::size_t>(comp.count);
  std::vector<double> grams(C * M * M, 0.0);
  for (std::size_t i = 0; i < comp.of_row.size(); ++i) {
    if (comp.of_row[i] < 0) continue;
    double* g = grams.data() + static_cast<std::size_t>(comp.of_row[i]) * M * M;
    for (std::size_t a = 0; a < M; ++a)
      for (std::size_t b = 0; b < M; ++b) g[a * M + b] += z[a][i] * z[b][i];
  }
  MPI_Allreduce(MPI_IN_PLACE, grams.data(), static_cast<int>(grams.size()), MPI_DOUBLE, MPI_SUM, in.comm);
  ComponentFunctions out{std::vector<std::vector<int>>(C), std::vector<int>(C + 1, 0)};
  for (std::size_t c = 0; c < C; ++c) {
    out.kept[c] = independent_columns(std::vector<double>(grams.begin() + static_cast<std::ptrdiff_t>(c * M * M),
                                                          grams.begin() + static_cast<std::ptrdiff_t>((c + 1) * M * M)),
                                      static_cast<int>(M));
    out.start[c + 1] = out.start[c] + static_cast<int>(out.kept[c].size());
  }
  return out;
}

/// A function of a component that touches this rank.
struct LocalFunction {
  int index;   // in Phi's columns
  int comp;    // its component
  int vector;  // its near-kernel vector
};

CoarseBasis build_gdsw(const CoarseBasisInput& in) {
  const Components components = interface::number(interface::keys(in, "gdsw"), in, false);
  const std::vector<int>& comp = components.of_row;
  const ComponentFunctions fns = component_functions(components, in);
  const std::size_t rows = comp.size();
  // Phi on the interface rows: z_k on the row's component's functions. On the interior rows: the
  // harmonic extension of every function of a component that touches this rank.
  std::vector<int> local_comps;
  for (const int c : comp)
    if (c >= 0) local_comps.push_back(c);
  std::sort(local_comps.begin(), local_comps.end());
  local_comps.erase(std::unique(local_comps.begin(), local_comps.end()), local_comps.end());
  std::vector<LocalFunction> local_fns;  // ascending
  for (const int c : local_comps)
    for (std::size_t t = 0; t < fns.kept[static_cast<std::size_t>(c)].size(); ++t)
      local_fns.push_back({fns.start[static_cast<std::size_t>(c)] + static_cast<int>(t), c,
                           fns.kept[static_cast<std::size_t>(c)][t]});
  std::vector<std::int64_t> interior_index(rows, -1);
  std::int64_t interior = 0;
  for (std::size_t i = 0; i < rows; ++i)
    if (comp[i] < 0) interior_index[i] = interior++;
  const std::vector<std::vector<double>> extension = interface::harmonic_extensions(
      in, comp, local_fns.size(),
      [&](std::size_t f, std::size_t row) {
        return comp[row] == local_fns[f].comp ? in.near_kernel[static_cast<std::size_t>(local_fns[f].vector)][row] : 0.0;
      },
      interior_index, "gdsw");
  CoarseBasis phi;
  phi.size = fns.start.back();
  phi.ptr.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] >= 0) {
      const auto c = static_cast<std::size_t>(comp[i]);
      for (std::size_t t = 0; t < fns.kept[c].size(); ++t) {
        const double v = in.near_kernel[static_cast<std::size_t>(fns.kept[c][t])][i];
        if (v != 0.0) {
          phi.col.push_back(fns.start[c] + static_cast<int>(t));
          phi.val.push_back(v);
        }
      }
    } else {
      for (std::size_t f = 0; f < local_fns.size(); ++f) {
        const double v = extension[f][static_cast<std::size_t>(interior_index[i])];
        if (v != 0.0) {
          phi.col.push_back(local_fns[f].index);
          phi.val.push_back(v);
        }
      }
    }
    phi.ptr.push_back(static_cast<std::int64_t>(phi.col.size()));
  }
  return phi;
}

}  // namespace

CoarseSpaceInfo gdsw_coarse_space() {
  return {"gdsw",
          "one function per interface component and near-kernel vector, extended harmonically into the subdomains "
          "(Dohrmann, Klawonn and Widlund, 2008)",
          &build_gdsw};
}

}  // namespace desync::solvers
