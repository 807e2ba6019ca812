// Graph partitioning and row redistribution (linalg/partition.hpp).
//
// The steps of partition_system, each collective over A.comm:
//   1. the graph G of A + A^T without self loops, distributed like A: every entry a_ij (i != j) gives
//      the edges i -> j (kept here) and j -> i (sent to the owner of row j); each row's neighbours
//      are then sorted and deduplicated, so G is symmetric and every undirected edge {i,j} appears
//      once in row i and once in row j;
//   2. part[i] for every local row: the method's (rows: this rank; metis: METIS_PartGraphKway on G
//      gathered on rank 0; ptscotch: SCOTCH_dgraphPart on G as it is; file: read on rank 0);
//   3. the new numbering: rank-major, and inside a rank the input order. Row i of part q becomes
//        new(i) = offset(q) + #{rows of part q on lower input ranks} + #{rows of part q before i here},
//      with the middle term an MPI_Exscan over ranks of the per-part counts;
//   4. every row moves to its part with comm::sparse_alltoallv (lengths, renumbered columns, values); the
//      receiver concatenates what it gets in source-rank order, which is the input order again, so
//      the renumbered matrix is P A P^T with no sorting of rows;
//   5. the statistics: edge cut of part on G (each undirected edge once), rows and non-zeros per rank.
#include "desync/linalg/partition.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/communication/reduction.hpp"
#include "desync/communication/sparse_alltoall.hpp"

#ifdef DESYNC_HAVE_METIS
#include <metis.h>
#endif
#ifdef DESYNC_HAVE_PTSCOTCH
#include <ptscotch.h>
#endif

namespace desync::linalg {

namespace {

using Index = std::int64_t;

/// The graph of A + A^T without self loops, on the local block rows of A: neighbours of local row
/// i (global block indices, ascending, no duplicates) in adj[ptr[i], ptr[i+1]).
struct Graph {
  std::vector<Index> ptr;
  std::vector<Index> adj;
};

/// The rank whose block [offsets[r], offsets[r+1]) holds global index g (empty blocks allowed).
int owner_of(const std::vector<Index>& offsets, Index g) {
  return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), g) - offsets.begin()) - 1;
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<Index>() { return MPI_INT64_T; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <>
MPI_Datatype mpi_type<int>() { return MPI_INT; }

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) d[r] = d[r - 1] + counts[r - 1];
  return d;
}

/// Send and receive counts of one MPI_Alltoallv.
struct Counts {
  std::vector<int> send, recv;
};

/// The counts of k simultaneous all-to-all moves: send[j][r] items of move j for rank r. One
/// MPI_Alltoall tells every rank what it receives; MPI counts and displacements are int, so every
/// rank throws the same InputError if any count or total of any rank does not fit. Collective.
std::vector<Counts> exchange_counts(MPI_Comm comm, const std::vector<std::vector<Index>>& send, const char* what) {
  const auto P = static_cast<std::size_t>(core::size_of(comm)), k = send.size();
  std::vector<Index> out(P * k), in(P * k);
  for (std::size_t r = 0; r < P; ++r)
    for (std::size_t j = 0; j < k; ++j) out[r * k + j] = send[j][r];
  comm::sparse_alltoall(out.data(), in.data(), comm, static_cast<int>(k));
  bool fits = true;
  std::vector<Counts> counts(k);
  for (std::size_t j = 0; j < k; ++j) {
    Index sent = 0, received = 0;
    for (std::size_t r = 0; r < P; ++r) {
      sent += out[r * k + j];
      received += in[r * k + j];
      counts[j].send.push_back(static_cast<int>(std::min<Index>(out[r * k + j], INT_MAX)));
      counts[j].recv.push_back(static_cast<int>(std::min<Index>(in[r * k + j], INT_MAX)));
    }
    fits = fits && sent <= INT_MAX && received <= INT_MAX;
  }
  agree_or_throw(comm, fits,
                 std::string("partition: more than 2^31 - 1 ") + what + " to send or receive on one rank");
  return counts;
}

/// comm::sparse_alltoallv of `send` (grouped by destination, send_counts each) into a buffer grouped by
/// source rank. The receive total must fit an int (checked by the callers' counts). Collective.
template <class T>
std::vector<T> alltoallv(MPI_Comm comm, const std::vector<T>& send, const std::vector<int>& send_counts,
                         const std::vector<int>& recv_counts) {
  const auto sd = displacements(send_counts);
  const auto rd = displacements(recv_counts);
  const Index total = std::accumulate(recv_counts.begin(), recv_counts.end(), Index{0});
  std::vector<T> recv(static_cast<std::size_t>(total));
  comm::sparse_alltoallv(send.data(), send_counts.data(), sd.data(), mpi_type<T>(), recv.data(), recv_counts.data(),
                rd.data(), mpi_type<T>(), comm);
  return recv;
}

