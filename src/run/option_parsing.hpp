#pragma once
// Internal to the run layer: option values that desync's solver commands parse alike
// (the command files src/run/commands/*_command.cpp).
#include <CLI/CLI.hpp>

#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <cmath>

#include "desync/communication/channel.hpp"
#include "desync/communication/transport_config.hpp"
#include "desync/core/names.hpp"
#include "desync/core/noise.hpp"
#include "desync/solvers/iteration_options.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/core/error.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/command_registry.hpp"
#include "desync/linalg/local_solver.hpp"
#include "desync/solvers/schwarz/coarse/coarse_solver.hpp"
#include "desync/solvers/schwarz/coarse/coarse_space.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"

namespace desync::run::detail {

/// The transport group: --transport, --rma-sync, --shmem-sync and, for a solver with messages in
/// flight, --inflight; the same options with the same help in every command whose exchanges go
/// through channels (docs/channel.md). `scope` says when they apply, e.g. "async mode only".
class TransportCli {
 public:
  void add(CLI::App& app, comm::TransportConfig& t, const std::string& scope = "", bool inflight = false) {
    const std::string when = scope.empty() ? "" : " (" + scope + ")";
    app.add_option("--transport", kind_,
                   "How messages between neighbours travel" + when + ", docs/channel.md: " +
                       core::named_help(comm::transport_names))
        ->capture_default_str();
    app.add_option("--rma-sync", rma_sync_, "rma completion scheme: " + core::named_help(comm::rma_sync_names))
        ->capture_default_str();
    app.add_option("--shmem-sync", shmem_sync_, "shmem completion scheme: " + core::named_help(comm::shmem_sync_names))
        ->capture_default_str();
    inflight_ = inflight ? &t.max_in_flight : nullptr;
    if (inflight)
      app.add_option("--inflight", t.max_in_flight, "Messages in flight per neighbour, R >= 1" + when)
          ->capture_default_str();
  }
  /// Parses the names into `t` and checks R; InputError for an unknown name, a transport this build
  /// lacks or R < 1.
  void apply(comm::TransportConfig& t) const {
    t.kind = comm::parse_transport(kind_);
    t.rma_sync = comm::parse_rma_sync(rma_sync_);
    t.shmem_sync = comm::parse_shmem_sync(shmem_sync_);
    if (!comm::transport_built(t.kind)) throw InputError("--transport shmem: desync was built without OpenSHMEM");
    if (t.max_in_flight < 1) throw InputError(fmt::format("--inflight {}: R must be >= 1", t.max_in_flight));
  }
  const std::string& kind() const { return kind_; }
  /// The options' values, for the record.
  void effective(std::vector<std::pair<std::string, std::string>>& out) const {
    out.push_back({"transport", kind_});
    out.push_back({"rma-sync", rma_sync_});
    out.push_back({"shmem-sync", shmem_sync_});
    if (inflight_) out.push_back({"inflight", std::to_string(*inflight_)});
  }

