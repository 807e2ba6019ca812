#!/usr/bin/env python3
"""desync side by side with PETSc on matrices read from files: the matrices of bench/make_matrices.py (its
manifest.json), solved by desync schwarz|krylov|jacobi --matrix and by PETSc's PCASM / PCGAMG
(bench/petsc/petsc_matrix_asm.c), at several rank counts.

For every matrix M of the manifest and every rank count P (--ranks), in one interleaved loop (A, b, x: the
matrix's A.petsc, b.petsc, x.petsc; TOL: --tol, 1e-8 relative residual everywhere; D: --overlap; K: --restart):

 (a) stationary restricted additive Schwarz
     petsc  rich-ras            PETSC -A A -b b -x x -solver richardson -pc asm -restricted 1 -overlap D -rtol TOL
     petsc  rich-ras-localstop  the same with -stop local (desync's every-rank-local rule)
     desync schwarz-sync        DESYNC schwarz --matrix A --rhs b --overlap D --mode sync --tol TOL
 (b) GMRES(K) right-preconditioned by RAS
     petsc  gmres-ras           PETSC ... -solver gmres -pc asm -restricted 1 -overlap D -restart K
     desync gmres-ras           DESYNC krylov --method gmres --pc ras --overlap D --restart K --matrix A --rhs b --tol TOL
 (c) CG preconditioned by ASM (symmetric matrices only)
     petsc  cg-asm              PETSC ... -solver cg -pc asm -restricted 0 -overlap D
     desync cg-asm              DESYNC krylov --method cg --pc asm --overlap D --matrix A --rhs b --tol TOL
 (d) synchronous against asynchronous, desync alone, each also with --slow-rank R --slow-factor F
     desync jacobi-sync, jacobi-async      DESYNC jacobi --matrix A --rhs b --mode sync|async --tol TOL
     desync schwarz-sync, schwarz-async    DESYNC schwarz --matrix A --rhs b --overlap D --mode sync|async --tol TOL
     (names with -slow: the same with --slow-rank R --slow-factor F)
 (e) CG with algebraic multigrid (symmetric positive definite matrices only)
     petsc  cg-gamg             PETSC ... -solver cg -pc gamg
     petsc  cg-hypre            PETSC ... -solver cg -pc hypre (BoomerAMG; fails where PETSc lacks hypre)
 (f) two-level Schwarz (--coarse gdsw) beside its one-level form, PETSc's GMRES + RAS and its AMG
     desync cg1-asm, cg1-asm-gdsw           DESYNC cg --pc asm --overlap D [--coarse gdsw] --matrix A --rhs b
     desync cg1-asm-gdsw-wide               as cg1-asm-gdsw with --overlap W (--wide-overlap, default 8)
     desync gmres-ras-gdsw                  as gmres-ras, with --coarse gdsw
     desync schwarz-sync-gdsw, -async-gdsw  as schwarz-sync, schwarz-async, with --coarse gdsw
     and desync gmres-ras, schwarz-sync, schwarz-async, petsc gmres-ras, cg-gamg, cg-hypre
 (g) cheaper subdomains and coarse spaces, beside cg1-asm, cg1-asm-gdsw, petsc cg-gamg, cg-hypre
     desync cg1-asm-ilu0, cg1-asm-gdsw-ilu0  as cg1-asm, cg1-asm-gdsw with --local-solver ilu0
     desync cg1-asm-rgdsw, -rgdsw-ilu0       as cg1-asm-gdsw with --coarse rgdsw, exact and ILU(0)
     desync cg1-asm-ilu1, -ilu2, -ilu3       as cg1-asm with --local-solver ilu1, ilu2, ilu3 (ILU(k))
     desync cg1-asm-milu0 .. -milu3          as cg1-asm-ilu0 .. -ilu3 with --ilu-relax R (--ilu-relax, default
                                             0.99): relaxed modified ILU(k), the dropped fill on the diagonal
     desync cg1-asm-gdsw-pieces, -rgdsw-pieces  as cg1-asm-gdsw, -rgdsw with --subdomains-per-rank K (--pieces,
                                             default 64): K exact subdomain solves per rank and the coarse
                                             level on the K P pieces

--skip side:name,... leaves configurations out (an exact factorisation known to outlast --timeout on a
large matrix). Every desync run with --quiet --json TMP (and --time-limit T: a run that reaches it is recorded as not
converged), every PETSc run with -json TMP, all under MPIRUN -np P with one BLAS/OpenMP thread per rank.
Stopping tests: PETSc and desync krylov stop when ||r|| <= TOL ||b|| (unpreconditioned residual); desync
jacobi and schwarz when every rank has ||r_p|| < TOL ||b_p|| on its own rows (Yamazaki et al., 2019,
section 4.3), hence rich-ras-localstop, and for desync's synchronous runs the first iteration at which
the global test held (its residual history), column its@g.

Every repetition (--reps) visits all configurations in a rotated order, every other one reversed. A run
that fails (a missing option, a crash, a timeout) is recorded with its command and error; the others go
on. The table reports per matrix, rank count and configuration the median iterations, solve time (desync:
wall_time of its record, the slowest rank's solve, which for jacobi and schwarz starts after the
set-up and for krylov has the preconditioner's set-up taken out; PETSc: KSPSolve after KSPSetUp, slowest
rank; both set-ups are recorded as setup_seconds), time per iteration and
true residual; then the pairs: desync's iterations and time per iteration over PETSc's for (a), (b), (c),
and for (d) async's solve time over sync's, with and without the slow rank. --json writes the
configuration, the machine, the manifest, the summary, the pairs and every run (its command, exit code,
numbers or error).

Standard library only. Example:
  build/venv/bin/python bench/make_matrices.py --size medium --out build/bench/matrices
  python3 bench/matrix_compare.py --desync build/bench/desync --petsc build/bench/petsc_matrix_asm \\
          --mpirun mpirun.openmpi --matrices build/bench/matrices --ranks 2,4 --reps 3 --json matrix_compare.json
"""
import argparse
import json
import os
import shlex
import sys

