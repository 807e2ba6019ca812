#pragma once
// Internal to the run layer: option values that desync's solver commands parse alike
// (the command files src/run/solvers/*.cpp).
#include <CLI/CLI.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "desync/communication/channel.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/core/error.hpp"
#include "desync/run/registry.hpp"

namespace desync::run::detail {

/// --transport, --rma-sync, --shmem-sync: the channel transport and its completion scheme, the same
/// options for every command whose exchanges go through channels (docs/channel.md).
struct TransportOptions {
  std::string transport = "p2p";
  std::string rma_sync = "flush";  // docs/channel.md says why flush is the default
  std::string shmem_sync = "put";

  void add(CLI::App& app, const std::string& transport_help) {
    app.add_option("--transport", transport, transport_help)->capture_default_str();
    app.add_option("--rma-sync", rma_sync, "rma completion scheme: flush | flush-local | overlap | overlap-local")
        ->capture_default_str();
    app.add_option("--shmem-sync", shmem_sync, "shmem completion scheme: put | put-overlap")->capture_default_str();
  }
  /// Parses into c.transport, c.rma_sync, c.shmem_sync; InputError for an unknown name or a
  /// transport this build lacks.
  template <class Config>
  void apply(Config& c) const {
    c.transport = comm::parse_transport(transport);
    c.rma_sync = comm::parse_rma_sync(rma_sync);
    c.shmem_sync = comm::parse_shmem_sync(shmem_sync);
    if (!comm::transport_built(c.transport)) throw InputError("--transport shmem: desync was built without OpenSHMEM");
  }
  /// The transport with its completion scheme, as the summaries show it: "p2p", "rma (flush)".
  std::string text() const {
    if (transport == "rma") return transport + " (" + rma_sync + ")";
    if (transport == "shmem") return transport + " (" + shmem_sync + ")";
    return transport;
  }
};

/// An option whose value is "auto" or one of `choices` (name, value): unset for auto, else the
/// value; InputError "--option 'text': expected auto, a or b" for anything else.
template <class T>
std::optional<T> parse_auto_choice(const std::string& option, const std::string& text,
                                   std::initializer_list<std::pair<const char*, T>> choices) {
  if (text == "auto") return std::nullopt;
  std::string names = "auto";
  std::size_t i = 0;
  for (const auto& [name, value] : choices) {
    if (text == name) return value;
    names += (++i == choices.size() ? " or " : ", ") + std::string(name);
  }
  throw InputError(option + " '" + text + "': expected " + names);
}

/// The help text of a --method / --mode option: "a | b | c", then each method with its description.
inline std::string method_help(const std::vector<MethodInfo>& methods) {
  std::string names, lines;
  for (const auto& m : methods) {
    names += (names.empty() ? "" : " | ") + m.name;
    lines += "\n  " + m.name + ": " + m.description;
  }
  return names + lines;
}

/// --dims PXxPYxPZ. Zeros are allowed (MPI_Dims_create chooses them), which parse_extent rejects.
inline decomposition::Index3 parse_dims(const std::string& dims) {
  decomposition::Index3 d{0, 0, 0};
  int count = 0;
  std::size_t pos = 0;
  bool bad = false;
  while (pos <= dims.size() && !bad) {
    std::size_t end = dims.find('x', pos);
    if (end == std::string::npos) end = dims.size();
    const std::string part = dims.substr(pos, end - pos);
    bad = part.empty() || part.size() > 6 || count == 3 || part.find_first_not_of("0123456789") != std::string::npos;
    if (!bad) d[count++] = std::stoi(part);
    pos = end + 1;
  }
  if (bad || count != 3) throw InputError("--dims '" + dims + "': expected PXxPYxPZ, e.g. 4x1x1 or 0x0x0");
  return d;
}

/// The global size: --global, or --local (`default_local` when neither is given) on every rank of
/// the process grid.
inline decomposition::Index3 global_size(const std::string& local, const std::string& global,
                                         const std::string& default_local, const decomposition::Index3& process_grid) {
  if (!global.empty()) return decomposition::parse_extent(global, "--global");
  decomposition::Index3 g{0, 0, 0};
  const auto l = decomposition::parse_extent(local.empty() ? default_local : local, "--local");
  for (int a = 0; a < 3; ++a) {
    const long long n = static_cast<long long>(l[a]) * process_grid[a];
    if (n > 1000000000LL) throw InputError("--local: global size too large");
    g[a] = static_cast<int>(n);
  }
  return g;
}

}  // namespace desync::run::detail
