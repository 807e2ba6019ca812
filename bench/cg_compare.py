#!/usr/bin/env python3
"""CG side by side with PETSc: desync's CG family and PETSc's on the same poisson3d system.

Runs, in one interleaved loop,

  MPIRUN -np NP DESYNC cg --problem poisson3d --global N --method M --pc P --operator O \\
         --rtol RTOL --quiet --json TMP
  MPIRUN -np NP PETSC_DRIVER -n N -method M -pc P -rtol RTOL -json TMP

(PETSC_DRIVER is bench/petsc/petsc_poisson3d.c, built as BUILD_DIR/petsc_poisson3d where PETSc is
found) for every desync method (cg, cg-cg, pipecg, groppcg), operator (matrix-free, csr) and
preconditioner (none, jacobi), and every PETSc method (cg = KSPCG, cg-sr = KSPCG with the single
reduction variant, pipecg = KSPPIPECG, groppcg = KSPGROPPCG). Both solve the nx*ny*nz interior points
of the 7-point stencil (6 on the diagonal, -1 to each neighbour), b = the boundary value 1 moved to the
right-hand side, from a zero initial guess, until ||r_k||_2 <= rtol * ||b||_2 (unpreconditioned
residual), on the same process grid (desync's balanced grid; the PETSc driver's MPI_Dims_create, the
same grid below 360 ranks, or --dims for both).

Every repetition visits all configurations in a rotated order, every other one reversed, so slow drift
of the machine spreads over all of them. The table reports per configuration the median, minimum and
maximum solve time (desync: wall_time of its JSON, the slowest rank's solve time; PETSc: MPI_Wtime
around KSPSolve, slowest rank), iterations, time per iteration, true residual ||b - A x|| / ||b||, the
ratio to PETSc's KSPCG with the same preconditioner and the ratio to PETSc's counterpart method
(cg -> cg, cg-cg -> cg-sr, pipecg -> pipecg, groppcg -> groppcg). Targets: desync matrix-free cg
<= 0.6 x PETSc KSPCG, desync CSR cg <= 1.0 x, every desync method's iteration count within 2 of its
PETSc counterpart's; each printed ok or MISS.

--variant NAME=ARGS (repeatable) runs every desync configuration once per variant, with ARGS added to
its command line: e.g. the ghost exchange engines and progress modes side by side, without PETSc:
  python3 bench/cg_compare.py --petsc-methods '' --methods cg --pcs none --operators matrix-free \\
          --variant "blocking=--engine blocking" --variant "p2p=--engine p2p" \\
          --variant "p2p test=--engine p2p --progress test" --json cg_engines.json

Standard library only. Example:
  python3 bench/cg_compare.py --desync build/bench/desync --petsc build/bench/petsc_poisson3d \\
          --mpirun mpirun.openmpi --json cg_compare.json
"""
import argparse
import os
import shlex
import sys

import bench_util
from bench_util import (add_desync_option, add_mpirun_option, count, is_executable, median, print_failures,
                        print_machine_and_load, record_outcome, run_for_json, run_repetitions, solve_progress,
                        split_choices, write_json)

