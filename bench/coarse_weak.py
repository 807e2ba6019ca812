#!/usr/bin/env python3
"""Two-level Schwarz, weak scaling of iteration counts on real ranks: 2D Poisson with a fixed number of
points per subdomain (--local L, L x L points each) on P = 2x2, 3x3, 4x4, ... process grids (--grids),
one level against the coarse spaces (--coarse none,nicolaides,gdsw,rgdsw).

For every grid p x p (P = p^2 ranks) and every coarse space C, in this order:

  MPIRUN -np P DESYNC schwarz --local L --dims pxp --mode sync  --alpha A --coarse C --tol TOL --quiet --json TMP
  MPIRUN -np P DESYNC schwarz --local L --dims pxp --mode async --alpha A --coarse C --tol TOL --quiet --json TMP
  MPIRUN -np P DESYNC schwarz --global pLxpL --dims pxp --export-system DIR --quiet       (once per grid)
  MPIRUN -np P DESYNC cg --matrix DIR/A.petsc --rhs DIR/b.petsc --partition DIR/partition.txt
                        --pc asm --overlap G --coarse C --tol TOL --quiet --json TMP

A runs over --alphas: auto (desync's default, optimized Schwarz's Robin condition) and inf (classical
Schwarz); schwarz keeps its default --overlap; --schwarz-extra adds arguments to every schwarz run. The cg runs solve the same system
(the matrix schwarz assembles, exported on the grid's own partition) with CG preconditioned by additive
Schwarz, overlap G (--cg-overlap). Iteration counts only: 9 and 16 ranks oversubscribe a 2-core machine,
so no time is recorded as a result (the records' wall times are kept in the JSON, not meant to be read).
schwarz's count is per rank: sync's is the same on every rank, async's min / mean / max over the ranks.

Standard library only. Example:
  python3 bench/coarse_weak.py --desync build/bench/desync --mpirun mpirun.openmpi --json coarse-weak.json
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import bench_util
from bench_util import add_launch_options, first_error_line, one_thread_env, run_for_json, write_json


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    add_launch_options(p)
    p.add_argument("--grids", default="2,3,4", help="process grid sides p, P = p^2 ranks (default 2,3,4)")
    p.add_argument("--local", type=int, default=32, help="points per subdomain side (default 32)")
    p.add_argument("--coarse", default="none,nicolaides,gdsw,rgdsw", help="coarse spaces (default none,nicolaides,gdsw,rgdsw)")
    p.add_argument("--alphas", default="auto,inf",
                   help="schwarz --alpha values (default auto,inf: optimized and classical Schwarz)")
    p.add_argument("--tol", type=float, default=1e-8, help="tolerance of every run (default 1e-8)")
    p.add_argument("--cg-overlap", type=int, default=2, help="cg --pc asm --overlap (default 2)")
    p.add_argument("--schwarz-extra", default="", help="extra desync schwarz arguments, one shell-quoted string")
    p.add_argument("--time-limit", type=float, default=120.0, help="desync --time-limit of every run (default 120)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed for one run (default 300)")
    p.add_argument("--json", help="write the configuration and every run to this file")
    a = p.parse_args(argv)
    a.grids = [int(x) for x in a.grids.split(",") if x]
    a.coarse = [x for x in a.coarse.split(",") if x]
    a.alphas = [x for x in a.alphas.split(",") if x]
    return a


def env():
    e = one_thread_env()
    e.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return e


def its(rec):
    it = rec["iterations"]
    if isinstance(it, dict):
        return {"min": it["min"], "mean": it["mean"], "max": it["max"]}
    return {"min": it, "mean": it, "max": it}


def export(args, ranks, argv):
    """The --export-system run: its command and, when it failed, the error."""
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), args.desync, *argv]
    p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=args.timeout)
    return {"command": shlex.join(cmd), "exit_code": p.returncode,
            "error": None if p.returncode == 0 else first_error_line(p.stderr or p.stdout)}


def run(args, ranks, argv, json_path, label):
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), args.desync, *argv, "--quiet", "--json", json_path]
    rc, err, elapsed = run_for_json(cmd, json_path, args.timeout, env())
    rec = {"label": label, "ranks": ranks, "command": shlex.join(cmd), "exit_code": rc, "elapsed": elapsed}
    if rc in (0, 1, 3) and os.path.exists(json_path):
        with open(json_path) as f:
            j = json.load(f)
        d = j.get("details") or {}
        rec.update({"ok": True, "iterations": its(j), "converged": bool(j.get("converged")),
                    "true_residual": j.get("true_residual"), "wall_time": j.get("wall_time"),
                    "stop_reason": j.get("stop_reason", ""),
                    "coarse_functions": d.get("coarse_functions"),
                    "pc_description": d.get("pc_description"), "alpha": d.get("alpha")})
    else:
        rec.update({"ok": False, "error": first_error_line(err)})
    status = (f"{rec['iterations']['min']:g}/{rec['iterations']['mean']:.1f}/{rec['iterations']['max']:g} its, "
              f"{'converged' if rec['converged'] else 'NOT converged'}") if rec["ok"] else "FAILED: " + rec["error"]
    print(f"  {label:<34} P={ranks:<3} {status}", file=sys.stderr, flush=True)
    return rec


def main(argv):
    args = parse_args(argv)
    machine = bench_util.machine_info(args, __file__)
    runs = []
    t_start = time.monotonic()
    load_before = os.getloadavg()
    extra = shlex.split(args.schwarz_extra)
    limit = ["--time-limit", f"{args.time_limit:g}"] if args.time_limit > 0 else []
    with tempfile.TemporaryDirectory(prefix="desync-coarse-weak-") as tmp:
        out = os.path.join(tmp, "r.json")
        for p in args.grids:
            P = p * p
            dims = f"{p}x{p}"
            for alpha in args.alphas:
                for coarse in args.coarse:
                    for mode in ("sync", "async"):
                        runs.append(run(args, P, ["schwarz", "--local", str(args.local), "--dims", dims, "--mode",
                                                  mode, "--alpha", alpha, "--coarse", coarse, "--tol", f"{args.tol:g}",
                                                  *limit, *extra], out, f"schwarz {mode} {coarse} alpha {alpha}"))
            folder = os.path.join(tmp, f"sys{P}")
            shutil.rmtree(folder, ignore_errors=True)
            n = p * args.local
            exp = export(args, P, ["schwarz", "--global", f"{n}x{n}", "--dims", dims, "--export-system", folder,
                                   "--quiet"])
            if exp["error"]:
                runs.append({"label": "export", "ranks": P, "ok": False, **exp})
                continue
            for coarse in args.coarse:
                runs.append(run(args, P, ["cg", "--matrix", os.path.join(folder, "A.petsc"), "--rhs",
                                          os.path.join(folder, "b.petsc"), "--partition",
                                          os.path.join(folder, "partition.txt"), "--pc", "asm", "--overlap",
                                          str(args.cg_overlap), "--coarse", coarse, "--tol", f"{args.tol:g}", *limit],
                                out, f"cg asm {coarse}"))
    for r in runs:
        r["command"] = r["command"].replace(tmp, "TMP")
    print(f"\n{'run':<24}" + "".join(f"{'P=' + str(p * p):>22}" for p in args.grids))
    for label in dict.fromkeys(r["label"] for r in runs if r["label"] != "export"):
        cells = []
        for p in args.grids:
            r = next((x for x in runs if x["label"] == label and x["ranks"] == p * p), None)
            if r is None or not r.get("ok"):
                cells.append("failed")
                continue
            it = r["iterations"]
            c = f"{it['max']:g}" if it["min"] == it["max"] else f"{it['min']:g}/{it['mean']:.0f}/{it['max']:g}"
            cells.append(c + ("" if r["converged"] else " (not conv.)"))
        print(f"{label:<24}" + "".join(f"{c:>22}" for c in cells))
    if args.json:
        write_json(args.json, {"benchmark": "desync coarse_weak",
                               "config": {"desync": args.desync, "mpirun": args.mpirun, "grids": args.grids,
                                          "local": args.local, "coarse": args.coarse, "tol": args.tol,
                                          "cg_overlap": args.cg_overlap, "alphas": args.alphas, "schwarz_extra": args.schwarz_extra,
                                          "time_limit": args.time_limit},
                               "machine": machine, "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
                               "duration_s": time.monotonic() - t_start, "runs": runs})
    return 0 if all(r.get("ok") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
