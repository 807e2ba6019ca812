#!/usr/bin/env python3
"""Time to solution of synchronous, asynchronous and racy Jacobi (desync), with and without a slow rank.

Runs `MPIRUN -np 2 DESYNC jacobi --mode {sync,async,racy} --local 50 --json ...` (the paper's default
problem) with and without `--slow-rank 1 --slow-factor 2`, REPS times each in an interleaved order
(every repetition visits all configurations, starting one further along, so slow drift of the
machine spreads over all of them), and reports medians:

  mode, noise, median wall_time (slowest rank's solve time, from the JSON), ratio to sync with the
  same noise and variant, iterations of rank 0 (fast) and rank 1 (slow) from per_rank, synchronous
  polish iterations, true residual, how many runs converged, and the time split.

Variants: "default" (the problem as is), "offset" (--offset 1: every boundary and initial value
shifted by 1, Bethune et al. (2011, section 6.1)) and "polish" (--polish: async/racy finish with synchronous
sweeps until the true residual meets the tolerance). Targets: with the slow rank, async and racy
<= 0.9x sync; without noise <= 1.1x.

Standard library only. Example:
  python3 bench/time_to_solution.py --desync build/bench/desync --mpirun mpirun.openmpi --json tts.json
"""
import argparse
import os
import shlex
import sys

from bench_util import (add_launch_options, child_env, is_executable, load_line, median, print_failures,
                        record_outcome, run_for_json, run_repetitions, write_json)

MODES = ("sync", "async", "racy")
# Arguments that replace a variant's for sync runs: a test every iteration would only slow sync down.
SYNC_OVERRIDES = {"restart": ["--polish"]}
# Every variant polishes, so every mode's time is the time to a *true* residual below --tol.
VARIANTS = {
    # desync's defaults: every mode tests every 100 iterations (asynchronous tests start 100
    # iterations apart, or when the previous one completes if that is later).
    "default": ["--polish"],
    # asynchronous tests restart the moment the previous one completes (Bethune et al., 2011, 3.1.2); sync
    # keeps its default cadence (see SYNC_OVERRIDES).
    "restart": ["--polish", "--check-every", "1"],
    # exact zeros avoided (Bethune et al., 2011, section 6.1); the iteration counts do not change.
    "offset": ["--polish", "--offset", "1"],
    # no polishing: the asynchronous runs may stop with a true residual just above --tol.
    "nopolish": [],
}
TARGET_SLOW = 0.9   # async, racy wall time / sync wall time with the slow rank
TARGET_QUIET = 1.1  # the same without noise


def variant_args(variant, mode):
    if mode == "sync" and variant in SYNC_OVERRIDES:
        return SYNC_OVERRIDES[variant]
    return VARIANTS[variant]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_launch_options(p)
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each configuration (default 5)")
    p.add_argument("--local", default="50", help="cells per rank, --local of desync (default 50)")
    p.add_argument("--slow-rank", type=int, default=1, help="the slow rank in the noisy runs (default 1)")
    p.add_argument("--slow-factor", type=float, default=2.0, help="its slow factor (default 2)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated modes (default sync,async,racy)")
    p.add_argument("--variants", default="default,restart",
                   help="comma-separated subset of " + ",".join(VARIANTS) + " (default: default,restart)")
    p.add_argument("--extra", default="", help="extra desync arguments for every run, one shell-quoted string")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds allowed for one run (default 120)")
    p.add_argument("--json", help="write every run and the summary as JSON to this file")
    p.add_argument("--quiet", action="store_true", help="no progress line per run")
    a = p.parse_args(argv)
    a.modes = [m for m in a.modes.split(",") if m]
    a.variants = [v for v in a.variants.split(",") if v]
    for m in a.modes:
        if m not in MODES:
            p.error(f"unknown mode {m!r}")
    for v in a.variants:
        if v not in VARIANTS:
            p.error(f"unknown variant {v!r} (choose from {', '.join(VARIANTS)})")
    if a.reps < 1:
        p.error("--reps must be >= 1")
    return a


