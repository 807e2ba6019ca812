#!/usr/bin/env python3
"""Checks desync_bench_sweep (standard library only).

  test_bench_sweep.py --bench PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR

Runs the benchmark on 2 ranks with small arrays and few rounds (the figures themselves mean nothing
at that size; only their bookkeeping is checked): the JSON keys, that every kernel ran every round,
that each reported time is the best round and each rate follows from it, that the ratios are the
quotients they claim to be, the median of same-round ratios recomputed from the rounds, and bad input
(exit 2, one message). Exits 0 if every check passes.
"""
import json
import os
import statistics
import sys

from desync_test_util import arguments, check, conclude, is_number, positive, run_desync


def run(args, ranks, *options, expect_code=0):
    return run_desync(args, ranks, (), *options, expect_code=expect_code)


def close(a, b, rel=2e-3):
    return is_number(a) and is_number(b) and abs(a - b) <= rel * max(abs(a), abs(b))


def gbs(k, seconds, ranks):
    return k["units_per_rep_per_rank"] * ranks * k["bytes_per_unit"] / seconds * 1e-9


def main():
    args = arguments(__doc__, exe_flag="--bench").parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    out = os.path.join(args.workdir, "sweep.json")
    if os.path.exists(out):
        os.remove(out)

    reps, ranks = 5, 2
    proc = run(args, ranks, "--local", "24", "--cache-local", "8", "--reps", str(reps), "--triad-mib", "2",
               "--json", out)
    check("SUMMARY 2 ranks: sweep/triad" in proc.stdout, "summary line")
    check(os.path.exists(out), "JSON written")
    if os.path.exists(out):
        with open(out) as f:
            rec = json.load(f)
        for key in ("benchmark", "ranks", "reps", "local", "cache_local", "kernels", "sweep_over_triad",
                    "sweep_over_triad_per_rank", "sweep_over_triad_median_same_round", "sweep_over_scale",
                    "sweep_residual_over_triad", "cache_resident_updates_per_s"):
            check(key in rec, f"JSON lacks key {key!r}")
        check(rec.get("ranks") == ranks and rec.get("reps") == reps, "ranks / reps")
        kernels = {k["kernel"]: k for k in rec.get("kernels", []) if k.get("memory_bound")}
        check(sum(1 for k in rec.get("kernels", []) if k.get("memory_bound")) == 5, "five memory-bound kernels")
        names = [k["kernel"] for k in rec.get("kernels", [])]
        # 24^3 fits the cache: auto chooses no prefetch, and runs the other setting for comparison.
        check(names == ["triad", "scale", "sweep", "sweep+residual", "sweep [pf on]", "sweep", "sweep+residual"],
              f"kernels {names}")
        for k in rec.get("kernels", []):
            agg = k.get("aggregate", {})
            rounds = agg.get("round_seconds", [])
            check(len(rounds) == reps and all(positive(x) for x in rounds), f"{k['kernel']}: {len(rounds)} rounds")
            if rounds:
                check(agg.get("seconds") == min(rounds) or close(agg.get("seconds"), min(rounds), 1e-4),
                      f"{k['kernel']}: reported time {agg.get('seconds')} is not the best round {min(rounds)}")
                check(close(agg.get("gb_per_s"), gbs(k, agg["seconds"], ranks)), f"{k['kernel']}: gb_per_s")
            pr = k.get("per_rank", [])
            check(len(pr) == ranks and [p.get("rank") for p in pr] == list(range(ranks)), f"{k['kernel']}: per_rank")
            for p in pr:
                # a rank's own best cannot be slower than the best round's slowest rank
                check(p.get("seconds", 1e9) <= agg.get("seconds", 0) * (1 + 1e-9), f"{k['kernel']}: rank {p.get('rank')} best")
        if all(n in kernels for n in ("triad", "scale", "sweep", "sweep+residual")):
            t, sc, sw, res = kernels["triad"], kernels["scale"], kernels["sweep"], kernels["sweep+residual"]
            check(close(rec["sweep_over_triad"], sw["aggregate"]["gb_per_s"] / t["aggregate"]["gb_per_s"]), "sweep_over_triad")
            check(close(rec["sweep_over_scale"], sw["aggregate"]["gb_per_s"] / sc["aggregate"]["gb_per_s"]), "sweep_over_scale")
            check(close(rec["sweep_residual_over_triad"], res["aggregate"]["gb_per_s"] / t["aggregate"]["gb_per_s"]),
                  "sweep_residual_over_triad")
            same = [gbs(sw, a, ranks) / gbs(t, b, ranks)
                    for a, b in zip(sw["aggregate"]["round_seconds"], t["aggregate"]["round_seconds"])]
            check(close(rec["sweep_over_triad_median_same_round"], statistics.median(same)),
                  f"median of same-round ratios {rec['sweep_over_triad_median_same_round']} != {statistics.median(same)}")
            check(sw["bytes_per_unit"] == 24.0 and t["bytes_per_unit"] == 32.0 and sc["bytes_per_unit"] == 24.0,
                  "bytes counted: sweep 24, triad 32, scale 24")
            check(sw["units_per_rep_per_rank"] == 24 ** 3, "a memory-bound repetition is one sweep")

    # Bad input: one message from rank 0, exit 2.
    for opts, msg in ((("--reps", "0"), "--reps must be >= 1"),
                      (("--prefetch", "bogus"), "--prefetch bogus: expected auto, on or off"),
                      (("--local", "0"), "--local must be in 1..1000")):
        proc = run(args, ranks, *opts, expect_code=2)
        text = proc.stdout + proc.stderr
        check(text.count(msg) == 1, f"{' '.join(opts)}: message {msg!r} once, got {text.count(msg)}")
    return conclude("desync_bench_sweep: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
