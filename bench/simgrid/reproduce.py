#!/usr/bin/env python3
"""The papers' headline findings at 64-1024 simulated ranks (docs/results/).

Runs desync's SMPI build through desync-sim on a modelled InfiniBand EDR cluster (fat tree, 16 cores
per node, 12.5 GB/s, 1 us) with the cost model calibrated on this machine, and prints one table per
study: simulated time, iterations (min/mean/max over ranks), and the host's wall time per simulated
run. The studies are sweeps in desync's experiment format, bench/simgrid/studies.toml (--studies
FILE: another file of the same form; docs/experiments.md). `--set quick` is the subset of `make
bench` (a few minutes here); `--set full` the whole reproduction set. Each simulation runs on one core; `--jobs` of them run side by side (default: one
per core), the largest first. `--only`, `--ranks` and `--match` pick studies, rank counts and runs
(by label); `--markdown` prints the tables of an earlier `--json` file.

    python3 bench/simgrid/calibrate.py -o build/sim/costs.json
    python3 bench/simgrid/reproduce.py --costs build/sim/costs.json --set quick --json build/sim/quick.json
    python3 bench/simgrid/reproduce.py --markdown build/sim/quick.json
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from bench_util import child_env, local_residuals, write_json  # noqa: E402
from pde_bench import boundary_term  # noqa: E402

from desync_tools.runner.experiment import Experiment, load_experiments  # noqa: E402

PLATFORM = ["--preset", "ib-edr", "--cores", "16"]
STUDIES = os.path.join(HERE, "studies.toml")


def studies(full, path=STUDIES):
    """(study, paper, [(label, ranks, desync arguments, extra desync-sim arguments)]) of the set, in
    file order: the sweeps of the experiment file (studies.toml), grouped by their study."""
    out = {}
    for exp in load_experiments(path):
        if not isinstance(exp, Experiment):
            sys.exit(f"{path}: experiment {exp.get('id')} is a command; the simulated studies are sweeps")
        sweep = exp.in_set("full" if full else "quick")
        if sweep is None:
            continue
        paper, rows = out.setdefault(sweep.study, (sweep.paper, []))
        rows += [(sweep.run_label(c), sweep.ranks(c), sweep.arguments(c), sweep.sim_args(c), sweep.study_order)
                 for c in sweep.combinations()]
    result = []
    for study, (paper, rows) in out.items():
        if any(r[4] == "ranks" for r in rows):
            rows = sorted(rows, key=lambda r: r[1])  # stable: the file's order at each count
        result.append((study, paper, [r[:4] for r in rows]))
    return result


def run(args, ranks, argv, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env = child_env()
        env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "python", "src") + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-m", "desync_tools.sim", "run", *PLATFORM, "--np", str(ranks), "--costs", args.costs,
               *args.sim_args, *extra, "--", args.desync_smpi, *argv, "--quiet", "--json", out]
        t0 = time.monotonic()
        # In a session of its own: at --timeout the whole group goes (smpirun and the simulation
        # under desync-sim), and the run is reported as not finished instead of ending the set.
        with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) as p:
            try:
                stdout, stderr = p.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                return {"error": f"not finished: stopped after {args.timeout} s of host time (--timeout)",
                        "host_wall": time.monotonic() - t0, "command": shlex.join(cmd)}
        wall = time.monotonic() - t0
        if p.returncode not in (0, 1) or not os.path.exists(out):
            said = [ln for ln in (stdout + stderr).splitlines()
                    if "desync: error" in ln or "Segmentation fault" in ln or "Execution failed" in ln]
            return {"error": said[0].strip() if said else f"exit status {p.returncode}", "host_wall": wall,
                    "command": shlex.join(cmd)}
        with open(out) as f:
            rec = json.load(f)
        row = {"time": rec["wall_time"], "iterations": rec["iterations"], "converged": rec["converged"],
               "true_residual": rec["true_residual"],
               "time_split": rec["time_split"], "host_wall": wall, "command": shlex.join(cmd)}
        if "delay" in rec["details"]:
            row["delay"] = rec["details"]["delay"]
        local = local_residuals(rec)
        if local:
            row["local_residuals"] = local
        if "coarse_solves" in rec["details"]:  # two-level: coarse cycles (async: rank 0's solves) and their delays
            d = rec["details"]
            row["coarse"] = {k: d[k] for k in ("coarse_solves", "coarse_delay", "coarse_fan_in", "coarse_fan_in_model",
                                               "coarse_tree_height", "coarse_held") if k in d}
        if rec.get("solver") == "pde":
            # the moments of Figure 6, the error against the synchronous run (--paired), and Equation
            # 3's delay term (pde_bench.boundary_term)
            d = rec["details"]
            row["pde"] = {"dt": d["dt"], "dx": d["dx"], "steps": d["steps"], "moments": d["moments"],
                          "paired": d.get("paired"), "boundary_term": boundary_term(rec)}
        return row


def per_iteration(r):
    """Simulated seconds per iteration of a result row (the mean count over ranks)."""
    return r["time"] / r["iterations"]["mean"] if r["iterations"]["mean"] else float("nan")


def markdown(doc):
    """The tables of a --json file, in Markdown."""
    out, study = [], None
    for r in doc["rows"]:
        if r["study"] != study:
            study = r["study"]
            out += ["", f"**{study}**", "",
                    "| run | ranks | simulated ms | ms per iteration | iterations min / mean / max | true residual "
                    "| delay mean / max | host s |", "|---|---|---|---|---|---|---|---|"]
        if "error" in r:
            out.append(f"| {r['label']} | {r['ranks']} | error: {r['error']} | | | | | {r['host_wall']:.0f} |")
            continue
        it, d = r["iterations"], r.get("delay")
        delay = f"{d['mean']:.2f} / {d['max']:g}" if d else ""
        out.append(f"| {r['label']} | {r['ranks']} | {1e3 * r['time']:.3f} | {1e3 * per_iteration(r):.4f} | "
                   f"{it['min']:.0f} / {it['mean']:.1f} / "
                   f"{it['max']:.0f} | {r['true_residual']:.3g} | {delay} | {r['host_wall']:.0f} |")
    return "\n".join(out)


def summaries(doc):
    """Derived tables of a --json file: the relaxed variant against the synchronous one at each count,
    and the CG methods per iteration as ratios to cg."""
    done = [r for r in doc["rows"] if "error" not in r]
    out = []
    pairs = []
    for r in done:
        if " sync " not in r["label"]:
            continue
        for word in ("async", "bounded"):
            other = next((o for o in done if o["study"] == r["study"]
                          and o["label"] == r["label"].replace(" sync ", f" {word} ")), None)
            if other:
                pairs.append((r, other))
    if pairs:
        out += ["", "**relaxed against synchronous** (ratios < 1: the relaxed variant is faster)", "",
                "| study | synchronous run | ranks | sync ms | relaxed ms | time ratio | per-iteration ratio |",
                "|---|---|---|---|---|---|---|"]
        for a, b in pairs:
            out.append(f"| {a['study']} | {a['label']} | {a['ranks']} | {1e3 * a['time']:.3f} | {1e3 * b['time']:.3f} | "
                       f"{b['time'] / a['time']:.3f} | {per_iteration(b) / per_iteration(a):.3f} |")
    for study in dict.fromkeys(r["study"] for r in done if r["study"].startswith("cg")):
        rows = [r for r in done if r["study"] == study]
        method = lambda r: r["label"].split(" P=")[0].replace(" ic0", "")  # noqa: E731
        names = list(dict.fromkeys(method(r) for r in rows))
        if "cg" not in names:
            continue
        others = [n for n in names if n != "cg"]
        gains = [(a, b) for a, b in (("pipecg (Alg. 3)", "pipecg progress (Alg. 3i)"),
                                     ("groppcg (Alg. 4)", "groppcg progress (Alg. 4i)")) if a in names and b in names]
        out += ["", f"**{study}: ms per iteration of cg, the others as ratios to cg**", "",
                "| ranks | cg ms / it | " + " | ".join(others) + "".join(f" | {a.split()[-1][:-1]} → {b.split()[-1][:-1]}"
                                                                  for a, b in gains) + " |",
                "|---" * (2 + len(others) + len(gains)) + "|"]
        for ranks in sorted({r["ranks"] for r in rows}):
            at = {method(r): r for r in rows if r["ranks"] == ranks}
            if "cg" not in at:
                continue
            base = per_iteration(at["cg"])
            cells = [f"{per_iteration(at[n]) / base:.3f}" if n in at else "" for n in others]
            cells += [f"{per_iteration(at[a]) / per_iteration(at[b]):.3f}" if a in at and b in at else "" for a, b in gains]
            out.append(f"| {ranks} | {1e3 * base:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--desync-smpi", default="build/smpi/desync")
    ap.add_argument("--costs")
    ap.add_argument("--studies", default=STUDIES, help="the experiment file of the studies (default: %(default)s)")
    ap.add_argument("--set", choices=["quick", "full"], default="quick")
    ap.add_argument("--only", nargs="*", help="studies to run (default: all of the set)")
    ap.add_argument("--ranks", nargs="*", type=int, help="rank counts to run (default: all of the set's)")
    ap.add_argument("--match", help="only the runs whose label contains this text")
    ap.add_argument("--sim-args", default="--cfg smpi/test:1e-8", help="further desync-sim run arguments")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds of host time per simulation")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="simulations run side by side, one core each (default: this machine's cores)")
    ap.add_argument("--json")
    ap.add_argument("--markdown", metavar="JSON", help="print the tables of an earlier --json file in Markdown; run nothing")
    args = ap.parse_args()
    if args.markdown:
        with open(args.markdown) as f:
            doc = json.load(f)
        print(markdown(doc))
        print(summaries(doc))
        return
    if not args.costs:
        ap.error("--costs is required (the cost model, bench/simgrid/calibrate.py)")
    args.sim_args = shlex.split(args.sim_args)
    selected = [(name, paper, [row for row in rows if (not args.ranks or row[1] in args.ranks)
                               and (not args.match or args.match in row[0])])
                for name, paper, rows in studies(args.set == "full", args.studies) if not args.only or name in args.only]
    jobs = [(name, row) for name, _, rows in selected for row in rows]
    # A run that two studies list with the same arguments runs once. (The 216-rank PDE problem, 16^3
    # per rank in the weak study and 96^3 over 216 ranks in the strong one, is given with different
    # arguments and runs twice; the two records agree bit for bit, the simulation being deterministic.)
    key = lambda row: (row[1], tuple(row[2]), tuple(row[3]))  # noqa: E731
    unique = {}
    for name, row in jobs:
        unique.setdefault(key(row), (name, row))
    # Each simulation runs on one core (SimGrid's ranks are cooperative threads of one process), so
    # --jobs simulations run side by side; the tables are printed in the set's order as they complete.
    results = {}
    t_start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # The largest first, so that the last to finish are short ones.
        order = sorted(unique.items(), key=lambda kv: -kv[1][1][1])
        futures = {pool.submit(run, args, row[1], row[2], row[3]): k for k, (name, row) in order}
        for future in concurrent.futures.as_completed(futures):
            k = futures[future]
            r = future.result()
            for name, row in jobs:
                if key(row) == k:
                    results[(name, row[0])] = dict(r, study=name, label=row[0], ranks=row[1])
            label = unique[k][1][0]
            if args.json:  # after every run: a long set interrupted keeps what it measured
                rows = [results[(n, row[0])] for n, row in jobs if (n, row[0]) in results]
                write_json(args.json, {"benchmark": "simgrid reproduce", "set": args.set, "platform": PLATFORM,
                                       "costs": args.costs, "jobs": args.jobs, "rows": rows,
                                       "host_wall_total": time.monotonic() - t_start})
            print(f"  done: {label} ({r['host_wall']:.1f} s)", file=sys.stderr, flush=True)
    for name, paper, rows in selected:
        print(f"\n{name} ({paper})", flush=True)
        print(f"  {'run':<36} {'simulated s':>12} {'iterations min/mean/max':>24} {'host wall s':>11}")
        for label, _, _, _ in rows:
            r = results[(name, label)]
            if "error" in r:
                print(f"  {label:<36} error: {r['error']}", flush=True)
                continue
            it = r["iterations"]
            delay = f"   delay mean {r['delay']['mean']:.2f} max {r['delay']['max']}" if "delay" in r else ""
            print(f"  {label:<36} {r['time']:>12.6f} {it['min']:>8.0f}/{it['mean']:>7.1f}/{it['max']:<7.0f} "
                  f"{r['host_wall']:>11.1f}  residual {r['true_residual']:.3e}{delay}", flush=True)
    print(f"\nhost wall time of the set: {time.monotonic() - t_start:.0f} s ({args.jobs} at a time)")

if __name__ == "__main__":
    main()
