// The algebraic GDSW coarse space (Dohrmann, Klawonn and Widlund, 2008; the algebraic interface of
// Heinlein, Klawonn, Rajamanickam and Rheinbach's FROSch): a row is on the interface when it couples
// to another rank's row; the interface rows are grouped into components by the set of ranks among
// their own and their neighbours' owners (edges between two subdomains, vertices where more meet);
// each component's function is 1 on its rows, 0 on the rest of the interface, and extended into
// every subdomain's interior rows by the local discrete harmonic extension
// phi_I = -A_II^-1 A_IG phi_G (interior rows couple to their own rank's rows only, so the extension
// is a local solve; A_II is factored once for these few solves, LocalSolverUse::few_solves). With
// near-kernel vectors z_k, each component C has one function per z_k independent on C, z_k on C's
// rows and 0 on the rest of the interface, extended alike (Dohrmann, Klawonn and Widlund, 2008,
// section 3; FROSch does the same).
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/linalg/ghost_requests.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"

namespace desync::solvers {

namespace {

using linalg::DistributedCsr;

/// Each interface row's component (-1: an interior row) and the number of components.
struct Components {
  std::vector<int> of_row;
  int count = 0;
};

/// The keys of this rank's rows: the ranks among the row's own and its neighbours' owners, for the
/// interface rows (coupled to another rank's row); empty for the interior rows.
std::vector<std::vector<int>> interface_keys(const CoarseBasisInput& in) {
  const DistributedCsr& A = in.A;
  const std::int64_t first = A.first_block_row(), local_rows = A.local_rows();
  const auto rows = static_cast<std::size_t>(local_rows);
  std::vector<std::vector<int>> key(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    std::set<int> owners{in.rank};
    for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      if (j < first || j >= first + local_rows) owners.insert(linalg::owner_of(A.row_offsets, j));
    }
    if (owners.size() > 1) key[i].assign(owners.begin(), owners.end());
  }
  const bool has_interface = std::any_of(key.begin(), key.end(), [](const auto& k) { return !k.empty(); });
  agree_or_throw(in.comm, has_interface || in.ranks == 1,
                 fmt::format("--coarse gdsw: rank {}'s subdomain has no interface (no row coupled to another rank's): "
                             "GDSW's coarse functions live on the interface",
                             in.rank));
  agree_or_throw(in.comm, in.ranks > 1, "--coarse gdsw: one subdomain has no interface (run on more than one rank)");
  return key;
}

/// The components, numbered alike on every rank in the ascending order of their keys: rank 0
/// gathers every rank's distinct keys, numbers them, and returns each rank its keys' numbers
/// (MPI_Gatherv, MPI_Scatterv; an MPI_Allgatherv of the keys would post P^2 messages, hours of host
/// time for 1024 simulated ranks).
Components number_components(const std::vector<std::vector<int>>& key, const CoarseBasisInput& in) {
  std::set<std::vector<int>> mine;
  for (const auto& k : key)
    if (!k.empty()) mine.insert(k);
  std::vector<int> flat;  // [length, ranks...] per key
  for (const auto& k : mine) {
    flat.push_back(static_cast<int>(k.size()));
    flat.insert(flat.end(), k.begin(), k.end());
  }
  int count = static_cast<int>(flat.size());
  const auto P = static_cast<std::size_t>(in.ranks);
  const bool root = in.rank == 0;
  std::vector<int> counts(root ? P : 0), displs(root ? P : 0, 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, in.comm);
  std::vector<int> all;
  if (root) {
    for (std::size_t q = 1; q < P; ++q) displs[q] = displs[q - 1] + counts[q - 1];
    all.resize(static_cast<std::size_t>(displs.back() + counts.back()));
  }
  MPI_Gatherv(flat.data(), count, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, 0, in.comm);
  Components out;
  std::vector<int> numbers, number_counts(root ? P : 0), number_displs(root ? P : 0, 0);
  if (root) {
    std::map<std::vector<int>, int> component;
    std::vector<std::vector<int>> keys;  // every rank's, in the gathered order
    for (std::size_t q = 0; q < P; ++q) {
      const auto end = static_cast<std::size_t>(displs[q] + counts[q]);
      for (auto p = static_cast<std::size_t>(displs[q]); p < end;) {
        const auto len = static_cast<std::size_t>(all[p]);
        keys.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(p + 1), all.begin() + static_cast<std::ptrdiff_t>(p + 1 + len));
        component.emplace(keys.back(), 0);
        ++number_counts[q];
        p += len + 1;
      }
      if (q > 0) number_displs[q] = number_displs[q - 1] + number_counts[q - 1];
    }
    for (auto& [k, index] : component) index = out.count++;
    for (const auto& k : keys) numbers.push_back(component.at(k));
  }
  MPI_Bcast(&out.count, 1, MPI_INT, 0, in.comm);
  std::vector<int> my_numbers(mine.size());
  MPI_Scatterv(numbers.data(), number_counts.data(), number_displs.data(), MPI_INT, my_numbers.data(),
               static_cast<int>(my_numbers.size()), MPI_INT, 0, in.comm);
  std::map<std::vector<int>, int> component;  // this rank's keys and their numbers
  {
    std::size_t t = 0;
    for (const auto& k : mine) component.emplace(k, my_numbers[t++]);
  }
  out.of_row.assign(key.size(), -1);
  for (std::size_t i = 0; i < key.size(); ++i)
    if (!key[i].empty()) out.of_row[i] = component.at(key[i]);
  return out;
}

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

