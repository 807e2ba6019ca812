#pragma once
// Graph partitioning of a row-distributed matrix and the redistribution of its rows.
//
// A DistributedCsr arrives in contiguous row blocks (as a reader or a problem builds it). For a
// general sparse matrix those blocks may couple many rows across ranks; a graph partitioner assigns
// each row a rank so that few couplings cross ranks (a small edge cut) while ranks keep similar row
// counts. partition_system computes such an assignment on the graph of A + A^T (the couplings in
// either direction, no self loops), moves every row to its rank and renumbers the unknowns
// rank-major, so that the result is again a DistributedCsr with contiguous blocks: P A P^T for a
// permutation P. The solvers then run on it unchanged; vectors move between the two numberings with
// to_partitioned / to_input.
//
// Methods:
//   rows      the input's own blocks (nothing moves; the statistics are still computed),
//   metis     METIS_PartGraphKway (Karypis and Kumar, 1998) on the whole graph gathered on rank 0,
//   ptscotch  SCOTCH_dgraphPart (Chevalier and Pellegrini, 2008) on the distributed graph,
//   file      one part number per row from a text file, or from memory (PartitionOptions::parts:
//             the Python bindings' partition=array, and the balancing of a matrix given on rank 0).
// METIS and PT-Scotch are optional at build time; a build without one refuses it with the reason.
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "desync/linalg/csr.hpp"

namespace desync::linalg {

enum class PartitionMethod { rows, metis, ptscotch, file };

struct PartitionOptions {
  PartitionMethod method = PartitionMethod::rows;
  std::string file;  ///< method file: the path of the part numbers
  /// Method file with `parts_given`: rank 0's part number of every (block) row, in place of reading
  /// `file` (other ranks' copies are ignored); checked like a file's, `file` names it in messages.
  bool parts_given = false;
  std::vector<int> parts;
  int seed = 0;      ///< the partitioner's random seed (metis, ptscotch); same seed, same parts
};

/// Parses "rows" | "metis" | "ptscotch" | any other string = a file path (InputError for an empty
/// string).
PartitionOptions parse_partition(const std::string& value, int seed);

/// "rows", "metis", "ptscotch", "file".
std::string to_string(PartitionMethod method);

/// Whether this build has `method` (rows and file always; metis and ptscotch when found at
/// configure time). When not, *why (if given) says why not.
bool partition_available(PartitionMethod method, std::string* why = nullptr);

struct PartitionStats {
  std::string method;                    // "rows", "metis", "ptscotch", "file"
  std::int64_t edge_cut = 0;             // undirected edges {i,j}, i != j, of the graph of A + A^T cut
  std::int64_t rows_min = 0, rows_max = 0; double rows_mean = 0;
  std::int64_t nonzeros_min = 0, nonzeros_max = 0; double nonzeros_mean = 0;
  double seconds = 0;                    // partitioning + moving rows, max over ranks
  int seed = 0;
};
// rows_* count the scalar rows per rank of the partitioned matrix, nonzeros_* its stored scalar
// entries per rank (nonzero blocks x block_size^2). For block_size > 1 the graph, the parts and the
// edge cut are those of the block rows.

/// The matrix with rows moved to their owners and renumbered: new global index = rank-major, and
/// within a rank the original order. Keeps what is needed to move vectors back and forth.
struct PartitionedSystem {
  DistributedCsr A;                            // the renumbered matrix (comm = input's comm)
  std::vector<std::int64_t> original_row;      // per local (block) row of A: its row in the input numbering
  std::vector<std::int64_t> input_offsets;     // the input's row_offsets (where vectors start)
  PartitionStats stats;
  /// Per local (block) row of the input: the rank that owns it in A. Used to move vectors.
  std::vector<int> input_owner;
  /// A vector distributed like the input (this rank's rows of input_offsets) -> like A. Collective.
  /// std::invalid_argument if v does not have this rank's input length.
  std::vector<double> to_partitioned(MPI_Comm comm, std::span<const double> v) const;
  /// A vector distributed like A -> like the input (original order). Collective.
  std::vector<double> to_input(MPI_Comm comm, std::span<const double> v) const;
};

/// Collective. METIS: k-way on the graph of A + A^T gathered on rank 0 (METIS_PartGraphKway, seed in
/// options[METIS_OPTION_SEED]); PT-Scotch: distributed SCOTCH_dgraphPart (seeded, deterministic);
/// file: text, one part number per row (whitespace separated, '#' comments allowed), read on rank 0.
/// InputError: file of wrong length ("partition file X has 99 part numbers, the matrix 100 rows"),
/// part number < 0 or >= ranks, a part with no rows, more ranks than rows, a method this build lacks
/// ("desync was built without PT-Scotch").
/// The result: rows of part r on rank r, in their input order; every row's columns renumbered and
/// sorted ascending, values moved with them (bitwise).
PartitionedSystem partition_system(const DistributedCsr& A, const PartitionOptions& options);

/// The edge cut of a given assignment (part per local row of A, in A's distribution). Collective.
std::int64_t edge_cut(const DistributedCsr& A, std::span<const int> part);

}  // namespace desync::linalg