/// The values at the global indices `wanted` (ascending, no duplicates) of a quantity distributed
/// by `offsets`, this rank holding `mine` for its block. Collective.
template <class T>
std::vector<T> fetch(MPI_Comm comm, const std::vector<Index>& offsets, const std::vector<Index>& wanted,
                     std::span<const T> mine) {
  const int size = core::size_of(comm), rank = core::rank_of(comm);
  std::vector<Index> want_from(static_cast<std::size_t>(size), 0);
  for (const Index g : wanted) ++want_from[static_cast<std::size_t>(owner_of(offsets, g))];
  const auto c = exchange_counts(comm, {want_from}, "indices")[0];
  const auto& ask_counts = c.send;
  const auto& asked_counts = c.recv;
  // `wanted` is ascending, hence already grouped by owner in rank order.
  const auto asked = alltoallv(comm, wanted, ask_counts, asked_counts);
  std::vector<T> answers(asked.size());
  const Index first = offsets[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < asked.size(); ++k) answers[k] = mine[static_cast<std::size_t>(asked[k] - first)];
  return alltoallv(comm, answers, asked_counts, ask_counts);
}

/// Step 1: the symmetric graph of A + A^T without self loops, distributed like A. Collective.
Graph symmetric_graph(const DistributedCsr& A) {
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm);
  const Index n = A.local_block_rows(), first = A.first_block_row();
  // Transposed entries j -> i, as (j, i) pairs, for the owner of row j.
  std::vector<Index> pairs_to(static_cast<std::size_t>(size), 0);
  for (Index i = 0; i < n; ++i)
    for (Index k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k)
      if (A.col[k] != first + i) pairs_to[static_cast<std::size_t>(owner_of(A.row_offsets, A.col[k]))] += 2;
  const auto c = exchange_counts(comm, {pairs_to}, "graph edges")[0];
  auto pos = displacements(c.send);
  std::vector<Index> send(static_cast<std::size_t>(std::accumulate(pairs_to.begin(), pairs_to.end(), Index{0})));
  for (Index i = 0; i < n; ++i)
    for (Index k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k)
      if (A.col[k] != first + i) {
        int& p = pos[static_cast<std::size_t>(owner_of(A.row_offsets, A.col[k]))];
        send[static_cast<std::size_t>(p++)] = A.col[k];
        send[static_cast<std::size_t>(p++)] = first + i;
      }
  const auto recv = alltoallv(comm, send, c.send, c.recv);

  // Merge: own off-diagonal entries plus the transposed ones received, per row.
  Graph g;
  g.ptr.assign(static_cast<std::size_t>(n + 1), 0);
  for (Index i = 0; i < n; ++i)
    for (Index k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k)
      if (A.col[k] != first + i) ++g.ptr[i + 1];
  for (std::size_t k = 0; k < recv.size(); k += 2) ++g.ptr[recv[k] - first + 1];
  for (Index i = 0; i < n; ++i) g.ptr[i + 1] += g.ptr[i];
  std::vector<Index> fill(g.ptr.begin(), g.ptr.end() - 1);
  g.adj.resize(static_cast<std::size_t>(g.ptr[n]));
  for (Index i = 0; i < n; ++i)
    for (Index k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k)
      if (A.col[k] != first + i) g.adj[static_cast<std::size_t>(fill[i]++)] = A.col[k];
  for (std::size_t k = 0; k < recv.size(); k += 2) g.adj[static_cast<std::size_t>(fill[recv[k] - first]++)] = recv[k + 1];
  // Sort and deduplicate each row, compacting in place.
  Index out = 0;
  for (Index i = 0; i < n; ++i) {
    const auto b = g.adj.begin() + g.ptr[i], e = g.adj.begin() + g.ptr[i + 1];
    std::sort(b, e);
    const auto u = std::unique(b, e);
    g.ptr[i] = out;
    out = static_cast<Index>(std::copy(b, u, g.adj.begin() + out) - g.adj.begin());
  }
  g.ptr[n] = out;
  g.adj.resize(static_cast<std::size_t>(out));
  return g;
}

