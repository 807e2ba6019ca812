#pragma once
// A table of things registered by name (PETSc's XXXRegister habit): the solvers, the Krylov methods,
// the preconditioners, the coarse spaces. Each registers itself in its own file with an Info
// struct that has at least a `name`; one function per table lists the registrations, one line each
// (an explicit function, not static self-registration, which a static library would drop at link
// time), and built_once() builds the table on first use.
//
//   class PcRegistry : public core::Registry<PcInfo> { ... };
//   const PcRegistry& pc_registry() { return core::built_once<PcRegistry, register_all_preconditioners>(); }
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace desync::core {

template <class Info>
class Registry {
 public:
  /// `what` names an entry in the error of a duplicate ("preconditioner").
  explicit Registry(std::string what) : what_(std::move(what)) {}
  /// Adds an entry; std::logic_error if its name is taken.
  void add(Info info) {
    if (find(info.name)) throw std::logic_error(what_ + " '" + info.name + "' registered twice");
    items_.push_back(std::move(info));
  }
  /// The entry called `name`, or nullptr.
  const Info* find(std::string_view name) const {
    for (const auto& i : items_)
      if (i.name == name) return &i;
    return nullptr;
  }
  /// The entries in registration order.
  const std::vector<Info>& items() const { return items_; }

 private:
  std::string what_;
  std::vector<Info> items_;
};

/// The registry R with Fill(R&) applied, built on first use (thread-safe static initialisation).
template <class R, void (*Fill)(R&)>
const R& built_once() {
  static const R registry = [] {
    R r;
    Fill(r);
    return r;
  }();
  return registry;
}

}  // namespace desync::core
