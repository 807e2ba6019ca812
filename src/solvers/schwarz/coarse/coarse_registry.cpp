// The registry of coarse spaces (coarse_registry.hpp) and what the spaces share.
#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"

#include <algorithm>
#include <stdexcept>

#include "desync/core/error.hpp"
#include "desync/core/names.hpp"

namespace desync::solvers {

void CoarseSpaceRegistry::add(CoarseSpaceInfo info) {
  if (info.name == no_coarse) throw std::logic_error("coarse space 'none' registered: none means one level");
  Registry::add(std::move(info));
}

void register_all_coarse_spaces(CoarseSpaceRegistry& registry) {
  registry.add(nicolaides_coarse_space());  // nicolaides.cpp
  registry.add(gdsw_coarse_space());        // gdsw.cpp
  registry.add(rgdsw_coarse_space());       // rgdsw.cpp
}

const CoarseSpaceRegistry& coarse_space_registry() {
  static const CoarseSpaceRegistry registry = core::built(&register_all_coarse_spaces);  // a static here, not in core: core/registry.hpp
  return registry;
}

namespace {

/// --coarse's choices: one level, then the registered spaces.
std::vector<CoarseSpaceInfo> coarse_choices() {
  std::vector<CoarseSpaceInfo> choices{{std::string(no_coarse), "one level: no coarse correction"}};
  for (const auto& s : coarse_space_registry().spaces()) choices.push_back(s);
  return choices;
}

}  // namespace

std::string parse_coarse(std::string_view name) {
  if (name == no_coarse || coarse_space_registry().find(name)) return std::string(name);
  throw InputError("--coarse '" + std::string(name) + "': unknown coarse space (expected " +
                   core::name_list(coarse_choices()) + ")");
}

const CoarseSpaceInfo& find_coarse_space(std::string_view name) {
  if (const CoarseSpaceInfo* s = coarse_space_registry().find(name)) return *s;
  parse_coarse(name);  // throws for an unknown name
  throw InputError("--coarse none: one level has no coarse space");
}

std::string coarse_help() { return core::named_help(coarse_choices()); }

std::string coarse_space_names(std::string_view separator) {
  if (separator.empty()) return core::name_list(coarse_space_registry().spaces());
  std::string names;
  for (const auto& s : coarse_space_registry().spaces()) names += (names.empty() ? "" : std::string(separator)) + s.name;
  return names;
}

std::vector<int> independent_columns(std::vector<double> gram, int m, double tolerance) {
  // Pivoted Cholesky of the Gram matrix (Higham, 1990): each step takes the column whose part
  // orthogonal to the columns taken so far is the largest relative to its own norm (the Schur
  // complement's diagonal over the original diagonal; the first on a tie), and stops when that
  // ratio is <= tolerance or no column with a nonzero norm is left.
  const auto M = static_cast<std::size_t>(m);
  if (gram.size() != M * M) throw std::invalid_argument("independent_columns: the Gram matrix is not m x m");
  std::vector<double> norm(M);
  for (std::size_t k = 0; k < M; ++k) norm[k] = gram[k * M + k];
  std::vector<char> taken(M, 0);
  std::vector<int> kept;
  for (;;) {
    std::size_t best = M;
    double best_ratio = 0.0;
    for (std::size_t k = 0; k < M; ++k) {
      if (taken[k] || !(norm[k] > 0.0)) continue;
      const double ratio = gram[k * M + k] / norm[k];
      if (ratio > best_ratio) {
        best_ratio = ratio;
        best = k;
      }
    }
    if (best == M || !(best_ratio > tolerance)) break;
    taken[best] = 1;
    kept.push_back(static_cast<int>(best));
    const double pivot = gram[best * M + best];
    for (std::size_t i = 0; i < M; ++i) {  // the Schur complement of the pivot
      if (taken[i]) continue;
      const double l = gram[i * M + best] / pivot;
      for (std::size_t j = 0; j < M; ++j)
        if (!taken[j]) gram[i * M + j] -= l * gram[best * M + j];
    }
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

}  // namespace desync::solvers
