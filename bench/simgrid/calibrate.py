#!/usr/bin/env python3
"""Calibrates the cost model of desync's simulated runs on this machine (docs/simulation.md).

On a simulated cluster (a build with -DDESYNC_MPI=smpi, launched by desync-sim) every compute phase
charges its work to the rank's simulated clock as units x seconds per unit. This script measures the
seconds per unit of every kind with the ordinary build of desync on this machine, one rank (two for
the Schwarz subdomain solves, so that they are the size of the simulated ones), from the time split
of each run record:

  jacobi.update, jacobi.update_residual   per lattice update (a sweep, with the residual fused)
  halo.element                            per halo value packed or installed (pde, 1 rank: 6 faces)
  pde.at.element                          per halo value of the AT approximation (pde, the delay model's largest delay)
  pde.burgers3d.update                    per point and variable
  pde.advection_diffusion1d.update        per point
  poisson3d.row                           per row of the matrix-free operator (cg's spmv)
  cg.<method>.vector                      per row and iteration: that method's vector updates
  pc.none, pc.jacobi, pc.bjacobi-ic0      per row and application
  schwarz.solve, schwarz.residual         per subdomain unknown (poisson2d, --schwarz-local)
  halo.message                            per message a channel sends or takes in: desync's and MPI's
                                          work on it beyond the link's latency (sync Jacobi on 2^3
                                          points per rank, 2 ranks, one neighbour each:
                                          (halo time - exchanges x latency) / messages sent and taken in,
                                          the latency measured by desync-sim calibrate-host)
  halo.open                               per plan exchange opened (the channel communicator split,
                                          the channels connected): the Schwarz runs' exchange_open_seconds
                                          / exchange_opens, mean over the ranks (three opens a run, p2p)

  csr.entry                               per stored scalar entry of an assembled operator (cg's
                                          elasticity3d): estimated as poisson3d.row / 7, not measured

The sweeps, the PDE update and approximation and CG's kinds are measured with --ranks ranks at once
(default 2, every core of this machine busy, as on a node of the simulated cluster), halo.element
and the 1D update on one rank, Schwarz's kinds and halo.message on two. The sizes should be those of the simulated
runs (caches matter): --local for the 3D solvers, --pde-local, --schwarz-local. Each figure is the
median of --reps runs (5), taken in rounds: every kind once per round, so that a busy spell of the
machine touches a run or two of every kind rather than most runs of one. A kind whose runs differ by
more than --max-spread (1.25) gets further runs, up to --max-reps (11). The calibration records each
kind's smallest and largest run and the number of runs ("spread") and warns about kinds whose runs
still differ by more than --max-spread: noise on a shared machine only adds time, and a median of
few runs can still catch it.

    python3 bench/simgrid/calibrate.py --desync build/openmpi/desync -o build/sim/costs.json

The link's latency comes from `desync-sim calibrate-host`, measured first into build/sim/host.json
unless --host-calibration names a measurement.

Besides the costs, the calibration records this machine's core_speed_spread: how much the ranks of
one run differ in their compute time for the same work (the two Jacobi kinds' runs: the standard
deviation of each rank's log compute time about its run's mean, pooled over the runs). On a
simulated node every core is otherwise exactly as fast as the next, and asynchronous ranks that
start together stay in lockstep, each always a fixed part of an iteration ahead of the messages it
reads; `desync-sim run --core-speed-spread` gives the cores that spread (validate.py does).
"""
import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_util import (add_launch_options, child_env, desync_sim_command, machine_info,  # noqa: E402
                        measure_host_link, write_json)


