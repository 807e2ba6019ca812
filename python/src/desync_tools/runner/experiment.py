"""Experiment files (TOML, docs/experiments.md): one format for desync-run's sweeps
(bench/experiments/), the results pages' experiments (bench/results/) and the simulated studies. A
file holds [[experiment]] tables, or one [experiment] table with [options] and [parameters] beside
it. An experiment is one of two kinds:

  a sweep of desync runs (`solver`, desync-run runs it):

    [experiment]                      required: name (or id), solver
    name = "jacobi-slow-rank"
    description = "..."
    executable = "build/openmpi/desync"
    launcher = "mpirun"               # mpirun | mpirun.openmpi | mpirun.mpich | mpiexec | srun | none
                                      # or a template with {ranks}, {exe} and {args}
    solver = "jacobi"
    repetitions = 3
    order = "interleaved"             # or "sequential"
    timeout = 600                     # seconds per run
    [options]                         # fixed desync options: key = value -> --key value, true -> --key
    local = 20
    [parameters]                      # swept: the Cartesian product of the lists; `ranks` goes to the launcher
    ranks = [1, 2]
    mode = ["sync", "async"]
    transport = [{ name = "p2p" },    # a value may bundle several options under a name (the column's
                 { name = "rma-flush", transport = "rma", rma-sync = "flush" },   # value); `launcher` and
                 { name = "shmem", transport = "shmem", launcher = "oshrun -np {ranks} {exe} {args}" }]

A sweep may also name its runs and say how a simulated cluster runs them (bench/simgrid/studies.toml,
the simulated studies that bench/simgrid/reproduce.py runs through desync-sim):

    label = "jacobi {mode} P={ranks}"   # a run's name: {p} is parameter p's value (a bundle's `label`,
                                        # else its name), {key} any other setting's value
    study = "jacobi-weak"               # the study the sweep belongs to (several sweeps may share one)
    paper = "Bethune et al., 2011, Table 1"
    sets = ["quick", "full"]            # the sets it belongs to (default both)
    study_order = "ranks"               # the study's runs ordered by rank count (default: file order)
    [experiment.quick_parameters]       # parameters replaced in the quick set
    ranks = [64, 256]

and `sim` (in [options] or in a bundle) holds desync-sim's arguments for the run, joined in order.
`ranks`, `launcher`, `sim` and a bundle's `name` and `label` are not desync options.

[experiment] accept_exit lists the exit codes of a successful run (default [0]; a fixed-work benchmark
that stops at --max-iters exits 1 by design: accept_exit = [0, 1]). In the list form the tables are
[experiment.options] and [experiment.parameters], after their [[experiment]].

  a command (`command`, desync-results runs it; a benchmark script, a simulated study):

    [[experiment]]
    id = "sim-jacobi-weak"
    description = "..."
    command = "{python} bench/simgrid/reproduce.py ... --json {out}"

Either kind may say where it stands on the results pages: `set` (quick, sim or recorded), `output`
(its data file under docs/data/), `minutes` (about how long it runs) and `machine` (where a recorded
one ran).
"""
import hashlib
import itertools
import json
import os
import re
import shlex
import tomllib

from ..errors import UserError
from .session import interleaved

EXPERIMENT_KEYS = {"name": str, "description": str, "executable": str, "launcher": str, "solver": str,
                   "repetitions": int, "order": str, "timeout": (int, float), "env": dict, "accept_exit": list,
                   "label": str, "study": str, "paper": str, "sets": list, "study_order": str}
# Settings that are not desync options: where and how a run runs, and how it is named.
NOT_OPTIONS = ("ranks", "launcher", "sim", "label")
SETS = ("quick", "full")
# Either kind: its id, and its place on the results pages.
COMMON_KEYS = {"id": str, "description": str, "set": str, "output": str, "minutes": (int, float), "machine": str}
COMMAND_KEYS = {"command": str}
LAUNCHERS = {  # name -> argument list before the executable
    "mpirun": ["mpirun", "-np", "{ranks}"],
    "mpirun.openmpi": ["mpirun.openmpi", "-np", "{ranks}"],
    "mpirun.mpich": ["mpirun.mpich", "-np", "{ranks}"],
    "mpiexec": ["mpiexec", "-n", "{ranks}"],
    "srun": ["srun", "-n", "{ranks}"],
    "none": [],
}
SCALAR = (str, int, float, bool)


