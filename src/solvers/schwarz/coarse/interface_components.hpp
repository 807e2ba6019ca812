#pragma once
// What the interface-based coarse spaces share (gdsw.cpp, rgdsw.cpp): the algebraic interface of a
// partitioned matrix (a row is on the interface when it couples to another subdomain's row: another
// rank's, or another piece's with --subdomains-per-rank K > 1, where subdomain rank * K + piece
// stands for the rank below), its rows grouped into components by the set of ranks among their own
// and their neighbours' owners (the
// component's key: edges between two subdomains, vertices where more meet; Heinlein, Klawonn,
// Rajamanickam and Rheinbach's FROSch does the same), the components' ancestors (the maximal
// components whose key contains theirs: Dohrmann and Widlund, 2017), and Phi from interface values
// extended harmonically into each subdomain's interior rows.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
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

/// The functions of `groups` groups of interface rows (GDSW's components, RGDSW's nodes): for each
/// group g the near-kernel vectors independent on its support, chosen from the support's Gram matrix
/// sum_i w_g(i)^2 z_a(i) z_b(i) summed over the ranks (one MPI_Allreduce of every group's m x m
/// matrix), so that every rank chooses alike; numbered by group, then vector: group g's are
/// start[g] .. start[g + 1) and carry the vectors kept[g].
struct GroupFunctions {
  std::vector<std::vector<int>> kept;
  std::vector<int> start;
};

/// support(row): the (group, weight w_g(row)) of the groups whose support holds interface row `row`.
using Support = std::function<std::vector<std::pair<int, double>>(std::size_t row)>;

/// The groups' functions (above). Collective.
GroupFunctions group_functions(const CoarseBasisInput& in, const std::vector<int>& component, std::size_t groups,
                               const Support& support);

/// A coarse function that touches this rank: its column in Phi, the component or node it belongs to
/// (the space's own numbering) and its near-kernel vector.
struct LocalFunction {
  int index;
  int owner;
  int vector;
};

/// The functions of the groups that hold one of this rank's interface rows, ascending.
std::vector<LocalFunction> local_functions(const GroupFunctions& fns, const std::vector<int>& component,
                                           const Support& support);

/// Phi on this rank's rows from the interface values of `functions` (ascending columns):
/// value(f, row) is function f's value on the interface row `row` (component >= 0); on the interior
/// rows each function is the discrete harmonic extension phi_I = -A_II^-1 A_IG phi_G: A_II is block
/// diagonal by subdomain (the rank's K pieces; one block for K = 1), each block factored once
/// (LocalSolverUse::few_solves) and solved for the functions whose interface values border it.
/// support(row) as for group_functions: the groups whose functions may be nonzero on `row`. `size`
/// functions in all. Collective (a failed factorisation is refused on every rank, naming `--coarse <space>`).
CoarseBasis assemble(const CoarseBasisInput& in, const std::vector<int>& component, int size,
                     const std::vector<LocalFunction>& functions, const Support& support,
                     const std::function<double(std::size_t f, std::size_t row)>& value, std::string_view space);

}  // namespace desync::solvers::interface