DESYNC_METHODS = ("cg", "cg-cg", "pipecg", "groppcg")
PETSC_METHODS = ("cg", "cg-sr", "pipecg", "groppcg")
PCS = ("none", "jacobi")
OPERATORS = ("matrix-free", "csr")
PETSC_NAMES = {"cg": "KSPCG", "cg-sr": "KSPCG single-reduction", "pipecg": "KSPPIPECG", "groppcg": "KSPGROPPCG"}
# desync method -> the PETSc method it is measured against (iterations, "vs same" ratio)
COUNTERPART = {"cg": "cg", "cg-cg": "cg-sr", "pipecg": "pipecg", "groppcg": "groppcg"}
# (desync method, operator) -> the largest allowed ratio of its median solve time to PETSc KSPCG's
TIME_TARGETS = {("cg", "matrix-free"): 0.6, ("cg", "csr"): 1.0}
ITERATION_TOLERANCE = 2


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_desync_option(p)
    p.add_argument("--petsc", default=os.environ.get("PETSC_DRIVER"),
                   help="path of the PETSc driver (default: $PETSC_DRIVER, else petsc_poisson3d next to --desync)")
    add_mpirun_option(p)
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--n", default="128", help="interior points per direction, N or NXxNYxNZ (default 128)")
    p.add_argument("--dims", help="process grid PXxPYxPZ for both (0 entries: chosen by each side, alike below 360 ranks; default: all chosen)")
    p.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance against ||b|| (default 1e-6)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each configuration (default 3)")
    p.add_argument("--methods", default=",".join(DESYNC_METHODS),
                   help="comma-separated desync methods (default cg,cg-cg,pipecg,groppcg; empty: none)")
    p.add_argument("--petsc-methods", default=",".join(PETSC_METHODS),
                   help="comma-separated PETSc driver methods (default cg,cg-sr,pipecg,groppcg; empty: none)")
    p.add_argument("--pcs", default=",".join(PCS), help="comma-separated preconditioners (default none,jacobi)")
    p.add_argument("--operators", default=",".join(OPERATORS),
                   help="comma-separated desync operators (default matrix-free,csr)")
    p.add_argument("--desync-extra", default="", help="extra desync arguments for every run, one shell-quoted string")
    p.add_argument("--petsc-extra", default="", help="extra PETSc driver arguments, one shell-quoted string")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                   help="run every desync configuration also with these extra arguments, named NAME in the table "
                        "(repeatable; default: one unnamed variant, no extra arguments)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed for one run (default 300)")
    p.add_argument("--json", help="write the configuration, machine, summary rows and every run to this file")
    p.add_argument("--quiet", action="store_true", help="no progress line per run")
    a = p.parse_args(argv)
    a.methods = split_choices(p, a.methods, DESYNC_METHODS, "desync method")
    a.petsc_methods = split_choices(p, a.petsc_methods, PETSC_METHODS, "PETSc method")
    a.pcs = split_choices(p, a.pcs, PCS, "preconditioner")
    a.operators = split_choices(p, a.operators, OPERATORS, "operator")
    if not a.pcs or (not a.petsc_methods and not (a.methods and a.operators)):
        p.error("nothing to run")
    parts = a.n.lower().split("x")
    if len(parts) not in (1, 3) or not all(x.isdigit() and int(x) > 0 for x in parts):
        p.error(f"--n must be N or NXxNYxNZ with positive integers, not {a.n!r}")
    a.grid = [int(x) for x in parts] * (3 if len(parts) == 1 else 1)
    a.variants = []
    for v in a.variant:
        name, sep, extra = v.partition("=")
        if not sep or not name.strip():
            p.error(f"--variant must be NAME=ARGS, not {v!r}")
        if name.strip() in [n for n, _ in a.variants]:
            p.error(f"--variant {name.strip()!r} given twice")
        a.variants.append((name.strip(), extra))
    if not a.variants:
        a.variants = [("", "")]
    if a.reps < 1 or a.np < 1:
        p.error("--reps and --np must be >= 1")
    if a.petsc is None:
        a.petsc = os.path.join(os.path.dirname(a.desync) or ".", "petsc_poisson3d")
    return a


def child_env(solver):
    # PETSc's vector kernels call BLAS: one thread per rank, as desync.
    return bench_util.one_thread_env() if solver == "petsc" else bench_util.child_env()


def command(args, cfg, json_path):
    solver, method, pc, op, variant = cfg
    launch = shlex.split(args.mpirun) + ["-np", str(args.np)]
    dims = args.dims
    if solver == "desync":
        return (launch + [args.desync, "cg", "--problem", "poisson3d", "--global", args.n, "--method", method,
                          "--pc", pc, "--operator", op, "--rtol", f"{args.rtol:g}", "--quiet", "--json", json_path]
                + (["--dims", dims] if dims else []) + shlex.split(args.desync_extra)
                + shlex.split(dict(args.variants)[variant]))
    nx, ny, nz = args.grid
    return (launch + [args.petsc, "-nx", str(nx), "-ny", str(ny), "-nz", str(nz), "-method", method, "-pc", pc,
                      "-rtol", f"{args.rtol:g}", "-json", json_path]
            + (["-dims", dims] if dims else []) + shlex.split(args.petsc_extra))


def parse_desync(j):
    it = j["iterations"]  # {min, mean, max} over the ranks; every rank of a CG run iterates alike
    return {
        "solve_seconds": float(j["wall_time"]),
        "iterations": count(it["max"] if isinstance(it, dict) else it),
        "iterations_min": count(it["min"] if isinstance(it, dict) else it),
        "true_residual": float(j["true_residual"]),
        "converged": bool(j["converged"]),
        "stop_reason": j.get("stop_reason", ""),
        "options": j.get("options"),
        "process_grid": j.get("process_grid"),
        "mpi_library": j.get("mpi_library", ""),
        "time_split": j.get("time_split"),
    }


def parse_petsc(j):
    return {
        "solve_seconds": float(j["solve_seconds"]),
        "iterations": int(j["iterations"]),
        "iterations_min": int(j["iterations"]),
        "true_residual": float(j["true_residual"]),
        "converged": bool(j["converged"]),
        "stop_reason": j.get("converged_reason", ""),
        "process_grid": j.get("process_grid"),
        "mat_type": j.get("mat_type", ""),
        "petsc_version": j.get("petsc_version", "").strip(),
    }