class Experiment:
    """A parsed, validated experiment file."""

    def __init__(self, path, exp):
        self.path = path
        self.name = exp.get("name") or exp["id"]
        self.id = exp.get("id") or self.name
        self.description = exp.get("description", "")
        self.executable = exp.get("executable", "build/openmpi/desync")
        self.launcher = exp.get("launcher", "mpirun")
        self.solver = exp["solver"]
        self.repetitions = exp.get("repetitions", 1)
        self.order = exp.get("order", "sequential")
        self.timeout = float(exp.get("timeout", 600))
        self.env = {str(k): str(v) for k, v in exp.get("env", {}).items()}
        self.accept_exit = list(exp.get("accept_exit", [0]))
        self.options = dict(exp.get("options", {}))
        self.parameters = dict(exp.get("parameters", {}))
        self.label = exp.get("label", "")
        self.study = exp.get("study", self.id)
        self.paper = exp.get("paper", "")
        self.sets = list(exp.get("sets", SETS))
        self.study_order = exp.get("study_order", "file")
        self.quick_parameters = dict(exp.get("quick_parameters", {}))

    def in_set(self, name):
        """This sweep with the parameters of set `name` (quick: quick_parameters replace theirs), or
        None when it is not in that set."""
        if name not in self.sets:
            return None
        if name != "quick" or not self.quick_parameters:
            return self
        other = Experiment.__new__(Experiment)
        other.__dict__.update(self.__dict__)
        other.parameters = {**self.parameters, **self.quick_parameters}
        return other

    # The identity of an experiment: what runs, not where the executable lies, how long runs may
    # take or how many repetitions are wanted (a restart may add repetitions).
    def fingerprint(self):
        ident = {"name": self.name, "solver": self.solver, "options": self.options,
                 "parameters": self.parameters}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def combinations(self):
        """Every combination of the swept parameters, as dicts, in file order."""
        names = list(self.parameters)
        return [dict(zip(names, values)) for values in itertools.product(*(self.parameters[n] for n in names))]

    def runs(self):
        """(repetition, combination) pairs in run order. sequential: each combination's repetitions
        one after another; interleaved: every repetition visits all combinations, starting one
        further along and every other one reversed, so slow drift of the machine spreads evenly."""
        combos = self.combinations()
        if self.order == "sequential":
            return [(rep, c) for c in combos for rep in range(1, self.repetitions + 1)]
        return list(interleaved(combos, self.repetitions, first=1))

    @staticmethod
    def settings(combo):
        """The combination as (key, value) settings: a bundled value contributes its keys."""
        out = []
        for key, value in combo.items():
            if isinstance(value, dict):
                out += [(k, v) for k, v in value.items() if k not in ("name", "label")]
            else:
                out.append((key, value))
        return out

    def run_label(self, combo):
        """The run's name from `label` ({p}: parameter p's value or bundle label/name; {key}: a
        setting's value), or its columns joined when the sweep has no label."""
        if not self.label:
            return " ".join(f"{k}={v}" for k, v in shown(combo).items())
        found = dict(list(self.options.items()) + self.settings(combo))

        def value(m):
            key = m.group(1)
            if key in combo:
                v = combo[key]
                return str(v.get("label", v["name"])) if isinstance(v, dict) else str(v)
            if key in found:
                return str(found[key])
            raise UserError(f"{self.path}: experiment {self.id}: label '{self.label}' names {{{key}}}, which is "
                            "neither a parameter nor a setting")
        return re.sub(r"\{([A-Za-z0-9_-]+)\}", value, self.label)

    def sim_args(self, combo):
        """desync-sim's arguments of the run: every `sim` setting (options, then bundles), joined."""
        return [a for key, v in list(self.options.items()) + self.settings(combo) if key == "sim"
                for a in shlex.split(str(v))]

    def ranks(self, combo):
        found = dict(self.settings(combo))
        return int(found.get("ranks", self.options.get("ranks", 1)))

    def launcher_of(self, combo, launcher=None):
        return dict(self.settings(combo)).get("launcher") or launcher or self.launcher

    def arguments(self, combo):
        """desync's arguments: the solver, the fixed options, the combination."""
        args = [self.solver]
        for key, value in list(self.options.items()) + self.settings(combo):
            if key in NOT_OPTIONS:
                continue
            if value is True:
                args.append(f"--{key}")
            elif value is False:
                continue
            else:
                args += [f"--{key}", str(value)]
        return args

    def desync_args(self, combo, record_path):
        """desync's arguments and --json."""
        return self.arguments(combo) + ["--json", record_path]

    def command(self, combo, record_path, executable=None, launcher=None, force_launcher=False):
        """The whole command line of one run, as an argument list. The launcher: a bundled value's,
        else `launcher`, else the file's; force_launcher: `launcher` whatever the bundles say."""
        exe = executable or self.executable
        launcher = launcher if force_launcher else self.launcher_of(combo, launcher)
        ranks = str(self.ranks(combo))
        args = self.desync_args(combo, record_path)
        if launcher in LAUNCHERS:
            return [a.replace("{ranks}", ranks) for a in LAUNCHERS[launcher]] + [exe] + args
        out = []
        for token in shlex.split(launcher):
            if token == "{args}":
                out += args
            else:
                out.append(token.replace("{ranks}", ranks).replace("{exe}", exe))
        return out