/// Step 5: the edges {i,j} of G with part[i] != part[j]. G holds each undirected edge twice (row i
/// and row j), so the sum over all rows is twice the cut. Collective.
Index cut_of(MPI_Comm comm, const std::vector<Index>& offsets, const Graph& g, std::span<const int> part) {
  std::vector<Index> wanted(g.adj);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const auto part_of = fetch<int>(comm, offsets, wanted, part);
  Index twice = 0;
  const Index n = static_cast<Index>(g.ptr.size()) - 1;
  for (Index i = 0; i < n; ++i)
    for (Index k = g.ptr[i]; k < g.ptr[i + 1]; ++k) {
      const auto w = std::lower_bound(wanted.begin(), wanted.end(), g.adj[k]) - wanted.begin();
      if (part_of[static_cast<std::size_t>(w)] != part[static_cast<std::size_t>(i)]) ++twice;
    }
  MPI_Allreduce(MPI_IN_PLACE, &twice, 1, MPI_INT64_T, MPI_SUM, comm);
  return twice / 2;
}

/// Scatters rank 0's parts of all global block rows to their input owners. Collective.
std::vector<int> scatter_parts(const DistributedCsr& A, const std::vector<int>& all_parts) {
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm);
  std::vector<int> counts(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) counts[r] = static_cast<int>(A.row_offsets[r + 1] - A.row_offsets[r]);
  const auto displs = displacements(counts);
  std::vector<int> part(static_cast<std::size_t>(A.local_block_rows()));
  MPI_Scatterv(all_parts.data(), counts.data(), displs.data(), MPI_INT, part.data(), static_cast<int>(part.size()),
               MPI_INT, 0, comm);
  return part;
}

std::vector<int> metis_parts(const DistributedCsr& A, const Graph& g, int seed) {
#ifndef DESYNC_HAVE_METIS
  (void)g;
  (void)seed;
  return std::vector<int>(static_cast<std::size_t>(A.local_block_rows()), 0);  // not reached (checked before)
#else
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm), rank = core::rank_of(comm);
  const Index n = A.local_block_rows();
  if (size == 1) return std::vector<int>(static_cast<std::size_t>(n), 0);
  // METIS's idx_t is 32-bit in Debian's build (IDXTYPEWIDTH 32): rows and the adjacency entries of
  // the whole graph (twice its edges) must fit; and the gathers count in int.
  Index entries = static_cast<Index>(g.adj.size());
  MPI_Allreduce(MPI_IN_PLACE, &entries, 1, MPI_INT64_T, MPI_SUM, comm);
  const Index rows = A.global_block_rows();
  const Index limit = std::min<Index>(std::numeric_limits<idx_t>::max(), INT_MAX);
  agree_or_throw(comm, rows <= limit && entries <= limit,
                 "--partition metis: the graph of A + A^T has " + std::to_string(rows) + " vertices and " +
                     std::to_string(entries / 2) + " edges; this METIS counts in " +
                     std::to_string(8 * sizeof(idx_t)) + "-bit integers (at most " + std::to_string(limit) +
                     " adjacency entries): use --partition ptscotch");

  // Gather G on rank 0: the degrees, then the neighbour lists, in global row order.
  std::vector<int> degree(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) degree[i] = static_cast<int>(g.ptr[i + 1] - g.ptr[i]);
  std::vector<int> row_counts(static_cast<std::size_t>(size)), adj_counts(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) row_counts[r] = static_cast<int>(A.row_offsets[r + 1] - A.row_offsets[r]);
  const int my_adj = static_cast<int>(g.adj.size());
  MPI_Gather(&my_adj, 1, MPI_INT, adj_counts.data(), 1, MPI_INT, 0, comm);
  std::vector<int> all_degree(rank == 0 ? static_cast<std::size_t>(rows) : 0);
  MPI_Gatherv(degree.data(), static_cast<int>(n), MPI_INT, all_degree.data(), row_counts.data(),
              displacements(row_counts).data(), MPI_INT, 0, comm);
  std::vector<Index> all_adj(rank == 0 ? static_cast<std::size_t>(entries) : 0);
  MPI_Gatherv(g.adj.data(), my_adj, MPI_INT64_T, all_adj.data(), adj_counts.data(),
              displacements(adj_counts).data(), MPI_INT64_T, 0, comm);

  std::vector<int> all_parts;
  bool ok = true;
  std::string message;
  if (rank == 0) {
    std::vector<idx_t> xadj(static_cast<std::size_t>(rows + 1), 0), adjncy(all_adj.begin(), all_adj.end());
    for (Index i = 0; i < rows; ++i) xadj[i + 1] = xadj[i] + all_degree[i];
    idx_t nvtxs = static_cast<idx_t>(rows), ncon = 1, nparts = size, objval = 0;
    std::vector<idx_t> where(static_cast<std::size_t>(rows), 0);
    idx_t opts[METIS_NOPTIONS];
    METIS_SetDefaultOptions(opts);
    opts[METIS_OPTION_SEED] = seed;
    opts[METIS_OPTION_NUMBERING] = 0;
    // Unit vertex and edge weights, the default 3% load imbalance (METIS_OPTION_UFACTOR 30).
    const int status = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr, nullptr,
                                           &nparts, nullptr, nullptr, opts, &objval, where.data());
    ok = status == METIS_OK;
    if (!ok)
      message = std::string("--partition metis: METIS_PartGraphKway failed (") +
                (status == METIS_ERROR_MEMORY ? "out of memory" : status == METIS_ERROR_INPUT ? "invalid input" : "error") +
                ")";
    all_parts.assign(where.begin(), where.end());
  }
  agree_or_throw(comm, ok, message);
  return scatter_parts(A, all_parts);