 private:
  const int* inflight_ = nullptr;  // --inflight offered: the value it sets
  std::string kind_ = "p2p";
  std::string rma_sync_ = "flush";  // docs/channel.md says why flush is the default
  std::string shmem_sync_ = "put";
};

/// The subdomains' group of the Schwarz methods (solvers::SubdomainOptions), stationary (`schwarz`)
/// or as a preconditioner (`krylov --pc asm|ras`): --overlap, --robin, --local-solver, --ilu-relax, --coarse,
/// --coarse-ranks and --near-kernel, the same names, help and checks in both commands. The command
/// says what --overlap measures (`overlap_help`) and when the others apply (the scopes: "--pc asm,
/// ras", "With --matrix"); `coarse_note` adds what the command's coarse level does.
class SubdomainCli {
 public:
  void add(CLI::App& app, solvers::SubdomainOptions& o, const std::string& overlap_help,
           const std::string& robin_scope, const std::string& local_scope, const std::string& coarse_scope,
           const std::string& coarse_note = "") {
    overlap_opt_ = app.add_option("--overlap", o.overlap, overlap_help)->capture_default_str();
    robin_opt_ = app.add_option("--robin", o.robin,
                                robin_scope + ": each coupling a_ie that a subdomain's matrix drops at its outer "
                                              "boundary is moved onto the diagonal as robin * a_ie, 0 <= robin < 1 "
                                              "(0: classical Schwarz; on the 5-point matrix, 1/(1 + alpha h) is the "
                                              "optimized condition of schwarz --alpha)")
                     ->capture_default_str();
    local_solver_opt_ = app.add_option("--local-solver", local_solver_,
                                       local_scope + ": the subdomain factorisation, " +
                                           core::named_help(linalg::local_solver_names))
                            ->capture_default_str();
    relax_opt_ = app.add_option("--ilu-relax", o.ilu_relax,
                                local_scope + ", --local-solver ilu0-ilu3: the fill ILU(k) drops from a row moved "
                                              "onto its diagonal times W, 0 <= W <= 1 (relaxed modified ILU, Trilinos "
                                              "Ifpack's relax value; 1: MILU, which keeps A's row sums; 0: plain ILU(k)). "
                                              "For CG and GMRES: 0.99 took CG + ASM with ILU(1) on 2D Poisson n = 512 "
                                              "from 334 iterations to 120; the stationary Schwarz iteration diverges as "
                                              "W nears 1 (M^-1 A's largest eigenvalue passes 2; 2D Poisson: 0.7 "
                                              "converged, 0.9 diverged)")
                     ->capture_default_str();
    pieces_opt_ = app.add_option("--subdomains-per-rank", o.subdomains_per_rank,
                                 local_scope + ": K >= 1 subdomains on each rank (PETSc's -pc_asm_local_blocks): its "
                                               "rows split into K compact pieces by graph bisection, each extended by "
                                               "the overlap and factored alone by the local solver; K > 1 makes the "
                                               "rank's solve approximate (the Schwarz iteration: one correction step), "
                                               "and --coarse builds its space on the K pieces per rank")
                      ->capture_default_str();
    coarse_opt_ = app.add_option("--coarse", coarse_,
                                 coarse_scope + ": the coarse level of two-level Schwarz" + coarse_note + ", " +
                                     solvers::coarse_help())
                      ->capture_default_str();
    ranks_opt_ = app.add_option("--coarse-ranks", ranks_,
                                "With --coarse: the ranks that factor and solve A0: 0, every rank (dense LU, "
                                "redundantly); K >= 1, ranks 0..K-1 together, A0 sparse (MUMPS where built with it; "
                                "without, K = 1: SuiteSparse on rank 0)")
                     ->capture_default_str();
    near_kernel_opt_ = app.add_option("--near-kernel", near_kernel_,
                                      "With --coarse and --matrix: the near-kernel vectors the coarse functions are "
                                      "built from, a Matrix Market n x m file (array or coordinate) or one vector "
                                      "(PETSc binary Vec, .npy); default: the constant (elasticity3d: its six "
                                      "rigid-body modes)");
  }
  /// Checks the names and --robin, and --coarse-ranks and --near-kernel given only with a coarse
  /// space; fills o's local solver and coarse level (its near-kernel is the command's to load).
  /// InputError on bad input. (--overlap's range is the command's: what it measures differs.)
  void apply(solvers::SubdomainOptions& o) {
    if (!(o.robin >= 0 && o.robin < 1)) throw InputError(fmt::format("--robin {}: must be in [0, 1)", o.robin));
    o.local_solver = linalg::parse_local_solver(local_solver_);
    if (!(o.ilu_relax >= 0 && o.ilu_relax <= 1))
      throw InputError(fmt::format("--ilu-relax {}: must be in [0, 1]", o.ilu_relax));
    if (relax_opt_->count() > 0 && linalg::exact(o.local_solver))
      throw InputError(fmt::format("--ilu-relax goes with --local-solver ilu0, ilu1, ilu2 or ilu3 (got {})",
                                   local_solver_));
    if (o.subdomains_per_rank < 1)
      throw InputError(fmt::format("--subdomains-per-rank {}: must be >= 1", o.subdomains_per_rank));
    solvers::parse_coarse(coarse_);  // none or a registered space; InputError otherwise
    if (ranks_opt_->count() > 0 && !two_level())
      throw InputError("--coarse-ranks goes with --coarse " + solvers::coarse_space_names());
    if (!near_kernel_.empty() && !two_level())
      throw InputError("--near-kernel goes with --coarse " + solvers::coarse_space_names());
    o.coarse.kind = coarse_;
    o.coarse.coarse_ranks = ranks_;
  }
  /// With a coarse space: --coarse-ranks against a run of `nranks` and this build (a command's own
  /// limits on it first); InputError.
  void check_ranks(int nranks) const {
    if (two_level()) solvers::CoarseSolver::check_ranks(ranks_, nranks);
  }
  /// Whether --overlap, --robin, --local-solver, --ilu-relax, --subdomains-per-rank or --coarse was given (a command refuses them where
  /// they do not apply).
  bool given() const {
    return overlap_opt_->count() > 0 || robin_opt_->count() > 0 || local_solver_opt_->count() > 0 ||
           relax_opt_->count() > 0 || pieces_opt_->count() > 0 || coarse_opt_->count() > 0;
  }
  const std::string& coarse_name() const { return coarse_; }
  bool two_level() const { return coarse_ != solvers::no_coarse; }
  const std::string& near_kernel() const { return near_kernel_; }
  CLI::Option* robin_option() const { return robin_opt_; }
  CLI::Option* local_solver_option() const { return local_solver_opt_; }
  CLI::Option* relax_option() const { return relax_opt_; }
  CLI::Option* pieces_option() const { return pieces_opt_; }
  CLI::Option* near_kernel_option() const { return near_kernel_opt_; }
  /// The options' values, for the record.
  void effective(std::vector<std::pair<std::string, std::string>>& out, const solvers::SubdomainOptions& o) const {
    out.push_back({"overlap", std::to_string(o.overlap)});
    out.push_back({"robin", fmt::format("{}", o.robin)});
    out.push_back({"local-solver", local_solver_});
    out.push_back({"ilu-relax", fmt::format("{}", o.ilu_relax)});
    out.push_back({"subdomains-per-rank", std::to_string(o.subdomains_per_rank)});
    out.push_back({"coarse", coarse_});
    out.push_back({"coarse-ranks", std::to_string(ranks_)});
    out.push_back({"near-kernel", near_kernel_});
  }

