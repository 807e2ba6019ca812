#!/usr/bin/env python3
"""Optimized Schwarz side by side with PETSc: desync schwarz and PETSc's additive Schwarz (PCASM) on the
same 2D Poisson system.

Runs, in one interleaved loop, for every global size N (--global, default 128 and 256),

  MPIRUN -np NP DESYNC schwarz --global N --mode sync  --alpha inf  --overlap G --tol TOL --quiet --json TMP
  MPIRUN -np NP DESYNC schwarz --global N --mode sync  --alpha auto --overlap G --tol TOL --quiet --json TMP
  MPIRUN -np NP DESYNC schwarz --global N --mode async --alpha auto --overlap G --tol TOL --quiet --json TMP
  MPIRUN -np NP PETSC_DRIVER -n N -method rasrich|cgasm -overlap G -local L -rtol TOL -json TMP
  MPIRUN -np NP PETSC_DRIVER -n N -method rasrich -overlap G -local L -rtol TOL -stop local -json TMP

(PETSC_DRIVER is bench/petsc/petsc_poisson2d_asm.c, built as BUILD_DIR/petsc_poisson2d_asm where PETSc
is found; L runs over --petsc-local, the last line with the first of them only). Both sides solve
-Laplace(u) = f on the unit square, 5-point differences on N x N interior points with the Dirichlet values
on the right-hand side (include/desync/problems/poisson2d.hpp), from a zero initial guess, on the
same process grid (desync's balanced grid; the PETSc driver's MPI_Dims_create, the same grid below 72
ranks, or --dims for both), one subdomain per rank: the rank's block extended by G points
toward every neighbour, solved exactly. PETSc's rasrich (KSPRICHARDSON + PCASM restrict) is, iteration
for iteration, desync's sync --alpha inf (classical parallel Schwarz); cgasm is KSPCG + PCASM basic.

The stopping tests differ: desync stops when every rank's residual on its own points meets
||r_p|| < tol ||b_p|| (Yamazaki et al., 2019, section 4.3), PETSc when ||r|| <= tol ||b|| globally. The
table shows both the iterations each run took and, for desync sync runs, the first iteration at which
desync's global residual (its residual history: sqrt(sum_p ||r_p||^2) / ||b|| at every iteration) met
the global test, and the PETSc rasrich run with desync's rule (-stop local), which should take as many
iterations as desync's --alpha inf with the same true residual.

Every repetition visits all configurations in a rotated order, every other one reversed. Before each
run the script waits (--wait-idle) until the CPUs are nearly idle, and it measures the CPU time other
processes took while the run ran: a run during which they took more than 10 % of a core counts as
disturbed (column dist; --exclude-disturbed leaves such runs out of the statistics). The table
reports per configuration: iterations (median), the first iteration meeting the global test ("its@g"),
the solve time (median, min, max; desync: wall_time of its record, the slowest rank's solve after the
factorisation; PETSc: KSPSolve alone, slowest rank), the factorisation time (desync: CHOLMOD, slowest
rank; PETSc: KSPSetUpOnBlocks, the subdomain factorisations, slowest rank; PCSetUp's other work, the
subdomain sets and matrices, is in the JSON as setup_seconds), the true residual ||b - A u|| / ||b||,
max |u - u_exact|, and the ratio of the median solve time to PETSc rasrich's (same N, first local
solver). Target: desync --alpha inf's iterations within 10 % of PETSc rasrich's; printed ok or MISS.

Standard library only. Example:
  python3 bench/schwarz_compare.py --desync build/bench/desync --petsc build/bench/petsc_poisson2d_asm \\
          --mpirun mpirun.openmpi --json schwarz_compare.json
"""
import argparse
import json
import os
import shlex
import sys
import time

import bench_util
from bench_util import (add_desync_option, add_mpirun_option, count, is_executable, median, one_thread_env,
                        print_failures, print_machine_and_load, record_outcome, run_for_json, run_repetitions,
                        solve_progress, split_choices, write_json)
from desync_tools.runner.machine import HostLoad, cpu_busy_seconds