def shown(combo):
    """The combination as its table columns: a bundled value by its name."""
    return {k: (v["name"] if isinstance(v, dict) else v) for k, v in combo.items()}


def run_id(rep, combo):
    """A readable, stable folder name: `ranks=2,mode=async,rep=1` (unsafe characters as _)."""
    text = ",".join(f"{k}={v}" for k, v in shown(combo).items()) + f",rep={rep}"
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", text.lstrip(","))


def _fail(path, message):
    raise UserError(f"{path}: {message}")


def check_launcher(path, launcher):
    if launcher in LAUNCHERS:
        return
    if "{exe}" not in launcher or "{args}" not in shlex.split(launcher):
        _fail(path, f"[experiment] launcher '{launcher}' is neither one of {', '.join(LAUNCHERS)} nor a "
                    "template with {ranks}, {exe} and {args} (e.g. \"mpirun -np {ranks} --bind-to core {exe} {args}\")")


def experiment_entries(path, doc):
    """The experiments of a file as tables, each with its options and parameters inside: the
    [[experiment]] list, or the one [experiment] with [options] and [parameters] beside it."""
    exp = doc.get("experiment")
    if isinstance(exp, list):
        unknown = set(doc) - {"experiment"}
        if unknown:
            _fail(path, f"unknown table(s) {', '.join(sorted(unknown))} (a list of experiments keeps each one's "
                        "options and parameters in [experiment.options] and [experiment.parameters])")
        if not exp:
            _fail(path, "no experiment")
        return [dict(e) for e in exp]
    unknown = set(doc) - {"experiment", "options", "parameters"}
    if unknown:
        _fail(path, f"unknown table(s) {', '.join(sorted(unknown))} (an experiment has [experiment], [options] "
                    "and [parameters])")
    if not isinstance(exp, dict):
        _fail(path, "no [experiment] table")
    entry = dict(exp)
    for table in ("options", "parameters"):
        if table in doc:
            entry[table] = doc[table]
    return [entry]


def _check_types(path, exp, known):
    for key, value in exp.items():
        if key not in known:
            _fail(path, f"unknown key [experiment] {key} (known: {', '.join(known)})")
        want = known[key]
        if not isinstance(value, want) or isinstance(value, bool):
            _fail(path, f"[experiment] {key} has the wrong type ({type(value).__name__})")


def validate_command(path, exp):
    """A command experiment: its keys, its id and command."""
    _check_types(path, exp, {**COMMON_KEYS, **COMMAND_KEYS})
    for key in ("id", "command"):
        if not exp.get(key):
            _fail(path, f"[experiment] {key} is required")


