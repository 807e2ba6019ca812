// The algebraic interface, its components and their ancestors, and the harmonic extension
// (interface_components.hpp), shared by GDSW (gdsw.cpp) and RGDSW (rgdsw.cpp).
#include "interface_components.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/linalg/ghost_requests.hpp"
#include "desync/linalg/local_solver.hpp"

namespace desync::solvers::interface {

using linalg::DistributedCsr;

std::vector<std::vector<int>> keys(const CoarseBasisInput& in, std::string_view space) {
  const DistributedCsr& A = in.A;
  const std::int64_t first = A.first_block_row(), local_rows = A.local_rows();
  const auto rows = static_cast<std::size_t>(local_rows);
  // The subdomain of another rank's row j: its owner, or (K > 1 pieces per rank) the piece its
  // owner sent (CoarseBasisInput::ghost_subdomain).
  auto subdomain_of = [&](std::int64_t j) {
    if (in.piece.empty()) return linalg::owner_of(A.row_offsets, j);
    const auto g = std::lower_bound(in.ghost_rows.begin(), in.ghost_rows.end(), j) - in.ghost_rows.begin();
    return in.ghost_subdomain[static_cast<std::size_t>(g)];
  };
  std::vector<std::vector<int>> key(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    std::set<int> owners{in.subdomain(i)};
    for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)];
      owners.insert(j < first || j >= first + local_rows ? subdomain_of(j) : in.subdomain(static_cast<std::size_t>(j - first)));
    }
    if (owners.size() > 1) key[i].assign(owners.begin(), owners.end());
  }
  const bool has_interface = std::any_of(key.begin(), key.end(), [](const auto& k) { return !k.empty(); });
  agree_or_throw(in.comm, has_interface || in.subdomains() == 1,
                 fmt::format("--coarse {}: rank {}'s subdomain has no interface (no row coupled to another rank's): "
                             "its coarse functions live on the interface",
                             space, in.rank));
  agree_or_throw(in.comm, in.subdomains() > 1,
                 fmt::format("--coarse {}: one subdomain has no interface (run on more than one rank, or with "
                             "--subdomains-per-rank above 1)",
                             space));
  return key;
}

namespace {

/// The ancestors of every component (keys ascending, numbered by position): the maximal keys that
/// contain it, found among the keys that share its first rank (a handful per rank on a mesh).
/// Returns the node number of each component (-1: not a node) and the ancestor table.
void find_ancestors(const std::vector<std::vector<int>>& keys, Components& out) {
  const std::size_t C = keys.size();
  std::map<int, std::vector<std::size_t>> holding;  // rank -> the components whose key holds it
  for (std::size_t c = 0; c < C; ++c)
    for (const int r : keys[c]) holding[r].push_back(c);
  auto contains = [&](std::size_t d, std::size_t c) {  // key d contains key c
    return std::includes(keys[d].begin(), keys[d].end(), keys[c].begin(), keys[c].end());
  };
  std::vector<int> node(C, -1);
  for (std::size_t c = 0; c < C; ++c) {
    bool maximal = true;
    for (const std::size_t d : holding.at(keys[c].front()))
      if (keys[d].size() > keys[c].size() && contains(d, c)) {
        maximal = false;
        break;
      }
    if (maximal) node[c] = out.nodes++;
  }
  out.ancestor_ptr.assign(1, 0);
  for (std::size_t c = 0; c < C; ++c) {
    std::vector<int> mine;
    for (const std::size_t d : holding.at(keys[c].front()))
      if (node[d] >= 0 && keys[d].size() >= keys[c].size() && contains(d, c)) mine.push_back(node[d]);
    std::sort(mine.begin(), mine.end());
    out.ancestors.insert(out.ancestors.end(), mine.begin(), mine.end());
    out.ancestor_ptr.push_back(static_cast<int>(out.ancestors.size()));
  }
}

}  // namespace