# desync configurations: name -> (mode, alpha)
DESYNC_CONFIGS = {"sync-inf": ("sync", "inf"), "sync-auto": ("sync", "auto"), "async-auto": ("async", "auto")}
PETSC_METHODS = ("rasrich", "cgasm")
LOCAL_SOLVERS = ("cholmod", "cholesky", "lu", "cholmod-simplicial")
ITERATION_TOLERANCE = 0.10  # desync --alpha inf's iterations within 10 % of PETSc rasrich's
DISTURBED_SHARE = 0.10  # a run during which other processes took more than this share of a core


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_desync_option(p)
    p.add_argument("--petsc", default=os.environ.get("PETSC_SCHWARZ_DRIVER"),
                   help="path of the PETSc driver (default: $PETSC_SCHWARZ_DRIVER, else petsc_poisson2d_asm next "
                        "to --desync)")
    add_mpirun_option(p)
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--global", dest="sizes", default="128,256",
                   help="comma-separated global sizes N (N x N interior points; default 128,256)")
    p.add_argument("--dims", help="process grid PXxPY for both (0 entries: chosen by each side, alike below 72 ranks; default: all chosen)")
    p.add_argument("--overlap", type=int, default=1, help="gamma, points of overlap (default 1)")
    p.add_argument("--tol", type=float, default=1e-7, help="relative tolerance (default 1e-7, desync's --tol)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each configuration (default 5)")
    p.add_argument("--configs", default=",".join(DESYNC_CONFIGS),
                   help="comma-separated desync configurations (default sync-inf,sync-auto,async-auto; empty: none)")
    p.add_argument("--petsc-methods", default=",".join(PETSC_METHODS),
                   help="comma-separated PETSc driver methods (default rasrich,cgasm; empty: none)")
    p.add_argument("--petsc-local", default="cholmod,cholesky",
                   help="comma-separated PETSc subdomain solvers: cholmod (CHOLMOD with its default settings, as "
                        "desync), cholmod-simplicial (CHOLMOD's simplicial factorisation), cholesky, lu (PETSc's "
                        "own, nested dissection) (default cholmod,cholesky)")
    p.add_argument("--no-local-stop", action="store_true",
                   help="skip the PETSc rasrich run with desync's every-rank-local stopping rule")
    p.add_argument("--desync-extra", default="", help="extra desync arguments for every run, one shell-quoted string")
    p.add_argument("--petsc-extra", default="", help="extra PETSc driver arguments, one shell-quoted string")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed for one run (default 300)")
    p.add_argument("--wait-idle", type=float, default=30.0,
                   help="before each run, wait up to this many seconds until the CPUs are at most 10%% busy over "
                        "half a second (a machine shared with other work; default 30, 0: do not wait)")
    p.add_argument("--exclude-disturbed", action="store_true",
                   help="compute each row's statistics from its undisturbed runs only (all runs when every one was "
                        "disturbed); the JSON keeps every run")
    p.add_argument("--json", help="write the configuration, machine, summary rows and every run to this file")
    p.add_argument("--quiet", action="store_true", help="no progress line per run")
    a = p.parse_args(argv)
    a.configs = split_choices(p, a.configs, tuple(DESYNC_CONFIGS), "desync configuration")
    a.petsc_methods = split_choices(p, a.petsc_methods, PETSC_METHODS, "PETSc method")
    a.petsc_local = split_choices(p, a.petsc_local, LOCAL_SOLVERS, "local solver")
    if a.petsc_methods and not a.petsc_local:
        p.error("--petsc-local names no local solver")
    try:
        a.sizes = [int(x) for x in a.sizes.split(",") if x]
    except ValueError:
        p.error(f"--global must be comma-separated positive integers, not {a.sizes!r}")
    if not a.sizes or min(a.sizes) < 1:
        p.error("--global must name positive sizes")
    if not a.configs and not a.petsc_methods:
        p.error("nothing to run")
    if a.reps < 1 or a.np < 1 or a.overlap < 1:
        p.error("--reps, --np and --overlap must be >= 1")
    if a.petsc is None:
        a.petsc = os.path.join(os.path.dirname(a.desync) or ".", "petsc_poisson2d_asm")
    return a


# A configuration: (solver, name, N, local solver); PETSc names: rasrich, cgasm, rasrich-localstop.
def label(cfg):
    solver, name, n, local = cfg
    return f"{name}/{local}" if solver == "petsc" else name


def command(args, cfg, json_path):
    solver, name, n, local = cfg
    launch = shlex.split(args.mpirun) + ["-np", str(args.np)]
    dims = args.dims
    if solver == "desync":
        mode, alpha = DESYNC_CONFIGS[name]
        return (launch + [args.desync, "schwarz", "--global", str(n), "--mode", mode, "--alpha", alpha, "--overlap",
                          str(args.overlap), "--tol", f"{args.tol:g}", "--quiet", "--json", json_path]
                + (["--dims", dims] if dims else []) + shlex.split(args.desync_extra))
    method = "rasrich" if name == "rasrich-localstop" else name
    return (launch + [args.petsc, "-n", str(n), "-method", method, "-overlap", str(args.overlap), "-local", local,
                      "-rtol", f"{args.tol:g}", "-json", json_path]
            + (["-stop", "local"] if name == "rasrich-localstop" else [])
            + (["-dims", dims] if dims else []) + shlex.split(args.petsc_extra))


