#pragma once
// The coarse spaces of two-level Schwarz by name (PETSc's PCRegister habit). Each space lives in its
// own file, src/solvers/schwarz/coarse/<name>.cpp, which builds the basis Phi on this rank's rows
// and registers the space with one function; register_all_coarse_spaces (coarse_registry.cpp) lists those,
// one line each. `--coarse`, its help and its check come from the registry; CoarseSpace
// (coarse_space.hpp) forms A0 = Phi^T A Phi and solves with it for every space alike, and the
// coarse level of the iteration (coarse_level.hpp) and the preconditioner (overlap.hpp) take any.
// docs/design.md, "Adding a coarse space", has the steps.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "desync/core/registry.hpp"
#include "desync/linalg/csr.hpp"

namespace desync::solvers {

/// What a coarse space is built from (CoarseSpace hands it to the space's build function).
struct CoarseBasisInput {
  const linalg::DistributedCsr& A;  ///< the partitioned matrix: rank p's rows are its subdomain
  /// The near-kernel: this rank's rows of each vector, as many on every rank, each local_rows long
  /// (the constant where the user gave none).
  const std::vector<std::vector<double>>& near_kernel;
  MPI_Comm comm;
  int rank = 0, ranks = 1;
  /// The subdomains (--subdomains-per-rank K): K per rank, numbered rank * K + piece. With K > 1,
  /// piece[i] in [0, K) is the piece of this rank's row i (the pieces of the one-level method's
  /// local solves, linalg::block_pieces), and ghost_subdomain[g] the subdomain of the other ranks'
  /// row ghost_rows[g] (ascending: every row of another rank that A's rows here couple to).
  /// K = 1 (piece empty): the rank's rows are its subdomain.
  int pieces_per_rank = 1;
  std::vector<int> piece;
  std::vector<std::int64_t> ghost_rows;
  std::vector<int> ghost_subdomain;
  /// The subdomain of this rank's row i, and how many subdomains there are.
  int subdomain(std::size_t i) const { return piece.empty() ? rank : rank * pieces_per_rank + piece[i]; }
  int subdomains() const { return ranks * pieces_per_rank; }
};

/// Phi on this rank's rows, compressed: row i's functions col[ptr[i]..ptr[i+1]) with values val;
/// `size` functions in all, numbered alike on every rank.
struct CoarseBasis {
  int size = 0;
  std::vector<std::int64_t> ptr;
  std::vector<int> col;
  std::vector<double> val;
};

/// A coarse space as it registers itself, in its own file.
struct CoarseSpaceInfo {
  std::string name;         ///< --coarse, the run record's "coarse"
  std::string description;  ///< one line for --coarse's help
  /// Builds Phi. Collective over input.comm; throws InputError on every rank alike where the space
  /// cannot be built on this matrix or partition.
  CoarseBasis (*build)(const CoarseBasisInput& input) = nullptr;
};

/// The spaces by name, in registration order.
class CoarseSpaceRegistry : public core::Registry<CoarseSpaceInfo> {
 public:
  CoarseSpaceRegistry() : Registry("coarse space") {}
  /// Adds a space; std::logic_error if the name is taken or is "none" (one level).
  void add(CoarseSpaceInfo info);
  const std::vector<CoarseSpaceInfo>& spaces() const { return items(); }
};

/// Registers every coarse space, one line each. An explicit function, not static self-registration,
/// which a static library would drop at link time.
void register_all_coarse_spaces(CoarseSpaceRegistry& registry);
/// The registry with register_all_coarse_spaces() applied, built on first use.
const CoarseSpaceRegistry& coarse_space_registry();

/// The value of --coarse meaning one level: no coarse space.
inline constexpr std::string_view no_coarse = "none";
/// `name` if it is "none" or a registered space; InputError "--coarse 'x': unknown coarse space
/// (expected none, nicolaides or gdsw)" otherwise.
std::string parse_coarse(std::string_view name);
/// The registered space called `name`; InputError as parse_coarse's otherwise (and for "none").
const CoarseSpaceInfo& find_coarse_space(std::string_view name);
/// "none | nicolaides | gdsw", then a line "  name: description" per choice: --coarse's help.
std::string coarse_help();
/// The registered spaces' names: "nicolaides or gdsw" (a, b or c), or joined by `separator` when
/// one is given ("nicolaides|gdsw"), for help texts and messages.
std::string coarse_space_names(std::string_view separator = {});

/// The columns of a matrix Z that are kept as linearly independent, from its m x m Gram matrix
/// Z^T Z (row-major): pivoted Cholesky (Higham, 1990), which takes the column whose part orthogonal
/// to those taken is the largest relative to its norm, until that relative squared norm is
/// <= tolerance. Zero columns are never kept. Ascending column indices. Not collective. The spaces
/// use it to keep the near-kernel vectors independent on a subdomain or an interface component.
std::vector<int> independent_columns(std::vector<double> gram, int m, double tolerance = 1e-10);

// The registrations, each in its space's file.
CoarseSpaceInfo nicolaides_coarse_space();  ///< nicolaides.cpp
CoarseSpaceInfo gdsw_coarse_space();        ///< gdsw.cpp
CoarseSpaceInfo rgdsw_coarse_space();       ///< rgdsw.cpp

}  // namespace desync::solvers
