#!/usr/bin/env python3
"""Checks `desync bench comm`: quick runs at 2 and 3 ranks, their JSON document and their tables.

Standard library only. Runs the real executable under mpiexec:

  test_bench_comm.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] [--flavour openmpi|mpich]
                     --workdir DIR

Every number the JSON reports must be finite; times and bandwidths must be positive; every transfer
must be verified at the target; the run must end without the MPI library's end-of-run complaints
(Open MPI is asked to list leaked handles). Exits 0 if every check passes.
"""
import json
import os
import re
import sys

from desync_test_util import arguments, check, conclude, finite, positive, run_desync

BANDWIDTH_METHODS = ("send_recv", "send_recv_ack", "put_lock_all_flush_local", "put_lock_all_flush",
                     "put_lock_shared_flush_local", "put_lock_shared_flush", "put_per_element",
                     "put_epoch_shared", "put_epoch_exclusive")
OVERLAP_METHODS = ("isend_irecv", "put_flush_local", "put_flush", "put_flush_target_busy")
COMPLAINTS = re.compile(r"warn|leak|not returned|pending|not freed", re.IGNORECASE)


def run(args, ranks, *options, expect_code=0, extra=()):
    return run_desync(args, ranks, ("bench", "comm"), *options, expect_code=expect_code, extra=extra, timeout=150)


def check_document(path, ranks, sizes):
    with open(path) as f:
        rec = json.load(f)
    check(rec.get("schema") == "desync.bench.comm", f"schema {rec.get('schema')!r}")
    check(rec.get("schema_version") == 1 and isinstance(rec.get("schema_version"), int),
          f"schema_version {rec.get('schema_version')!r}")
    check(isinstance(rec.get("mpi_library"), str) and rec["mpi_library"], f"mpi_library {rec.get('mpi_library')!r}")
    check(rec.get("ranks") == ranks, f"ranks {rec.get('ranks')!r}, expected {ranks}")
    check(rec.get("pair") == [0, 1], f"pair {rec.get('pair')!r}")
    check(rec.get("verified") is True, f"verified {rec.get('verified')!r}")
    check(positive(rec.get("wall_time")), f"wall_time {rec.get('wall_time')!r}")
    check(positive(rec.get("compute_unit")), f"compute_unit {rec.get('compute_unit')!r}")
    pt = rec.get("phase_time", {})
    check(sorted(pt) == ["bandwidth", "collectives", "overlap"] and all(positive(v) for v in pt.values()),
          f"phase_time {pt!r}")
    opts = rec.get("options", {})
    check(isinstance(opts, dict) and all(isinstance(v, str) for v in opts.values()), f"options {opts!r}")
    check(rec.get("sizes", {}).get("doubles") == sizes, f"sizes.doubles {rec.get('sizes')!r:.200}")
    check(rec.get("sizes", {}).get("bytes") == [8 * n for n in sizes], "sizes.bytes")

    bw = rec.get("bandwidth", {})
    check(list(bw) == list(BANDWIDTH_METHODS), f"bandwidth methods {list(bw)!r}")
    for name in BANDWIDTH_METHODS:
        series = bw.get(name, {})
        check(isinstance(series.get("description"), str) and series["description"], f"{name}: description")
        res = series.get("results", [])
        check([r.get("doubles") for r in res] == sizes, f"{name}: sizes {[r.get('doubles') for r in res]}")
        for r in res:
            where = f"bandwidth {name} {r.get('doubles')} doubles"
            check(r.get("bytes") == 8 * r.get("doubles", 0), f"{where}: bytes")
            check(isinstance(r.get("messages"), int) and r["messages"] >= 1, f"{where}: messages {r.get('messages')!r}")
            check(positive(r.get("time_per_message")), f"{where}: time_per_message {r.get('time_per_message')!r}")
            check(positive(r.get("bandwidth_gbs")), f"{where}: bandwidth_gbs {r.get('bandwidth_gbs')!r}")
            if positive(r.get("time_per_message")) and positive(r.get("bandwidth_gbs")):
                expect = r["bytes"] / r["time_per_message"] / 1e9
                check(abs(r["bandwidth_gbs"] - expect) <= 1e-9 * expect + 1e-12, f"{where}: bandwidth != bytes / time")
            check(r.get("verified") is True, f"{where}: verified {r.get('verified')!r}")
            check(isinstance(r.get("samples"), int) and r["samples"] >= 1, f"{where}: samples {r.get('samples')!r}")
            lo, mid, hi = r.get("bandwidth_min_gbs"), r.get("bandwidth_gbs"), r.get("bandwidth_max_gbs")
            if check(positive(lo) and positive(hi), f"{where}: bandwidth_min/max_gbs {lo!r} {hi!r}") and positive(mid):
                check(lo <= mid * (1 + 1e-12) and mid <= hi * (1 + 1e-12), f"{where}: not min <= median <= max")

    ov = rec.get("overlap", {})
    check(list(ov) == list(OVERLAP_METHODS), f"overlap methods {list(ov)!r}")
    for name in OVERLAP_METHODS:
        series = ov.get(name, {})
        check(series.get("computing_rank") in (0, 1), f"{name}: computing_rank {series.get('computing_rank')!r}")
        res = series.get("results", [])
        check([r.get("doubles") for r in res] == sizes, f"overlap {name}: sizes")
        for r in res:
            where = f"overlap {name} {r.get('doubles')} doubles"
            for key in ("t_comm", "t_comp", "t_both"):
                check(positive(r.get(key)), f"{where}: {key} {r.get(key)!r}")
            check(finite(r.get("overlap_percent")), f"{where}: overlap_percent {r.get('overlap_percent')!r}")
            if all(positive(r.get(k)) for k in ("t_comm", "t_comp", "t_both")) and finite(r.get("overlap_percent")):
                expect = (r["t_comm"] + r["t_comp"] - r["t_both"]) / min(r["t_comm"], r["t_comp"]) * 100
                check(abs(r["overlap_percent"] - expect) <= 1e-6 * max(1.0, abs(expect)), f"{where}: overlap formula")
            check(isinstance(r.get("compute_units"), int) and r["compute_units"] >= 1, f"{where}: compute_units")
            check(isinstance(r.get("iterations"), int) and r["iterations"] >= 1, f"{where}: iterations")

    co = rec.get("collectives", {})
    check(co.get("ranks") == ranks, f"collectives.ranks {co.get('ranks')!r}, expected {ranks}")
    for name in ("allreduce", "iallreduce"):
        c = co.get(name, {})
        check(positive(c.get("mean")) and positive(c.get("max")), f"collective {name}: {c!r}")
        if positive(c.get("mean")) and positive(c.get("max")):
            check(c["max"] >= c["mean"] * (1 - 1e-12), f"collective {name}: max < mean")
        check(isinstance(c.get("calls"), int) and c["calls"] >= 1, f"collective {name}: calls")
    return rec