def parse_desync(j, tol):
    it = j["iterations"]  # {min, mean, max} over the ranks
    details = j.get("details") or {}
    if isinstance(details, str):
        details = json.loads(details)
    hist = j.get("residual_history") or {}
    first_global = None
    # sync: a history point every iteration, the global residual of that iteration's iterate; async:
    # points at completed votes, each rank's residual of its own latest test (approximate).
    for k, r in zip(hist.get("iteration", []), hist.get("residual", [])):
        if r < tol:
            first_global = count(k)
            break
    return {
        "solve_seconds": float(j["wall_time"]),
        "iterations": count(it["max"] if isinstance(it, dict) else it),
        "iterations_min": count(it["min"] if isinstance(it, dict) else it),
        "iterations_global_criterion": first_global,
        "factor_seconds": float(details.get("factor_seconds", float("nan"))),
        "setup_seconds": None,
        "true_residual": float(j["true_residual"]),
        "max_error": float(details.get("error_max", float("nan"))),
        "alpha": details.get("alpha"),
        "converged": bool(j["converged"]),
        "stop_reason": j.get("stop_reason", ""),
        "options": j.get("options"),
        "process_grid": j.get("process_grid"),
        "mpi_library": j.get("mpi_library", ""),
    }


def parse_petsc(j):
    return {
        "solve_seconds": float(j["solve_seconds"]),
        "iterations": int(j["iterations"]),
        "iterations_min": int(j["iterations"]),
        "iterations_global_criterion": j.get("iterations_global_criterion"),
        "factor_seconds": float(j["factor_seconds"]),
        "setup_seconds": float(j["setup_seconds"]),
        "true_residual": float(j["true_residual"]),
        "max_error": float(j["max_error"]),
        "converged": bool(j["converged"]),
        "stop_reason": j.get("converged_reason", ""),
        "process_grid": j.get("process_grid"),
        "subdomain_unknowns": j.get("subdomain_unknowns"),
        "local_solver": j.get("local_solver", ""),
        "petsc_version": j.get("petsc_version", "").strip(),
    }


def wait_idle(limit_s, window=0.5, busy_max=0.1):
    """Waits up to limit_s until the machine's CPUs were at most busy_max busy (as a share of all CPUs)
    over a window; returns that share, measured last (None without /proc/stat)."""
    deadline = time.monotonic() + limit_s
    while True:
        b0 = cpu_busy_seconds()
        time.sleep(window)
        b1 = cpu_busy_seconds()
        if b0 is None or b1 is None:
            return None
        share = (b1 - b0) / (window * (os.cpu_count() or 1))
        if share <= busy_max or time.monotonic() >= deadline:
            return share


def run_one(args, cfg, json_path):
    cmd = command(args, cfg, json_path)
    busy_before = wait_idle(args.wait_idle) if args.wait_idle > 0 else None
    load = os.getloadavg()[0]
    # CPU time other processes take while the run runs: more than DISTURBED_SHARE of one core (of all
    # cores together) on average marks the run as disturbed.
    host = HostLoad(per_core=DISTURBED_SHARE / (os.cpu_count() or 1))
    # CHOLMOD's supernodal steps and PETSc's vector kernels call BLAS: one thread per rank, both sides.
    rc, err, elapsed = run_for_json(cmd, json_path, args.timeout, one_thread_env())
    beside = host.finish()
    solver, name, n, local = cfg
    rec = {"solver": solver, "config": name, "n": n, "local": local, "command": shlex.join(cmd),
           "exit_code": rc, "elapsed": elapsed, "loadavg_1min_before": load, "busy_share_before": busy_before,
           "foreign_cpu_seconds": beside["foreign_cpu_seconds"], "disturbed": beside["disturbed"]}
    parse = (lambda j: parse_desync(j, args.tol)) if solver == "desync" else parse_petsc
    return record_outcome(rec, rc, err, json_path, parse, solver)