def run_one(args, variant, mode, noisy, json_path):
    noise = ["--slow-rank", str(args.slow_rank), "--slow-factor", f"{args.slow_factor:g}"] if noisy else []
    cmd = (shlex.split(args.mpirun) + ["-np", str(args.np), args.desync, "jacobi", "--mode", mode,
                                       "--local", args.local, "--quiet", "--json", json_path]
           + noise + variant_args(variant, mode) + shlex.split(args.extra))
    rc, err, elapsed = run_for_json(cmd, json_path, args.timeout, child_env())
    rec = {"variant": variant, "mode": mode, "noise": noisy, "command": shlex.join(cmd), "exit_code": rc,
           "elapsed": elapsed}
    return record_outcome(rec, rc, err, json_path, parse_record, "desync")


def parse_record(j):
    """A run's fields from its desync record."""
    per_rank = sorted(j["per_rank"], key=lambda r: r["rank"])
    return {
        "ok": True,  # first, where this script's records have always had it
        "wall_time": j["wall_time"],
        "iterations": j["iterations"],
        "rank_iterations": [r["iterations"] for r in per_rank],
        "polish_iterations": j["details"].get("polish_iterations", 0),
        "true_residual": j["true_residual"],
        "tested_residual": j["tested_residual"],
        "converged": j["converged"],
        "stop_reason": j["stop_reason"],
        "time_split": j["time_split"],
        "rank_time_split": [r["time"] for r in per_rank],
        "rank_counters": [{k: r.get(k) for k in ("reductions", "messages_sent", "messages_received",
                                                 "messages_discarded", "sends_skipped", "delay_mean")}
                          for r in per_rank],
        "delay": {"mean": j["details"]["delay"]["mean"], "max": j["details"]["delay"]["max"]},
        "mpi_library": j.get("mpi_library", ""),
    }


def summarise(args, runs):
    rows = []
    for variant in args.variants:
        for noisy in (False, True):
            sync_med = sync_min = None
            for mode in args.modes:
                rs = [r for r in runs if r["variant"] == variant and r["mode"] == mode and r["noise"] == noisy]
                ok = [r for r in rs if r["ok"]]
                row = {"variant": variant, "mode": mode, "noise": noisy, "runs": len(rs), "ok": len(ok)}
                if ok:
                    walls = [r["wall_time"] for r in ok]
                    nr = len(ok[0]["rank_iterations"])
                    row.update({
                        "wall_median": median(walls), "wall_min": min(walls), "wall_max": max(walls),
                        "rank_iterations_median": [median([r["rank_iterations"][k] for r in ok]) for k in range(nr)],
                        "polish_iterations_median": median([r["polish_iterations"] for r in ok]),
                        "true_residual_median": median([r["true_residual"] for r in ok]),
                        "true_residual_max": max(r["true_residual"] for r in ok),
                        "converged": sum(1 for r in ok if r["converged"]),
                        "time_split_median": {k: median([r["time_split"][k] for r in ok])
                                              for k in ok[0]["time_split"]},
                    })
                    if mode == "sync":
                        sync_med, sync_min = row["wall_median"], row["wall_min"]
                rows.append(row)
            for row in rows[-len(args.modes):]:
                if sync_med and "wall_median" in row:
                    row["ratio_to_sync"] = row["wall_median"] / sync_med
                    row["ratio_to_sync_of_minima"] = row["wall_min"] / sync_min  # less sensitive to a busy machine
                    if row["mode"] != "sync":
                        target = TARGET_SLOW if noisy else TARGET_QUIET
                        row["target"] = target
                        row["meets_target"] = row["ratio_to_sync"] <= target
    return rows


