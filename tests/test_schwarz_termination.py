#!/usr/bin/env python3
"""Checks `desync schwarz --termination none` (no convergence test, no termination detection;
Yamazaki et al., 2019, Table 4) against what it must do.

Standard library only. Runs the real executable under mpiexec:

  test_schwarz_termination.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR [CHECK ...]

CHECK is any of sync-iters, sync-timer, async-iters, async-timer (default: all).

  sync-iters   --max-iters N: every rank makes exactly N iterations, runs no reduction, and the field
               is bit for bit that of the run with the convergence test stopped at the same N
  sync-timer   --time-limit with a slow rank: the ranks agree on the last iteration (every rank the
               same count) and stop about at the limit
  async-iters  --max-iters N with a slow rank (--idle spin: an update every pass): every rank makes
               exactly N updates, the fast one waits for the slow one without a hang, no request
               left pending, over p2p and rma
  async-timer  --time-limit with a slow rank: each rank stops at its own limit (the slow one after
               fewer updates), nothing hangs
"""
import json
import os
import sys
import tempfile

from desync_test_util import arguments, check, conclude, run_desync

# Exit 1: the runs ask for a tolerance out of reach (1e-30), so that none ends converged.
NOT_CONVERGED = 1


def load(path):
    with open(path) as f:
        return json.load(f)


def ranks_of(rec):
    return rec.get("per_rank", [])


def check_sync_iters(args, work):
    n = 17
    common = ("--local", "16", "--dims", "2x2", "--max-iters", str(n), "--tol", "1e-30", "--quiet")
    jn, ja, un, ua = (os.path.join(work, f) for f in ("none.json", "allreduce.json", "none.npy", "allreduce.npy"))
    run_desync(args, 4, ("schwarz",), *common, "--termination", "none", "--json", jn, "--save", un,
               expect_code=NOT_CONVERGED, timeout=60)
    run_desync(args, 4, ("schwarz",), *common, "--termination", "allreduce", "--json", ja, "--save", ua,
               expect_code=NOT_CONVERGED, timeout=60)
    rn, ra = load(jn), load(ja)
    its = [p.get("iterations") for p in ranks_of(rn)]
    check(its == [n] * 4, f"sync none --max-iters {n}: iterations per rank {its}")
    reds = [p.get("reductions") for p in ranks_of(rn)]
    check(reds == [0] * 4, f"sync none: convergence reductions per rank {reds}, expected none")
    check(all(p.get("reductions", 0) > 0 for p in ranks_of(ra)), "sync allreduce: no reductions recorded")
    check(rn.get("stop_reason") == "max_iters" and ra.get("stop_reason") == "max_iters",
          f"sync: stop reasons {rn.get('stop_reason')}, {ra.get('stop_reason')}")
    check(rn.get("details", {}).get("termination") == "none", "sync none: details.termination")
    check(rn.get("true_residual") == ra.get("true_residual"),
          f"sync none: true residual {rn.get('true_residual')!r} against {ra.get('true_residual')!r} with the test")
    with open(un, "rb") as f1, open(ua, "rb") as f2:
        check(f1.read() == f2.read(), "sync none: saved field differs from the run with the convergence test")
    check(rn.get("outstanding_requests") == 0, "sync none: requests left pending")


def check_sync_timer(args, work):
    limit = 0.4
    j = os.path.join(work, "sync_timer.json")
    run_desync(args, 4, ("schwarz",), "--local", "24", "--dims", "2x2", "--termination", "none",
               "--time-limit", str(limit), "--tol", "1e-30", "--slow-rank", "3", "--slow-factor", "3", "--quiet",
               "--json", j,
               expect_code=NOT_CONVERGED, timeout=60)
    rec = load(j)
    its = [p.get("iterations") for p in ranks_of(rec)]
    check(len(its) == 4 and len(set(its)) == 1 and its[0] > 1, f"sync none --time-limit: iterations per rank {its}")
    check(rec.get("stop_reason") == "time_limit", f"sync none --time-limit: stop reason {rec.get('stop_reason')}")
    # The first rank to expect the limit within the last exchanges proposes that iteration: the run
    # ends about at the limit (wide bounds: the ranks share the cores).
    t = rec.get("wall_time", 0)
    check(0.5 * limit < t < limit + 2.0, f"sync none --time-limit {limit}: wall time {t}")
    check(all(p.get("reductions") == 0 for p in ranks_of(rec)), "sync none --time-limit: reductions")
    check(rec.get("outstanding_requests") == 0, "sync none --time-limit: requests left pending")


def check_async_iters(args, work):
    n = 40
    for transport in (("--transport", "p2p"), ("--transport", "rma", "--rma-sync", "flush")):
        j = os.path.join(work, f"async_{transport[1]}.json")
        run_desync(args, 2, ("schwarz",), "--local", "16", "--mode", "async", *transport, "--termination", "none",
                   "--max-iters", str(n), "--tol", "1e-30", "--idle", "spin", "--slow-rank", "1", "--slow-factor", "4",
                   "--quiet", "--json", j, expect_code=NOT_CONVERGED, timeout=60)
        rec = load(j)
        its = [p.get("iterations") for p in ranks_of(rec)]
        check(its == [n, n], f"async none {transport[1]} --max-iters {n}: updates per rank {its}")
        check(rec.get("outstanding_requests") == 0, f"async none {transport[1]}: requests left pending")
        check(rec.get("details", {}).get("termination") == "none", f"async none {transport[1]}: details.termination")


def check_async_timer(args, work):
    limit = 0.3
    j = os.path.join(work, "async_timer.json")
    run_desync(args, 2, ("schwarz",), "--local", "64", "--mode", "async", "--termination", "none",
               "--time-limit", str(limit), "--tol", "1e-30", "--idle", "spin", "--slow-rank", "1", "--slow-factor", "4",
               "--quiet", "--json", j, expect_code=NOT_CONVERGED, timeout=60)
    rec = load(j)
    its = [p.get("iterations") for p in ranks_of(rec)]
    check(len(its) == 2 and 0 < its[1] < its[0], f"async none --time-limit: updates per rank {its} (rank 1 slowed)")
    check(rec.get("stop_reason") == "time_limit", f"async none --time-limit: stop reason {rec.get('stop_reason')}")
    t = rec.get("wall_time", 0)
    check(limit <= t < limit + 2.0, f"async none --time-limit {limit}: wall time {t}")
    check(rec.get("outstanding_requests") == 0, "async none --time-limit: requests left pending")


CHECKS = {"sync-iters": check_sync_iters, "sync-timer": check_sync_timer, "async-iters": check_async_iters,
          "async-timer": check_async_timer}


def main():
    p = arguments(__doc__)
    p.add_argument("checks", nargs="*", default=list(CHECKS))
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        for name in args.checks:
            CHECKS[name](args, work)
    return conclude("all --termination none checks passed")


if __name__ == "__main__":
    sys.exit(main())