Components number(const std::vector<std::vector<int>>& key, const CoarseBasisInput& in, bool with_ancestors) {
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
    std::vector<std::vector<int>> ascending;
    for (auto& [k, index] : component) {
      index = out.count++;
      ascending.push_back(k);
    }
    for (const auto& k : keys) numbers.push_back(component.at(k));
    if (with_ancestors) find_ancestors(ascending, out);
  }
  MPI_Bcast(&out.count, 1, MPI_INT, 0, in.comm);
  if (with_ancestors) {
    int sizes[2] = {out.nodes, static_cast<int>(out.ancestors.size())};
    MPI_Bcast(sizes, 2, MPI_INT, 0, in.comm);
    out.nodes = sizes[0];
    out.ancestor_ptr.resize(static_cast<std::size_t>(out.count) + 1);
    out.ancestors.resize(static_cast<std::size_t>(sizes[1]));
    MPI_Bcast(out.ancestor_ptr.data(), out.count + 1, MPI_INT, 0, in.comm);
    MPI_Bcast(out.ancestors.data(), sizes[1], MPI_INT, 0, in.comm);
  }
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

namespace {

/// The values of the local functions on the rows: per row, (function f, value), f ascending.
using RowValues = std::vector<std::vector<std::pair<std::size_t, double>>>;

/// phi_I = -A_II^-1 A_IG phi_G for every function on the interior rows, one subdomain at a time:
/// the interior rows of different subdomains never couple (a row coupled to another subdomain's is
/// on the interface), so A_II is block diagonal, one block per piece of the rank (K = 1: one),
/// factored alone (LocalSolverUse::few_solves) and solved only for the functions whose interface
/// values reach it (phi at[i] holds phi_G's values on the interface rows already; the interior
/// rows' values are added).
void harmonic_extensions(const CoarseBasisInput& in, const std::vector<int>& component, RowValues& at,
                         std::string_view space) {
  const DistributedCsr& A = in.A;
  const std::int64_t first = A.first_block_row();
  const std::size_t rows = component.size();
  const int K = in.piece.empty() ? 1 : in.pieces_per_rank;
  std::vector<std::vector<std::size_t>> interior(static_cast<std::size_t>(K));  // each piece's interior rows
  for (std::size_t i = 0; i < rows; ++i)
    if (component[i] < 0) interior[in.piece.empty() ? 0 : static_cast<std::size_t>(in.piece[i])].push_back(i);
  std::vector<std::int64_t> index(rows, -1);  // an interior row's place in its piece
  std::string failure;
  for (int q = 0; q < K && failure.empty(); ++q) {
    const std::vector<std::size_t>& own = interior[static_cast<std::size_t>(q)];
    if (own.empty()) continue;
    for (std::size_t t = 0; t < own.size(); ++t) index[own[t]] = static_cast<std::int64_t>(t);
    linalg::LocalCsr aii;  // A_II of piece q
    aii.rows = static_cast<std::int64_t>(own.size());
    aii.row_ptr.push_back(0);
    std::vector<std::size_t> reached;  // the functions with interface values next to the piece's interior
    for (const std::size_t i : own) {
      for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
        const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
        if (component[lj] < 0) {
          aii.col.push_back(static_cast<std::int32_t>(index[lj]));
          aii.val.push_back(A.val[static_cast<std::size_t>(k)]);
        } else {
          for (const auto& fv : at[lj]) reached.push_back(fv.first);
        }
      }
      aii.row_ptr.push_back(static_cast<std::int64_t>(aii.col.size()));
    }
    std::sort(reached.begin(), reached.end());
    reached.erase(std::unique(reached.begin(), reached.end()), reached.end());
    if (reached.empty()) continue;
    std::unique_ptr<linalg::LocalSolver> solver;
    try {
      solver = linalg::make_local_solver(aii, linalg::LocalSolverKind::automatic, linalg::LocalSolverUse::few_solves);
    } catch (const std::exception& e) {
      failure = K == 1 ? fmt::format("--coarse {}: rank {}: the interior block of its subdomain ({} rows) cannot be "
                                     "factored: {}",
                                     space, in.rank, aii.rows, e.what())
                       : fmt::format("--coarse {}: rank {}: the interior block of its piece {} of {} ({} rows) cannot "
                                     "be factored: {}",
                                     space, in.rank, q + 1, K, aii.rows, e.what());
      break;
    }
    std::vector<double> rhs(own.size()), ext(own.size());
    for (const std::size_t f : reached) {
      std::fill(rhs.begin(), rhs.end(), 0.0);  // rhs = -A_IG phi_G for function f
      for (const std::size_t i : own)
        for (auto k = A.row_ptr[i]; k < A.row_ptr[i + 1]; ++k) {
          const auto lj = static_cast<std::size_t>(A.col[static_cast<std::size_t>(k)] - first);
          if (component[lj] < 0) continue;
          const auto hit = std::lower_bound(at[lj].begin(), at[lj].end(), std::pair<std::size_t, double>{f, -HUGE_VAL});
          if (hit != at[lj].end() && hit->first == f)
            rhs[static_cast<std::size_t>(index[i])] -= A.val[static_cast<std::size_t>(k)] * hit->second;
        }
      solver->solve(rhs.data(), ext.data());
      for (std::size_t t = 0; t < own.size(); ++t)
        if (ext[t] != 0.0) at[own[t]].emplace_back(f, ext[t]);  // f ascending: reached is
    }
  }
  agree_or_throw(in.comm, failure.empty(), failure);
}

}  // namespace

