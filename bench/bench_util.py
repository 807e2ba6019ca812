"""Helpers shared by desync's benchmark scripts (standard library only).

The scripts import this module from their own directory (Python puts a script's directory first on
sys.path), so they run as `python3 bench/<script>.py ...` from anywhere.
"""
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys


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


def child_env():
    """The environment of a launched run."""
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # Open MPI refuses root without these; MPICH ignores them
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def interleaved(configs, reps):
    """(repetition, configuration) pairs in run order: every repetition visits all configurations,
    starting at a different point with different neighbours, every other one in reverse, so slow
    drift of the machine spreads over all of them."""
    for rep in range(reps):
        shift = (rep * 5) % len(configs)  # a different starting point and neighbour order each repetition
        order = configs[shift:] + configs[:shift]
        if rep % 2:
            order.reverse()
        for cfg in order:
            yield rep, cfg


def write_json(path, doc):
    """Writes a benchmark's JSON document (indented by 1, a newline at the end)."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def median(xs):
    """The median, NaN for no values."""
    return statistics.median(xs) if xs else float("nan")

def count(x):
    """An iteration count as an int when it is one (desync's JSON writes 255.0 for 255)."""
    return int(x) if float(x).is_integer() else float(x)


def first_error_line(text):
    """The first line of a failed run's output that says something (not one of mpirun's banner rules)."""
    for line in (text or "").splitlines():
        if line.strip() and not line.strip().startswith("---"):
            return line.strip()
    return "no output"


def machine_info(args, script):
    """Host, CPU, OS, MPI (`args.mpirun --version`), BLAS and the git revision of `script`'s tree."""
    info = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
            "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    info["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
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
    here = os.path.dirname(os.path.abspath(__file__))
    env = child_env()
    env["PYTHONPATH"] = os.path.join(here, "..", "python", "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = list(launcher) + ["calibrate-host", "--mpirun", shlex.split(mpirun)[0], "-o", output]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"{script}: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    print(p.stdout.strip(), flush=True)
    with open(output) as f:
        return json.load(f)
