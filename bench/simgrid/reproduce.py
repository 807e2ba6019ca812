#!/usr/bin/env python3
"""The papers' headline findings at 64-1024 simulated ranks (docs/reproduction.md).

Runs desync's SMPI build through desync-sim on a modelled InfiniBand EDR cluster (fat tree, 16 cores
per node, 12.5 GB/s, 1 us) with the cost model calibrated on this machine, and prints one table per
study: simulated time, iterations (min/mean/max over ranks), and the host's wall time per simulated
run. `--set quick` is the subset of `make bench` (about 10 minutes here); `--set full` the whole
reproduction set.

    python3 bench/simgrid/calibrate.py -o build/sim/costs.json
    python3 bench/simgrid/reproduce.py --costs build/sim/costs.json --set quick --json build/sim/quick.json
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from bench_util import child_env, write_json  # noqa: E402

PLATFORM = ["--preset", "ib-edr", "--cores", "16"]


def studies(full):
    """(study, paper, [(label, ranks, desync arguments, extra desync-sim arguments)])."""
    jr = [64, 256, 1024] if full else [64, 256]
    out = []
    # Bethune et al., 2011, Table 1 (weak scaling) as iteration rates: a fixed number of iterations.
    rows = []
    for p in jr:
        for mode in (["--mode", "sync"], ["--mode", "async", "--transport", "p2p", "--reduction", "tree"]):
            rows.append((f"jacobi {mode[1]} P={p}", p,
                         ["jacobi", *mode, "--local", "32", "--max-iters", "100", "--tol", "1e-30"], []))
    out.append(("jacobi-weak", "Bethune et al., 2011, Table 1", rows))
    # Section 6.1: one core slowed 2x. The residual reached in the same simulated time (4 ms),
    # 32^3 points per rank: the time-to-solution finding without simulating thousands of iterations.
    # The slowed core is the middle of the process grid (a corner rank has half the halo work of an
    # interior one, so its slack would absorb the slowdown).
    rows = []
    for p, d in ([(64, 4), (512, 8)] if full else [(64, 4)]):
        middle = d // 2 + (d // 2) * d + (d // 2) * d * d
        for mode in (["--mode", "sync"], ["--mode", "async", "--transport", "p2p", "--reduction", "tree"]):
            for slow in ([], ["--slow-rank", str(middle), "--slow-factor", "2"]):
                label = f"jacobi {mode[1]} P={p}" + (f" rank {middle} slowed 2x" if slow else "")
                rows.append((label, p, ["jacobi", *mode, "--local", "32", "--tol", "1e-30", "--time-limit", "0.004",
                                        "--check-every", "10", *slow], []))
    out.append(("jacobi-slow-core", "Bethune et al., 2011, section 6.1", rows))
    # Aditya et al., 2019, Figures 8 and 12: sync against weakly synchronous under jitter (strong scaling).
    rows = []
    for p, n in ([(64, 64), (216, 96), (512, 128)] if full else [(64, 64)]):
        for mode in (["--mode", "sync"], ["--mode", "bounded", "--transport", "p2p"]):
            rows.append((f"pde {mode[1]} P={p} jitter", p,
                         ["pde", "--problem", "burgers3d", "--global", str(n), "--steps", "100", *mode,
                          "--noise", "jitter"], []))
    out.append(("pde-jitter", "Aditya et al., 2019, Figures 8, 9 and 12", rows))
    # Horikoshi et al., 2022, Table 3: time per iteration as ranks grow (MPI_Iallreduce: <= 128 ranks in SMPI).
    rows = []
    for p in ([16, 64, 128] if full else [16, 64]):
        for m in ("cg", "cg-cg", "pipecg", "groppcg"):
            rows.append((f"{m} P={p}", p, ["cg", "--method", m, "--local", "32", "--rtol", "1e-30",
                                             "--max-iters", "50"], []))
    out.append(("cg-family", "Horikoshi et al., 2022, Table 3", rows))
    # Yamazaki et al., 2019, Table 3 (weak scaling, 32^2 points per subdomain).
    rows = []
    for p in ([64, 256, 1024] if full else [64]):
        for mode in (["--mode", "sync"], ["--mode", "async", "--transport", "p2p"]):
            rows.append((f"schwarz {mode[1]} P={p}", p, ["schwarz", *mode, "--local", "32"], []))
    out.append(("schwarz-weak", "Yamazaki et al., 2019, Table 3", rows))
    return out


def run(args, ranks, argv, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env = child_env()
        env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "python", "src") + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-m", "desync_tools.sim", "run", *PLATFORM, "--np", str(ranks), "--costs", args.costs,
               *args.sim_args, *extra, "--", args.desync_smpi, *argv, "--quiet", "--json", out]
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        wall = time.monotonic() - t0
        if p.returncode not in (0, 1) or not os.path.exists(out):
            return {"error": (p.stderr.strip().splitlines() or ["?"])[-1], "host_wall": wall, "command": shlex.join(cmd)}
        with open(out) as f:
            rec = json.load(f)
        row = {"time": rec["wall_time"], "iterations": rec["iterations"], "converged": rec["converged"],
               "true_residual": rec["true_residual"],
               "time_split": rec["time_split"], "host_wall": wall, "command": shlex.join(cmd)}
        if "delay" in rec["details"]:
            row["delay"] = rec["details"]["delay"]
        return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--desync-smpi", default="build/smpi/desync")
    ap.add_argument("--costs", required=True)
    ap.add_argument("--set", choices=["quick", "full"], default="quick")
    ap.add_argument("--only", nargs="*", help="studies to run (default: all of the set)")
    ap.add_argument("--sim-args", default="--cfg smpi/test:1e-8", help="further desync-sim run arguments")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--json")
    args = ap.parse_args()
    args.sim_args = shlex.split(args.sim_args)
    results = []
    for name, paper, rows in studies(args.set == "full"):
        if args.only and name not in args.only:
            continue
        print(f"\n{name} ({paper})", flush=True)
        print(f"  {'run':<36} {'simulated s':>12} {'iterations min/mean/max':>24} {'host wall s':>11}")
        for label, ranks, argv, extra in rows:
            r = run(args, ranks, argv, extra)
            r.update({"study": name, "label": label, "ranks": ranks})
            results.append(r)
            if args.json:  # after every run: a long set interrupted keeps what it measured
                write_json(args.json, {"benchmark": "simgrid reproduce", "set": args.set, "platform": PLATFORM,
                                       "costs": args.costs, "rows": results})
            if "error" in r:
                print(f"  {label:<36} error: {r['error']}", flush=True)
                continue
            it = r["iterations"]
            print(f"  {label:<36} {r['time']:>12.6f} {it['min']:>8.0f}/{it['mean']:>7.1f}/{it['max']:<7.0f} "
                  f"{r['host_wall']:>11.1f}  residual {r['true_residual']:.3e}" + (f"   delay mean {r['delay']['mean']:.2f} max {r['delay']['max']}"
                                                  if "delay" in r else ""), flush=True)


if __name__ == "__main__":
    main()
