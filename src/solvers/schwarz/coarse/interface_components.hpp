#pragma once
// What the interface-based coarse spaces share (gdsw.cpp, rgdsw.cpp): the algebraic interface of a
// partitioned matrix (a row is on the interface when it couples to another rank's row), its rows
// grouped into components by the set of ranks among their own and their neighbours' owners (the
// component's key: edges between two subdomains, vertices where more meet; Heinlein, Klawonn,
// Rajamanickam and Rheinbach's FROSch does the same), the components' ancestors (the maximal
// components whose key contains theirs: Dohrmann and Widlund, 2017), and the discrete harmonic
// extension of interface values into each subdomain's interior rows.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"

namespace desync::solvers::interface {

/// The keys of this rank's rows: the ranks among the row's own and its neighbours' owners for the
/// interface rows, empty for the interior rows. Refuses (on every rank alike, the message naming
/// `--coarse <space>`) one subdomain and a subdomain without interface. Collective.
std::vector<std::vector<int>> keys(const CoarseBasisInput& in, std::string_view space);

/// Each interface row's component (-1: an interior row) and the number of components, numbered alike
/// on every rank in the ascending order of their keys. With ancestors: the coarse nodes (the
/// components whose key no other component's key strictly contains), numbered 0 .. nodes - 1 in
/// the order of their components, and for each component c the nodes whose key contains c's key,
/// ancestors[ancestor_ptr[c] .. ancestor_ptr[c + 1]) (ascending; a node is its own only ancestor).
struct Components {
  std::vector<int> of_row;
  int count = 0;
  int nodes = 0;
  std::vector<int> ancestor_ptr, ancestors;
};

/// The components of `key` (from keys()). Rank 0 gathers every rank's distinct keys, numbers them
/// (and finds the ancestors), and returns each rank its keys' numbers (MPI_Gatherv, MPI_Scatterv; an
/// MPI_Allgatherv of the keys would post P^2 messages, hours of host time for 1024 simulated ranks);
/// the ancestor table is broadcast. Collective.
Components number(const std::vector<std::vector<int>>& key, const CoarseBasisInput& in, bool with_ancestors);

/// The discrete harmonic extension phi_I = -A_II^-1 A_IG phi_G of `functions` functions into this
/// rank's interior rows (the rows with component < 0, numbered by interior_index), one local solve
/// each with A_II factored once (LocalSolverUse::few_solves); value(f, row) is function f's value on
/// the interface row `row`. Returns each function's values on the interior rows. Collective (the
/// factorisation's failure is agreed on), refusing in the name of `--coarse <space>`.
std::vector<std::vector<double>> harmonic_extensions(const CoarseBasisInput& in, const std::vector<int>& component,
                                                     std::size_t functions,
                                                     const std::function<double(std::size_t f, std::size_t row)>& value,
                                                     const std::vector<std::int64_t>& interior_index,
                                                     std::string_view space);

}  // namespace desync::solvers::interface
