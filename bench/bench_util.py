"""Helpers shared by desync's benchmark scripts (standard library only).

The scripts import this module from their own directory (Python puts a script's directory first on
sys.path), so they run as `python3 bench/<script>.py ...` from anywhere.
"""
import json
import os
import statistics


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
