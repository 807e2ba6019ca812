#!/usr/bin/env python3
"""Time per iteration of two desync builds, paired in one session: grid Schwarz, matrix Schwarz,
CG + ASM + GDSW and asynchronous Jacobi, the figures a rework of the Schwarz stack must not make
worse (docs/benchmarks.md, "One Schwarz stack, against the tree before it").

    python3 bench/stack_before_after.py --old OLD/desync --new NEW/desync [--reps 5] [--json FILE]

Each case runs a fixed number of iterations (a tolerance no run reaches) on 2 ranks, both builds in
every repetition, the order of builds and cases interleaved (bench_util.interleaved) so that the
machine's drift falls on both. A run's time per iteration is its solve time over its iterations
(the slowest rank's): wall time for the stationary solvers, the Krylov record's total minus its
set-up for CG (the GDSW set-up is not an iteration). The noise of a figure is measured in the same
session: the spread (max / min) of each build's repetitions. Writes the runs, each figure's
medians, the ratio new / old and both spreads as JSON.
"""
import argparse
import json
import os
import shlex
import sys
import tempfile

import bench_util as bu

# (name, ranks, arguments after the executable); {matrix}: the 2D Laplacian written below.
CASES = [
    ("grid schwarz sync", 2, ["schwarz", "--problem", "poisson2d", "--global", "256", "--mode", "sync",
                              "--tol", "1e-30", "--max-iters", "150"]),
    ("matrix schwarz sync", 2, ["schwarz", "--matrix", "{matrix}", "--mode", "sync", "--overlap", "2",
                                "--tol", "1e-30", "--max-iters", "150"]),
    ("cg + asm + gdsw", 2, ["krylov", "--matrix", "{matrix}", "--pc", "asm", "--coarse", "gdsw", "--overlap", "2",
                            "--rtol", "1e-30", "--max-iters", "60"]),
    ("async jacobi", 2, ["jacobi", "--mode", "async", "--local", "64", "--tol", "1e-30", "--max-iters", "3000"]),
]


def laplacian_mtx(path, n):
    """The 5-point Laplacian of an n x n grid, Dirichlet, as a Matrix Market file."""
    entries = []
    for y in range(n):
        for x in range(n):
            i = y * n + x
            entries.append((i, i, 4.0))
            for a, b in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
                if 0 <= a < n and 0 <= b < n:
                    entries.append((i, b * n + a, -1.0))
    with open(path, "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate real general\n{n * n} {n * n} {len(entries)}\n")
        f.writelines(f"{i + 1} {j + 1} {v}\n" for i, j, v in entries)


def per_iteration(rec):
    """Solve seconds per iteration of a run's JSON record (see the module's description)."""
    its = rec["iterations"]["max"] if isinstance(rec["iterations"], dict) else rec["iterations"]
    split = rec.get("time_split", {})
    if rec["solver"] in ("krylov", "cg"):
        seconds = split["total"] - split["setup"]
    else:
        seconds = rec["wall_time"]
    return seconds / its if its else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="the desync executable before the change")
    p.add_argument("--new", required=True, help="the desync executable after it")
    p.add_argument("--reps", type=int, default=5, help="repetitions of every case and build (default 5)")
    p.add_argument("--grid", type=int, default=256, help="the matrix cases' Laplacian: N x N (default 256)")
    p.add_argument("--json", help="write the runs and figures here")
    bu.add_mpirun_option(p)
    args = p.parse_args()
    for exe in (args.old, args.new):
        if not bu.is_executable(exe):
            p.error(f"{exe}: not an executable")
    env = bu.one_thread_env()
    launcher = shlex.split(args.mpirun)
    with tempfile.TemporaryDirectory(prefix="desync-stack-") as tmp:
        matrix = os.path.join(tmp, "laplacian.mtx")
        laplacian_mtx(matrix, args.grid)
        configs = [(name, side) for name, _, _ in CASES for side in ("old", "new")]
        cases = {name: (ranks, argv) for name, ranks, argv in CASES}

        def run_one(cfg, json_path):
            name, side = cfg
            ranks, argv = cases[name]
            exe = args.old if side == "old" else args.new
            cmd = launcher + ["-np", str(ranks), exe] + [a.replace("{matrix}", matrix) for a in argv] + \
                ["--quiet", "--json", json_path]
            rc, err, _ = bu.run_for_json(cmd, json_path, 600, env)
            rec = {"case": name, "build": side, "rc": rc}
            if os.path.exists(json_path):
                with open(json_path) as f:
                    run = json.load(f)
                rec["seconds_per_iteration"] = per_iteration(run)
                rec["iterations"] = bu.count(run["iterations"]["max"])
            else:
                rec["error"] = bu.first_error_line(err)
            return rec

        runs, session = bu.run_repetitions(configs, args.reps, run_one, "desync-stack-run-",
                                           lambda cfg, rec: f"{cfg[0]:20} {cfg[1]}: "
                                           f"{rec.get('seconds_per_iteration', float('nan')) * 1e3:.3f} ms/it")
    figures = []
    print(f"{'case':20} {'old ms/it':>10} {'new ms/it':>10} {'new/old':>8} {'old spread':>11} {'new spread':>11}")
    for name, _, _ in CASES:
        per = {side: [r["seconds_per_iteration"] for r in runs
                      if r["case"] == name and r["build"] == side and "seconds_per_iteration" in r]
               for side in ("old", "new")}
        if not per["old"] or not per["new"]:
            print(f"{name:20} no runs")
            continue
        old, new = bu.median(per["old"]), bu.median(per["new"])
        fig = {"case": name, "old_median": old, "new_median": new, "ratio": new / old,
               "old_spread": max(per["old"]) / min(per["old"]), "new_spread": max(per["new"]) / min(per["new"]),
               "old_range": [min(per["old"]), max(per["old"])], "new_range": [min(per["new"]), max(per["new"])]}
        figures.append(fig)
        print(f"{name:20} {old * 1e3:10.3f} {new * 1e3:10.3f} {fig['ratio']:8.3f} {fig['old_spread']:11.3f} "
              f"{fig['new_spread']:11.3f}")
    bu.print_machine_and_load(bu.machine_info(args, __file__), session, runs)
    if args.json:
        bu.write_json(args.json, {"cases": [{"case": n, "ranks": r, "args": a} for n, r, a in CASES],
                                  "reps": args.reps, "grid": args.grid, "figures": figures, "runs": runs,
                                  "session": session, "machine": bu.machine_info(args, __file__)})
    return 0 if figures else 1


if __name__ == "__main__":
    sys.exit(main())
