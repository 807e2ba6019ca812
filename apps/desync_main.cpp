// desync: asynchronous and communication-hiding iterative solvers on MPI.
//
//   mpirun -np 2 desync jacobi --mode async --local 50
//   mpirun -np 4 desync jacobi --mode racy --global 200x100x80 --polish --json run.json
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>

#include "bench_comm.hpp"
#include "desync/communication/channel.hpp"
#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/waiting.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/command_registry.hpp"
#include "desync/run/invoke.hpp"

#ifndef DESYNC_VERSION
#define DESYNC_VERSION "unknown"
#endif

namespace {

using namespace desync;

int finish(int code) {
  core::stop_watchdog();
  comm::finalize_transports_and_mpi();  // shmem_finalize first when OpenSHMEM was started
  return code;
}

/// `desync --help`'s list of the registered solvers and their methods.
std::string solver_list(const run::SolverRegistry& registry) {
  std::string s = "Solvers (desync <solver> --help for the options):";
  for (const auto& info : registry.solvers()) {
    s += fmt::format("\n  {} {}:", info.name, info.method_option);
    for (const auto& m : info.methods) s += fmt::format("\n    {:<9} {}", m.name, m.description);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  run::prepare_mpi_io_environment();
  CLI::App app{"desync: asynchronous and communication-hiding iterative solvers on MPI.\n"
               "Example: mpirun -np 2 desync jacobi --mode async --local 50"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "desync " DESYNC_VERSION, "Print the version and exit");
  // Every registered solver is a subcommand; the one named on the command line gets a command.
  const run::SolverRegistry& registry = run::solver_registry();
  std::vector<std::pair<CLI::App*, std::unique_ptr<run::SolverCommand>>> commands;
  for (const auto& info : registry.solvers()) {
    std::string names;
    for (const auto& m : info.methods) names += (names.empty() ? "" : ", ") + m.name;
    CLI::App* sub = app.add_subcommand(info.name, info.description + "; " + info.method_option + " " + names);
    commands.emplace_back(sub, info.create());
    commands.back().second->add_options(*sub);
  }
  app.footer(solver_list(registry));
  // A flag that prints JSON (by rank 0, once MPI runs) and exits: the registry (solvers, methods,
  // simulation cost kinds) for tests and calibration scripts; every command's options (names,
  // default, help), from which scripts/option_tables.py writes README.md's and docs/usage.md's tables.
  std::function<std::string()> print_json;
  const auto json_flag = [&](const char* name, std::function<std::string()> json, const char* help) {
    app.add_flag_callback(
           name,
           [&print_json, json] {
             print_json = json;
             throw CLI::Success();
           },
           help)
        ->trigger_on_parse();
  };
  json_flag("--registry", [&registry] { return run::registry_json(registry); },
            "Print the registered solvers, their methods and their simulation cost kinds as JSON and exit");
  json_flag("--options", [] { return run::options_json(); },
            "Print every command's options (names, type, default, help) as JSON and exit");
  CLI::App* bench_app = app.add_subcommand("bench", "Benchmarks of this machine and MPI library");
  bench_app->require_subcommand(1);
  apps::BenchCommCommand bench_comm;
  CLI::App* bench_comm_app = bench_app->add_subcommand(
      "comm", "Two-sided vs one-sided bandwidth, overlap with computation, allreduce latency (Yamazaki et al., 2019, section 6)");
  bench_comm.add_options(*bench_comm_app);

  // The command line is parsed before MPI starts, so that MPI is initialised at the thread level the
  // chosen command needs (SolverCommand::thread_level); what went wrong is said once MPI runs.
  std::optional<CLI::ParseError> parse_error;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    parse_error = e;
  }
  int required = MPI_THREAD_FUNNELED;
  for (auto& [sub, command] : commands)
    if (!parse_error && sub->parsed()) required = command->thread_level();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, required, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (parse_error) {
    const bool help = parse_error->get_exit_code() == 0;  // --help and friends
    if (rank == 0) {
      if (print_json)
        std::printf("%s\n", print_json().c_str());
      else if (help)
        app.exit(*parse_error);
      else
        std::fprintf(stderr, "desync: error: %s\nRun 'desync --help' or 'desync <command> --help' for the options.\n",
                     parse_error->what());
    }
    return finish(help ? 0 : exit_bad_input);
  }

  try {
    // A simulated cluster: the cost model is read and checked on every rank before any work, for
    // every kind of work that the registered solvers and the layers beneath them may charge.
    core::declare_cost_kinds(run::all_cost_kinds(registry));
    if (core::simulated_build) (void)core::simulation_description();
    // The last resort against a hang (DESYNC_WAIT_LIMIT, docs/usage.md): a rank that waits longer
    // than the limit for a peer ends the run with a message naming what it waited for. Not on a
    // simulated cluster, whose ranks are threads of one process.
    const double wait_limit = core::wait_limit_from_environment();
    if (!core::simulated_build) core::start_watchdog(wait_limit, rank);
    if (bench_comm_app->parsed()) {
      bench_comm.finalise(MPI_COMM_WORLD);
      return finish(apps::bench_comm_main(bench_comm, MPI_COMM_WORLD));
    }
    for (auto& [sub, command] : commands) {
      if (!sub->parsed()) continue;
      command->finalise(MPI_COMM_WORLD);
      command->prepare(MPI_COMM_WORLD);
      return finish(command->run(MPI_COMM_WORLD));
    }
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "desync: error: %s\n", e.what());
    return finish(exit_bad_input);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "desync: rank %d: internal error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, exit_internal);
  }
  return exit_internal;
}
