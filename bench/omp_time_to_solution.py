#!/usr/bin/env python3
"""Time to solution of OpenMP synchronous, asynchronous and racy Jacobi (desync --threads).

Runs `MPIRUN -np NP DESYNC jacobi --mode {sync,async,racy} --threads T --global G --polish --json ...`
REPS times each, in an interleaved order (every repetition visits all modes, starting one further
along, so slow drift of the machine spreads over all of them), and reports medians: wall time
(slowest rank's solve time, from the JSON), ratio to sync, iterations per thread (min / max),
polish iterations, true residual and how many runs converged.

Default problem: one rank, 2 threads, global 100x50x50 cells: the same problem and the same work as
`mpirun -np 2 desync jacobi --local 50` (the paper's default, 50^3 cells per rank), split into two
slabs of 25 planes of 100x50 cells along z instead of two 50^3 blocks along x. Every run polishes,
so every mode's time is the time to a *true* residual below --tol. Target: async and racy <= 0.9x
sync (paper 000, section 3.3).

Run it on a quiet machine with a core per thread. The launcher's default binding may put all
threads of a rank on one core: the default launcher line adds `--bind-to none` (Open MPI) and the
environment OMP_PROC_BIND=close, OMP_PLACES=cores (see docs/usage.md, "OpenMP threads").

Standard library only. Example:
  python3 bench/omp_time_to_solution.py --desync build/bench/desync --threads 2 --json omp_tts.json
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

from bench_util import add_launch_options

MODES = ("sync", "async", "racy")
TARGET = 0.9  # async, racy wall time / sync wall time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_launch_options(p, mpirun="mpirun --bind-to none")
    p.add_argument("--np", type=int, default=1, help="ranks (default 1)")
    p.add_argument("--threads", type=int, default=2, help="OpenMP threads per rank (default 2)")
    p.add_argument("--global", dest="global_size", default="100x50x50",
                   help="global cells (default 100x50x50: two ranks' worth of the default --local 50)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each mode (default 5)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated modes (default sync,async,racy)")
    p.add_argument("--extra", default="", help="more desync options, split like a shell line")
    p.add_argument("--json", help="write all runs and the medians to this file")
    return p.parse_args(argv)


def run_once(args, mode, workdir, rep):
    out = os.path.join(workdir, f"{mode}_{rep}.json")
    cmd = (shlex.split(args.mpirun) + ["-np", str(args.np), args.desync, "jacobi", "--mode", mode,
                                        "--threads", str(args.threads), "--global", args.global_size,
                                        "--polish", "--quiet", "--json", out] + shlex.split(args.extra))
    env = dict(os.environ)
    env.setdefault("OMP_PROC_BIND", "close")
    env.setdefault("OMP_PLACES", "cores")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"omp_time_to_solution: {' '.join(cmd)} failed with exit code {proc.returncode}:\n"
                 f"{proc.stdout}{proc.stderr}")
    with open(out) as f:
        rec = json.load(f)
    ranks = rec["per_rank"]
    return {
        "mode": mode,
        "wall_time": rec["wall_time"],
        "converged": rec["converged"],
        "true_residual": rec["true_residual"],
        "polish_iterations": rec["polish_iterations"],
        "thread_iterations_min": min(r["thread_iterations"]["min"] for r in ranks),
        "thread_iterations_max": max(r["thread_iterations"]["max"] for r in ranks),
    }


def main(argv):
    args = parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    runs = []
    with tempfile.TemporaryDirectory(prefix="desync_omp_tts_") as workdir:
        for rep in range(args.reps):
            for i in range(len(modes)):
                mode = modes[(i + rep) % len(modes)]
                runs.append(run_once(args, mode, workdir, rep))
    medians = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        medians[mode] = {
            "wall_time": statistics.median(r["wall_time"] for r in mine),
            "thread_iterations_min": statistics.median(r["thread_iterations_min"] for r in mine),
            "thread_iterations_max": statistics.median(r["thread_iterations_max"] for r in mine),
            "polish_iterations": statistics.median(r["polish_iterations"] for r in mine),
            "true_residual": statistics.median(r["true_residual"] for r in mine),
            "converged": sum(1 for r in mine if r["converged"]),
            "runs": len(mine),
        }
    sync = medians.get("sync", {}).get("wall_time")
    print(f"np {args.np}, {args.threads} threads per rank, global {args.global_size}, {args.reps} repetitions (medians)")
    print(f"{'mode':6} {'wall [s]':>9} {'/ sync':>7} {'it/thread min':>14} {'max':>8} {'polish':>7} "
          f"{'true residual':>14} {'converged':>10}")
    for mode, m in medians.items():
        ratio = m["wall_time"] / sync if sync else float("nan")
        m["ratio_to_sync"] = ratio
        flag = ""
        if mode != "sync" and sync:
            flag = "  (target <= %.1f: %s)" % (TARGET, "met" if ratio <= TARGET else "NOT met")
        print(f"{mode:6} {m['wall_time']:9.4f} {ratio:7.3f} {m['thread_iterations_min']:14.0f} "
              f"{m['thread_iterations_max']:8.0f} {m['polish_iterations']:7.0f} {m['true_residual']:14.3e} "
              f"{m['converged']:>4}/{m['runs']}{flag}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"np": args.np, "threads": args.threads, "global": args.global_size, "reps": args.reps,
                       "runs": runs, "medians": medians}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