#endif
}

std::vector<int> ptscotch_parts(const DistributedCsr& A, const Graph& g, int seed) {
#ifndef DESYNC_HAVE_PTSCOTCH
  (void)g;
  (void)seed;
  return std::vector<int>(static_cast<std::size_t>(A.local_block_rows()), 0);  // not reached (checked before)
#else
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm);
  const Index n = A.local_block_rows();
  if (size == 1) return std::vector<int>(static_cast<std::size_t>(n), 0);
  // SCOTCH_Num is the width of the installed library (int in Debian's default build): the global
  // vertex numbers and the local adjacency counts must fit.
  agree_or_throw(comm, A.global_block_rows() <= SCOTCH_NUMMAX && static_cast<Index>(g.adj.size()) <= SCOTCH_NUMMAX,
                 "--partition ptscotch: the graph of A + A^T is too large for this PT-Scotch's " +
                     std::to_string(8 * sizeof(SCOTCH_Num)) + "-bit SCOTCH_Num");
  std::vector<SCOTCH_Num> vertloc(g.ptr.begin(), g.ptr.end()), edgeloc(g.adj.begin(), g.adj.end());
  std::vector<SCOTCH_Num> partloc(static_cast<std::size_t>(n), 0);

  // The Scotch objects, released in reverse order of creation whatever happens.
  struct Scotch {
    SCOTCH_Dgraph graph{}, bound{};
    SCOTCH_Context context{};
    SCOTCH_Strat strat{};
    bool graph_init = false, bound_init = false, context_init = false, strat_init = false;
    ~Scotch() {
      if (strat_init) SCOTCH_stratExit(&strat);
      if (bound_init) SCOTCH_dgraphExit(&bound);
      if (context_init) SCOTCH_contextExit(&context);
      if (graph_init) SCOTCH_dgraphExit(&graph);
    }
  } s;
  const auto check = [&](int status, const char* what) {
    agree_or_throw(comm, status == 0, std::string("--partition ptscotch: ") + what + " failed");
  };
  check(SCOTCH_dgraphInit(&s.graph, comm), "SCOTCH_dgraphInit");
  s.graph_init = true;
  const SCOTCH_Num vertnbr = static_cast<SCOTCH_Num>(n), edgenbr = static_cast<SCOTCH_Num>(g.adj.size());
  check(SCOTCH_dgraphBuild(&s.graph, 0, vertnbr, vertnbr, vertloc.data(), vertloc.data() + 1, nullptr, nullptr,
                           edgenbr, edgenbr, edgeloc.data(), nullptr, nullptr),
        "SCOTCH_dgraphBuild");
  // Determinism (Scotch 7 contexts): a private random generator seeded with `seed` and reset, the
  // deterministic option (no algorithm whose result depends on thread timing), one thread (no
  // concurrent MPI calls from Scotch's threads under MPI_THREAD_FUNNELED). The global generator is
  // seeded too, for any routine that does not go through the context.
  SCOTCH_randomSeed(static_cast<SCOTCH_Num>(seed));
  SCOTCH_randomReset();
  check(SCOTCH_contextInit(&s.context), "SCOTCH_contextInit");
  s.context_init = true;
  check(SCOTCH_contextRandomClone(&s.context), "SCOTCH_contextRandomClone");
  SCOTCH_contextRandomSeed(&s.context, static_cast<SCOTCH_Num>(seed));
  SCOTCH_contextRandomReset(&s.context);
  check(SCOTCH_contextOptionSetNum(&s.context, SCOTCH_OPTIONNUMDETERMINISTIC, 1), "SCOTCH_contextOptionSetNum");
  check(SCOTCH_contextThreadSpawn(&s.context, 1, nullptr), "SCOTCH_contextThreadSpawn");
  check(SCOTCH_dgraphInit(&s.bound, comm), "SCOTCH_dgraphInit");
  s.bound_init = true;
  check(SCOTCH_contextBindDgraph(&s.context, &s.graph, &s.bound), "SCOTCH_contextBindDgraph");
  // The default k-way partitioning strategy with a 5% load imbalance.
  check(SCOTCH_stratInit(&s.strat), "SCOTCH_stratInit");
  s.strat_init = true;
  check(SCOTCH_stratDgraphMapBuild(&s.strat, SCOTCH_STRATDEFAULT, size, size, 0.05), "SCOTCH_stratDgraphMapBuild");
  check(SCOTCH_dgraphPart(&s.bound, static_cast<SCOTCH_Num>(size), &s.strat, partloc.data()), "SCOTCH_dgraphPart");
  return {partloc.begin(), partloc.end()};
