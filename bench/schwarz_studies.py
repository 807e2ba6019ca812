#!/usr/bin/env python3
"""Optimized Schwarz, synchronous against asynchronous, in the settings of Yamazaki et al. (2019):
small studies whose records docs/results/yamazaki2019.md reads, real (mpirun) or simulated (desync-sim).

  --study transports  2 ranks: sync (one MPI_Wait per neighbour, and --sync-wait all: the paper's
                      MPI_Waitall column of Table 3) against async over every transport and completion
                      scheme of their Table 2 (p2p; rma flush, flush-local, overlap, overlap-local;
                      shmem put, put-overlap, under oshrun where shmem is built), to the tolerance with
                      the default termination (sync allreduce, async the binary tree)
  --study timer       their Table 4: --termination none --time-limit T, sync and async, the true
                      residual reached (no convergence test, no termination detection); and the same
                      time with the tests on
  --study slow        their Figure 8: a 2x2 process grid, m x m points per subdomain, one process
                      (rank 0, the (1,1) subdomain) --slow-factor F times slower, sync and async over an
                      alpha sweep (alpha tuned per mode, as their section 7 does), and the same without
                      the slow process ("even"); the global and per-rank residual histories are kept

Every repetition visits all configurations in turn (a different one first each time). With --sim COSTS
the runs go through desync-sim on the modelled cluster of bench/simgrid/reproduce.py (ib-edr, 16 cores
a node) with the calibrated cost model, and --desync is desync's SMPI build.

    python3 bench/schwarz_studies.py --study transports --desync build/bench/desync --json t.json
    python3 bench/schwarz_studies.py --study slow --sim docs/data/simulated/costs.json \\
            --desync build/smpi/desync --json s.json
"""
import argparse
import json
import os
import shlex
import sys
import tempfile
import time

from bench_util import add_desync_option, add_mpirun_option, local_residuals, one_thread_env, run_measured, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
PLATFORM = ["--preset", "ib-edr", "--cores", "16"]
TRANSPORTS = [
    ("sync", ["--mode", "sync"]),
    ("sync waitall", ["--mode", "sync", "--sync-wait", "all"]),
    ("async p2p", ["--mode", "async", "--transport", "p2p"]),
    ("async rma flush", ["--mode", "async", "--transport", "rma", "--rma-sync", "flush"]),
    ("async rma flush-local", ["--mode", "async", "--transport", "rma", "--rma-sync", "flush-local"]),
    ("async rma overlap", ["--mode", "async", "--transport", "rma", "--rma-sync", "overlap"]),
    ("async rma overlap-local", ["--mode", "async", "--transport", "rma", "--rma-sync", "overlap-local"]),
    ("async shmem put", ["--mode", "async", "--transport", "shmem", "--shmem-sync", "put"]),
    ("async shmem put-overlap", ["--mode", "async", "--transport", "shmem", "--shmem-sync", "put-overlap"]),
]


def configurations(args):
    """[(name, ranks, desync schwarz arguments, what to keep of the record: 'histories' or '')]."""
    if args.study == "transports":
        size = ["--local", str(args.local)]
        out = [(name, 2, [*argv, *size, "--tol", str(args.tol)], "") for name, argv in TRANSPORTS
               if args.shmem or "shmem" not in argv]
    elif args.study == "timer":
        # --termination none as the paper ran it; beside it the same time with the tests on (a tolerance
        # out of reach, so that they run for the whole time)
        out = []
        for mode in ("sync", "async"):
            for tag, term in (("none", ["--termination", "none", "--tol", str(args.tol)]),
                              ("tests on", ["--tol", "1e-30"])):
                out.append((f"{mode} {tag}", 2, ["--mode", mode, "--local", str(args.local),
                                                 "--time-limit", str(args.time_limit), *term], ""))
    else:  # slow: every alpha with rank 0 slowed, and without (the "same speed" lines of their Figure 8)
        slow = ["--slow-rank", "0", "--slow-factor", f"{args.slow_factor:g}"]
        out = []
        for mode in ("sync", "async"):
            for alpha in args.alphas.split(","):
                for tag, extra in (("", slow), (" even", [])):
                    out.append((f"{mode} alpha={alpha}{tag}", 4,
                                ["--mode", mode, "--local", str(args.local), "--dims", "2x2", "--overlap",
                                 str(args.overlap), "--alpha", alpha, "--tol", str(args.tol), *extra], "histories"))
    return out


