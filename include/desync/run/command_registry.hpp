#pragma once
// The solver registry: one table from solver names to their commands (PETSc's KSPRegister habit).
// `desync <solver> ...` dispatches through it and `desync --help` lists it. Each solver's command
// (its options, their checks, its run and its report section) lives in one file of the run layer,
// src/run/commands/<name>_command.cpp, and is registered by one line of register_all_solvers()
// (src/run/command_registry.cpp); docs/design.md, "Adding a solver", has the steps. The registry also
// holds the simulation cost kinds (core/simulation.hpp) of every solver and method, and of the
// layers beneath them (shared_cost_kinds); `desync --registry` prints it all as JSON.
#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "desync/core/registry.hpp"
#include "desync/core/simulation.hpp"

namespace CLI {
class App;
}

namespace desync::run {

/// One method (or mode) of a solver: its --method / --mode value and a one-line description.
struct MethodInfo {
  std::string name, description;
  /// The simulation cost kinds that this method charges of its solver's (e.g. a CG method's vector
  /// work); empty where every method charges the same kinds.
  std::vector<core::CostKind> cost_kinds = {};
};

/// One run of a solver's command: created by the registry, given its options by CLI11, asked for
/// its thread level, checked, then run. The calls come in this order, each at most once.
class SolverCommand {
 public:
  virtual ~SolverCommand() = default;
  /// Registers the options on the solver's CLI11 subcommand (each with its help text).
  virtual void add_options(CLI::App& app) = 0;
  /// The MPI thread level the parsed options need, asked after parsing and before MPI is
  /// initialised (MPI_Init_thread); default MPI_THREAD_FUNNELED. Bad values are left to finalise().
  virtual int thread_level() const { return MPI_THREAD_FUNNELED; }
  /// Checks the values and their combinations after parsing and resolves what they imply (sizes,
  /// process grid). Collective over `comm`; throws InputError with a clear message on every rank.
  virtual void finalise(MPI_Comm comm) = 0;
  /// After finalise(): brings up what the run needs before it starts (e.g. a transport); default
  /// nothing. Collective.
  virtual void prepare(MPI_Comm /*comm*/) {}
  /// Builds the problem, solves, fills the run record (its report section included) and ends with
  /// finish_run() (record.hpp). Returns the exit code (core/error.hpp). Collective over `comm`.
  virtual int run(MPI_Comm comm) = 0;
};

/// The `create` of a SolverInfo whose command is default-constructed.
template <class Command>
std::unique_ptr<SolverCommand> create_command() {
  return std::make_unique<Command>();
}

/// A registered solver.
struct SolverInfo {
  std::string name;                 ///< the subcommand: `desync <name>`, the JSON "solver"
  std::string description;          ///< one line for `desync --help`
  std::string method_option;        ///< the option choosing among `methods`, e.g. "--method"
  std::vector<MethodInfo> methods;  ///< its methods or modes
  std::unique_ptr<SolverCommand> (*create)();  ///< a fresh command with its default options
  /// Every simulation cost kind a run of it may charge beyond shared_cost_kinds(), its methods'
  /// included (core/simulation.hpp), each optional where its owner registered it so.
  std::vector<core::CostKind> cost_kinds;
};

/// The table: solvers in registration order, looked up by name.
class SolverRegistry : public core::Registry<SolverInfo> {
 public:
  SolverRegistry() : Registry("solver") {}
  const std::vector<SolverInfo>& solvers() const { return items(); }
};

/// Registers every solver desync ships, one line each (like PETSc's KSPRegisterAll). An explicit
/// function, not static self-registration, which a static library would drop at link time.
void register_all_solvers(SolverRegistry& registry);

/// The registry with register_all_solvers() applied, built on first use.
const SolverRegistry& solver_registry();

/// The simulation cost kinds of the layers beneath the solvers, which every solver's runs may
/// charge: the ghost exchange's, the operators'.
std::vector<core::CostKind> shared_cost_kinds();
/// Every kind a run may charge: shared_cost_kinds() and each registered solver's.
std::vector<core::CostKind> all_cost_kinds(const SolverRegistry& registry);
/// The registry as JSON (`desync --registry`): each solver with its description, its methods and
/// its cost kinds, and the shared cost kinds. Tests and bench/simgrid/calibrate.py read it.
std::string registry_json(const SolverRegistry& registry);

// The registration functions of the solvers (their command files, src/run/commands/).
SolverInfo jacobi_solver();
SolverInfo cg_solver();      ///< src/run/commands/krylov_command.cpp: the krylov command under the name cg
SolverInfo krylov_solver();  ///< src/run/commands/krylov_command.cpp
SolverInfo schwarz_solver();
SolverInfo pde_solver();

}  // namespace desync::run