#endif
}

/// Method file with the part numbers in memory (rank 0's `given`): checked like a file's, scattered.
/// Collective.
std::vector<int> given_parts(const DistributedCsr& A, const std::vector<int>& given, const std::string& name) {
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm), rank = core::rank_of(comm);
  const Index rows = A.global_block_rows();
  std::string message;
  if (rank == 0) {
    if (static_cast<Index>(given.size()) != rows)
      message = name + " has " + std::to_string(given.size()) + " part numbers, the matrix " + std::to_string(rows) + " rows";
    for (std::size_t i = 0; message.empty() && i < given.size(); ++i)
      if (given[i] < 0 || given[i] >= size)
        message = name + ", row " + std::to_string(i) + ": part number " + std::to_string(given[i]) +
                  " is not a rank (0 to " + std::to_string(size - 1) + ")";
  }
  agree_or_throw(comm, message.empty(), message);
  return scatter_parts(A, rank == 0 ? given : std::vector<int>{});
}

/// Method file: rank 0 reads `path` (part numbers separated by white space, '#' to the end of a
/// line is a comment), checks them and scatters them. Collective.
std::vector<int> file_parts(const DistributedCsr& A, const std::string& path) {
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm), rank = core::rank_of(comm);
  const Index rows = A.global_block_rows();
  std::vector<int> all_parts;
  bool ok = true;
  std::string message;
  if (rank == 0) {
    std::ifstream in(path);
    if (!in) {
      ok = false;
      message = "partition file " + path + " cannot be read";
    }
    std::string line;
    Index count = 0, line_no = 0;
    while (ok && std::getline(in, line)) {
      ++line_no;
      if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      std::istringstream words(line);
      std::string word;
      while (ok && words >> word) {
        long long value = 0;
        const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
        if (ec != std::errc() || end != word.data() + word.size()) {
          ok = false;
          message = "partition file " + path + ", line " + std::to_string(line_no) + ": '" + word +
                    "' is not a part number";
        } else if (value < 0 || value >= size) {
          ok = false;
          message = "partition file " + path + ", line " + std::to_string(line_no) + ": part number " + word +
                    " is not a rank (0 to " + std::to_string(size - 1) + ")";
        } else {
          if (count < rows) all_parts.push_back(static_cast<int>(value));
          ++count;
        }
      }
    }
    if (ok && in.bad()) {
      ok = false;
      message = "partition file " + path + " could not be read to its end";
    }
    if (ok && count != rows) {
      ok = false;
      message = "partition file " + path + " has " + std::to_string(count) + " part numbers, the matrix " +
                std::to_string(rows) + " rows";
    }
  }
  agree_or_throw(comm, ok, message);
  return scatter_parts(A, all_parts);
}