def fmt_table(args, rows):
    noise_label = f"r{args.slow_rank} x{args.slow_factor:g}"
    out = []
    for variant in args.variants:
        extra = " ".join(VARIANTS[variant])
        out.append(f"variant {variant}" + (f" ({extra})" if extra else "") +
                   f": mpirun -np {args.np} desync jacobi --local {args.local}, median of {args.reps}")
        out.append(f"  {'mode':<6} {'noise':<8} {'wall s':>8} {'min':>7} {'max':>7} {'vs sync':>8} {'target':>9} "
                   f"{'it r0':>7} {'it r1':>7} {'polish':>6} {'true resid':>10} {'conv':>5} "
                   f"{'compute':>8} {'halo':>7} {'reduce':>7} {'noise':>7}")
        for row in rows:
            if row["variant"] != variant:
                continue
            nl = noise_label if row["noise"] else "none"
            if "wall_median" not in row:
                out.append(f"  {row['mode']:<6} {nl:<8} all {row['runs']} runs failed")
                continue
            its = row["rank_iterations_median"] + [float("nan")] * 2
            ratio = f"{row['ratio_to_sync']:.3f}" if "ratio_to_sync" in row else "-"
            tgt = "-"
            if "target" in row:
                tgt = ("ok " if row["meets_target"] else "MISS") + f"<={row['target']:g}"
            ts = row["time_split_median"]
            out.append(f"  {row['mode']:<6} {nl:<8} {row['wall_median']:8.4f} {row['wall_min']:7.4f} "
                       f"{row['wall_max']:7.4f} {ratio:>8} {tgt:>9} {its[0]:7.0f} {its[1]:7.0f} "
                       f"{row['polish_iterations_median']:6.0f} {row['true_residual_median']:10.3e} "
                       f"{row['converged']:>2}/{row['ok']:<2} {ts['compute']:8.4f} {ts['halo']:7.4f} "
                       f"{ts['reduction']:7.4f} {ts['noise']:7.4f}")
        out.append("")
    out.append("wall s: median over repetitions of wall_time (slowest rank's solve time); vs sync: ratio of medians,"
               " same variant and noise;")
    out.append("it r0/r1: iterations of rank 0 / rank 1 (median); polish: synchronous polish iterations; conv: runs"
               " whose true residual met --tol;")
    out.append("compute/halo/reduce/noise: median over repetitions of the JSON time_split (seconds, mean over ranks).")
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    if not is_executable(args.desync):
        sys.exit(f"time_to_solution.py: no executable desync at {args.desync!r} (use --desync)")
    configs = [(v, m, n) for v in args.variants for n in (False, True) for m in args.modes]

    def progress(cfg, rec):
        variant, mode, noisy = cfg
        state = (f"wall {rec['wall_time']:.4f} s, its {rec['rank_iterations']}, "
                 f"{'converged' if rec['converged'] else 'NOT converged'}") if rec["ok"] \
            else "FAILED: " + rec["error"].splitlines()[-1] if rec["error"] else "FAILED"
        return f"{variant:<7} {mode:<5} {'slow' if noisy else 'none':<4} {state}"

    runs, session = run_repetitions(configs, args.reps, lambda cfg, path: run_one(args, *cfg, path), "desync-tts-",
                                    None if args.quiet else progress)
    rows = summarise(args, runs)
    print(fmt_table(args, rows))
    print(load_line(session, runs, cpus=True))
    failed = print_failures(runs, describe=str)  # the whole error
    if args.json:
        doc = {
            "benchmark": "desync time_to_solution",
            "config": {"desync": args.desync, "mpirun": args.mpirun, "np": args.np, "reps": args.reps,
                       "local": args.local, "slow_rank": args.slow_rank, "slow_factor": args.slow_factor,
                       "modes": args.modes, "variants": {v: VARIANTS[v] for v in args.variants},
                       "extra": args.extra},
            "targets": {"slow_rank_ratio_max": TARGET_SLOW, "no_noise_ratio_max": TARGET_QUIET},
            "host": os.uname().nodename, "cpus": os.cpu_count(), **session,
            "summary": rows, "runs": runs,
        }
        write_json(args.json, doc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