import bench_util
from bench_util import (add_desync_option, add_mpirun_option, count, first_error_line, is_executable, median,
                        one_thread_env, run_for_json, run_repetitions, split_choices, write_json)

GROUPS = ("a", "b", "c", "d", "e", "f", "g")
GROUP_TITLES = {
    "a": "(a) Richardson + RAS: PETSc KSPRICHARDSON/PCASM restrict vs desync schwarz --mode sync",
    "b": "(b) GMRES + RAS: PETSc KSPGMRES/PCASM restrict vs desync krylov --method gmres --pc ras",
    "c": "(c) CG + ASM: PETSc KSPCG/PCASM basic vs desync krylov --method cg --pc asm (symmetric)",
    "d": "(d) desync sync vs async: jacobi and schwarz, with and without a slow rank",
    "e": "(e) CG + GAMG: PETSc KSPCG/PCGAMG (SPD), and CG + hypre BoomerAMG where PETSc has hypre",
    "f": "(f) two-level Schwarz: desync cg --pc asm, krylov gmres --pc ras, schwarz sync and async with "
         "--coarse gdsw, their one-level counterparts, PETSc GMRES + RAS, CG + GAMG and CG + BoomerAMG",
    "g": "(g) cheaper subdomains and coarse spaces: desync cg --pc asm with ILU(0) subdomain solves "
         "(--local-solver ilu0..ilu3, plain and relaxed modified), the RGDSW coarse space, and K exact subdomains per "
         "rank with the coarse level "
         "on the pieces, beside its exact one- and two-level forms and PETSc "
         "CG + GAMG and CG + BoomerAMG",
}
# PETSc configurations: name -> (groups, -solver, -pc, -restricted, -stop, symmetric only, SPD only)
PETSC_CONFIGS = {
    "rich-ras": ("a", "richardson", "asm", 1, "global", False, False),
    "rich-ras-localstop": ("a", "richardson", "asm", 1, "local", False, False),
    "gmres-ras": ("bf", "gmres", "asm", 1, "global", False, False),
    "cg-asm": ("c", "cg", "asm", 0, "global", True, False),
    "cg-gamg": ("efg", "cg", "gamg", None, "global", True, True),
    "cg-hypre": ("efg", "cg", "hypre", None, "global", True, True),
}
# desync configurations: name -> (groups, command, mode or method, slow rank, symmetric only)
DESYNC_CONFIGS = {
    "schwarz-sync": ("adf", "schwarz", "sync", False, False),
    "schwarz-async": ("df", "schwarz", "async", False, False),
    "schwarz-sync-slow": ("d", "schwarz", "sync", True, False),
    "schwarz-async-slow": ("d", "schwarz", "async", True, False),
    "jacobi-sync": ("d", "jacobi", "sync", False, False),
    "jacobi-async": ("d", "jacobi", "async", False, False),
    "jacobi-sync-slow": ("d", "jacobi", "sync", True, False),
    "jacobi-async-slow": ("d", "jacobi", "async", True, False),
    "gmres-ras": ("bf", "krylov", "gmres", False, False),
    "cg-asm": ("c", "krylov", "cg", False, True),
    # (f): desync cg (the CG solver of `desync cg`) one- and two-level, and the others with the GDSW coarse space
    "cg1-asm": ("fg", "cg", "cg", False, True),
    "cg1-asm-gdsw": ("fg", "cg", "cg", False, True),
    "cg1-asm-gdsw-wide": ("f", "cg", "cg", False, True),
    "gmres-ras-gdsw": ("f", "krylov", "gmres", False, False),
    "schwarz-sync-gdsw": ("f", "schwarz", "sync", False, False),
    "schwarz-async-gdsw": ("f", "schwarz", "async", False, False),
    # (g): the same CG with ILU(0) subdomain solves and with RGDSW
    "cg1-asm-ilu0": ("g", "cg", "cg", False, True),
    "cg1-asm-gdsw-ilu0": ("g", "cg", "cg", False, True),
    "cg1-asm-rgdsw": ("g", "cg", "cg", False, True),
    "cg1-asm-rgdsw-ilu0": ("g", "cg", "cg", False, True),
    "cg1-asm-ilu1": ("g", "cg", "cg", False, True),
    "cg1-asm-ilu2": ("g", "cg", "cg", False, True),
    "cg1-asm-ilu3": ("g", "cg", "cg", False, True),
    "cg1-asm-milu0": ("g", "cg", "cg", False, True),
    "cg1-asm-milu1": ("g", "cg", "cg", False, True),
    "cg1-asm-milu2": ("g", "cg", "cg", False, True),
    "cg1-asm-milu3": ("g", "cg", "cg", False, True),
    "cg1-asm-gdsw-pieces": ("g", "cg", "cg", False, True),
    "cg1-asm-rgdsw-pieces": ("g", "cg", "cg", False, True),
}
# The coarse space of a desync configuration (--coarse; the others give none)
COARSE = {"cg1-asm-gdsw": "gdsw", "cg1-asm-gdsw-wide": "gdsw", "gmres-ras-gdsw": "gdsw", "schwarz-sync-gdsw": "gdsw",
          "schwarz-async-gdsw": "gdsw", "cg1-asm-gdsw-ilu0": "gdsw", "cg1-asm-rgdsw": "rgdsw", "cg1-asm-rgdsw-ilu0": "rgdsw",
          "cg1-asm-gdsw-pieces": "gdsw", "cg1-asm-rgdsw-pieces": "rgdsw"}
