#!/usr/bin/env python3
"""Iteration rate of asynchronous (or any mode of) Jacobi over each channel transport of desync.

For every transport configuration it runs, interleaved over the repetitions,

    LAUNCHER -np NP desync jacobi --mode MODE --local L --max-iters N --tol 1e-300 --check-every 100
             --transport T [--rma-sync S | --shmem-sync S] --quiet --json TMP

(a fixed amount of work: every run stops at --max-iters, exit code 1 is expected) and reports the
median `iteration_rate` (mean main-phase iterations per second, see docs/output.md) and its ratio
to the p2p rate measured in the same script. `shmem` runs are launched with `oshrun --mca osc ucx`
(OpenSHMEM's finalize needs it, docs/channel.md); they are skipped when desync was built without
OpenSHMEM. Python 3 standard library only.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from bench_util import run_measured, write_json

CONFIGS = [
    ("p2p", []),
    ("rma flush", ["--transport", "rma", "--rma-sync", "flush"]),
    ("rma flush-local", ["--transport", "rma", "--rma-sync", "flush-local"]),
    ("rma overlap", ["--transport", "rma", "--rma-sync", "overlap"]),
    ("rma overlap-local", ["--transport", "rma", "--rma-sync", "overlap-local"]),
    ("shmem put", ["--transport", "shmem", "--shmem-sync", "put"]),
    ("shmem put-overlap", ["--transport", "shmem", "--shmem-sync", "put-overlap"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--desync", default=os.environ.get("DESYNC", "build/openmpi/desync"))
    ap.add_argument("--mpirun", default=os.environ.get("MPIRUN", "mpirun"))
    ap.add_argument("--oshrun", default=os.environ.get("OSHRUN", "oshrun --mca osc ucx"))
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--mode", default="async")
    ap.add_argument("--local", default="50")
    ap.add_argument("--max-iters", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--configs", default=",".join(c for c, _ in CONFIGS),
                    help="comma-separated subset of: " + ", ".join(c for c, _ in CONFIGS))
    ap.add_argument("--extra", default="", help="more desync arguments, one shell-quoted string")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    wanted = [c.strip() for c in args.configs.split(",") if c.strip()]
    configs = [(n, a) for n, a in CONFIGS if n in wanted]
    if not configs or configs[0][0] != "p2p":
        sys.exit("transport_rate.py: the p2p configuration is the reference and must be included")
    load_before = os.getloadavg()
    rates = {n: [] for n, _ in configs}
    runs = []
    skipped = set()
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = configs if rep % 2 == 0 else list(reversed(configs))
            for name, extra in order:
                if name in skipped:
                    continue
                launcher = args.oshrun if name.startswith("shmem") else args.mpirun
                out = os.path.join(tmp, "run.json")
                if os.path.exists(out):
                    os.remove(out)
                cmd = (shlex.split(launcher) + ["-np", str(args.np), args.desync, "jacobi", "--mode", args.mode,
                       "--local", args.local, "--max-iters", str(args.max_iters), "--tol", "1e-300",
                       "--check-every", "100", "--quiet", "--json", out] + extra + shlex.split(args.extra))
                t0 = time.time()
                try:
                    p = run_measured(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
                    rc = p.returncode
                    err = p.stderr
                except subprocess.TimeoutExpired:
                    rc, err = 124, "timeout"
                if rc == 2 and "without OpenSHMEM" in err:
                    skipped.add(name)
                    continue
                if rc not in (0, 1) or not os.path.exists(out):
                    print(f"FAILED ({rc}): {' '.join(cmd)}\n{err[-2000:]}", file=sys.stderr)
                    runs.append({"config": name, "command": cmd, "exit_code": rc})
                    continue
                with open(out) as f:
                    doc = json.load(f)
                rates[name].append(doc["iteration_rate"])
                runs.append({"config": name, "command": cmd, "exit_code": rc, "seconds": time.time() - t0,
                             "iteration_rate": doc["iteration_rate"], "iterations": doc["iterations"],
                             "time_split": doc.get("time_split")})
    load_after = os.getloadavg()
    ref = statistics.median(rates["p2p"]) if rates["p2p"] else float("nan")
    rows = []
    print(f"desync jacobi --mode {args.mode} --local {args.local}, {args.np} ranks, {args.max_iters} iterations, "
          f"median of {args.reps}")
    print(f"{'transport':<20} {'it/s':>10} {'min':>10} {'max':>10} {'vs p2p':>7}  target")
    for name, _ in configs:
        if name in skipped:
            print(f"{name:<20} skipped (desync built without OpenSHMEM)")
            continue
        r = rates[name]
        if not r:
            print(f"{name:<20} no successful run")
            continue
        med = statistics.median(r)
        ratio = med / ref
        ok = "-" if name == "p2p" else ("ok" if ratio >= 1.0 else "MISS")
        print(f"{name:<20} {med:10.1f} {min(r):10.1f} {max(r):10.1f} {ratio:7.3f}  {ok}")
        rows.append({"config": name, "median_rate": med, "min_rate": min(r), "max_rate": max(r),
                     "ratio_to_p2p": ratio, "samples": r})
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; target: rate >= p2p rate")
    if args.json:
        write_json(args.json, {"schema": "desync.bench.transport_rate", "schema_version": 1, "np": args.np,
                               "mode": args.mode, "local": args.local, "max_iters": args.max_iters, "reps": args.reps,
                               "load_before": load_before, "load_after": load_after, "rows": rows, "runs": runs})
    failed = [r for r in runs if r["exit_code"] not in (0, 1)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
