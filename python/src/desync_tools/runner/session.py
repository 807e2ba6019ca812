"""Paired benchmark sessions: what desync's benchmark scripts (bench/*.py, the simulated studies of
bench/simgrid/) share with the experiment files' runs (execute.py), in one library: their common
options, the environment of a launched run, interleaved repetitions of timed runs that write a JSON
record, their progress lines, medians, and the machine, load and failure lines under the tables.
Standard library only; the scripts import it through bench/bench_util.py, so they run as
`python3 bench/<script>.py ...` from anywhere without installing the package.
"""
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from . import machine
from .machine import HostLoad

# python/src, where desync_tools lives (for the simulated runs, which launch `python -m desync_tools.sim`).
PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_env(ranks=None, extra=None):
    """The environment of a launched run: Open MPI's consent to root, oversubscription where `ranks`
    is more than the cores, then `extra` (an experiment's [env])."""
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # Open MPI refuses root without these; MPICH ignores them
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if ranks is not None and ranks > (os.cpu_count() or 1):  # Open MPI refuses more ranks than cores without it
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.update(extra or {})
    return env


def interleaved(configs, reps, first=0):
    """(repetition, configuration) pairs in run order: every repetition visits all configurations,
    starting at a different point with different neighbours, every other one in reverse, so slow
    drift of the machine spreads over all of them. Repetitions are numbered from `first`."""
    for k in range(reps):
        shift = (k * 5) % len(configs)  # a different starting point and neighbour order each repetition
        order = configs[shift:] + configs[:shift]
        if k % 2:
            order.reverse()
        for cfg in order:
            yield first + k, cfg


# The host's load beside every run this process launched through run_measured (machine.HostLoad),
# in launch order; write_json puts it into the script's JSON document as "host_runs".
HOST_RUNS = []


def run_measured(cmd, **kwargs):
    """subprocess.run(cmd, **kwargs), with the host's load beside the run kept in HOST_RUNS."""
    host = HostLoad()
    try:
        return subprocess.run(cmd, **kwargs)
    finally:
        HOST_RUNS.append(host.finish())


def write_json(path, doc):
    """Writes a JSON document (indented by 1, a newline at the end), whole or not at all; a dict gets
    "host_runs", the load beside each run launched by run_measured so far, when there was any."""
    if HOST_RUNS and isinstance(doc, dict):
        doc = {**doc, "host_runs": list(HOST_RUNS)}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def median(xs):
    """The median, NaN for no values."""
    return statistics.median(xs) if xs else float("nan")


def add_desync_option(parser):
    """--desync, defaulting to $DESYNC."""
    parser.add_argument("--desync", default=os.environ.get("DESYNC", "build/openmpi/desync"),
                        help="path of the desync executable (default: $DESYNC or build/openmpi/desync)")


def add_mpirun_option(parser, mpirun="mpirun"):
    """--mpirun, defaulting to $MPIRUN, else `mpirun`."""
    shown = f"'{mpirun}'" if " " in mpirun else mpirun
    parser.add_argument("--mpirun", default=os.environ.get("MPIRUN", mpirun),
                        help=f"launcher command, split like a shell line (default: $MPIRUN or {shown})")


def add_launch_options(parser, mpirun="mpirun"):
    """--desync and --mpirun (see add_desync_option and add_mpirun_option)."""
    add_desync_option(parser)
    add_mpirun_option(parser, mpirun)


def split_choices(parser, text, allowed, what):
    """The items of a comma-separated option value, each one of `allowed` (else a parser error)."""
    items = [x for x in text.split(",") if x]
    for x in items:
        if x not in allowed:
            parser.error(f"unknown {what} {x!r} (choose from {', '.join(allowed)})")
    return items


def is_executable(path):
    """Whether `path` is a file this process may execute."""
    return os.path.isfile(path) and os.access(path, os.X_OK)


def one_thread_env():
    """child_env() with one BLAS and one OpenMP thread per rank unless the caller's environment says
    otherwise: a multithreaded BLAS (OpenBLAS as the libblas.so.3 alternative) would put several
    threads per rank on the cores."""
    env = child_env()
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def count(x):
    """An iteration count as an int when it is one (desync's JSON writes 255.0 for 255)."""
    return int(x) if float(x).is_integer() else float(x)


def first_error_line(text):
    """The first line of a failed run's output that says something (not one of mpirun's banner rules)."""
    for line in (text or "").splitlines():
        if line.strip() and not line.strip().startswith("---"):
            return line.strip()
    return "no output"


def run_repetitions(configs, reps, run_one, prefix, progress=None):
    """Runs `run_one(cfg, json_path)` (returning the run's record, a dict) for every (repetition,
    configuration) of interleaved(configs, reps), json_path a file in a temporary folder named with
    `prefix`; each record gets its "rep" and the host's load beside it (machine.HostLoad: the load
    averages before and after, the CPU seconds other processes took, "disturbed"). progress(cfg, rec):
    the text of the run's progress line on standard error, after "[  i/total] " (None: no progress lines). Returns the records and the
    session: {"loadavg_before", "loadavg_after", "duration_s"} (in the order of the JSON documents)."""
    load_before = os.getloadavg()
    t_start = time.monotonic()
    runs = []
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        json_path = os.path.join(tmp, "run.json")
        total = reps * len(configs)
        for rep, cfg in interleaved(configs, reps):
            host = HostLoad()
            rec = run_one(cfg, json_path)
            for key, value in host.finish().items():  # the load beside the run, unless run_one measured it
                rec.setdefault(key, value)
            rec["rep"] = rep
            runs.append(rec)
            if progress is not None:
                print(f"[{len(runs):3d}/{total}] {progress(cfg, rec)}", file=sys.stderr, flush=True)
    duration = time.monotonic() - t_start
    return runs, {"loadavg_before": load_before, "loadavg_after": os.getloadavg(), "duration_s": duration}