# The configurations with --subdomains-per-rank (--pieces)
PIECES = ("cg1-asm-gdsw-pieces", "cg1-asm-rgdsw-pieces")
# The subdomain solver of a desync configuration (--local-solver; the others take the default, auto)
LOCAL_SOLVER = {"cg1-asm-ilu0": "ilu0", "cg1-asm-gdsw-ilu0": "ilu0", "cg1-asm-rgdsw-ilu0": "ilu0",
                "cg1-asm-ilu1": "ilu1", "cg1-asm-ilu2": "ilu2", "cg1-asm-ilu3": "ilu3",
                "cg1-asm-milu0": "ilu0", "cg1-asm-milu1": "ilu1", "cg1-asm-milu2": "ilu2", "cg1-asm-milu3": "ilu3"}
# The configurations with --ilu-relax (relaxed modified ILU(k))
RELAXED = ("cg1-asm-milu0", "cg1-asm-milu1", "cg1-asm-milu2", "cg1-asm-milu3")
# The pairs of the table: (group, desync config, PETSc config)
PAIRS = (("a", "schwarz-sync", "rich-ras-localstop"), ("a", "schwarz-sync", "rich-ras"),
         ("b", "gmres-ras", "gmres-ras"), ("c", "cg-asm", "cg-asm"))