def summarise(args, configs, runs):
    rows = []
    for cfg in configs:
        solver, name, n, local = cfg
        rs = [r for r in runs if (r["solver"], r["config"], r["n"], r["local"]) == cfg]
        ok = [r for r in rs if r["ok"]]
        row = {"solver": solver, "config": name, "n": n, "local": local, "runs": len(rs), "ok": len(ok),
               "disturbed": sum(1 for r in rs if r.get("disturbed"))}
        if args.exclude_disturbed and any(not r.get("disturbed") for r in ok):
            ok = [r for r in ok if not r.get("disturbed")]
        row["used"] = len(ok)
        if ok:
            t = [r["solve_seconds"] for r in ok]
            its = median([r["iterations"] for r in ok])
            g = [r["iterations_global_criterion"] for r in ok if r["iterations_global_criterion"] is not None]
            row.update({
                "solve_median": median(t), "solve_min": min(t), "solve_max": max(t),
                "iterations": its, "iterations_all": sorted({r["iterations"] for r in ok}),
                "iterations_global_criterion": median(g) if g else None,
                "seconds_per_iteration": median(t) / its if its else float("nan"),
                "factor_median": median([r["factor_seconds"] for r in ok]),
                "setup_median": median([r["setup_seconds"] for r in ok]) if solver == "petsc" else None,
                "true_residual": median([r["true_residual"] for r in ok]),
                "true_residual_max": max(r["true_residual"] for r in ok),
                "max_error": median([r["max_error"] for r in ok]),
                "converged": sum(1 for r in ok if r["converged"]),
            })
        rows.append(row)

    def find(solver, name, n, local=None):
        for r in rows:
            if (r["solver"], r["config"], r["n"]) == (solver, name, n) and (local is None or r["local"] == local) \
                    and "solve_median" in r:
                return r
        return None

    first_local = args.petsc_local[0] if args.petsc_local else None
    for row in rows:
        if "solve_median" not in row:
            continue
        ref = find("petsc", "rasrich", row["n"], first_local)
        if ref:
            row["ratio_to_rasrich"] = row["solve_median"] / ref["solve_median"]
            row["ratio_to_rasrich_of_minima"] = row["solve_min"] / ref["solve_min"]
        if row["solver"] == "desync" and row["config"] == "sync-inf" and ref:
            row["petsc_iterations"] = ref["iterations"]
            row["iterations_ratio"] = row["iterations"] / ref["iterations"]
            row["iterations_ok"] = abs(row["iterations"] - ref["iterations"]) <= ITERATION_TOLERANCE * ref["iterations"]
    return rows


