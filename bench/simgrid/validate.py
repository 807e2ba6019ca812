#!/usr/bin/env python3
"""The simulated cluster against this machine: each solver at 2 and 4 ranks, run for real (Open MPI)
and simulated (desync's SMPI build through desync-sim, the `host` platform: one node of this
machine's cores, with the calibrated cost model), sync and async (or bounded, or pipelined).

Reports per case the iterations, the time (wall time of the run; simulated time for the simulated
run) and the ratio of the relaxed variant to the synchronous one on both sides, and checks the
issue's criteria: iterations within 10 %, time within 30 %, the ratio on the same side of 1 (or,
where the real rounds' own ratios fall on both sides of 1, the simulated one within their range:
ratios_agree). The real runs go in rounds, every case once a round (medians over the rounds; the
real ratio is the median of each round's ratio), so that the shared machine's changes of load fall
on every case alike. The mean delay of the neighbour data each run used is printed beside (median
over the real runs).
On a machine with fewer cores than ranks (4 ranks on this 2-core host) the real runs are
oversubscribed; the simulated node then has a core per rank at cores / ranks of the speed. With a core
per rank (--cores, default: this machine's), the simulated node has a core per rank at full speed.

The simulated cores differ in speed as this machine's do (`desync-sim run --core-speed-spread`, from
the cost model's `calibration.core_speed_spread`, or `--core-speed-spread`): with every core exactly
as fast, asynchronous ranks that start together run in lockstep, each always reading its
neighbour's previous iteration, where the real ones drift apart.

The simulated node's links are this machine's shared-memory MPI as `desync-sim calibrate-host`
measures it (ping-pongs from 8 B to 1 MiB: latency, bandwidth and SMPI's piecewise latency factor),
measured at the start unless `--host-calibration` names an earlier measurement; the preset's 1 us
and 10 GB/s are only its defaults.

    python3 bench/simgrid/validate.py --costs build/sim/costs.json --json build/sim/validate.json
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from bench_util import child_env, desync_sim_command, measure_host_link, write_json  # noqa: E402

# (case, [(variant name, desync arguments)], problem arguments); the first variant is the reference.
# A case is named after its desync solver, with "+..." for a second case of the same solver: the
# PDE stepper also with the jitter of the simulated reproduction (Aditya et al. (2019), their
# Figures 8 and 12), where the weakly-synchronous stepper's ratio to the synchronous one is well
# below 1; without noise the two are level (the model's 1.000), and which side of 1 each lands on is
# chance.
CASES = [
    ("jacobi", [("sync", ["--mode", "sync"]), ("async", ["--mode", "async", "--transport", "p2p"])],
     ["--local", "32"]),
    ("cg", [("cg", ["--method", "cg"]), ("pipecg", ["--method", "pipecg"])], ["--local", "32"]),
    # (pde: both modes at one step, given with --dt, about the bounded default at L = 10; a
    # synchronous run's own default step is larger.)
    ("pde", [("sync", ["--mode", "sync"]), ("bounded", ["--mode", "bounded", "--transport", "p2p"])],
     ["--problem", "burgers3d", "--global", "32", "--steps", "300", "--dt", "0.0005"]),
    ("pde+jitter", [("sync", ["--mode", "sync"]), ("bounded", ["--mode", "bounded", "--transport", "p2p"])],
     ["--problem", "burgers3d", "--global", "32", "--steps", "300", "--dt", "0.0005", "--noise", "jitter"]),
    ("schwarz", [("sync", ["--mode", "sync"]), ("async", ["--mode", "async", "--transport", "p2p"])],
     ["--local", "32"]),
]


def solver_of(case):
    """The desync solver a case runs: its name up to any "+"."""
    return case.split("+", 1)[0]


def ratios_agree(real_rounds, sim_ratio):
    """The issue's criterion, the relaxed variant's ratio to its reference (real: the median of the
    rounds' ratios) on the same side of 1 in the real and the simulated run; where the real rounds'
    own ratios fall on both sides of 1 (the two variants are level on this machine, and the median's
    side is chance), the simulated ratio within the range of the real rounds' ratios instead.
    Returns (agree, how): how is "same side", "level" (agree through the range) or "differ"."""
    if (statistics.median(real_rounds) - 1) * (sim_ratio - 1) >= 0:
        return True, "same side"
    lo, hi = min(real_rounds), max(real_rounds)
    if lo < 1 < hi and lo <= sim_ratio <= hi:
        return True, "level"
    return False, "differ"


def record_of(cmd, env, out, timeout):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1) or not os.path.exists(out):
        raise SystemExit(f"validate: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f), wall


def run_case(args, ranks, solver, extra, real):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env = child_env()
        if real:
            cmd = shlex.split(args.mpirun) + ["-np", str(ranks)]
            if ranks > args.cores:
                cmd.append("--oversubscribe")
            cmd += [args.desync, solver_of(solver), *extra, "--quiet", "--json", out]
        else:
            env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "python", "src") + os.pathsep + env.get("PYTHONPATH", "")
            # This machine: one node of args.cores cores. More ranks than cores share them: modelled
            # as one node with a core per rank, each at cores/R of the speed (the real ranks poll
            # while they wait, so the cores are always shared), the cost model's seconds still at
            # full speed.
            plat = ["--preset", "host", "--calibration", args.host_calibration, "--nodes", "1",
                    "--cores", str(max(ranks, 2))]
            if ranks > args.cores:
                plat += ["--speed", f"{1e9 * args.cores / ranks:.6g}f", "--cfg", "smpi/host-speed:1000000000f"]
            if args.core_speed_spread:
                plat += ["--core-speed-spread", f"{args.core_speed_spread:.6g}"]
            cmd = desync_sim_command(args.desync_sim) + ["run", *plat, "--np", str(ranks), "--costs", args.costs,
                                       "--out", os.path.join(tmp, "sim"), "--",
                                       args.desync_smpi, solver_of(solver), *extra, "--quiet", "--json", out]
        rec, wall = record_of(cmd, env, out, args.timeout)
        return {"iterations": rec["iterations"]["mean"], "time": rec["wall_time"], "host_wall": wall,
                "delay": mean_delay(rec)}


def calibration_warnings(costs, now, host, max_age_minutes):
    """What makes a cost model unfit to validate against this machine now: calibrated on another
    machine, or more than max_age_minutes ago (this shared machine's speed drifts by the hour: on
    2026-11-26 a model 1.6 hours old left the simulated times 24-46 % below the real ones, one made
    minutes before 9-27 %)."""
    cal = costs.get("calibration", {}) if isinstance(costs, dict) else {}
    out = []
    made_on = cal.get("machine", {}).get("host")
    if made_on and made_on != host:
        out.append(f"the cost model was calibrated on {made_on}, not on this machine ({host})")
    try:
        age = (now - datetime.datetime.fromisoformat(cal["date"])).total_seconds() / 60
    except (KeyError, TypeError, ValueError):
        age = None
    if age is not None and age > max_age_minutes:
        out.append(f"the cost model was calibrated {age:.0f} minutes ago (more than --max-costs-age "
                   f"{max_age_minutes:g}); this machine's speed drifts: calibrate again right before validating")
    return out


def mean_delay(rec):
    """The mean age, in iterations or steps, of the neighbour data a run used (None for a solver
    without delays): a relaxed method's iteration count depends on it."""
    d = rec.get("details", {}).get("delay")
    if isinstance(d, dict) and "mean" in d:
        return d["mean"]
    ranks = [r["delay_mean"] for r in rec.get("per_rank", []) if "delay_mean" in r]
    return statistics.fmean(ranks) if ranks else None


def measure_real_rounds(cases, reps, run_real):
    """The real runs, in rounds: each round runs every case (ranks, solver, variant) once, the next
    round in the opposite order, --reps rounds. Returns {(ranks, solver, variant): [run, ...]}, a
    run per round. Round by round, not case by case: a busy spell of this shared machine (the same
    command's time moved by up to 30 % between runs minutes apart on 2026-11-26) then slows a run or
    two of every case, which the medians drop, and a variant and its reference are measured minutes,
    not a quarter of an hour, apart."""
    flat = [(ranks, solver, name, argv) for ranks, solver, variants in cases for name, argv in variants]
    runs = {(ranks, solver, name): [] for ranks, solver, name, _ in flat}
    for i in range(reps):
        for ranks, solver, name, argv in (flat if i % 2 == 0 else flat[::-1]):
            runs[(ranks, solver, name)].append(run_real(ranks, solver, argv))
    return runs


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_delay(d):
    return f"{d:.2f}" if d is not None else "-"


def ok_mark(row):
    """The table's ok column: yes, yes* (the ratios agree through the real rounds' range), NO."""
    if not row["ok"]:
        return "NO"
    return "yes*" if row.get("ratio_agreement") == "level" else "yes"


def round_ratios(runs, reference_runs):
    """The relaxed variant's time over its reference's, round by round."""
    return [r["time"] / b["time"] for r, b in zip(runs, reference_runs)]


def paired_ratio(runs, reference_runs):
    """The relaxed variant's time over its reference's: the median over the rounds of the ratio of
    the two runs of one round, so that a change of the machine's load between rounds cancels."""
    return statistics.median(round_ratios(runs, reference_runs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--desync", default="build/openmpi/desync", help="the ordinary build (real runs)")
    ap.add_argument("--desync-smpi", default="build/smpi/desync", help="the SMPI build (simulated runs)")
    ap.add_argument("--desync-sim", help="the launcher command (default: python3 -m desync_tools.sim from python/src)")
    ap.add_argument("--mpirun", default="mpirun.openmpi")
    ap.add_argument("--costs", required=True, help="the cost model (bench/simgrid/calibrate.py)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--reps", type=int, default=5,
                    help="real runs per case, one per round over all cases (median; default 5, 3 until 2026-11-26); "
                         "a simulated run is deterministic")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 2,
                    help="cores of this machine (default: all): more ranks than cores run oversubscribed, "
                         "and are simulated on shared cores")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--host-calibration", metavar="FILE",
                    help="the links' latency, bandwidth and latency curve (desync-sim calibrate-host's JSON); default: measured "
                         "now into build/sim/host.json")
    ap.add_argument("--max-costs-age", type=float, default=30, metavar="MINUTES",
                    help="warn when the cost model is older than this (default 30) or from another machine")
    ap.add_argument("--core-speed-spread", type=float, metavar="SIGMA",
                    help="the simulated cores' speed spread (desync-sim run --core-speed-spread); default: the cost "
                         "model's calibration.core_speed_spread, measured with it on this machine (0 if it has none)")
    ap.add_argument("--json")
    args = ap.parse_args()
    with open(args.costs) as f:
        cost_model = json.load(f)
    warnings = calibration_warnings(cost_model, datetime.datetime.now(), platform.node(), args.max_costs_age)
    if args.core_speed_spread is None:
        args.core_speed_spread = float((cost_model.get("calibration") or {}).get("core_speed_spread") or 0.0)
    print(f"validate: simulated cores' speed spread {args.core_speed_spread:.4f}", flush=True)
    for w in warnings:
        print(f"validate: warning: {w}", file=sys.stderr, flush=True)
    if not args.host_calibration:
        args.host_calibration = os.path.join("build", "sim", "host.json")
        measure_host_link(desync_sim_command(args.desync_sim), args.mpirun, args.host_calibration, args.timeout, "validate")
    with open(args.host_calibration) as f:
        link = json.load(f)
    cases = [(ranks, solver, [(name, extra + common) for name, extra in variants])
             for ranks in args.ranks for solver, variants, common in CASES]
    real = measure_real_rounds(cases, args.reps, lambda ranks, solver, argv: run_case(args, ranks, solver, argv, True))
    rows = []
    print(f"{'case':<10} {'variant':<8} {'ranks':>5} {'it real':>8} {'it sim':>8} {'it dev':>7} "
          f"{'t real s':>9} {'(min':>7} {'max)':>7} {'t sim s':>9} {'t dev':>7} {'ratio real':>10} {'ratio sim':>9} "
          f"{'ok':>4} {'host wall s':>11} {'delay real':>10} {'sim':>5}")
    for ranks, solver, variants in cases:
        base = None
        for name, argv in variants:
            runs = real[(ranks, solver, name)]
            r = {k: statistics.median(x[k] for x in runs) for k in ("iterations", "time")}
            s = run_case(args, ranks, solver, argv, False)
            it_dev = s["iterations"] / r["iterations"] - 1
            t_dev = s["time"] / r["time"] - 1
            times = [x["time"] for x in runs]
            row = {"case": solver, "solver": solver_of(solver), "variant": name, "ranks": ranks, "iterations_real": r["iterations"],
                   "iterations_sim": s["iterations"], "iterations_dev": it_dev, "time_real": r["time"],
                   "time_real_runs": times, "time_sim": s["time"], "time_dev": t_dev, "host_wall_sim": s["host_wall"],
                   "delay_real": median_or_none([x["delay"] for x in runs]), "delay_sim": s["delay"]}
            if base is None:
                base = (name, row)
                row["ratio_real"] = row["ratio_sim"] = row["ratio_real_rounds"] = row["ratio_agreement"] = None
                same_side = True
            else:
                reference = real[(ranks, solver, base[0])]
                row["ratio_real"] = paired_ratio(runs, reference)
                row["ratio_real_rounds"] = round_ratios(runs, reference)
                row["ratio_sim"] = s["time"] / base[1]["time_sim"]
                same_side, row["ratio_agreement"] = ratios_agree(row["ratio_real_rounds"], row["ratio_sim"])
            row["ok"] = abs(it_dev) <= 0.10 and abs(t_dev) <= 0.30 and same_side
            rows.append(row)
            ratio = lambda v: f"{v:.3f}" if v is not None else "-"  # noqa: E731
            print(f"{solver:<10} {name:<8} {ranks:>5} {r['iterations']:>8.1f} {s['iterations']:>8.1f} "
                  f"{100 * it_dev:>6.1f}% {r['time']:>9.4f} {min(times):>7.4f} {max(times):>7.4f} {s['time']:>9.4f} "
                  f"{100 * t_dev:>6.1f}% {ratio(row['ratio_real']):>10} {ratio(row['ratio_sim']):>9} "
                  f"{ok_mark(row):>4} {s['host_wall']:>11.1f} {fmt_delay(row['delay_real']):>10} "
                  f"{fmt_delay(row['delay_sim']):>5}", flush=True)
    if any(r["ok"] and r.get("ratio_agreement") == "level" for r in rows):
        print("yes*: the real rounds' ratios fall on both sides of 1 (the variants are level here); the simulated "
              "ratio lies within their range", flush=True)
    if args.json:
        write_json(args.json, {"benchmark": "simgrid validate", "cores": args.cores, "host_calibration": link,
                               "core_speed_spread": args.core_speed_spread,
                               "warnings": warnings, "rows": rows})
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