# (d): (async config, its sync counterpart)
SYNC_ASYNC = (("jacobi-async", "jacobi-sync"), ("jacobi-async-slow", "jacobi-sync-slow"),
              ("schwarz-async", "schwarz-sync"), ("schwarz-async-slow", "schwarz-sync-slow"))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    add_desync_option(p)
    p.add_argument("--petsc", default=os.environ.get("PETSC_MATRIX_DRIVER"),
                   help="path of the PETSc driver (default: $PETSC_MATRIX_DRIVER, else petsc_matrix_asm next to "
                        "--desync)")
    add_mpirun_option(p)
    p.add_argument("--matrices", required=True,
                   help="folder with manifest.json (bench/make_matrices.py --out), or one system written by desync "
                        "--export-system (A.petsc, b.petsc; named after the folder)")
    p.add_argument("--spd", action="store_true",
                   help="an --export-system folder's matrix is symmetric positive definite (the CG runs)")
    p.add_argument("--only", default="", help="comma-separated matrix names (default: all in the manifest)")
    p.add_argument("--ranks", default="2,4", help="comma-separated rank counts (default 2,4)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each configuration (default 3)")
    p.add_argument("--groups", default=",".join(GROUPS), help="comma-separated comparisons a-g (default all)")
    p.add_argument("--sides", default="petsc,desync", help="petsc, desync or both (default both)")
    p.add_argument("--skip", default="",
                   help="comma-separated configurations left out, side:name (desync:cg1-asm: a run known to outlast "
                        "--timeout on a large matrix)")
    p.add_argument("--tol", type=float, default=1e-8, help="relative residual tolerance for all (default 1e-8)")
    p.add_argument("--overlap", type=int, default=1, help="Schwarz overlap delta, both sides (default 1)")
    p.add_argument("--pieces", type=int, default=64,
                   help="group g's -pieces configurations: --subdomains-per-rank K (default 64)")
    p.add_argument("--ilu-relax", type=float, default=0.99,
                   help="group g's -milu configurations: desync's --ilu-relax R (default 0.99)")
    p.add_argument("--wide-overlap", type=int, default=8,
                   help="the overlap of (f)'s cg1-asm-gdsw-wide, desync alone (default 8)")
    p.add_argument("--restart", type=int, default=30, help="GMRES restart, both sides (default 30)")
    p.add_argument("--slow-rank", type=int, default=1, help="the slowed rank of the -slow runs (default 1)")
    p.add_argument("--slow-factor", type=float, default=2.0, help="its slow-down (default 2)")
    p.add_argument("--time-limit", type=float, default=30.0,
                   help="desync's --time-limit for every desync run, seconds (default 30; 0: none)")
    p.add_argument("--petsc-maxit", type=int, default=100000, help="PETSc's -maxit (default 100000)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed for one run (default 300)")
    p.add_argument("--desync-extra", default="", help="extra desync arguments for every run, one shell-quoted string")
    p.add_argument("--petsc-extra", default="", help="extra PETSc driver arguments, one shell-quoted string")
    p.add_argument("--json", help="write the configuration, machine, summary, pairs and every run to this file")
    p.add_argument("--quiet", action="store_true", help="no progress line per run")
    a = p.parse_args(argv)
    a.groups = split_choices(p, a.groups, GROUPS, "comparison")
    a.sides = split_choices(p, a.sides, ("petsc", "desync"), "side")
    try:
        a.ranks = [int(x) for x in a.ranks.split(",") if x]
    except ValueError:
        p.error(f"--ranks must be comma-separated positive integers, not {a.ranks!r}")
    if not a.ranks or min(a.ranks) < 1:
        p.error("--ranks must name positive rank counts")
    if a.reps < 1 or a.overlap < 0 or a.wide_overlap < 0 or a.restart < 1:
        p.error("--reps and --restart must be >= 1, --overlap and --wide-overlap >= 0")
    if not (0 < a.tol < 1):
        p.error("--tol must be in (0, 1)")
    if not (0 <= a.ilu_relax <= 1):
        p.error("--ilu-relax must be in [0, 1]")
    if a.petsc is None:
        a.petsc = os.path.join(os.path.dirname(a.desync) or ".", "petsc_matrix_asm")
    return a


def exported_system(args):
    """A folder written by `desync schwarz|cg --export-system DIR` (A.petsc, b.petsc, no manifest) as a
    manifest of one matrix named after the folder; symmetric positive definite with --spd."""
    a = os.path.join(args.matrices, "A.petsc")
    with open(a, "rb") as f:
        head = f.read(16)
    rows = int.from_bytes(head[4:8], "big")
    files = {"A": {"petsc": "A.petsc"}}
    if os.path.exists(os.path.join(args.matrices, "b.petsc")):
        files["b"] = {"petsc": "b.petsc"}
    name = os.path.basename(os.path.normpath(args.matrices))
    return {"generator": "desync --export-system", "matrices": [
        {"name": name, "rows": rows, "nnz": int.from_bytes(head[12:16], "big"), "symmetric": args.spd,
         "spd": args.spd, "files": files, "exact_solution": False}]}


def load_manifest(args):
    path = os.path.join(args.matrices, "manifest.json")
    if not os.path.exists(path) and os.path.exists(os.path.join(args.matrices, "A.petsc")):
        manifest = exported_system(args)
        return manifest, manifest["matrices"]
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"matrix_compare.py: cannot read {path}: {e} (write it with bench/make_matrices.py --out "
                 f"{args.matrices})")
    matrices = manifest.get("matrices", [])
    only = [x for x in args.only.split(",") if x]
    if only:
        known = {m["name"] for m in matrices}
        missing = [x for x in only if x not in known]
        if missing:
            sys.exit(f"matrix_compare.py: {', '.join(missing)} not in {path} (it has {', '.join(sorted(known))})")
        matrices = [m for m in matrices if m["name"] in only]
    return manifest, matrices