 private:
  std::string local_solver_ = "auto";
  std::string coarse_ = std::string(solvers::no_coarse);
  int ranks_ = 0;
  std::string near_kernel_;
  CLI::Option *overlap_opt_ = nullptr, *robin_opt_ = nullptr, *local_solver_opt_ = nullptr, *relax_opt_ = nullptr,
              *pieces_opt_ = nullptr,
              *coarse_opt_ = nullptr,
              *ranks_opt_ = nullptr, *near_kernel_opt_ = nullptr;
};

/// The noise group (core/noise.hpp): --slow-rank, --slow-factor, --noise and its parameters, and
/// with `perturb` --perturb-rank, --perturb-iter and --perturb-value. `unit` names what a rank
/// repeats ("iterations", "sweeps", "steps").
class NoiseCli {
 public:
  void add(CLI::App& app, core::NoiseOptions& n, const std::string& unit, bool perturb = false) {
    app.add_option("--slow-rank", n.slow_rank, "Rank whose " + unit + " are slowed (-1: none)")->capture_default_str();
    app.add_option("--slow-factor", n.slow_factor, "Slow rank's " + unit + " take this many times as long")
        ->capture_default_str();
    app.add_option("--noise", kind_, "Perturbation on every rank: " + core::named_help(core::noise_names))
        ->capture_default_str();
    app.add_option("--jitter-probability", n.jitter_probability, "jitter: chance per step of a pause")
        ->capture_default_str();
    app.add_option("--jitter-factor", n.jitter_factor, "jitter: the pause as a multiple of the step's own time")
        ->capture_default_str();
    app.add_option("--interrupt-period", period_ms_, "periodic: milliseconds between interruptions")
        ->capture_default_str();
    app.add_option("--interrupt-duration", duration_ms_, "periodic: milliseconds each interruption lasts")
        ->capture_default_str();
    app.add_option("--noise-seed", n.seed, "Seed of the jitter draws (mixed with the rank)")->capture_default_str();
    perturb_ = perturb;
    if (!perturb) return;
    app.add_option("--perturb-rank", n.perturb_rank, "Rank that overwrites a value of its iterate (-1: none)")
        ->capture_default_str();
    app.add_option("--perturb-iter", n.perturb_iteration, "Iteration at which it does")->capture_default_str();
    app.add_option("--perturb-value", n.perturb_value, "Value written (nan, inf, 1e300, ...)");
  }
  /// Checks the values for a run of `nranks` and sets the options' switches and periods;
  /// InputError on bad input.
  void apply(core::NoiseOptions& n, int nranks) const {
    const core::NoiseKind kind = core::parse_named(core::noise_names, kind_, "--noise", "noise");
    n.jitter = kind == core::NoiseKind::jitter;
    n.periodic = kind == core::NoiseKind::periodic;
    if (n.slow_rank < -1 || n.slow_rank >= nranks)
      throw InputError(fmt::format("--slow-rank {}: no such rank in a run of {}", n.slow_rank, nranks));
    if (!(n.slow_factor >= 1.0) || !std::isfinite(n.slow_factor)) throw InputError("--slow-factor must be >= 1");
    if (!(n.jitter_probability >= 0 && n.jitter_probability <= 1))
      throw InputError(fmt::format("--jitter-probability {}: must be in [0, 1]", n.jitter_probability));
    if (!(n.jitter_factor >= 0) || !std::isfinite(n.jitter_factor))
      throw InputError(fmt::format("--jitter-factor {}: must be >= 0", n.jitter_factor));
    if (!(period_ms_ > 0) || !std::isfinite(period_ms_))
      throw InputError(fmt::format("--interrupt-period {}: must be > 0 ms", period_ms_));
    if (!(duration_ms_ >= 0) || !std::isfinite(duration_ms_))
      throw InputError(fmt::format("--interrupt-duration {}: must be >= 0 ms", duration_ms_));
    n.interrupt_period = period_ms_ * 1e-3;
    n.interrupt_duration = duration_ms_ * 1e-3;
    if (n.perturb_rank < -1 || n.perturb_rank >= nranks)
      throw InputError(fmt::format("--perturb-rank {}: no such rank in a run of {}", n.perturb_rank, nranks));
    if ((n.perturb_rank >= 0) != (n.perturb_iteration >= 0))
      throw InputError("--perturb-rank and --perturb-iter go together");
  }
  /// The options' effective values, for the record.
  void effective(std::vector<std::pair<std::string, std::string>>& out, const core::NoiseOptions& n) const {
    out.push_back({"slow-rank", std::to_string(n.slow_rank)});
    out.push_back({"slow-factor", fmt::format("{}", n.slow_factor)});
    out.push_back({"noise", kind_});
    out.push_back({"jitter-probability", fmt::format("{}", n.jitter_probability)});
    out.push_back({"jitter-factor", fmt::format("{}", n.jitter_factor)});
    out.push_back({"interrupt-period", fmt::format("{}", period_ms_)});
    out.push_back({"interrupt-duration", fmt::format("{}", duration_ms_)});
    out.push_back({"noise-seed", std::to_string(n.seed)});
    if (!perturb_) return;
    out.push_back({"perturb-rank", std::to_string(n.perturb_rank)});
    out.push_back({"perturb-iter", std::to_string(n.perturb_iteration)});
    out.push_back({"perturb-value", fmt::format("{}", n.perturb_value)});
  }