def run_one(args, cfg, json_path):
    cmd = command(args, cfg, json_path)
    load = os.getloadavg()[0]
    rc, err, elapsed = run_for_json(cmd, json_path, args.timeout, child_env(cfg[0]))
    solver, method, pc, op, variant = cfg
    rec = {"solver": solver, "method": method, "pc": pc, "operator": op, "variant": variant,
           "command": shlex.join(cmd), "exit_code": rc, "elapsed": elapsed, "loadavg_1min_before": load}
    return record_outcome(rec, rc, err, json_path, parse_desync if solver == "desync" else parse_petsc, solver)


def summarise(args, configs, runs):
    rows = []
    for cfg in configs:
        solver, method, pc, op, variant = cfg
        rs = [r for r in runs if (r["solver"], r["method"], r["pc"], r["operator"], r["variant"]) == cfg]
        ok = [r for r in rs if r["ok"]]
        row = {"solver": solver, "method": method, "pc": pc, "operator": op, "variant": variant, "runs": len(rs),
               "ok": len(ok)}
        if ok:
            t = [r["solve_seconds"] for r in ok]
            its = median([r["iterations"] for r in ok])
            row.update({
                "solve_median": median(t), "solve_min": min(t), "solve_max": max(t),
                "iterations": its, "iterations_all": sorted({r["iterations"] for r in ok}),
                "seconds_per_iteration": median(t) / its if its else float("nan"),
                "true_residual": median([r["true_residual"] for r in ok]),
                "true_residual_max": max(r["true_residual"] for r in ok),
                "converged": sum(1 for r in ok if r["converged"]),
            })
        rows.append(row)

    def petsc_row(method, pc):
        for r in rows:
            if r["solver"] == "petsc" and r["method"] == method and r["pc"] == pc and "solve_median" in r:
                return r
        return None

    for row in rows:
        if "solve_median" not in row:
            continue
        ref = petsc_row("cg", row["pc"])
        if ref:
            row["ratio_to_kspcg"] = row["solve_median"] / ref["solve_median"]
            row["ratio_to_kspcg_of_minima"] = row["solve_min"] / ref["solve_min"]  # less sensitive to a busy machine
        if row["solver"] != "desync":
            continue
        counterpart = COUNTERPART[row["method"]]
        same = petsc_row(counterpart, row["pc"])
        if not same:  # counterpart not run: KSPCG (every method of the family should iterate alike)
            counterpart, same = "cg", ref
        if same:
            row["petsc_counterpart"] = counterpart
            row["ratio_to_counterpart"] = row["solve_median"] / same["solve_median"]
            row["petsc_iterations"] = same["iterations"]
            row["iterations_ok"] = abs(row["iterations"] - same["iterations"]) <= ITERATION_TOLERANCE
        target = TIME_TARGETS.get((row["method"], row["operator"]))
        if target is not None and ref:
            row["time_target"] = target
            row["time_ok"] = row["ratio_to_kspcg"] <= target
    return rows