def file_of(args, matrix, key, fmt="petsc"):
    """The absolute path of the matrix's `key` file (A, b, x) in format fmt, or None."""
    rel = (matrix.get("files", {}).get(key) or {}).get(fmt)
    return os.path.abspath(os.path.join(args.matrices, rel)) if rel else None


def make_configs(args, matrices):
    """(side, name, matrix name, ranks) for every run configuration but --skip's."""
    skip = {x for x in args.skip.split(",") if x}
    known = {f"petsc:{n}" for n in PETSC_CONFIGS} | {f"desync:{n}" for n in DESYNC_CONFIGS}
    if skip - known:
        sys.exit(f"matrix_compare.py: --skip {','.join(sorted(skip - known))}: no such configuration "
                 f"(side:name, e.g. desync:cg1-asm)")
    configs = []
    for m in matrices:
        for p in args.ranks:
            if p > m["rows"]:
                continue
            if "petsc" in args.sides:
                for name, (groups, _, _, _, _, sym_only, spd_only) in PETSC_CONFIGS.items():
                    if not set(groups) & set(args.groups):
                        continue
                    if (sym_only and not m.get("symmetric")) or (spd_only and not m.get("spd")):
                        continue
                    if f"petsc:{name}" not in skip:
                        configs.append(("petsc", name, m["name"], p))
            if "desync" in args.sides:
                for name, (groups, _, _, slow, sym_only) in DESYNC_CONFIGS.items():
                    if not set(groups) & set(args.groups):
                        continue
                    if sym_only and not m.get("symmetric"):
                        continue
                    if slow and (p <= args.slow_rank):
                        continue  # no such rank to slow
                    if f"desync:{name}" not in skip:
                        configs.append(("desync", name, m["name"], p))
    return configs


def command(args, cfg, matrix, json_path):
    side, name, _, ranks = cfg
    launch = shlex.split(args.mpirun) + ["-np", str(ranks)]
    A, b, x = file_of(args, matrix, "A"), file_of(args, matrix, "b"), file_of(args, matrix, "x")
    if side == "petsc":
        _, solver, pc, restricted, stop, _, _ = PETSC_CONFIGS[name]
        cmd = launch + [args.petsc, "-A", A] + (["-b", b] if b else []) + (["-x", x] if x else [])
        cmd += ["-solver", solver, "-pc", pc, "-rtol", f"{args.tol:g}", "-maxit", str(args.petsc_maxit),
                "-stop", stop]
        if pc == "asm":
            cmd += ["-overlap", str(args.overlap), "-restricted", str(restricted)]
        if solver == "gmres":
            cmd += ["-restart", str(args.restart)]
        return cmd + ["-json", json_path] + shlex.split(args.petsc_extra)
    _, sub, mode, slow, _ = DESYNC_CONFIGS[name]
    system = ["--matrix", A] + (["--rhs", b] if b else [])
    if sub == "cg":
        overlap = args.wide_overlap if name == "cg1-asm-gdsw-wide" else args.overlap
        cmd = launch + [args.desync, "cg", "--pc", "asm", "--overlap", str(overlap)] + system
    elif sub == "krylov":
        cmd = launch + [args.desync, "krylov", "--method", mode, "--pc", "ras" if mode == "gmres" else "asm",
                        "--overlap", str(args.overlap)] + (["--restart", str(args.restart)] if mode == "gmres" else [])
        cmd += system
    elif sub == "schwarz":
        cmd = launch + [args.desync, "schwarz"] + system + ["--overlap", str(args.overlap), "--mode", mode]
    else:
        cmd = launch + [args.desync, "jacobi"] + system + ["--mode", mode]
    if name in COARSE:
        cmd += ["--coarse", COARSE[name]]
    if name in LOCAL_SOLVER:
        cmd += ["--local-solver", LOCAL_SOLVER[name]]
    if name in RELAXED:
        cmd += ["--ilu-relax", f"{args.ilu_relax:g}"]
    if name in PIECES:
        cmd += ["--subdomains-per-rank", str(args.pieces)]
    if slow:
        cmd += ["--slow-rank", str(args.slow_rank), "--slow-factor", f"{args.slow_factor:g}"]
    if args.time_limit > 0:
        cmd += ["--time-limit", f"{args.time_limit:g}"]
    return cmd + ["--tol", f"{args.tol:g}", "--quiet", "--json", json_path] + shlex.split(args.desync_extra)


