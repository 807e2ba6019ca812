#pragma once
// Internal to the run layer: the in-process run (run::invoke, invoke.hpp) that the code on this
// thread is part of, through which the commands take a system from memory and hand back their
// record and solution. Null while the `desync` executable runs: then nothing changes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "desync/run/invoke.hpp"

namespace desync::run::detail {

struct Invocation {
  std::shared_ptr<const SuppliedSystem> system;  ///< the system to use in place of --matrix (may be null)
  std::string record_json;                       ///< set by finish_run on rank 0
  bool has_solution = false;
  std::vector<double> x;
  std::vector<std::int64_t> rows;
};

/// The invocation running on this thread, or nullptr.
Invocation* current_invocation();

/// The system handed over in memory, or nullptr.
inline const SuppliedSystem* supplied_system() {
  const Invocation* inv = current_invocation();
  return inv ? inv->system.get() : nullptr;
}

}  // namespace desync::run::detail