def run(args, ranks, argv):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = shlex.split(args.mpirun) + ["-np", str(ranks), args.desync, *argv, "--quiet", "--json", out]
        p = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=600)
        if p.returncode not in (0, 1) or not os.path.exists(out):  # 1: not converged (fixed iterations)
            raise SystemExit(f"calibrate: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f), shlex.join(cmd)


def registry(args):
    """desync's registered solvers, their methods and the simulation cost kinds (`desync --registry`)."""
    cmd = shlex.split(args.mpirun) + ["-np", "1", args.desync, "--registry"]
    p = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"calibrate: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)


def measure_rounds(args, specs, run_one=None):
    """Runs every spec (ranks, argv, {kind: per_unit}) once per round, --reps rounds, and returns
    {kind: (median, command, (min, max), runs)} of each per_unit over the rounds. Round by round, not
    kind by kind: a busy spell of the machine then slows one or two runs of every kind, which the
    median drops, instead of most runs of the kinds measured during it (on 2026-11-26 three of five
    consecutive runs of one kind came out 2.5 times slow, and that kind's figure with them). The specs
    with a kind whose runs still spread by more than --max-spread get further rounds of their own, up
    to --max-reps runs in all: a kind that varies from run to run (pipelined CG's vector work ranged
    over 1.45-2.38e-9 s per row in five runs, CG's over 1.53-1.72e-9) needs more runs for a median as
    steady as the others'."""
    run_one = run_one or (lambda ranks, argv: run(args, ranks, argv))
    values, cmds = {}, {}

    def one_round(which):
        for ranks, argv, per_unit in which:
            rec, cmd = run_one(ranks, argv)
            for kind, f in per_unit.items():
                values.setdefault(kind, []).append(f(rec))
                cmds[kind] = cmd

    for _ in range(args.reps):
        one_round(specs)
    for _ in range(args.reps, max(args.reps, args.max_reps)):
        spread = {k: (min(v), max(v)) for k, v in values.items()}
        noisy = noisy_kinds(spread, args.max_spread)
        again = [spec for spec in specs if any(k in noisy for k in spec[2])]
        if not again:
            break
        one_round(again)
    return {k: (statistics.median(v), cmds[k], (min(v), max(v)), len(v)) for k, v in values.items()}


def message_overhead(rec, latency):
    """halo.message from a record of synchronous Jacobi whose every rank has one neighbour: on a
    simulated cluster such an exchange takes the sender's charge, the link's latency and the
    receiver's charge (LogP's o + L + o), so per rank (halo time - messages sent x latency) /
    (messages sent + messages taken in); the mean over the ranks, at least 0."""
    values = []
    for r in rec["per_rank"]:
        if r.get("neighbours", 1) != 1:
            raise SystemExit(f"calibrate: halo.message needs one neighbour per rank; rank {r['rank']} has {r['neighbours']}")
        messages = r["messages_sent"] + r["messages_received"]
        values.append(max(0.0, (r["time"]["halo"] - r["messages_sent"] * latency) / messages))
    return statistics.mean(values)


def exchange_open_time(rec):
    """halo.open: the seconds per plan exchange opened, per rank (exchange_open_seconds /
    exchange_opens), the mean over the ranks. Holds the few small messages of the split and the
    channels' handshake, which the simulation also charges as messages (a few us of the tens)."""
    ranks = [r for r in rec["per_rank"] if r.get("exchange_opens", 0) > 0]
    if not ranks:
        raise SystemExit("calibrate: halo.open: the run record has no exchange_opens (a desync older than 2026-11-26?)")
    return statistics.mean(r["exchange_open_seconds"] / r["exchange_opens"] for r in ranks)


def core_speed_spread(runs):
    """The pooled standard deviation of log compute time about each run's mean, from runs given as
    lists of per-rank compute times of the same work: sqrt(sum of squared deviations / sum of
    (ranks - 1)). 0 without a run of two ranks or more."""
    squares, freedom = 0.0, 0
    for times in runs:
        if len(times) < 2:
            continue
        logs = [math.log(t) for t in times]
        mean = sum(logs) / len(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        freedom += len(logs) - 1
    return math.sqrt(squares / freedom) if freedom else 0.0


def noisy_kinds(spread, limit):
    """The kinds whose runs spread by more than the factor limit (max / min), with that factor."""
    return {k: hi / lo for k, (lo, hi) in spread.items() if lo > 0 and hi / lo > limit}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_launch_options(ap)
    ap.add_argument("--local", type=int, default=32, help="N^3 points per rank: jacobi, cg (default 32)")
    ap.add_argument("--pde-local", type=int, default=32, help="N^3 points per rank: pde burgers3d (default 32)")
    ap.add_argument("--schwarz-local", type=int, default=32, help="N^2 points per subdomain: schwarz (default 32)")
    ap.add_argument("--iterations", type=int, default=300, help="fixed iterations or steps per run (default 300)")
    ap.add_argument("--reps", type=int, default=5,
                    help="runs per kind; its figure is their median (default 5; 3 until 2026-11-26, when on a "
                         "loaded machine two of three runs of one kind came out 2.5 times slow)")
    ap.add_argument("--max-reps", type=int, default=11,
                    help="runs at most for a kind whose first --reps runs spread by more than --max-spread "
                         "(default 11; --reps: no further runs)")
    ap.add_argument("--max-spread", type=float, default=1.25,
                    help="run a kind again (up to --max-reps runs) whose runs differ by more than this factor, "
                         "and warn if they still do (default 1.25)")
    ap.add_argument("--ranks", type=int, default=2,
                    help="ranks of the compute measurements (jacobi, pde, cg), all busy at once as the cores of a "
                         "simulated node are (default 2: this machine's cores)")
    ap.add_argument("--host-calibration", metavar="FILE",
                    help="the link's latency for halo.message (desync-sim calibrate-host's JSON); default: measured "
                         "now into build/sim/host.json")
    ap.add_argument("--desync-sim", help="the desync-sim command (default: python3 -m desync_tools.sim from python/src)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    if args.host_calibration:
        with open(args.host_calibration) as f:
            link = json.load(f)
    else:
        args.host_calibration = os.path.join("build", "sim", "host.json")
        link = measure_host_link(desync_sim_command(args.desync_sim), args.mpirun, args.host_calibration,
                                 script="calibrate")
    latency = float(link["latency_s"])
    reg = registry(args)
    n, it = args.local, args.iterations
    pts = float(n) ** 3
    R = args.ranks  # every core busy, as on a node of the simulated cluster: memory bandwidth shared
    rank_times = []  # per Jacobi run, each rank's compute time (core_speed_spread)

    def jacobi_per_update(r):
        rank_times.append([rank["time"]["compute"] for rank in r["per_rank"]])
        return r["time_split"]["compute"] / (r["iterations"]["max"] * pts)

    specs = [
        (R, ["jacobi", "--local", str(n), "--tol", "1e-30", "--max-iters", str(it), "--check-every", str(10 * it)],
         {"jacobi.update": jacobi_per_update}),
        (R, ["jacobi", "--local", str(n), "--tol", "1e-30", "--max-iters", str(it), "--check-every", "1"],
         {"jacobi.update_residual": jacobi_per_update}),
    ]
    m = args.pde_local
    burgers = ["pde", "--problem", "burgers3d", "--global", str(m), "--steps", str(it)]
    burgers_r = ["pde", "--problem", "burgers3d", "--global", str(m), "--dims", f"{R}x1x1", "--steps", str(it)]
    # The halo approximation phase, every value of every face every step: the delay model's largest
    # delay (k = L - 1 = 9) makes each an asynchrony-tolerant combination of two retained levels.
    halo_values = 5 * (2 * float(m) ** 2 + 4 * float(m) ** 2 / R)  # per rank and step, R x 1 x 1 ranks
    line = 4096
    specs += [
        (R, burgers_r, {"pde.burgers3d.update": lambda r: r["time_split"]["compute"] / (it * float(m) ** 3 / R * 5)}),
        # One rank, periodic along every axis: each step packs and installs 6 faces of m^2 values, 5 variables.
        (1, burgers, {"halo.element": lambda r: (r["time_split"]["send"] + r["time_split"]["consume"])
                      / (it * 2 * 6 * float(m) ** 2 * 5)}),
        (R, burgers_r + ["--mode", "bounded", "--max-delay", "10", "--delay-model", "max"],
         {"pde.at.element": lambda r: r["time_split"]["approximate"] / (it * halo_values)}),
        (1, ["pde", "--problem", "advection-diffusion1d", "--global", str(line), "--steps", str(it)],
         {"pde.advection_diffusion1d.update": lambda r: r["time_split"]["compute"] / (it * line)}),
    ]
    # CG's kinds with every core busy too (until 2026-11-26 with one rank: on this machine the
    # matrix-vector product then cost 1.35 times less per row, the vector work 1.1 times less, than on
    # a node whose cores all work). The phases timed (spmv, vector, pc) hold no waiting.
    # The methods are desync's registered ones; each method's own kind is its vector work.
    cg = ["cg", "--local", str(n), "--rtol", "1e-10", "--max-iters", str(it)]
    cg_methods = next(s for s in reg["solvers"] if s["name"] == "cg")["methods"]
    for i, method in enumerate(cg_methods):
        per_unit = {kind: lambda r: r["time_split"]["vector"] / (r["iterations"]["max"] * pts)
                    for kind in method["cost_kinds"]}
        if i == 0:
            per_unit["poisson3d.row"] = lambda r: r["time_split"]["spmv"] / ((r["iterations"]["max"] + 1) * pts)
        specs.append((R, cg + ["--method", method["name"]], per_unit))
    first = cg_methods[0]["name"]
    specs += [
        (R, cg + ["--method", first, "--pc", "jacobi"],
         {"pc.jacobi": lambda r: r["time_split"]["pc"] / ((r["iterations"]["max"] + 1) * pts)}),
        (R, cg + ["--method", first, "--pc", "bjacobi-ic0"],
         {"pc.bjacobi-ic0": lambda r: r["time_split"]["pc"] / ((r["iterations"]["max"] + 1) * pts)}),
    ]
    s = args.schwarz_local
    unknowns = float(s) ** 2
    schwarz = ["schwarz", "--mode", "sync", "--local", str(s), "--tol", "1e-14", "--max-iters", str(it)]
    specs += [
        (2, schwarz, {"schwarz.solve": lambda r: r["time_split"]["solve"] / (r["iterations"]["mean"] * unknowns),
                      "schwarz.residual": lambda r: r["time_split"]["spmv"] / (r["iterations"]["mean"] * unknowns),
                      "halo.open": exchange_open_time}),
    ]
    # desync's own work per message: 2 ranks of 2^3 points (2 x 1 x 1, one neighbour each), so small
    # that the exchange is nearly all of an iteration; 20000 iterations (about 20 ms here).
    specs += [
        (2, ["jacobi", "--mode", "sync", "--local", "2", "--dims", "2x1x1", "--tol", "1e-300", "--max-iters", "20000",
             "--check-every", "200000"],
         {"halo.message": lambda r: message_overhead(r, latency)}),
    ]
    # Every kind desync registers is measured here or set below (pc.none, csr.entry): a cost model
    # without one is refused by a simulated run.
    derived = {"pc.none", "csr.entry"}
    covered = {k for _, _, per_unit in specs for k in per_unit} | derived
    wanted = {k["name"] for k in reg["shared_cost_kinds"]} | {k for s in reg["solvers"] for k in s["cost_kinds"]}
    if wanted - covered:
        raise SystemExit(f"calibrate: desync registers cost kinds that nothing here measures: "
                         f"{', '.join(sorted(wanted - covered))}")
    measured = measure_rounds(args, specs)
    costs = {k: v[0] for k, v in measured.items()}
    commands = {k: v[1] for k, v in measured.items()}
    spread = {k: v[2] for k, v in measured.items()}
    runs = {k: v[3] for k, v in measured.items()}
    commands["halo.message"] += f"  (latency {latency:.4g} s from {args.host_calibration})"
    costs["pc.none"], commands["pc.none"] = 0.0, "(no work)"
    # Assembled operators (cg's elasticity3d): estimated from the matrix-free 7-point rows, per entry.
    costs["csr.entry"] = costs["poisson3d.row"] / 7
    commands["csr.entry"] = "poisson3d.row / 7 (estimate)"
    doc = {"costs": costs,
           "calibration": {"date": datetime.datetime.now().isoformat(timespec="seconds"),
                           "sizes": {"local": n, "pde_local": m, "schwarz_local": s, "iterations": it,
                                     "reps": args.reps, "ranks": R},
                           "commands": commands,
                           "spread": {k: {"min": lo, "max": hi, "runs": runs[k]} for k, (lo, hi) in spread.items()},
                           "core_speed_spread": core_speed_spread(rank_times),
                           "core_speed_spread_runs": len(rank_times),
                           "machine": machine_info(args, "bench/simgrid/calibrate.py")}}
    write_json(args.output, doc)
    for k, v in costs.items():
        print(f"  {k:<34} {v:.4e} s per unit" + (f"  ({runs[k]} runs)" if runs.get(k, args.reps) != args.reps else ""))
    print(f"  core_speed_spread {doc['calibration']['core_speed_spread']:.4f} (sigma of log compute time over the "
          f"ranks of a run, {len(rank_times)} Jacobi runs of {R} ranks)")
    for k, factor in noisy_kinds(spread, args.max_spread).items():
        print(f"calibrate: warning: the runs of {k} differ by {factor:.2f}x (max / min of {runs[k]}): the machine "
              f"was busy? Its median is in {args.output}; calibrate again on a quiet machine, or with more --max-reps.",
              file=sys.stderr)


if __name__ == "__main__":
    main()
