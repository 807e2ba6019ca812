#pragma once
// A table of things registered by name (PETSc's XXXRegister habit): the solvers, the Krylov methods,
// the preconditioners, the coarse spaces. Each registers itself in its own file with an Info
// struct that has at least a `name`; one function per table lists the registrations, one line each
// (an explicit function, not static self-registration, which a static library would drop at link
// time). Each table's accessor builds it on first use in a function-local static of an ordinary
// function in its .cpp, never of a template or an inline function: GCC gives those statics
// STB_GNU_UNIQUE binding, which the dynamic linker shares between the copies of the program that
// SMPI loads, one per simulated rank (smpi/privatization:dlopen), and a shared table would hand
// every rank the first copy's functions and with them that copy's globals (its request ledger,
// its counters).
//
//   class PcRegistry : public core::Registry<PcInfo> { ... };
//   const PcRegistry& pc_registry() {
//     static const PcRegistry registry = core::built(&register_all_preconditioners);  // here, not in core
//     return registry;
//   }
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

/// A fresh table with `register_all` applied, by value: the caller keeps it in its own static.
template <class Table>
Table built(void (*register_all)(Table&)) {
  Table table;
  register_all(table);
  return table;
}

}  // namespace desync::core
