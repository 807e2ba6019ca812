#!/usr/bin/env python3
"""Time to solution of OpenMP synchronous, asynchronous and racy Jacobi (desync --threads).

Runs `MPIRUN -np NP DESYNC jacobi --mode {sync,async,racy} --threads T --global G --dims 1x1xNP
--polish --check-every C --json ...` REPS times for each test cadence C and mode, in an interleaved
order (every repetition visits all configurations, starting one further along, so slow drift of the
machine spreads over all of them), and reports medians per cadence: wall time (slowest rank's solve
time, from the JSON), ratio to sync at the same cadence, iterations per thread (min / max), polish
iterations, true residual and how many runs converged.

Cadences (--cadences, default 1,100): `1` is Bethune et al.'s (2011) own set-up, in which the synchronous variant
computes and reduces the residual every iteration (Figure 2) and the asynchronous ones update the
running residual every iteration (3.3.2); `100` is desync's default in every mode (Bethune et al., 2011,
Figure 1); `default` passes no --check-every at all.

Default problem: Bethune et al.'s (2011) OpenMP weak scaling (section 3.3): 50 planes of 50x50 cells per thread,
stacked along z (global 50x50x(50 T NP)). Every run polishes, so every mode's time is the time to a
*true* residual below --tol. Target: async and racy <= 0.9x sync (Bethune et al., 2011, section 3.3).

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
import sys
import tempfile

from bench_util import add_launch_options, run_measured, write_json

MODES = ("sync", "async", "racy")
TARGET = 0.9  # async, racy wall time / sync wall time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_launch_options(p, mpirun="mpirun --bind-to none")
    p.add_argument("--np", type=int, default=1, help="ranks (default 1)")
    p.add_argument("--threads", type=int, default=2, help="OpenMP threads per rank (default 2)")
    p.add_argument("--global", dest="global_size", default=None,
                   help="global cells (default 50x50x(50 x threads x np): 50 planes of 50x50 per thread)")
    p.add_argument("--cadences", default="1,100",
                   help="comma-separated --check-every values, or 'default' for none (default 1,100)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each mode (default 5)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated modes (default sync,async,racy)")
    p.add_argument("--extra", default="", help="more desync options, split like a shell line")
    p.add_argument("--json", help="write all runs and the medians to this file")
    return p.parse_args(argv)


def run_once(args, cadence, mode, workdir, rep):
    out = os.path.join(workdir, f"{mode}_{cadence}_{rep}.json")
    cmd = (shlex.split(args.mpirun) + ["-np", str(args.np), args.desync, "jacobi", "--mode", mode,
                                        "--threads", str(args.threads), "--global", args.global_size,
                                        "--dims", f"1x1x{args.np}", "--polish", "--quiet", "--json", out]
           + ([] if cadence == "default" else ["--check-every", cadence]) + shlex.split(args.extra))
    env = dict(os.environ)
    env.setdefault("OMP_PROC_BIND", "close")
    env.setdefault("OMP_PLACES", "cores")
    proc = run_measured(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"omp_time_to_solution: {' '.join(cmd)} failed with exit code {proc.returncode}:\n"
                 f"{proc.stdout}{proc.stderr}")
    with open(out) as f:
        rec = json.load(f)
    ranks = rec["per_rank"]
    return {
        "cadence": cadence,
        "mode": mode,
        "wall_time": rec["wall_time"],
        "converged": rec["converged"],
        "true_residual": rec["true_residual"],
        "polish_iterations": rec["details"]["polish_iterations"],
        "thread_iterations_min": min(r["thread_iterations_min"] for r in ranks),
        "thread_iterations_max": max(r["thread_iterations_max"] for r in ranks),
    }


def main(argv):
    args = parse_args(argv)
    if args.global_size is None:
        args.global_size = f"50x50x{50 * args.threads * args.np}"
    modes = [m for m in args.modes.split(",") if m]
    cadences = [c.strip() for c in args.cadences.split(",") if c.strip()]
    for c in cadences:
        if c != "default" and not (c.isdigit() and int(c) >= 1):
            sys.exit(f"omp_time_to_solution: --cadences: '{c}' is neither a positive integer nor 'default'")
    configs = [(c, m) for c in cadences for m in modes]
    runs = []
    with tempfile.TemporaryDirectory(prefix="desync_omp_tts_") as workdir:
        for rep in range(args.reps):
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for cadence, mode in (order if rep % 2 == 0 else order[::-1]):
                runs.append(run_once(args, cadence, mode, workdir, rep))
    print(f"np {args.np}, {args.threads} threads per rank, global {args.global_size}, {args.reps} repetitions (medians)")
    summary = {}
    for cadence in cadences:
        medians = {}
        for mode in modes:
            mine = [r for r in runs if r["mode"] == mode and r["cadence"] == cadence]
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
        what = ("no --check-every: desync's defaults" if cadence == "default"
                else f"--check-every {cadence} in every mode")
        print(f"\ncadence {cadence}: {what}")
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
        summary[cadence] = medians
    if args.json:
        write_json(args.json, {"np": args.np, "threads": args.threads, "global": args.global_size, "reps": args.reps,
                               "cadences": cadences, "runs": runs, "medians": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
