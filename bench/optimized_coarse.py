#!/usr/bin/env python3
"""Optimized Schwarz with a coarse level: desync's two-level iteration with the Robin (optimized)
transmission condition, its two coarse forms, against one-level optimized Schwarz and classical
two-level Schwarz, by iteration counts, synchronous and asynchronous.

On the built-in 2D Poisson problem (`desync schwarz --local m` on a q x q process grid, which with
--coarse runs the assembled 5-point matrix, overlap by graph distance 1, GDSW), per subdomain count:

    one level, alpha auto      the grid solver's optimized Schwarz, OO0 alpha (Gander, 2006)
    classical                  --coarse gdsw --alpha inf (Dirichlet interface), Galerkin coarse problem
    galerkin, alpha auto       --coarse gdsw --alpha auto: A0 = Phi^T A Phi before the local solves
    fixed-point, alpha auto    --coarse-form fixed-point: B0 = Phi^T M^-1 A Phi, the coarse problem of
                               the iteration's own fixed-point equation
    galerkin / fixed-point, beta = b
                               the same with the Robin weight beta = 1/(1 + alpha h) held at b for
                               every subdomain count (alpha = (1/b - 1)/h, h = 1/(q m + 1)); alpha
                               auto's beta grows towards 1 as h shrinks

--modes sync,async (the default) runs the asynchronous iteration too, for one level, classical
two-level and every fixed-point row (the fixed-point form's asynchronous setting: --coarse-reuse 1,
one local solve per coarse cycle); its count is the most local solves of a rank. The Galerkin form
with the Robin condition is not run asynchronously (it diverges there: docs/matrices.md).

Ranks are oversubscribed on small hosts: counts only, never times. There an asynchronous rank's count
also follows the host's scheduler (32 ranks a core at 64 subdomains); --simulate COSTS runs the SMPI
build (--desync build/smpi/desync) on the simulated cluster instead (desync-sim, InfiniBand EDR, 16
cores a node: a core per rank, the cost model COSTS), where the counts are those of ranks of equal
speed and deterministic.

    python3 bench/optimized_coarse.py --desync build/openmpi/desync --json optimized.json
    python3 bench/optimized_coarse.py --desync build/smpi/desync --simulate docs/data/simulated/costs.json \
        --modes async --json optimized-sim.json
"""
import argparse
import json
import os
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import PYTHON_SRC, child_env, run_measured, write_json  # noqa: E402

SIM_PLATFORM = ["--preset", "ib-edr", "--cores", "16"]


def methods(q, m, betas):
    """(key, label, extra arguments) for a q x q grid of m x m subdomains."""
    h = 1.0 / (q * m + 1)
    rows = [("one-level-auto", "one level, alpha auto", ["--alpha", "auto"]),
            ("classical", "classical two-level", ["--coarse", "gdsw", "--alpha", "inf"]),
            ("galerkin-auto", "galerkin, alpha auto", ["--coarse", "gdsw", "--alpha", "auto"]),
            ("fixed-point-auto", "fixed-point, alpha auto",
             ["--coarse", "gdsw", "--alpha", "auto", "--coarse-form", "fixed-point"])]
    for b in betas:
        alpha = f"{(1.0 / b - 1.0) / h:.10g}"
        rows.append((f"galerkin-{b:g}", f"galerkin, beta {b:g}", ["--coarse", "gdsw", "--alpha", alpha]))
        rows.append((f"fixed-point-{b:g}", f"fixed-point, beta {b:g}",
                     ["--coarse", "gdsw", "--alpha", alpha, "--coarse-form", "fixed-point"]))
    return rows


def async_extra(key, extra):
    """The arguments of the asynchronous run of method `key`, or None for a method not run so."""
    if key.startswith("galerkin"):
        return None
    return extra + (["--coarse-reuse", "1"] if key.startswith("fixed-point") else [])


def run(args, ranks, extra, mode="sync"):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        desync = [args.desync, "schwarz", "--mode", mode, "--local", str(args.local), "--tol", f"{args.tol:g}",
                  "--max-iters", str(args.max_iters), "--quiet", "--json", out] + extra
        env = child_env(ranks)
        if args.simulate:  # the simulated cluster: a core per rank (bench/simgrid/studies.toml's platform)
            cmd = [sys.executable, "-m", "desync_tools.sim", "run", *SIM_PLATFORM, "--np", str(ranks),
                   "--costs", args.simulate, "--cfg", "smpi/test:1e-8", "--", *desync]
            env["PYTHONPATH"] = os.pathsep.join(x for x in (PYTHON_SRC, env.get("PYTHONPATH")) if x)
        else:
            cmd = shlex.split(args.mpirun) + ["-np", str(ranks), *desync]
        p = run_measured(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        if p.returncode not in (0, 1, 3) or not os.path.exists(out):
            raise SystemExit(f"optimized_coarse: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
        with open(out) as f:
            rec = json.load(f)
        d = rec.get("details", {})
        return {"iterations": rec["iterations"]["max"], "converged": rec["converged"], "mode": mode,
                "true_residual": rec.get("true_residual"),
                "stop": rec.get("stop_reason"), "robin": d.get("robin"), "alpha": d.get("alpha"),
                "coarse_functions": d.get("coarse_functions"), "coarse_form": d.get("coarse_form"),
                "command": shlex.join(cmd)}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--desync", required=True)
    ap.add_argument("--mpirun", default=os.environ.get("MPIRUN", "mpirun"))
    ap.add_argument("--grids", default="4,6,8", help="process grids q (q x q subdomains), comma-separated")
    ap.add_argument("--local", type=int, default=12, help="points per subdomain side")
    ap.add_argument("--betas", default="0.5,0.8,0.9,0.95", help="Robin weights held fixed, comma-separated")
    ap.add_argument("--modes", default="sync,async", help="sync, async or both, comma-separated")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iters", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--simulate", metavar="COSTS",
                    help="run on the simulated cluster with this cost model (--desync: the SMPI build)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    grids = [int(x) for x in args.grids.split(",")]
    betas = [float(x) for x in args.betas.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in ("sync", "async") for m in modes):
        ap.error(f"--modes {args.modes}: sync, async or both")
    rows = []
    for mode in modes:
        for q in grids:
            for key, label, extra in methods(q, args.local, betas):
                if mode == "async":
                    extra = async_extra(key, extra)
                    if extra is None:
                        continue
                r = run(args, q * q, extra, mode)
                r.update(subdomains=q * q, method=key, label=label + (", async" if mode == "async" else ""))
                rows.append(r)
                print(f"{q * q:>4} {r['label']:<36} robin {r['robin'] if r['robin'] is not None else '-':<10} "
                      f"{r['iterations']:>5} {'' if r['converged'] else 'NOT CONVERGED (' + str(r['stop']) + ')'}",
                      flush=True)
    if args.json:
        write_json(args.json, {"benchmark": "optimized_coarse", "local": args.local, "overlap": 1, "tol": args.tol,
                               "max_iters": args.max_iters, "grids": grids, "betas": betas, "modes": modes,
                               "simulated": {"platform": SIM_PLATFORM, "costs": args.simulate} if args.simulate else None,
                               "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
