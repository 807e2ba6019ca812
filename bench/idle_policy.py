#!/usr/bin/env python3
"""What an asynchronous rank should do when nothing new has arrived: desync's --idle policies
(spin, yield, skip) against the synchronous solver, with one rank per core and with more ranks
than cores.

For each case (a solver command, a rank count) the script runs the synchronous variant and the
asynchronous one under each policy, REPS times in an interleaved order (bench_util.interleaved), each
under a timeout, and reports per configuration: the median wall time (the record's wall_time, the
slowest rank's solve), its ratio to the synchronous run of the same repetition (paired, then the
median of the ratios), the median iteration counts of the least and the most busy rank, idle passes,
how many runs converged and how many did not end before the timeout.

  python3 bench/idle_policy.py --desync build/mpich/desync --mpirun mpirun.mpich --reps 5 --json idle.json
  python3 bench/idle_policy.py --desync build/openmpi/desync --mpirun "mpirun --oversubscribe" --reps 5
  python3 bench/idle_policy.py --table idle-mpich.json idle-openmpi.json   # every row; docs/benchmarks.md shows the ratios

Cases: `schwarz` (Yamazaki et al.'s 2D Poisson problem with classical Schwarz, --local 15 --overlap 1
--inflight 1 --check-every 1 --termination tree, over p2p and rma with --rma-sync overlap: the case
that hung under MPICH at 3 ranks), `schwarz64` (the same with 64 x 64 points per rank), `jacobi`
(Bethune et al.'s 3D Laplace problem, --local 16, --check-every 10, over p2p and rma) and
`jacobi32` (--local 32); every asynchronous run with --polish, so that each time is the time to a
true residual within the tolerance. At 2 ranks (one per core here) and 3 (more ranks than cores).
Standard library only.
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

from bench_util import add_launch_options, child_env, interleaved, machine_info, median, write_json

# Every asynchronous run polishes: its time is the time to a true residual within the tolerance.
SCHWARZ = ["schwarz", "--problem", "poisson2d", "--overlap", "1", "--tol", "1e-7", "--alpha", "inf", "--check-every", "1"]
CASES = {
    "schwarz": (SCHWARZ + ["--local", "15"], ["--termination", "tree", "--inflight", "1", "--polish"],
                ("spin", "yield", "skip")),
    "schwarz64": (SCHWARZ + ["--local", "64"], ["--termination", "tree", "--inflight", "1", "--polish"],
                  ("spin", "yield", "skip")),
    "jacobi": (["jacobi", "--local", "16", "--tol", "1e-4", "--check-every", "10"], ["--polish"], ("spin", "yield")),
    "jacobi32": (["jacobi", "--local", "32", "--tol", "1e-4", "--check-every", "10"], ["--polish"],
                 ("spin", "yield")),
}
TRANSPORTS = {"p2p": ["--transport", "p2p"], "rma": ["--transport", "rma", "--rma-sync", "overlap"]}


def configs(args):
    out = []
    for case in args.cases:
        for ranks in args.ranks:
            for transport in args.transports:
                out.append((case, ranks, transport, "sync"))
                for policy in CASES[case][2]:
                    out.append((case, ranks, transport, policy))
    return out


def command(args, cfg, json_path):
    case, ranks, transport, policy = cfg
    base, async_extra, _ = CASES[case]
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), args.desync] + base + TRANSPORTS[transport]
    if policy == "sync":
        cmd += ["--mode", "sync"]
    else:
        cmd += ["--mode", "async", "--idle", policy] + async_extra
    return cmd + ["--json", json_path, "--quiet"]


def run(cmd, timeout):
    env = child_env()
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return proc.returncode


def table(paths):
    """Markdown tables (one per file) of the rows a run wrote with --json."""
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        m = doc["machine"]
        mpi = m.get("mpi", "?")
        if mpi.startswith("HYDRA"):  # records written before bench_util read Hydra's version line
            mpi = "MPICH (Hydra launcher)"
        print(f"`{os.path.basename(path)}`: {mpi}, {m.get('cpus', '?')} CPUs, {doc['reps']} repetitions, "
              f"timeout {doc['timeout']:g} s\n")
        print("| case | ranks | transport | policy | median wall s | / sync (paired) | iterations, least / most busy rank "
              "| idle passes (all ranks) | converged | did not end |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in doc["rows"]:
            if r["timeouts"] == r["runs"]:
                wall, ratio, its, idle = "—", "—", "—", "—"
            else:
                wall, ratio = f"{r['wall_median']:.3f}", ("" if r["policy"] == "sync" else f"{r['ratio_to_sync']:.2f}")
                its = f"{r['it_min_median']:.0f} / {r['it_max_median']:.0f}"
                idle = "" if r["policy"] == "sync" else f"{r['idle_passes_median']:.0f}"
            print(f"| {r['case']} | {r['ranks']} | {r['transport']} | {r['policy']} | {wall} | {ratio} | {its} | {idle} | "
                  f"{r['converged']}/{r['runs'] - r['timeouts']} | {r['timeouts']} |")
        print()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    add_launch_options(p)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 3])
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["schwarz", "schwarz64", "jacobi", "jacobi32"])
    p.add_argument("--transports", nargs="+", choices=sorted(TRANSPORTS), default=["p2p", "rma"])
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before a run counts as not ending")
    p.add_argument("--json", default=None)
    p.add_argument("--table", nargs="+", metavar="JSON", help="print the tables of earlier runs' --json files and exit")
    args = p.parse_args(argv)
    if args.table:
        return table(args.table)
    cfgs = configs(args)
    runs = {cfg: {} for cfg in cfgs}  # cfg -> rep -> record summary (None: timed out)
    with tempfile.TemporaryDirectory(prefix="desync-idle-") as tmp:
        for rep, cfg in interleaved(cfgs, args.reps):
            path = os.path.join(tmp, "run.json")
            if os.path.exists(path):
                os.remove(path)
            rc = run(command(args, cfg, path), args.timeout)
            if rc is None:
                runs[cfg][rep] = None
                continue
            with open(path) as f:
                rec = json.load(f)
            its = sorted(int(r["iterations"]) for r in rec["per_rank"])
            idle = sum(int(r.get("idle_passes", 0)) for r in rec["per_rank"])
            runs[cfg][rep] = {"rc": rc, "wall": rec["wall_time"], "converged": rec["converged"],
                              "it_min": its[0], "it_max": its[-1], "idle": idle}
    rows = []
    for cfg in cfgs:
        case, ranks, transport, policy = cfg
        done = [r for r in runs[cfg].values() if r is not None]
        sync = runs[(case, ranks, transport, "sync")]
        ratios = [r["wall"] / sync[k]["wall"] for k, r in runs[cfg].items()
                  if r is not None and sync.get(k) is not None and sync[k]["wall"] > 0]
        rows.append({"case": case, "ranks": ranks, "transport": transport, "policy": policy,
                     "runs": len(runs[cfg]), "timeouts": len(runs[cfg]) - len(done),
                     "converged": sum(1 for r in done if r["converged"]),
                     "wall_median": median([r["wall"] for r in done]),
                     "ratio_to_sync": median(ratios),
                     "it_min_median": median([r["it_min"] for r in done]),
                     "it_max_median": median([r["it_max"] for r in done]),
                     "idle_passes_median": median([r["idle"] for r in done])})
    print(f"{'case':8} {'ranks':>5} {'transport':9} {'policy':6} {'wall s':>9} {'/sync':>7} {'it min':>8} "
          f"{'it max':>8} {'idle':>9} {'conv':>6} {'t/o':>4}")
    for r in rows:
        print(f"{r['case']:8} {r['ranks']:5d} {r['transport']:9} {r['policy']:6} {r['wall_median']:9.4f} "
              f"{r['ratio_to_sync']:7.3f} {r['it_min_median']:8.0f} {r['it_max_median']:8.0f} "
              f"{r['idle_passes_median']:9.0f} {r['converged']:3d}/{r['runs'] - r['timeouts']:<2d} {r['timeouts']:4d}")
    if args.json:
        write_json(args.json, {"script": "bench/idle_policy.py", "command": " ".join(sys.argv),
                               "machine": machine_info(args, __file__), "reps": args.reps,
                               "timeout": args.timeout, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