/// The discrete harmonic extension phi_I = -A_II^-1 A_IG phi_G of each local function into this
/// rank's interior rows (numbered by interior_index), one local solve each.
std::vector<std::vector<double>> harmonic_extensions(const CoarseBasisInput& in, const std::vector<int>& comp,
                                                     const std::vector<LocalFunction>& local_fns,
                                                     const std::vector<std::int64_t>& interior_index) {
  const DistributedCsr& A = in.A;
  const std::int64_t first = A.first_block_row();
  const std::size_t rows = comp.size();
  linalg::LocalCsr aii;  // A_II
  aii.row_ptr.push_back(0);
  for (std::size_t i = 0; i < rows; ++i)
    if (comp[i] < 0) ++aii.rows;
  for (std::size_t i = 0; i < rows; ++i) {
    if (comp[i] >= 0) continue;
    for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
      if (interior_index[lj] >= 0) {
        aii.col.push_back(static_cast<std::int32_t>(interior_index[lj]));
        aii.val.push_back(A.val[static_cast<std::size_t>(k)]);
      }
    }
    aii.row_ptr.push_back(static_cast<std::int64_t>(aii.col.size()));
  }
  std::vector<std::vector<double>> extension(local_fns.size());  // per local function, on the interior rows
  if (aii.rows == 0) {
    agree_or_throw(in.comm, true, "");  // the factorisation's agreement below, for a rank without interior rows
    return extension;
  }
  std::unique_ptr<linalg::LocalSolver> solver;
  std::string failure;
  try {
    solver = linalg::make_local_solver(aii, linalg::LocalSolverKind::automatic, linalg::LocalSolverUse::few_solves);
  } catch (const std::exception& e) {
    failure = fmt::format("--coarse gdsw: rank {}: the interior block of its subdomain ({} rows) cannot be factored: {}",
                          in.rank, aii.rows, e.what());
  }
  agree_or_throw(in.comm, failure.empty(), failure);
  std::vector<double> rhs(static_cast<std::size_t>(aii.rows));
  for (std::size_t f = 0; f < local_fns.size(); ++f) {
    std::fill(rhs.begin(), rhs.end(), 0.0);  // rhs = -A_IG phi_G for the function local_fns[f]
    const std::vector<double>& zk = in.near_kernel[static_cast<std::size_t>(local_fns[f].vector)];
    for (std::size_t i = 0; i < rows; ++i) {
      if (comp[i] >= 0) continue;
      for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
        const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
        if (comp[lj] == local_fns[f].comp)
          rhs[static_cast<std::size_t>(interior_index[i])] -= A.val[static_cast<std::size_t>(k)] * zk[lj];
      }
    }
    extension[f].resize(rhs.size());
    solver->solve(rhs.data(), extension[f].data());
  }
  return extension;
}

CoarseBasis build_gdsw(const CoarseBasisInput& in) {
  const Components components = number_components(interface_keys(in), in);
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
  const std::vector<std::vector<double>> extension = harmonic_extensions(in, comp, local_fns, interior_index);
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