/// Steps 3 and 4: the rows moved to their parts and renumbered. Collective.
PartitionedSystem redistribute(const DistributedCsr& A, std::span<const int> part) {
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm);
  const auto P = static_cast<std::size_t>(size);
  const Index n = A.local_block_rows(), first = A.first_block_row();
  const Index bb = static_cast<Index>(A.block_size) * A.block_size;

  // Step 3: new(i) = offset(q) + before(q) + (rows of part q before i here), q = part[i].
  std::vector<Index> here(P, 0), before(P, 0), total(P, 0);
  for (const int q : part) ++here[static_cast<std::size_t>(q)];
  before = comm::exclusive_prefix_sums(comm, here);
  MPI_Allreduce(here.data(), total.data(), size, MPI_INT64_T, MPI_SUM, comm);
  std::vector<Index> new_offsets(P + 1, 0);
  for (std::size_t r = 0; r < P; ++r) new_offsets[r + 1] = new_offsets[r] + total[r];
  std::vector<Index> new_index(static_cast<std::size_t>(n));
  {
    std::vector<Index> next(P);
    for (std::size_t q = 0; q < P; ++q) next[q] = new_offsets[q] + before[q];
    for (Index i = 0; i < n; ++i) new_index[i] = next[static_cast<std::size_t>(part[i])]++;
  }
  // The new number of every column referenced here, from the column's owner.
  std::vector<Index> columns(A.col);
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  const auto new_column = fetch<Index>(comm, A.row_offsets, columns, new_index);

  // Step 4: per destination, row headers (input row, length), renumbered columns, values.
  std::vector<Index> rows_to(P, 0), entries_to(P, 0), values_to(P, 0);
  for (Index i = 0; i < n; ++i) {
    const auto d = static_cast<std::size_t>(part[i]);
    rows_to[d] += 2;
    entries_to[d] += A.row_ptr[i + 1] - A.row_ptr[i];
  }
  for (std::size_t d = 0; d < P; ++d) values_to[d] = entries_to[d] * bb;
  const auto c = exchange_counts(comm, {rows_to, entries_to, values_to}, "matrix entries");
  const Counts &head_counts = c[0], &col_counts = c[1], &val_counts = c[2];
  auto head_pos = displacements(head_counts.send), col_pos = displacements(col_counts.send),
       val_pos = displacements(val_counts.send);
  std::vector<Index> heads(static_cast<std::size_t>(2 * n)), cols(A.col.size());
  std::vector<double> vals(A.val.size());
  std::vector<std::pair<Index, Index>> row;  // (new column, entry) of one row, sorted by new column
  for (Index i = 0; i < n; ++i) {
    const auto d = static_cast<std::size_t>(part[i]);
    heads[static_cast<std::size_t>(head_pos[d]++)] = first + i;
    heads[static_cast<std::size_t>(head_pos[d]++)] = A.row_ptr[i + 1] - A.row_ptr[i];
    row.clear();
    for (Index k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const auto c = std::lower_bound(columns.begin(), columns.end(), A.col[k]) - columns.begin();
      row.emplace_back(new_column[static_cast<std::size_t>(c)], k);
    }
    std::sort(row.begin(), row.end());
    for (const auto& [c, k] : row) {
      cols[static_cast<std::size_t>(col_pos[d]++)] = c;
      std::copy_n(A.val.begin() + k * bb, bb, vals.begin() + val_pos[d]);
      val_pos[d] += static_cast<int>(bb);
    }
  }
  const auto got_heads = alltoallv(comm, heads, head_counts.send, head_counts.recv);
  auto got_cols = alltoallv(comm, cols, col_counts.send, col_counts.recv);
  auto got_vals = alltoallv(comm, vals, val_counts.send, val_counts.recv);

  // Received in source-rank order, each source's rows in its order: the input order.
  PartitionedSystem out;
  out.A.comm = comm;
  out.A.block_size = A.block_size;
  out.A.row_offsets = new_offsets;
  const std::size_t m = got_heads.size() / 2;
  out.A.row_ptr.assign(m + 1, 0);
  out.original_row.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    out.original_row[i] = got_heads[2 * i];
    out.A.row_ptr[i + 1] = out.A.row_ptr[i] + got_heads[2 * i + 1];
  }
  out.A.col = std::move(got_cols);
  out.A.val = std::move(got_vals);
  out.input_offsets = A.row_offsets;
  out.input_owner.assign(part.begin(), part.end());
  return out;
}

/// Rows per source/destination rank of a vector move, in doubles. Both vector layouts fit int
/// counts on every rank (checked by partition_system), so the counts do too.
std::vector<int> owner_counts(MPI_Comm comm, const std::vector<int>& owner_of_row, int block_size) {
  std::vector<int> counts(static_cast<std::size_t>(core::size_of(comm)), 0);
  for (const int r : owner_of_row) counts[static_cast<std::size_t>(r)] += block_size;
  return counts;
}

std::vector<int> input_owners(const PartitionedSystem& s) {
  std::vector<int> owner(s.original_row.size());
  for (std::size_t i = 0; i < owner.size(); ++i) owner[i] = owner_of(s.input_offsets, s.original_row[i]);
  return owner;
}

}  // namespace

