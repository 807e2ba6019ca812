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
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "interface_components.hpp"

namespace desync::solvers {

namespace {

/// The functions of each node n: z_k times the weights for the z_k independent on n's support,
/// chosen from the support's weighted Gram matrix sum_i w_n(i)^2 z_a(i) z_b(i) summed over the ranks
/// (one MPI_Allreduce of every node's m x m matrix), so that every rank chooses alike; numbered by
/// node, then k: node n's are start[n] .. start[n + 1) and carry the vectors kept[n].
struct NodeFunctions {
  std::vector<std::vector<int>> kept;
  std::vector<int> start;
};

NodeFunctions node_functions(const interface::Components& comp, const CoarseBasisInput& in) {
  const auto& z = in.near_kernel;
  const std::size_t M = z.size(), N = static_cast<std::size_t>(comp.nodes);
  std::vector<double> grams(N * M * M, 0.0);
  for (std::size_t i = 0; i < comp.of_row.size(); ++i) {
    if (comp.of_row[i] < 0) continue;
    const auto c = static_cast<std::size_t>(comp.of_row[i]);
    const int begin = comp.ancestor_ptr[c], end = comp.ancestor_ptr[c + 1];
    const double w = 1.0 / (end - begin);
    for (int t = begin; t < end; ++t) {
      double* g = grams.data() + static_cast<std::size_t>(comp.ancestors[static_cast<std::size_t>(t)]) * M * M;
      for (std::size_t a = 0; a < M; ++a)
        for (std::size_t b = 0; b < M; ++b) g[a * M + b] += w * w * z[a][i] * z[b][i];
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, grams.data(), static_cast<int>(grams.size()), MPI_DOUBLE, MPI_SUM, in.comm);
  NodeFunctions out{std::vector<std::vector<int>>(N), std::vector<int>(N + 1, 0)};
  for (std::size_t n = 0; n < N; ++n) {
    out.kept[n] = independent_columns(std::vector<double>(grams.begin() + static_cast<std::ptrdiff_t>(n * M * M),
                                                          grams.begin() + static_cast<std::ptrdiff_t>((n + 1) * M * M)),
                                      static_cast<int>(M));
    out.start[n + 1] = out.start[n] + static_cast<int>(out.kept[n].size());
  }
  return out;
}

/// A function of a node whose support touches this rank.
struct LocalFunction {
  int index;   // in Phi's columns
  int node;    // its node
  int vector;  // its near-kernel vector
};

CoarseBasis build_rgdsw(const CoarseBasisInput& in) {
  const interface::Components components = interface::number(interface::keys(in, "rgdsw"), in, true);
  const std::vector<int>& comp = components.of_row;
  const NodeFunctions fns = node_functions(components, in);
  const std::size_t rows = comp.size();
  auto ancestors = [&](std::size_t row) {  // the nodes of an interface row's component
    const auto c = static_cast<std::size_t>(comp[row]);
    return std::pair<const int*, const int*>{components.ancestors.data() + components.ancestor_ptr[c],
                                             components.ancestors.data() + components.ancestor_ptr[c + 1]};
  };
  // The weight of node n on interface row `row`: 1/|A(c)| if n is among A(c), else 0.
  auto weight = [&](std::size_t row, int n) {
    const auto [begin, end] = ancestors(row);
    return std::binary_search(begin, end, n) ? 1.0 / static_cast<double>(end - begin) : 0.0;
  };
  std::vector<int> local_nodes;
  for (std::size_t i = 0; i < rows; ++i)
    if (comp[i] >= 0) {
      const auto [begin, end] = ancestors(i);
      local_nodes.insert(local_nodes.end(), begin, end);
    }
  std::sort(local_nodes.begin(), local_nodes.end());
  local_nodes.erase(std::unique(local_nodes.begin(), local_nodes.end()), local_nodes.end());
  std::vector<LocalFunction> local_fns;  // ascending
  for (const int n : local_nodes)
    for (std::size_t t = 0; t < fns.kept[static_cast<std::size_t>(n)].size(); ++t)
      local_fns.push_back({fns.start[static_cast<std::size_t>(n)] + static_cast<int>(t), n,
                           fns.kept[static_cast<std::size_t>(n)][t]});
  std::vector<std::int64_t> interior_index(rows, -1);
  std::int64_t interior = 0;
  for (std::size_t i = 0; i < rows; ++i)
    if (comp[i] < 0) interior_index[i] = interior++;
  // phi_G: z_k(row) w_n(row); phi_I = -A_II^-1 A_IG phi_G.
  const std::vector<std::vector<double>> extension = interface::harmonic_extensions(
      in, comp, local_fns.size(),
      [&](std::size_t f, std::size_t row) {
        return weight(row, local_fns[f].node) * in.near_kernel[static_cast<std::size_t>(local_fns[f].vector)][row];
      },
      interior_index, "rgdsw");
  CoarseBasis phi;
  phi.size = fns.start.back();
  phi.ptr.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] >= 0) {
      const auto [begin, end] = ancestors(i);
      const double w = 1.0 / static_cast<double>(end - begin);
      for (const int* n = begin; n != end; ++n) {
        const auto nn = static_cast<std::size_t>(*n);
        for (std::size_t t = 0; t < fns.kept[nn].size(); ++t) {
          const double v = w * in.near_kernel[static_cast<std::size_t>(fns.kept[nn][t])][i];
          if (v != 0.0) {
            phi.col.push_back(fns.start[nn] + static_cast<int>(t));
            phi.val.push_back(v);
          }
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

CoarseSpaceInfo rgdsw_coarse_space() {
  return {"rgdsw",
          "GDSW reduced: one function per coarse node (subdomain vertex) and near-kernel vector, weighted "
          "1/(its nodes) on the interface around it and extended harmonically (Dohrmann and Widlund, 2017)",
          &build_rgdsw};
}

}  // namespace desync::solvers