GroupFunctions group_functions(const CoarseBasisInput& in, const std::vector<int>& component, std::size_t groups,
                               const Support& support) {
  const auto& z = in.near_kernel;
  const std::size_t M = z.size();
  std::vector<double> grams(groups * M * M, 0.0);
  for (std::size_t i = 0; i < component.size(); ++i) {
    if (component[i] < 0) continue;
    for (const auto& [group, w] : support(i)) {
      double* g = grams.data() + static_cast<std::size_t>(group) * M * M;
      for (std::size_t a = 0; a < M; ++a)
        for (std::size_t b = 0; b < M; ++b) g[a * M + b] += w * w * z[a][i] * z[b][i];
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, grams.data(), static_cast<int>(grams.size()), MPI_DOUBLE, MPI_SUM, in.comm);
  GroupFunctions out{std::vector<std::vector<int>>(groups), std::vector<int>(groups + 1, 0)};
  for (std::size_t g = 0; g < groups; ++g) {
    out.kept[g] = independent_columns(std::vector<double>(grams.begin() + static_cast<std::ptrdiff_t>(g * M * M),
                                                          grams.begin() + static_cast<std::ptrdiff_t>((g + 1) * M * M)),
                                      static_cast<int>(M));
    out.start[g + 1] = out.start[g] + static_cast<int>(out.kept[g].size());
  }
  return out;
}

std::vector<LocalFunction> local_functions(const GroupFunctions& fns, const std::vector<int>& component,
                                           const Support& support) {
  std::vector<int> groups;
  for (std::size_t i = 0; i < component.size(); ++i)
    if (component[i] >= 0)
      for (const auto& [group, w] : support(i)) groups.push_back(group);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  std::vector<LocalFunction> out;
  for (const int g : groups)
    for (std::size_t t = 0; t < fns.kept[static_cast<std::size_t>(g)].size(); ++t)
      out.push_back({fns.start[static_cast<std::size_t>(g)] + static_cast<int>(t), g, fns.kept[static_cast<std::size_t>(g)][t]});
  return out;
}

CoarseBasis assemble(const CoarseBasisInput& in, const std::vector<int>& component, int size,
                     const std::vector<LocalFunction>& functions, const Support& support,
                     const std::function<double(std::size_t f, std::size_t row)>& value, std::string_view space) {
  const std::size_t rows = component.size();
  std::map<int, std::vector<std::size_t>> of_group;  // the local functions of each group
  for (std::size_t f = 0; f < functions.size(); ++f) of_group[functions[f].owner].push_back(f);
  RowValues at(rows);  // phi_G on the interface rows, then the extensions on the interior rows
  for (std::size_t i = 0; i < rows; ++i) {
    if (component[i] < 0) continue;
    for (const auto& [group, w] : support(i)) {
      const auto fs = of_group.find(group);
      if (fs == of_group.end()) continue;
      for (const std::size_t f : fs->second) {
        const double v = value(f, i);
        if (v != 0.0) at[i].emplace_back(f, v);
      }
    }
    std::sort(at[i].begin(), at[i].end());
  }
  harmonic_extensions(in, component, at, space);
  CoarseBasis phi;
  phi.size = size;
  phi.ptr.assign(1, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    for (const auto& [f, v] : at[i]) {
      phi.col.push_back(functions[f].index);
      phi.val.push_back(v);
    }
    phi.ptr.push_back(static_cast<std::int64_t>(phi.col.size()));
  }
  return phi;
}

}  // namespace desync::solvers::interface