PartitionOptions parse_partition(const std::string& value, int seed) {
  PartitionOptions o;
  o.seed = seed;
  if (value.empty()) throw InputError("--partition: empty value (rows, metis, ptscotch or a partition file)");
  if (value == "rows") {
    o.method = PartitionMethod::rows;
  } else if (value == "metis") {
    o.method = PartitionMethod::metis;
  } else if (value == "ptscotch") {
    o.method = PartitionMethod::ptscotch;
  } else {
    o.method = PartitionMethod::file;
    o.file = value;
  }
  return o;
}

std::string to_string(PartitionMethod method) {
  switch (method) {
    case PartitionMethod::rows: return "rows";
    case PartitionMethod::metis: return "metis";
    case PartitionMethod::ptscotch: return "ptscotch";
    case PartitionMethod::file: return "file";
  }
  return "?";
}

bool partition_available(PartitionMethod method, std::string* why) {
  // Why this build lacks an optional partitioner (nullptr: it has it).
#ifdef DESYNC_HAVE_METIS
  constexpr const char* metis_missing = nullptr;
#else
  constexpr const char* metis_missing = DESYNC_METIS_WHY;
#endif
#ifdef DESYNC_HAVE_PTSCOTCH
  constexpr const char* ptscotch_missing = nullptr;
#else
  constexpr const char* ptscotch_missing = DESYNC_PTSCOTCH_WHY;
#endif
  const char* missing = method == PartitionMethod::metis      ? metis_missing
                        : method == PartitionMethod::ptscotch ? ptscotch_missing
                                                              : nullptr;
  if (missing != nullptr && why != nullptr) *why = missing;
  return missing == nullptr;
}

std::int64_t edge_cut(const DistributedCsr& A, std::span<const int> part) {
  const Index n = A.global_block_rows();
  const bool ok = static_cast<Index>(part.size()) == A.local_block_rows() &&
                  std::all_of(A.col.begin(), A.col.end(), [&](Index c) { return c >= 0 && c < n; });
  agree_or_throw(A.comm, ok,
                 "edge_cut: " + std::to_string(part.size()) + " part numbers for " +
                     std::to_string(A.local_block_rows()) + " local rows, or a column outside 0.." +
                     std::to_string(n - 1));
  return cut_of(A.comm, A.row_offsets, symmetric_graph(A), part);
}

PartitionedSystem partition_system(const DistributedCsr& A, const PartitionOptions& options) {
  const core::Stopwatch clock;
  const MPI_Comm comm = A.comm;
  const int size = core::size_of(comm), rank = core::rank_of(comm);
  const std::string method = to_string(options.method);
  // One agreed check of the method, the distribution and the size.
  std::string why, problem;
  const bool distributed_ok =
      A.row_offsets.size() == static_cast<std::size_t>(size) + 1 && !A.row_ptr.empty() && A.block_size >= 1 &&
      A.local_block_rows() == A.row_offsets[rank + 1] - A.row_offsets[rank] &&
      A.col.size() == static_cast<std::size_t>(A.row_ptr.back()) &&
      A.val.size() == A.col.size() * static_cast<std::size_t>(A.block_size) * static_cast<std::size_t>(A.block_size);
  const bool columns_ok =
      distributed_ok && std::all_of(A.col.begin(), A.col.end(), [&](Index c) { return c >= 0 && c < A.global_block_rows(); });
  if (!partition_available(options.method, &why))
    problem = "--partition " + method + ": desync was built without " +
              (options.method == PartitionMethod::metis ? "METIS" : "PT-Scotch") + " (" + why + ")";
  else if (!distributed_ok)
    problem = "--partition " + method + ": the matrix's distribution does not match its communicator";
  else if (!columns_ok)
    problem = "--partition " + method + ": the matrix has a column index outside 0.." +
              std::to_string(A.global_block_rows() - 1);
  else if (A.global_block_rows() < size)
    problem = "--partition " + method + ": more ranks (" + std::to_string(size) + ") than matrix rows (" +
              std::to_string(A.global_block_rows()) + ")";
  agree_or_throw(comm, problem.empty(), problem);
  const Index rows = A.global_block_rows();

  // A partition file is read (and refused) before the graph is built.
  std::vector<int> part;
  if (options.method == PartitionMethod::file)
    part = options.parts_given ? given_parts(A, options.parts, options.file) : file_parts(A, options.file);
  const Graph g = symmetric_graph(A);
  switch (options.method) {
    case PartitionMethod::rows: part.assign(static_cast<std::size_t>(A.local_block_rows()), rank); break;
    case PartitionMethod::metis: part = metis_parts(A, g, options.seed); break;
    case PartitionMethod::ptscotch: part = ptscotch_parts(A, g, options.seed); break;
    case PartitionMethod::file: break;
  }
  // Every rank must own rows: the solvers assume non-empty blocks.
  std::vector<Index> per_part(static_cast<std::size_t>(size), 0);
  for (const int q : part) ++per_part[static_cast<std::size_t>(q)];
  MPI_Allreduce(MPI_IN_PLACE, per_part.data(), size, MPI_INT64_T, MPI_SUM, comm);
  const auto empty = std::find(per_part.begin(), per_part.end(), Index{0});
  if (empty != per_part.end()) {
    const std::string who = options.method == PartitionMethod::file ? "partition file " + options.file
                                                                      : "--partition " + method;
    throw InputError(who + " leaves rank " + std::to_string(empty - per_part.begin()) + " with no rows (" +
                     std::to_string(size) + " ranks, " + std::to_string(rows) + " rows)");
  }

  PartitionedSystem out = redistribute(A, part);
  PartitionStats& st = out.stats;
  st.method = method;
  st.seed = options.seed;
  st.edge_cut = cut_of(comm, A.row_offsets, g, part);
  // Rows and non-zeros per rank (min as the max of the negatives); and whether both vector layouts
  // fit MPI's int counts on every rank, which to_partitioned / to_input rely on.
  const Index bb = static_cast<Index>(A.block_size) * A.block_size;
  const Index r = out.A.local_rows(), z = out.A.nonzero_blocks() * bb;
  const Index too_long = std::max(r, A.local_rows()) > INT_MAX ? 1 : 0;
  Index high[5] = {-r, -z, r, z, too_long}, sum[2] = {r, z};
  MPI_Allreduce(MPI_IN_PLACE, high, 5, MPI_INT64_T, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, sum, 2, MPI_INT64_T, MPI_SUM, comm);
  if (high[4] != 0) throw InputError("--partition " + method + ": more than 2^31 - 1 vector entries on one rank");
  st.rows_min = -high[0];
  st.rows_max = high[2];
  st.rows_mean = static_cast<double>(sum[0]) / size;
  st.nonzeros_min = -high[1];
  st.nonzeros_max = high[3];
  st.nonzeros_mean = static_cast<double>(sum[1]) / size;
  double seconds = clock.seconds();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  st.seconds = seconds;
  return out;
}