def launch(args, ranks, argv, out):
    """The command line of one run writing its record to `out`."""
    desync = [args.desync, "schwarz", *argv, "--quiet", "--json", out]
    if args.sim:
        return [sys.executable, "-m", "desync_tools.sim", "run", *PLATFORM, "--np", str(ranks), "--costs", args.sim,
                "--cfg", "smpi/test:1e-8", "--", *desync]
    if "shmem" in argv:
        return ["oshrun", "--mca", "osc", "ucx", "-np", str(ranks), *(["--oversubscribe"] if ranks > 2 else []), *desync]
    return [*shlex.split(args.mpirun), "-np", str(ranks), *(["--oversubscribe"] if ranks > 2 else []), *desync]


def thin(h, keep=400):
    """A residual history (time, iteration, residual lists) with at most `keep` points, the last kept."""
    n = len(h.get("residual", []))
    step = max(1, -(-n // keep))
    idx = list(range(0, n, step))
    if n and idx[-1] != n - 1:
        idx.append(n - 1)
    return {k: [h[k][i] for i in idx] for k in ("time", "iteration", "residual") if k in h}


def summarise(rec, keep):
    ranks = rec.get("per_rank", [])
    d = rec.get("details", {})
    row = {"wall_time": rec["wall_time"], "true_residual": rec["true_residual"], "converged": rec["converged"],
           "stop_reason": rec["stop_reason"], "iterations": [p["iterations"] for p in ranks],
           "alpha": d.get("alpha"), "delay_mean": [p.get("delay_mean") for p in ranks],
           "time_split": rec.get("time_split"), "local_residuals": local_residuals(rec)}
    if keep == "histories":
        row["history"] = thin(rec.get("residual_history", {}))
        row["rank_histories"] = {str(p["rank"]): thin(p.get("residual_history", {})) for p in ranks}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", choices=["transports", "timer", "slow"], required=True)
    add_desync_option(ap)
    add_mpirun_option(ap)
    ap.add_argument("--sim", metavar="COSTS", help="simulate (desync-sim, this cost model); --desync is the SMPI build")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("--local", type=int, default=128, help="points per rank along each axis (default 128)")
    ap.add_argument("--tol", type=float, default=1e-7, help="--tol (default 1e-7, the paper's local criterion)")
    ap.add_argument("--time-limit", type=float, default=0.1, help="timer: seconds (default 0.1)")
    ap.add_argument("--alphas", default="auto", help="slow: comma-separated --alpha values")
    ap.add_argument("--overlap", type=int, default=1, help="slow: gamma (default 1)")
    ap.add_argument("--slow-factor", type=float, default=8, help="slow: rank 0 this many times slower (default 8)")
    ap.add_argument("--no-shmem", dest="shmem", action="store_false", help="transports: leave the shmem runs out")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    configs = configurations(args)
    env = one_thread_env()
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "python", "src")] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    runs = []
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        for rep in range(args.reps):
            for k in range(len(configs)):
                name, ranks, argv, keep = configs[(k + rep) % len(configs)]
                cmd = launch(args, ranks, argv, out)
                if os.path.exists(out):
                    os.remove(out)
                t0 = time.monotonic()
                p = run_measured(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
                row = {"config": name, "rep": rep, "ranks": ranks, "argv": argv, "host_wall": time.monotonic() - t0}
                if p.returncode not in (0, 1) or not os.path.exists(out):
                    said = [ln for ln in (p.stdout + p.stderr).splitlines() if "error" in ln.lower()]
                    row["error"] = said[0].strip() if said else f"exit status {p.returncode}"
                else:
                    with open(out) as f:
                        row.update(summarise(json.load(f), keep))
                runs.append(row)
                print(f"  {name} rep {rep}: " + (row.get("error") or
                      f"{row['wall_time']:.4f} s, iterations {row['iterations']}, residual {row['true_residual']:.3g}"),
                      file=sys.stderr, flush=True)
    write_json(args.json, {"benchmark": "schwarz_studies", "study": args.study, "simulated": bool(args.sim),
                           "platform": PLATFORM if args.sim else None, "costs": args.sim,
                           "settings": {k: getattr(args, k) for k in ("reps", "local", "tol", "time_limit", "alphas",
                                                                       "overlap", "slow_factor")},
                           "runs": runs, "host_wall_total": time.monotonic() - t_start})
    return 0


if __name__ == "__main__":
    sys.exit(main())