def parse_desync(j, tol):
    """The numbers of a desync run record (docs/output.md)."""
    it = j["iterations"]  # jacobi/schwarz: {min, mean, max} over the ranks; krylov: a number
    its = count(it["max"] if isinstance(it, dict) else it)
    details = j.get("details") or {}
    if isinstance(details, str):
        details = json.loads(details)
    hist = j.get("residual_history") or {}
    first_global = None
    # sync: a point every iteration (the global residual); async: approximate (points at votes)
    for k, r in zip(hist.get("iteration", []) or [], hist.get("residual", []) or []):
        if r is not None and r <= tol:
            first_global = count(k)
            break
    wall = float(j["wall_time"])
    setup = details.get("setup_seconds")
    ranks = j.get("per_rank") or []
    if j.get("solver") in ("krylov", "cg"):
        # The family's wall_time includes the preconditioner's set-up (the subdomain factorisations);
        # PETSc's KSPSolve comes after KSPSetUp and KSPSetUpOnBlocks: compare like with like.
        setup = max((float((p.get("time") or {}).get("setup", 0.0)) for p in ranks), default=0.0)
        wall -= setup
    elif j.get("solver") == "schwarz" and ranks and "setup_seconds" in ranks[0]:
        setup = max(float(p["setup_seconds"]) for p in ranks)  # outside wall_time already
    tr = j.get("true_residual")
    return {
        "iterations": its,
        "iterations_min": count(it["min"] if isinstance(it, dict) else it),
        "iterations_global_criterion": first_global,
        "solve_seconds": wall,
        "seconds_per_iteration": wall / its if its else float("nan"),
        "true_residual": float(tr) if tr is not None else float("nan"),
        "converged": bool(j.get("converged")),
        "stop_reason": j.get("stop_reason", ""),
        "factor_seconds": details.get("factor_seconds"),
        "setup_seconds": setup,
        "local_solver": details.get("local_solvers") or details.get("pc_description"),
        "coarse_functions": details.get("coarse_functions"),
        "coarse_setup_seconds": details.get("coarse_setup_seconds"),
        "partition": details.get("partition"),
        "mpi_library": j.get("mpi_library", ""),
    }


def parse_petsc(j):
    return {
        "iterations": int(j["iterations"]),
        "iterations_min": int(j["iterations"]),
        "iterations_global_criterion": j.get("iterations_global_criterion"),
        "solve_seconds": float(j["solve_seconds"]),
        "seconds_per_iteration": float(j["seconds_per_iteration"]) if j["iterations"] else float("nan"),
        "true_residual": float(j["true_residual"]),
        "error_max_relative": j.get("error_max_relative"),
        "converged": bool(j["converged"]),
        "stop_reason": j.get("converged_reason", ""),
        "setup_seconds": float(j["setup_seconds"]),
        "factor_seconds": float(j["factor_seconds"]),
        "load_seconds": float(j["load_seconds"]),
        "pc_description": j.get("pc_description", ""),
        "subdomain_unknowns": j.get("subdomain_unknowns"),
        "gamg_levels": j.get("gamg_levels"),
        "petsc_version": (j.get("petsc_version") or "").strip(),
    }


def launch_env():
    """one_thread_env(), letting Open MPI place more ranks than cores (4 ranks on a 2-core machine; MPICH
    ignores the variable)."""
    env = one_thread_env()
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def run_one(args, cfg, matrices, json_path):
    side, name, mname, ranks = cfg
    cmd = command(args, cfg, matrices[mname], json_path)
    rec = {"side": side, "config": name, "matrix": mname, "ranks": ranks, "command": shlex.join(cmd)}
    try:
        rc, err, elapsed = run_for_json(cmd, json_path, args.timeout, launch_env())
    except OSError as e:  # e.g. the launcher itself is missing
        rec.update({"exit_code": None, "elapsed": 0.0, "ok": False, "error": f"cannot run: {e}"})
        return rec
    rec.update({"exit_code": rc, "elapsed": elapsed})
    # desync: 0 converged, 1 not converged, 3 numerical failure (all with a record); PETSc: 0 or 1.
    if rc in (0, 1, 3) and os.path.exists(json_path):
        try:
            with open(json_path) as f:
                text = f.read()
            j = json.loads(text.strip().splitlines()[-1] if side == "petsc" else text)
            rec.update(parse_desync(j, args.tol) if side == "desync" else parse_petsc(j))
            rec["ok"] = True
        except (ValueError, KeyError, TypeError, IndexError) as e:
            rec.update({"ok": False, "error": f"unreadable JSON from {side}: {e!r}"})
    else:
        rec.update({"ok": False, "error": (err or "").strip()[-2000:] or f"exit code {rc}, no JSON"})
    return rec