def fmt_table(args, rows):
    out = [f"poisson2d N x N interior points, overlap {args.overlap}, tol {args.tol:g} (zero initial guess), "
           f"{args.np} ranks, median of {args.reps}"]
    out.append(f"  {'N':>4} {'solver':<6} {'config':<26} {'its':>6} {'its@g':>6} {'solve s':>8} {'min':>8} {'max':>8} "
               f"{'s/it':>9} {'factor s':>8} {'true resid':>10} {'max error':>9} {'conv':>5} {'dist':>4} {'vs RAS':>7} {'(min)':>6} "
               f"{'its target':>16}")
    for row in rows:
        head = f"  {row['n']:>4} {row['solver']:<6} {label((row['solver'], row['config'], row['n'], row['local'])):<26}"
        if "solve_median" not in row:
            out.append(f"{head} all {row['runs']} runs failed")
            continue
        vs = f"{row['ratio_to_rasrich']:.3f}" if "ratio_to_rasrich" in row else "-"
        vs_min = f"{row['ratio_to_rasrich_of_minima']:.3f}" if "ratio_to_rasrich_of_minima" in row else "-"
        tt = "-"
        if "iterations_ok" in row:
            tt = ("ok " if row["iterations_ok"] else "MISS") + f" {row['iterations_ratio']:.3f}x{row['petsc_iterations']:g}"
        its = f"{row['iterations']:g}" + ("*" if len(row["iterations_all"]) > 1 else "")
        g = row["iterations_global_criterion"]
        g = "-" if g is None else f"{g:g}"
        out.append(f"{head} {its:>6} {g:>6} {row['solve_median']:8.4f} {row['solve_min']:8.4f} {row['solve_max']:8.4f} "
                   f"{row['seconds_per_iteration']:9.3e} {row['factor_median']:8.4f} {row['true_residual']:10.3e} "
                   f"{row['max_error']:9.3e} {row['converged']:>2}/{row['used']:<2} {row['disturbed']:>4} {vs:>7} {vs_min:>6} {tt:>16}")
    out.append("")
    out.append("its: iterations (median; * = varied between runs); its@g: first iteration at which ||r|| <= tol ||b||"
               " held globally (desync: from its residual history, exact in sync mode, approximate in async;")
    out.append("PETSc: its own test); desync stops when every rank has ||r_p|| < tol ||b_p||, PETSc rasrich/cgasm"
               " on the global test, rasrich-localstop on desync's rule.")
    out.append("solve s: median (min, max) solve time, slowest rank, factorisation excluded (desync: wall_time;"
               " PETSc: KSPSolve); factor s: subdomain factorisations, slowest rank (median);")
    out.append(f"conv: runs that met the tolerance / runs counted; dist: runs during which other processes took more"
               f" than {DISTURBED_SHARE:.0%} of a core ("
               + ("left out of the statistics where the row has undisturbed runs);" if args.exclude_disturbed
                  else "included in the statistics);"))
    out.append(f"vs RAS: median solve time / PETSc rasrich's with the first local solver ({args.petsc_local[0] if args.petsc_local else '-'}),"
               " (min): the same of the minima, less sensitive to a busy machine; "
               f"its target: desync sync-inf's iterations within {ITERATION_TOLERANCE:.0%} of PETSc rasrich's"
               " (ratio x rasrich's count).")
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    configs = []
    for n in args.sizes:  # PETSc first: its rasrich rows are the reference of the table
        if args.petsc_methods:
            configs += [("petsc", m, n, local) for m in args.petsc_methods for local in args.petsc_local]
            if "rasrich" in args.petsc_methods and not args.no_local_stop:
                configs.append(("petsc", "rasrich-localstop", n, args.petsc_local[0]))
        configs += [("desync", c, n, "cholmod") for c in args.configs]
    if args.petsc_methods and not is_executable(args.petsc):
        sys.exit(f"schwarz_compare.py: no executable PETSc driver at {args.petsc!r} (use --petsc; it is built as "
                 "BUILD_DIR/petsc_poisson2d_asm where PETSc is found, see docs/benchmarks.md; --petsc-methods '' "
                 "for desync alone)")
    if args.configs and not is_executable(args.desync):
        sys.exit(f"schwarz_compare.py: no executable desync at {args.desync!r} (use --desync, or --configs '' "
                 "for PETSc alone)")
    machine = bench_util.machine_info(args, __file__)

    def progress(cfg, rec):
        disturbed = rec["ok"] and rec["disturbed"]
        return (f"{cfg[2]:>4} {cfg[0]:<6} {label(cfg):<26} {solve_progress(rec)}"
                + (f", disturbed ({rec['foreign_cpu_seconds']:.2f} CPU s by others)" if disturbed else ""))

    runs, session = run_repetitions(configs, args.reps, lambda cfg, path: run_one(args, cfg, path),
                                    "desync-schwarzcmp-", None if args.quiet else progress)
    rows = summarise(args, configs, runs)
    print(fmt_table(args, rows))
    petsc_versions = print_machine_and_load(machine, session, runs)
    for row in rows:
        if "iterations_ok" in row:
            print(f"TARGET N={row['n']}: desync sync --alpha inf {row['iterations']:g} iterations, PETSc rasrich "
                  f"{row['petsc_iterations']:g} ({row['iterations_ratio']:.3f}x, within "
                  f"{ITERATION_TOLERANCE:.0%}) {'ok' if row['iterations_ok'] else 'MISS'}")
    disturbed = sum(1 for r in runs if r.get("disturbed"))
    print(f"{disturbed} of {len(runs)} runs disturbed (other processes took more than {DISTURBED_SHARE:.0%} of a core"
          " while they ran)")
    failed = print_failures(runs)
    if args.json:
        doc = {
            "benchmark": "desync schwarz_compare",
            "config": {"desync": args.desync, "petsc": args.petsc, "mpirun": args.mpirun, "np": args.np,
                       "sizes": args.sizes, "dims": args.dims, "overlap": args.overlap, "tol": args.tol,
                       "reps": args.reps, "configs": args.configs, "petsc_methods": args.petsc_methods,
                       "petsc_local": args.petsc_local, "local_stop_run": not args.no_local_stop,
                       "desync_extra": args.desync_extra, "petsc_extra": args.petsc_extra,
                       "timeout": args.timeout, "wait_idle": args.wait_idle,
                       "exclude_disturbed": args.exclude_disturbed},
            "targets": {"sync_inf_iterations_within_of_rasrich": ITERATION_TOLERANCE},
            "disturbed_share": DISTURBED_SHARE,
            "machine": machine, "petsc_version": petsc_versions, **session,
            "summary": rows, "runs": runs,
        }
        write_json(args.json, doc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