def main():
    ap = arguments()
    ap.add_argument("--flavour", default="")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    leak_flags = ["--mca", "mpi_show_handle_leaks", "1"] if args.flavour == "openmpi" else []
    sizes = [2 ** k for k in range(11)]

    # 2 ranks, the quick run: every section, positive finite numbers, a table on stdout, clean end.
    j2 = os.path.join(args.workdir, "comm2.json")
    proc = run(args, 2, "--max-doubles", "1024", "--reps", "3", "--samples", "2", "--json", j2, extra=leak_flags)
    if proc.returncode == 0:
        for line in ("Bandwidth, GB/s", "Time per message, us", "Overlap of communication with computation",
                     "Collectives over 2 ranks", "every transfer verified at the target: yes"):
            check(line in proc.stdout, f"2-rank table lacks {line!r}")
        check(proc.stdout.count("desync bench comm:") == 1, "the table is not printed exactly once")
        check(not COMPLAINTS.search(proc.stderr), f"2-rank run: complaints on stderr: {proc.stderr[:500]!r}")
        rec = check_document(j2, 2, sizes)
        check(all(r.get("samples") == 2 for m in rec.get("bandwidth", {}).values() for r in m.get("results", [])),
              "--samples 2 not reflected in the bandwidth results")

    # 3 ranks: the pair still measures, the collectives span all 3 ranks.
    j3 = os.path.join(args.workdir, "comm3.json")
    proc = run(args, 3, "--max-doubles", "64", "--reps", "3", "--quiet", "--json", j3)
    if proc.returncode == 0:
        check(proc.stdout.strip() == "", f"--quiet printed {proc.stdout[:200]!r}")
        check_document(j3, 3, [2 ** k for k in range(7)])

    # A 64 KiB message: the one-sided vs two-sided summary is a number.
    j64 = os.path.join(args.workdir, "comm64k.json")
    proc = run(args, 2, "--min-doubles", "8192", "--max-doubles", "8192", "--reps", "3", "--json", j64)
    if proc.returncode == 0:
        check(re.search(r"SUMMARY put_lock_all_flush_local / send_recv bandwidth, messages >= 64 KiB: at least "
                        r"[0-9.]+", proc.stdout), "no 64 KiB SUMMARY line")
        rec = check_document(j64, 2, [8192])
        ratios = rec.get("min_bandwidth_ratio_ge_64KiB", {})
        check(len(ratios) == 2 and all(positive(v) for v in ratios.values()), f"ratios {ratios!r}")

    return conclude("bench comm: JSON and tables as expected at 2 and 3 ranks")


if __name__ == "__main__":
    sys.exit(main())