 private:
  bool perturb_ = false;
  std::string kind_ = "none";
  double period_ms_ = 10, duration_ms_ = 1;
};

/// The iteration group (solvers::IterationOptions): --tol, --max-iters, --time-limit,
/// --check-every, --polish, --monitor and the noise group. `tol_help` and `check_help` say what the
/// solver's tolerance is on and what its tests are; `unit` what a rank repeats.
/// What a command takes of the iteration group: the help texts, and the options its solver has.
struct IterationCliSpec {
  std::string tol_help;
  /// --check-every's help; empty: no --check-every (the method tests every iteration).
  std::string check_help;
  std::string unit = "iterations";
  /// The tolerance's names, e.g. "--rtol,--tol": the first is the record's key and the messages' name.
  std::string tol_names = "--tol";
  bool tol_below_one = false;  ///< a relative tolerance, < 1
  bool polish = true;          ///< --polish
  bool noise = true;           ///< the noise group (NoiseCli)
  bool perturb = false;        ///< with the noise: --perturb-*
  /// --monitor-every K (implies --monitor): rank 0 prints every K iterations, not every test.
  bool monitor_every = false;
};

class IterationCli {
 public:
  void add(CLI::App& app, solvers::IterationOptions& it, const IterationCliSpec& spec) {
    spec_ = spec;
    const auto comma = spec.tol_names.find(',');
    tol_name_ = spec.tol_names.substr(0, comma);
    app.add_option(spec.tol_names, it.tol, spec.tol_help)->capture_default_str();
    app.add_option("--max-iters", it.max_iters, "Stop after this many " + spec.unit)->capture_default_str();
    app.add_option("--time-limit", it.time_limit, "Stop after this many seconds and report the residual reached "
                                                  "(0: no limit)")
        ->capture_default_str();
    if (!spec.check_help.empty()) app.add_option("--check-every", it.check_every, spec.check_help)->capture_default_str();
    if (spec.polish)
      app.add_flag("--polish", it.polish,
                   "If the final true residual is above --tol, continue with synchronous " + spec.unit + " until it is not");
    if (spec.monitor_every) {
      app.add_flag("--monitor", it.monitor, "Print the residual on rank 0 every --monitor-every iterations");
      monitor_every_opt_ =
          app.add_option("--monitor-every", monitor_every_, "Iterations between --monitor lines (implies --monitor)")
              ->capture_default_str();
    } else {
      app.add_flag("--monitor", it.monitor, "Print each convergence test on rank 0");
    }
    if (spec.noise) noise.add(app, it.noise, spec.unit, spec.perturb);
  }
  /// Checks the values for a run of `nranks`; InputError on bad input.
  void apply(solvers::IterationOptions& it, int nranks) {
    if (!(it.tol > 0) || !std::isfinite(it.tol)) throw InputError(fmt::format("{} {}: must be > 0", tol_name_, it.tol));
    if (spec_.tol_below_one && !(it.tol < 1)) throw InputError(fmt::format("{} {}: must be < 1", tol_name_, it.tol));
    if (it.max_iters < 0) throw InputError("--max-iters must be >= 0");
    if (!(it.time_limit >= 0) || !std::isfinite(it.time_limit)) throw InputError("--time-limit must be >= 0 seconds");
    if (it.check_every < 1) throw InputError("--check-every must be >= 1");
    if (monitor_every_ < 1) throw InputError("--monitor-every must be >= 1");
    if (monitor_every_opt_ && monitor_every_opt_->count() > 0) it.monitor = true;
    if (spec_.noise) noise.apply(it.noise, nranks);
  }
  /// --monitor-every's value (1 unless given).
  int monitor_every() const { return monitor_every_; }
  /// The options' effective values, for the record.
  void effective(std::vector<std::pair<std::string, std::string>>& out, const solvers::IterationOptions& it) const {
    out.push_back({tol_name_.substr(2), fmt::format("{}", it.tol)});
    if (!spec_.check_help.empty()) out.push_back({"check-every", std::to_string(it.check_every)});
    out.push_back({"max-iters", std::to_string(it.max_iters)});
    out.push_back({"time-limit", fmt::format("{}", it.time_limit)});
    if (spec_.polish) out.push_back({"polish", it.polish ? "true" : "false"});
    out.push_back({"monitor", it.monitor ? "true" : "false"});
    if (spec_.monitor_every) out.push_back({"monitor-every", std::to_string(monitor_every_)});
    if (spec_.noise) noise.effective(out, it.noise);
  }

