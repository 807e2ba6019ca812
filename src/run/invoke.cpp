// desync's commands inside a process that already runs MPI (invoke.hpp): the Python bindings' path
// to the same parsing, checks, solvers and run record as the `desync` executable (apps/desync_main.cpp).
#include "desync/run/invoke.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/run/command_registry.hpp"
#include "invocation.hpp"

namespace desync::run {

namespace detail {
namespace {
thread_local Invocation* current = nullptr;
}
Invocation* current_invocation() { return current; }
}  // namespace detail

namespace invoke_detail {

/// The registered solver `name`; InputError naming the solvers otherwise.
const SolverInfo& find_solver(const std::string& name) {
  const SolverRegistry& registry = solver_registry();
  if (const SolverInfo* info = registry.find(name)) return *info;
  std::string names;
  for (const auto& s : registry.solvers()) names += (names.empty() ? "" : ", ") + s.name;
  throw InputError(fmt::format("unknown solver '{}' (solvers: {})", name, names));
}

/// The solver's subcommand on a fresh app, with a fresh command's options registered.
struct Parser {
  CLI::App app{"desync"};
  CLI::App* sub = nullptr;
  std::unique_ptr<SolverCommand> command;

  explicit Parser(const SolverInfo& info) {
    sub = app.add_subcommand(info.name, info.description);
    command = info.create();
    command->add_options(*sub);
  }
};

/// Sets the thread's invocation for the lifetime of the scope.
class InvocationScope {
 public:
  explicit InvocationScope(detail::Invocation& inv) : previous_(detail::current) { detail::current = &inv; }
  ~InvocationScope() { detail::current = previous_; }
  InvocationScope(const InvocationScope&) = delete;
  InvocationScope& operator=(const InvocationScope&) = delete;

 private:
  detail::Invocation* previous_;
};

std::string broadcast_string(MPI_Comm comm, std::string s) {
  long n = static_cast<long>(s.size());
  MPI_Bcast(&n, 1, MPI_LONG, 0, comm);
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
  return s;
}

}  // namespace invoke_detail

InvokeResult invoke(MPI_Comm comm, const std::vector<std::string>& args, std::shared_ptr<const SuppliedSystem> system) {
  using namespace invoke_detail;
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised) throw InputError("MPI is not running (initialise it first, e.g. import mpi4py.MPI)");
  if (comm == MPI_COMM_NULL) throw InputError("the communicator is MPI_COMM_NULL");
  // Every rank must run the same command: a rank with other options would wait in another collective.
  {
    std::string joined;
    for (const auto& a : args) joined += a + '\0';
    const auto h = static_cast<unsigned long long>(std::hash<std::string>{}(joined));
    unsigned long long lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    if (lo != hi) throw InputError("the ranks were given different solvers or options; every rank must give the same");
  }
  std::string problem;
  std::unique_ptr<Parser> parser;
  try {
    if (args.empty()) throw InputError("no solver named");
    parser = std::make_unique<Parser>(find_solver(args[0]));
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses the vector from its back
    parser->app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    problem = args.empty() ? std::string(e.what()) : fmt::format("desync {}: {}", args[0], e.what());
  } catch (const InputError& e) {
    problem = e.what();
  }
  agree_or_throw(comm, problem.empty(), problem);
  SolverCommand& command = *parser->command;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < command.thread_level())
    throw InputError(fmt::format("these options need MPI initialised at thread level {} and it runs at {} "
                                 "(mpi4py asks for MPI_THREAD_MULTIPLE unless mpi4py.rc.thread_level says otherwise)",
                                 command.thread_level(), provided));
  core::declare_cost_kinds(all_cost_kinds(solver_registry()));

  detail::Invocation inv;
  inv.system = std::move(system);
  InvokeResult out;
  {
    InvocationScope scope(inv);
    command.finalise(comm);
    command.prepare(comm);
    out.exit_code = command.run(comm);
  }
  out.record_json = broadcast_string(comm, inv.record_json);
  out.has_solution = inv.has_solution;
  out.x = std::move(inv.x);
  out.rows = std::move(inv.rows);
  return out;
}

std::string command_help(const std::string& solver) {
  invoke_detail::Parser parser(invoke_detail::find_solver(solver));
  return parser.sub->help();
}

std::string options_json() {
  using nlohmann::json;
  json solvers = json::array();
  for (const auto& info : solver_registry().solvers()) {
    invoke_detail::Parser parser(info);
    json methods = json::array();
    for (const auto& m : info.methods) methods.push_back({{"name", m.name}, {"description", m.description}});
    json options = json::array();
    for (const CLI::Option* o : parser.sub->get_options()) {
      if (o->get_lnames().empty() || o->get_lnames()[0] == "help") continue;
      options.push_back({{"name", o->get_lnames()[0]},
                         {"names", o->get_lnames()},
                         {"type", o->get_type_name()},
                         {"default", o->get_default_str()},
                         {"flag", o->get_expected_min() == 0},  // a flag takes no value
                         {"help", o->get_description()}});
    }
    solvers.push_back({{"name", info.name},
                       {"description", info.description},
                       {"method_option", info.method_option},
                       {"methods", methods},
                       {"options", options}});
  }
  return json{{"solvers", solvers}}.dump(2);
}

}  // namespace desync::run