def summarise(configs, runs):
    rows = []
    for cfg in configs:
        side, name, mname, ranks = cfg
        rs = [r for r in runs if (r["side"], r["config"], r["matrix"], r["ranks"]) == cfg]
        ok = [r for r in rs if r["ok"]]
        row = {"side": side, "config": name, "matrix": mname, "ranks": ranks, "runs": len(rs), "ok": len(ok)}
        if ok:
            t = [r["solve_seconds"] for r in ok]
            its = median([r["iterations"] for r in ok])
            g = [r["iterations_global_criterion"] for r in ok if r.get("iterations_global_criterion") is not None]
            row.update({
                "iterations": its, "iterations_all": sorted({r["iterations"] for r in ok}),
                "iterations_global_criterion": median(g) if g else None,
                "solve_median": median(t), "solve_min": min(t), "solve_max": max(t),
                "seconds_per_iteration": median([r["seconds_per_iteration"] for r in ok]),
                "true_residual": median([r["true_residual"] for r in ok]),
                "converged": sum(1 for r in ok if r["converged"]),
                "stop_reason": sorted({r["stop_reason"] for r in ok}),
            })
        else:
            row["error"] = first_error_line(rs[0]["error"]) if rs else "not run"
        rows.append(row)
    return rows


def pairs(args, rows):
    """desync over PETSc for (a)-(c), async over sync for (d)."""
    def find(side, name, mname, ranks):
        for r in rows:
            if (r["side"], r["config"], r["matrix"], r["ranks"]) == (side, name, mname, ranks) and "solve_median" in r:
                return r
        return None

    out = []
    keys = list(dict.fromkeys((r["matrix"], r["ranks"]) for r in rows))  # the manifest's order
    for mname, ranks in keys:
        for group, dname, pname in PAIRS:
            if group not in args.groups:
                continue
            d, p = find("desync", dname, mname, ranks), find("petsc", pname, mname, ranks)
            if not d or not p:
                continue
            out.append({"group": group, "matrix": mname, "ranks": ranks, "desync": dname, "petsc": pname,
                        "desync_iterations": d["iterations"], "petsc_iterations": p["iterations"],
                        "iterations_ratio": d["iterations"] / p["iterations"] if p["iterations"] else None,
                        "desync_seconds_per_iteration": d["seconds_per_iteration"],
                        "petsc_seconds_per_iteration": p["seconds_per_iteration"],
                        "time_per_iteration_ratio": (d["seconds_per_iteration"] / p["seconds_per_iteration"]
                                                     if p["seconds_per_iteration"] else None),
                        "solve_ratio": d["solve_median"] / p["solve_median"] if p["solve_median"] else None})
        if "d" in args.groups:
            for a_name, s_name in SYNC_ASYNC:
                a, s = find("desync", a_name, mname, ranks), find("desync", s_name, mname, ranks)
                if not a or not s:
                    continue
                out.append({"group": "d", "matrix": mname, "ranks": ranks, "async": a_name, "sync": s_name,
                            "async_seconds": a["solve_median"], "sync_seconds": s["solve_median"],
                            "async_over_sync": a["solve_median"] / s["solve_median"] if s["solve_median"] else None,
                            "async_iterations": a["iterations"], "sync_iterations": s["iterations"],
                            "async_converged": a["converged"], "sync_converged": s["converged"]})
    return out


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def fmt_tables(args, rows, prs):
    out = [f"tol {args.tol:g} (relative residual, zero initial guess), overlap {args.overlap}, GMRES restart "
           f"{args.restart}, slow rank {args.slow_rank} x{args.slow_factor:g}, median of {args.reps}"]
    out.append(f"  {'matrix':<12} {'np':>3} {'side':<6} {'config':<20} {'its':>7} {'its@g':>6} {'solve s':>9} "
               f"{'s/it':>9} {'true resid':>10} {'conv':>5} stop")
    for r in rows:
        head = f"  {r['matrix']:<12} {r['ranks']:>3} {r['side']:<6} {r['config']:<20}"
        if "solve_median" not in r:
            out.append(f"{head} all {r['runs']} runs failed: {r['error'][:90]}")
            continue
        its = f"{r['iterations']:g}" + ("*" if len(r["iterations_all"]) > 1 else "")
        g = r["iterations_global_criterion"]
        out.append(f"{head} {its:>7} {fmt(g, 'g'):>6} {r['solve_median']:9.4f} {r['seconds_per_iteration']:9.3e} "
                   f"{r['true_residual']:10.3e} {r['converged']:>2}/{r['ok']:<2} {','.join(r['stop_reason'])}")
    out.append("")
    out.append("its: iterations (median; * = varied; desync jacobi/schwarz: the most any rank did); its@g: first "
               "iteration with ||r|| <= tol ||b|| (desync sync: its residual history); solve s: median solve time, "
               "slowest rank (desync: wall_time, set-up excluded; PETSc: KSPSolve); s/it: median time per iteration; conv: runs that "
               "met the tolerance / runs with a record.")
    ab = [p for p in prs if p["group"] in "abc"]
    if ab:
        out.append("")
        out.append("desync over PETSc (medians):")
        out.append(f"  {'grp':<3} {'matrix':<12} {'np':>3} {'desync':<14} {'petsc':<20} {'its d/p':>13} {'ratio':>6} "
                   f"{'s/it ratio':>10} {'solve ratio':>11}")
        for p in ab:
            out.append(f"  {p['group']:<3} {p['matrix']:<12} {p['ranks']:>3} {p['desync']:<14} {p['petsc']:<20} "
                       f"{p['desync_iterations']:>6g}/{p['petsc_iterations']:<6g} {fmt(p['iterations_ratio'], '.3f'):>6} "
                       f"{fmt(p['time_per_iteration_ratio'], '.3f'):>10} {fmt(p['solve_ratio'], '.3f'):>11}")
    d = [p for p in prs if p["group"] == "d"]
    if d:
        out.append("")
        out.append("async over sync (desync, median solve times):")
        out.append(f"  {'matrix':<12} {'np':>3} {'async':<20} {'async s':>9} {'sync s':>9} {'ratio':>6} {'its a/s':>15} conv a/s")
        for p in d:
            out.append(f"  {p['matrix']:<12} {p['ranks']:>3} {p['async']:<20} {p['async_seconds']:9.4f} "
                       f"{p['sync_seconds']:9.4f} {fmt(p['async_over_sync'], '.3f'):>6} "
                       f"{p['async_iterations']:>7g}/{p['sync_iterations']:<7g} {p['async_converged']}/{p['sync_converged']}")
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    manifest, matrix_list = load_manifest(args)
    matrices = {m["name"]: m for m in matrix_list}
    skipped = []
    if "petsc" in args.sides and not is_executable(args.petsc):
        skipped.append(f"petsc: no executable driver at {args.petsc!r} (built as BUILD_DIR/petsc_matrix_asm where "
                       "PETSc is found; make bench-petsc-matrix)")
        args.sides.remove("petsc")
    if "desync" in args.sides and not is_executable(args.desync):
        skipped.append(f"desync: no executable at {args.desync!r} (use --desync)")
        args.sides.remove("desync")
    for s in skipped:
        print(f"matrix_compare.py: skipping {s}", file=sys.stderr)
    configs = make_configs(args, matrix_list)
    if not configs:
        sys.exit("matrix_compare.py: nothing to run")
    machine = bench_util.machine_info(args, __file__)

    def progress(cfg, rec):
        side, name, mname, ranks = cfg
        if not rec["ok"]:
            what = "FAILED: " + first_error_line(rec["error"])
        else:
            what = (f"{rec['solve_seconds']:.4f} s, {rec['iterations']} its, true residual {rec['true_residual']:.2e}, "
                    f"{'converged' if rec['converged'] else 'NOT converged (' + str(rec['stop_reason']) + ')'}")
        return f"{mname:<12} np {ranks} {side:<6} {name:<20} {what}"

    runs, session = run_repetitions(configs, args.reps, lambda cfg, path: run_one(args, cfg, matrices, path),
                                    "desync-matrixcmp-", None if args.quiet else progress)
    rows = summarise(configs, runs)
    prs = pairs(args, rows)
    print(fmt_tables(args, rows, prs))
    petsc_versions = bench_util.print_machine_and_load(machine, session, runs)
    failed = bench_util.print_failures(runs)
    if args.json:
        doc = {
            "benchmark": "desync matrix_compare",
            "config": {"desync": args.desync, "petsc": args.petsc, "mpirun": args.mpirun, "matrices": args.matrices,
                       "only": args.only, "ranks": args.ranks, "reps": args.reps, "groups": args.groups, "skip": args.skip,
                       "sides": args.sides, "tol": args.tol, "overlap": args.overlap,
                       "wide_overlap": args.wide_overlap, "pieces": args.pieces, "ilu_relax": args.ilu_relax,
                       "restart": args.restart,
                       "slow_rank": args.slow_rank, "slow_factor": args.slow_factor, "time_limit": args.time_limit,
                       "petsc_maxit": args.petsc_maxit, "timeout": args.timeout, "desync_extra": args.desync_extra,
                       "petsc_extra": args.petsc_extra},
            "groups": {g: GROUP_TITLES[g] for g in args.groups},
            "skipped": skipped, "manifest": manifest, "machine": machine, "petsc_version": petsc_versions,
            **session, "summary": rows, "pairs": prs, "runs": runs,
        }
        write_json(args.json, doc)
    return 1 if failed or skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