  NoiseCli noise;

 private:
  IterationCliSpec spec_;
  std::string tol_name_ = "--tol";
  int monitor_every_ = 1;
  CLI::Option* monitor_every_opt_ = nullptr;
};

/// The output group: --json, --quiet and, for a solver that writes its solution, --save.
class OutputCli {
 public:
  /// `save_help`: what --save writes; empty: the solver has no --save.
  void add(CLI::App& app, const std::string& save_help = "") {
    app.add_option("--json", json_path, "Write the run's statistics as JSON to this file");
    if (!save_help.empty()) app.add_option("--save", save_path, save_help);
    app.add_flag("--quiet", quiet, "Print no summary");
    save_ = !save_help.empty();
  }
  /// Collective: --save names a known format and both files can be written (InputError otherwise).
  /// field false: the caller checks --save itself (a vector, system_input.hpp).
  void check(MPI_Comm comm, bool field = true) const {
    if (field && !save_path.empty()) {
      field_format_for(save_path);
      check_writable(comm, save_path, "--save");
    }
    if (!json_path.empty()) check_writable(comm, json_path, "--json");
  }
  /// The options' values, for the record.
  void effective(std::vector<std::pair<std::string, std::string>>& out) const {
    out.push_back({"quiet", quiet ? "true" : "false"});
    out.push_back({"json", json_path});
    if (save_) out.push_back({"save", save_path});
  }

  std::string json_path, save_path;
  bool quiet = false;

 private:
  bool save_ = false;
};

/// The registry's list of a solver's modes, from the names listed beside their enum (core::Named).
template <class Names>
std::vector<MethodInfo> method_list(const Names& names) {
  std::vector<MethodInfo> out;
  for (const auto& n : names) out.push_back({n.name, n.description});
  return out;
}

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

/// The whole of `text` as an int or a double (std::stoi / std::stod); nullopt when it is not one:
/// empty, out of range, or with characters after the number. The commands' checks of a value that
/// is a number or a word (--alpha inf, --coarse-fan-in auto, --local) say their own message.
template <class T>
std::optional<T> parse_number(const std::string& text) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, double>);
  try {
    std::size_t used = 0;
    T v{};
    if constexpr (std::is_same_v<T, int>)
      v = std::stoi(text, &used);
    else
      v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {  // std::invalid_argument, std::out_of_range
  }
  return std::nullopt;
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

/// --dims PXxPYxPZ. Zeros are allowed (choose_dims fills them in), which parse_extent rejects.
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