def fmt_table(args, rows):
    g = "x".join(str(x) for x in args.grid)
    out = [f"poisson3d {g} interior points, rtol {args.rtol:g} (||r|| <= rtol ||b||, zero initial guess), "
           f"{args.np} ranks, median of {args.reps}"]
    vw = max(len(n) for n, _ in args.variants)
    vhead = f" {'variant':<{max(vw, 7)}}" if vw else ""
    out.append(f"  {'solver':<6} {'method':<8} {'pc':<6} {'operator':<11}{vhead} {'solve s':>8} {'min':>8} {'max':>8} "
               f"{'its':>6} {'s/it':>9} {'true resid':>10} {'conv':>5} {'vs KSPCG':>8} {'vs same':>7} "
               f"{'time target':>12} {'its vs PETSc':>14}")
    for row in rows:
        op = row["operator"]
        head = f"  {row['solver']:<6} {row['method']:<8} {row['pc']:<6} {op:<11}" + (
            f" {row['variant']:<{max(vw, 7)}}" if vw else "")
        if "solve_median" not in row:
            out.append(f"{head} all {row['runs']} runs failed")
            continue
        vs = f"{row['ratio_to_kspcg']:.3f}" if "ratio_to_kspcg" in row else "-"
        same = f"{row['ratio_to_counterpart']:.3f}" if "ratio_to_counterpart" in row else "-"
        tt = "-"
        if "time_ok" in row:
            tt = ("ok " if row["time_ok"] else "MISS") + f" <={row['time_target']:g}"
        it = "-"
        if "iterations_ok" in row:
            it = ("ok " if row["iterations_ok"] else "MISS") + f" {row['petsc_iterations']:g}"
        its = f"{row['iterations']:g}" + ("*" if len(row["iterations_all"]) > 1 else "")
        out.append(f"{head} {row['solve_median']:8.4f} {row['solve_min']:8.4f} {row['solve_max']:8.4f} "
                   f"{its:>6} {row['seconds_per_iteration']:9.3e} {row['true_residual']:10.3e} "
                   f"{row['converged']:>2}/{row['ok']:<2} {vs:>8} {same:>7} {tt:>12} {it:>14}")
    out.append("")
    out.append("solve s: median (min, max) over repetitions of the solve time, slowest rank, without MPI start-up and"
               " setup; its: iterations (* = varied between runs, median shown);")
    out.append("vs KSPCG: median solve time / PETSc KSPCG's, same pc; vs same: / the PETSc counterpart's (cg: KSPCG,"
               " cg-cg: KSPCG single-reduction, pipecg: KSPPIPECG, groppcg: KSPGROPPCG; KSPCG if it was not run);")
    out.append("time target: desync matrix-free cg <= 0.6, CSR cg <= 1.0 x KSPCG; its vs PETSc: ok when within "
               f"{ITERATION_TOLERANCE} of the counterpart's iterations (shown). PETSc operator: its matrix type.")
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    configs = []  # PETSc first: its KSPCG rows are the reference of the table
    if args.petsc_methods:
        if not is_executable(args.petsc):
            sys.exit(f"cg_compare.py: no executable PETSc driver at {args.petsc!r} (use --petsc; it is built as "
                     "BUILD_DIR/petsc_poisson3d where PETSc is found, see docs/benchmarks.md; --petsc-methods '' "
                     "for desync alone)")
        configs += [("petsc", m, pc, "aij", "") for m in args.petsc_methods for pc in args.pcs]
    if args.methods and args.operators:
        if not is_executable(args.desync):
            sys.exit(f"cg_compare.py: no executable desync at {args.desync!r} (use --desync, or --methods '' "
                     "for PETSc alone)")
        configs += [("desync", m, pc, op, v) for m in args.methods for op in args.operators for pc in args.pcs
                    for v, _ in args.variants]
    machine = bench_util.machine_info(args, __file__)

    def progress(cfg, rec):
        variant = f"{cfg[4]} " if cfg[4] else ""
        return f"{cfg[0]:<6} {cfg[1]:<7} {cfg[2]:<6} {cfg[3]:<11} {variant}{solve_progress(rec)}"

    runs, session = run_repetitions(configs, args.reps, lambda cfg, path: run_one(args, cfg, path), "desync-cgcmp-",
                                    None if args.quiet else progress)
    rows = summarise(args, configs, runs)
    print(fmt_table(args, rows))
    petsc_versions = print_machine_and_load(machine, session, runs)
    for row in rows:
        if "time_ok" in row:
            print(f"TARGET desync {row['operator']} cg, pc {row['pc']}: {row['ratio_to_kspcg']:.3f} x PETSc KSPCG "
                  f"(<= {row['time_target']:g}) {'ok' if row['time_ok'] else 'MISS'}")
    its_rows = [r for r in rows if "iterations_ok" in r]
    if its_rows:
        miss = [r for r in its_rows if not r["iterations_ok"]]
        print(f"TARGET iterations within {ITERATION_TOLERANCE} of PETSc: "
              + ("ok" if not miss else "MISS " + ", ".join(
                  f"{r['method']}/{r['pc']}/{r['operator']} {r['iterations']:g} vs {r['petsc_iterations']:g}"
                  for r in miss)))
    failed = print_failures(runs)
    if args.json:
        doc = {
            "benchmark": "desync cg_compare",
            "config": {"desync": args.desync, "petsc": args.petsc, "mpirun": args.mpirun, "np": args.np,
                       "grid": args.grid, "dims": args.dims, "rtol": args.rtol, "reps": args.reps, "methods": args.methods,
                       "petsc_methods": args.petsc_methods, "pcs": args.pcs, "operators": args.operators,
                       "desync_extra": args.desync_extra, "petsc_extra": args.petsc_extra,
                       "variants": [{"name": n, "args": x} for n, x in args.variants],
                       "timeout": args.timeout},
            "targets": {"time_ratio_to_kspcg_max": {f"{m} {op}": t for (m, op), t in TIME_TARGETS.items()},
                        "iterations_within": ITERATION_TOLERANCE, "counterparts": COUNTERPART},
            "machine": machine, "petsc_version": petsc_versions, **session,
            "summary": rows, "runs": runs,
        }
        write_json(args.json, doc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