def run_for_json(cmd, json_path, timeout, env):
    """Runs `cmd`, which writes its JSON record to json_path (removed first), with its output captured
    and at most `timeout` seconds. Returns (exit code, None when it timed out; its standard error, else
    its standard output, or the timeout; seconds it took)."""
    if os.path.exists(json_path):
        os.remove(json_path)
    t0 = time.monotonic()
    try:
        proc = run_measured(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                            env=env)
        rc, err = proc.returncode, proc.stderr or proc.stdout
    except subprocess.TimeoutExpired:
        rc, err = None, f"timed out after {timeout:g} s"
    return rc, err, time.monotonic() - t0


def record_outcome(rec, rc, err, json_path, parse, source):
    """Completes the record `rec` of a run that exited with `rc` and said `err` (run_for_json): with
    exit code 0 (converged) or 1 (stopped without meeting the tolerance), both of which write the JSON
    record, parse(the record)'s fields and ok True; else, or when `source`'s record cannot be read,
    ok False and the error."""
    if rc in (0, 1) and os.path.exists(json_path):
        try:
            with open(json_path) as f:
                rec.update(parse(json.load(f)))
            rec["ok"] = True
        except (ValueError, KeyError, TypeError) as e:
            rec.update({"ok": False, "error": f"unreadable JSON from {source}: {e!r}"})
    else:
        rec.update({"ok": False, "error": (err or "").strip()[-2000:] or f"exit code {rc}, no JSON"})
    return rec


def solve_progress(rec):
    """A solver run's progress text: its solve time, iterations, true residual and whether it
    converged, or why it failed."""
    if not rec["ok"]:
        return "FAILED: " + first_error_line(rec["error"])
    return (f"{rec['solve_seconds']:.4f} s, {rec['iterations']} its, true residual {rec['true_residual']:.2e}, "
            f"{'converged' if rec['converged'] else 'NOT converged'}")


def load_line(session, runs, cpus=False):
    """The load average before and after the runs (run_repetitions' session), [the CPUs,] how many
    runs took how long."""
    b, a = session["loadavg_before"], session["loadavg_after"]
    disturbed = sum(1 for r in runs if r.get("disturbed"))
    return (f"load average (1, 5, 15 min): before {b[0]:.2f} {b[1]:.2f} {b[2]:.2f}, "
            f"after {a[0]:.2f} {a[1]:.2f} {a[2]:.2f}; " + (f"{os.cpu_count()} CPUs; " if cpus else "")
            + f"{len(runs)} runs in {session['duration_s']:.0f} s"
            + (f"; {disturbed} disturbed (other processes kept the host busy: repeat them)" if disturbed else ""))


def print_machine_and_load(machine, session, runs):
    """Prints the machine line (CPU, MPI, the PETSc version the runs reported, git revision) and the
    load line; returns the PETSc versions."""
    petsc_versions = sorted({r["petsc_version"] for r in runs if r.get("petsc_version")})
    print(f"machine: {machine.get('cpu', '?')}, {machine['cpus']} CPUs; {machine.get('mpi', '?')}"
          + (f"; {petsc_versions[0]}" if petsc_versions else "") + f"; git {machine['git']}")
    print(load_line(session, runs))
    return petsc_versions


def print_failures(runs, describe=first_error_line):
    """Prints how many runs failed and the first one's command and describe(error); returns the failed
    runs."""
    failed = [r for r in runs if not r["ok"]]
    if failed:
        print(f"{len(failed)} run(s) FAILED, e.g.: {failed[0]['command']}\n  {describe(failed[0]['error'])}")
    return failed


def machine_info(args, script):
    """Host, CPU, OS, MPI (`args.mpirun --version`), BLAS and the git revision of `script`'s tree."""
    info = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "cpu": machine.cpu(), "os": machine.os_name()}
    try:
        v = subprocess.run(shlex.split(args.mpirun) + ["--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30).stdout
        lines = [line.strip() for line in v.strip().splitlines()]
        info["mpi"] = lines[0] if lines else ""
        if info["mpi"].startswith("HYDRA"):  # MPICH's launcher: its version is on a later line
            version = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Version:")), "?")
            info["mpi"] = f"MPICH Hydra {version}"
    except (OSError, subprocess.SubprocessError):
        info["mpi"] = "unknown"
    blas = "/etc/alternatives/libblas.so.3-" + platform.machine() + "-linux-gnu"  # Debian's BLAS alternative
    if os.path.exists(blas):
        info["blas"] = os.path.realpath(blas)
    try:
        here = os.path.dirname(os.path.abspath(script))
        info["git"] = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, timeout=30).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        info["git"] = "unknown"
    return info


def desync_sim_command(option):
    """The desync-sim launcher as a list: the --desync-sim option's command, split like a shell line,
    or this interpreter running desync_tools.sim (measure_host_link and the simulated runs put
    python/src on PYTHONPATH)."""
    if option:
        return shlex.split(option)
    return [sys.executable, "-m", "desync_tools.sim"]


def measure_host_link(launcher, mpirun, output, timeout=600, script="bench"):
    """Measures this machine's intra-node MPI link (latency, bandwidth, latency curve) with
    `LAUNCHER calibrate-host` (desync-sim, launched as the list `launcher`) into `output`, prints its
    line, and returns the measurement (a dict)."""
    env = child_env()
    env["PYTHONPATH"] = PYTHON_SRC + os.pathsep + env.get("PYTHONPATH", "")
    cmd = list(launcher) + ["calibrate-host", "--mpirun", shlex.split(mpirun)[0], "-o", output]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"{script}: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    print(p.stdout.strip(), flush=True)
    with open(output) as f:
        return json.load(f)