std::vector<double> PartitionedSystem::to_partitioned(MPI_Comm comm, std::span<const double> v) const {
  const int bs = A.block_size;
  if (v.size() != input_owner.size() * static_cast<std::size_t>(bs))
    throw std::invalid_argument("to_partitioned: the vector has " + std::to_string(v.size()) +
                                " entries, this rank's input rows " +
                                std::to_string(input_owner.size() * static_cast<std::size_t>(bs)));
  // Send each input row to its owner in A; what arrives, in source-rank order, is A's row order.
  const auto send_counts = owner_counts(comm, input_owner, bs);
  const auto recv_counts = owner_counts(comm, input_owners(*this), bs);
  auto pos = displacements(send_counts);
  std::vector<double> send(v.size());
  for (std::size_t i = 0; i < input_owner.size(); ++i) {
    int& p = pos[static_cast<std::size_t>(input_owner[i])];
    std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(i * bs), bs, send.begin() + p);
    p += bs;
  }
  return alltoallv(comm, send, send_counts, recv_counts);
}

std::vector<double> PartitionedSystem::to_input(MPI_Comm comm, std::span<const double> v) const {
  const int bs = A.block_size;
  if (v.size() != original_row.size() * static_cast<std::size_t>(bs))
    throw std::invalid_argument("to_input: the vector has " + std::to_string(v.size()) + " entries, this rank's rows " +
                                std::to_string(original_row.size() * static_cast<std::size_t>(bs)));
  // A's rows are in input order, hence already grouped by their input owner in rank order.
  const auto send_counts = owner_counts(comm, input_owners(*this), bs);
  const auto recv_counts = owner_counts(comm, input_owner, bs);
  const auto got = alltoallv(comm, std::vector<double>(v.begin(), v.end()), send_counts, recv_counts);
  // Rows from owner r arrive in the order of the input rows that r owns.
  auto pos = displacements(recv_counts);
  std::vector<double> out(got.size());
  for (std::size_t i = 0; i < input_owner.size(); ++i) {
    int& p = pos[static_cast<std::size_t>(input_owner[i])];
    std::copy_n(got.begin() + p, bs, out.begin() + static_cast<std::ptrdiff_t>(i * bs));
    p += bs;
  }
  return out;
}

}  // namespace desync::linalg
