#!/usr/bin/env python3
"""What not waiting saves at 2 ranks in plain MPI (docs/benchmarks.md, "What not waiting saves in
plain MPI").

Runs desync_bench_bounded_loop (bench/mpi_bounded_loop.cpp) synchronously (0 receives, one
landing buffer per face: the reference) and each variant, interleaved round by round, and prints
each variant's time against the reference's of the same round (paired: mean, standard error,
median, rounds below 1). A variant is RECEIVES or RECEIVES/BUFFERS: that many receives posted per
face, landing in that many buffers in turn (0/10: synchronous, landing in 10 buffers in turn).

  python3 bench/bounded_loop.py --exe build/bench/desync_bench_bounded_loop --rounds 30
"""
import argparse
import math
import os
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import add_mpirun_option, child_env, write_json  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default="build/bench/desync_bench_bounded_loop", help="desync_bench_bounded_loop")
    add_mpirun_option(ap, "mpirun --bind-to core")  # MPICH: --mpirun mpirun.mpich
    ap.add_argument("--variants", nargs="+", default=["1", "10", "1/10", "0/10"],
                    help="RECEIVES (0..21) or RECEIVES/BUFFERS (BUFFERS >= RECEIVES), besides the reference 0")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json")
    args = ap.parse_args()
    variants = ["0"]
    for v in args.variants:
        parts = v.split("/")
        if (len(parts) > 2 or not all(x.isdigit() for x in parts) or int(parts[0]) > 21
                or (len(parts) == 2 and not max(int(parts[0]), 1) <= int(parts[1]) <= 1000)):
            ap.error(f"--variants {v}: RECEIVES in 0..21, or RECEIVES/BUFFERS with BUFFERS in max(RECEIVES, 1)..1000")
        variants.append(v)
    if args.rounds < 2 or args.steps < 1:
        ap.error("--rounds >= 2, --steps >= 1")
    times = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            receives, _, buffers = v.partition("/")
            cmd = shlex.split(args.mpirun) + ["-np", "2", args.exe, receives, str(args.steps)]
            cmd += [buffers] if buffers else []
            p = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=args.timeout)
            fields = p.stdout.split()
            if p.returncode != 0 or "ok" not in fields:
                raise SystemExit(f"bounded_loop: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr[-2000:]}")
            times[v].append(float(fields[fields.index("seconds") + 1]))
    rows = []
    print(f"2 ranks, {args.steps} steps, {args.rounds} interleaved rounds; ratio to sync of the same round")
    for v in variants:
        ratios = [a / b for a, b in zip(times[v], times["0"])]
        receives, _, buffers = v.partition("/")
        row = {"receives": int(receives), "buffers": int(buffers) if buffers else max(int(receives), 1), "seconds": times[v], "median": statistics.median(times[v]),
               "paired_mean": statistics.fmean(ratios),
               "paired_se": statistics.stdev(ratios) / math.sqrt(len(ratios)),
               "paired_median": statistics.median(ratios), "rounds_below_1": sum(r < 1 for r in ratios)}
        rows.append(row)
        name = ("sync" if receives == "0" else f"not waiting, {receives} posted") + (
            f", {buffers} buffers" if buffers else "")
        print(f"  {name:34s} median {row['median']:.4f} s  paired {row['paired_mean']:.4f} ± {row['paired_se']:.4f} "
              f"(median {row['paired_median']:.4f}, below 1 in {row['rounds_below_1']} of {args.rounds})")
    if args.json:
        write_json(args.json, {"benchmark": "bounded_loop", "steps": args.steps, "rounds": args.rounds,
                               "mpirun": args.mpirun, "rows": rows})


if __name__ == "__main__":
    main()