def validate(path, exp):
    """A sweep experiment (an entry of experiment_entries)."""
    if "command" in exp and "solver" in exp:
        _fail(path, f"experiment {exp.get('id') or exp.get('name')}: give solver (a sweep of desync runs) or "
                    "command, not both")
    options = exp.pop("options", {})
    parameters = exp.pop("parameters", {})
    quick = exp.pop("quick_parameters", {})
    _check_types(path, exp, {**EXPERIMENT_KEYS, **COMMON_KEYS})
    if not exp.get("name") and exp.get("id"):
        exp["name"] = exp["id"]
    exp["options"], exp["parameters"], exp["quick_parameters"] = options, parameters, quick
    if not all(s in SETS for s in exp.get("sets", SETS)) or not exp.get("sets", SETS):
        _fail(path, f"[experiment] sets must list some of {', '.join(SETS)}")
    if exp.get("study_order", "file") not in ("file", "ranks"):
        _fail(path, f"[experiment] study_order '{exp['study_order']}' is neither file nor ranks")
    if not isinstance(quick, dict) or any(k not in parameters for k in quick):
        _fail(path, "[experiment.quick_parameters] may only replace parameters the sweep has")
    for key in ("name", "solver"):
        if not exp.get(key):
            _fail(path, f"[experiment] {key} is required")
    if exp.get("repetitions", 1) < 1:
        _fail(path, "[experiment] repetitions must be at least 1")
    if exp.get("timeout", 600) <= 0:
        _fail(path, "[experiment] timeout must be positive")
    if exp.get("order", "sequential") not in ("sequential", "interleaved"):
        _fail(path, f"[experiment] order '{exp['order']}' is neither sequential nor interleaved")
    check_launcher(path, exp.get("launcher", "mpirun"))
    for table, name in ((options, "options"), (parameters, "parameters")):
        if not isinstance(table, dict):
            _fail(path, f"[{name}] must be a table")
    _check_parameters(path, options, quick)
    for key, value in options.items():
        if not isinstance(value, SCALAR):
            _fail(path, f"[options] {key} must be a string, number or boolean")
        if key == "json":
            _fail(path, "[options] json is set by desync-run (each run's record goes into its folder)")
    if not parameters:
        _fail(path, "[parameters] is empty: sweep at least one parameter (e.g. ranks = [2])")
    _check_parameters(path, options, parameters)
    accept = exp.get("accept_exit", [0])
    if not accept or not all(isinstance(c, int) and not isinstance(c, bool) for c in accept):
        _fail(path, "[experiment] accept_exit must be a non-empty list of exit codes")
    ranks = parameters.get("ranks", [options.get("ranks", 1)]) + quick.get("ranks", [])
    ranks = [v.get("ranks", options.get("ranks", 1)) if isinstance(v, dict) else v for v in ranks]
    ranks += [v["ranks"] for vals in list(parameters.values()) + list(quick.values()) for v in vals
              if isinstance(v, dict) and "ranks" in v]
    if not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r in ranks):
        _fail(path, "ranks must be positive integers")


def _check_parameters(path, options, parameters):
    """Swept parameters: non-empty lists of scalars or named bundles of scalars."""
    for key, values in parameters.items():
        if not isinstance(values, list):
            _fail(path, f"[parameters] {key} must be a list of values")
        if not values:
            _fail(path, f"[parameters] {key} is an empty list")
        for v in values:
            if isinstance(v, dict):
                if not isinstance(v.get("name"), str) or not v["name"]:
                    _fail(path, f"[parameters] {key}: a bundled value needs a name (e.g. {{ name = \"rma-flush\", ... }})")
                if not all(isinstance(x, SCALAR) for x in v.values()):
                    _fail(path, f"[parameters] {key} = {v['name']}: every setting must be a string, number or boolean")
                if "launcher" in v:
                    check_launcher(path, v["launcher"])
            elif not isinstance(v, SCALAR):
                _fail(path, f"[parameters] {key}: every value must be a string, number, boolean or a named table")
        names = [json.dumps(v["name"] if isinstance(v, dict) else v) for v in values]
        if len(set(names)) != len(names):
            _fail(path, f"[parameters] {key} lists a value twice")
        if key in options:
            _fail(path, f"{key} is both in [options] and in [parameters]")
        if key == "json":
            _fail(path, "[parameters] json is set by desync-run")


def load_experiments(path):
    """Every experiment of a file, validated: an Experiment for a sweep, the table (a dict) for a command."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not a valid TOML file ({e})") from None
    out = []
    for exp in experiment_entries(path, doc):
        if "solver" in exp or "command" not in exp:
            validate(path, exp)
            out.append(Experiment(path, exp))
        else:
            validate_command(path, exp)
            out.append(exp)
    return out


def load_experiment(path, only=None):
    """The sweep that desync-run runs: the file's one sweep, or the one whose id (or name) is `only`."""
    path = os.fspath(path)
    sweeps = [e for e in load_experiments(path) if isinstance(e, Experiment)]
    if only:
        sweeps = [e for e in sweeps if only in (e.id, e.name)]
        if not sweeps:
            raise UserError(f"{path}: no sweep experiment '{only}'")
    if not sweeps:
        raise UserError(f"{path}: no sweep experiment (its experiments are commands: desync-results run runs them)")
    if len(sweeps) > 1:
        raise UserError(f"{path}: {len(sweeps)} sweep experiments ({', '.join(e.id for e in sweeps)}): pick one with --only")
    return sweeps[0]
