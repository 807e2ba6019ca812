#!/usr/bin/env python3
"""A Python user's view: finite-element systems assembled by scikit-fem on unstructured triangle meshes,
solved by pyamg's smoothed aggregation + CG on one process and by desync.solve(..., partition="metis")
at 2 MPI ranks.

Problems (the Dirichlet rows condensed out):
  poisson     P1 Poisson on the unit square, a Delaunay mesh of a randomly perturbed (n+1)^2 point grid,
              coefficient 1000 on the quadrant x > 0.5, y > 0.5 and 1 elsewhere, f = 1, u = 0 on the boundary
  elasticity  2D P1 linear elasticity (plane strain, E = 1, nu = 0.3) on the same kind of mesh, clamped at
              x = 0, a downward body force; its three rigid-body modes (two translations, one rotation) on
              the free dofs, an n x 3 NumPy array, are passed to desync.solve as near_kernel and to pyamg
              as B

The driver (this script without --worker) assembles the systems, then runs itself as
`mpirun -np RANKS python bench/fem_compare.py --worker DIR`, which for each of --reps repetitions runs
pyamg on rank 0 (the other ranks asleep in a barrier; set-up and solve timed apart) and then every desync
method, each call timed from Python between barriers, its gathered solution checked with SciPy on rank 0;
BLAS and OpenMP threads are held to one per process. desync's set-up is its record's: cg, the largest
per-rank `setup` of the time split (subtracted from wall_time, which includes it); schwarz, the largest
per-rank setup_seconds plus the coarse set-up (both outside wall_time). One JSON file (--json) holds
everything; a plain table is printed.

    build/venv/bin/python bench/fem_compare.py --reps 3 --json docs/data/benchmarks/fem-python.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ---------------------------------------------------------------- methods

NEAR_KERNEL = "rigid-body modes"  # in a method's options: the worker passes the n x 3 array B there


def methods(problem: str, rbm: bool, max_iters_krylov: int, max_iters_stationary: int):
    """(name, options) of every desync run on `problem` (rbm: with the rigid-body modes too)."""
    nk_path = NEAR_KERNEL
    cg = dict(solver="cg", pc="asm", max_iters=max_iters_krylov)
    out = [
        ("cg asm o1", dict(cg, overlap=1)),
        ("cg asm o4", dict(cg, overlap=4)),
        ("cg asm ilu0 o1", dict(cg, overlap=1, local_solver="ilu0")),
        ("cg asm ilu0 o4", dict(cg, overlap=4, local_solver="ilu0")),
        ("cg asm gdsw o1", dict(cg, overlap=1, coarse="gdsw")),
        ("cg asm rgdsw o1", dict(cg, overlap=1, coarse="rgdsw")),
    ]
    st = dict(solver="schwarz", mode="sync", overlap=1, coarse="gdsw", max_iters=max_iters_stationary)
    out += [("schwarz sync o4", dict(st, overlap=4, coarse="none")),
            ("schwarz sync gdsw o1", st), ("schwarz sync gdsw o4", dict(st, overlap=4))]
    if problem == "elasticity" and rbm:
        out += [
            ("cg asm gdsw o1 rbm", dict(cg, overlap=1, coarse="gdsw", near_kernel=nk_path)),
            ("cg asm gdsw o4 rbm", dict(cg, overlap=4, coarse="gdsw", near_kernel=nk_path)),
            ("cg asm rgdsw o1 rbm", dict(cg, overlap=1, coarse="rgdsw", near_kernel=nk_path)),
            ("schwarz sync gdsw o1 rbm", dict(st, near_kernel=nk_path)),
            ("schwarz sync gdsw o4 rbm", dict(st, overlap=4, near_kernel=nk_path)),
            ("schwarz sync nicolaides o1 rbm", dict(st, coarse="nicolaides", near_kernel=nk_path)),
            ("schwarz sync nicolaides o4 rbm", dict(st, overlap=4, coarse="nicolaides", near_kernel=nk_path)),
        ]
        # K subdomains per rank with the coarse level on the K P pieces (its A0, thousands of rows at
        # K = 256, factored by MUMPS on one rank: --coarse-ranks 1), stationary and with CG
        for k in (64, 256):
            pieces = dict(overlap=4, coarse="gdsw", near_kernel=nk_path, subdomains_per_rank=k, coarse_ranks=1)
            out += [(f"cg asm gdsw o4 rbm k{k}", dict(cg, **pieces)),
                    (f"schwarz sync gdsw o4 rbm k{k}", dict(st, **pieces))]
    return out


# ---------------------------------------------------------------- assembly (driver)

def unstructured_square(n: int, seed: int, lx: float = 1.0):
    """A Delaunay triangulation of an (n+1) x (n+1) grid of [0, lx] x [0, 1] whose interior points are moved
    at random by up to 0.3 h in each direction: unstructured connectivity, no degenerate triangles."""
    from scipy.spatial import Delaunay
    from skfem import MeshTri

    rng = np.random.default_rng(seed)
    xs, ys = np.meshgrid(np.linspace(0, lx, n + 1), np.linspace(0, 1, n + 1), indexing="ij")
    p = np.vstack([xs.ravel(), ys.ravel()])
    inner = (p[0] > 0) & (p[0] < lx) & (p[1] > 0) & (p[1] < 1)
    p[:, inner] += rng.uniform(-0.3, 0.3, size=(2, int(inner.sum()))) * np.array([[lx / n], [1.0 / n]])
    t = Delaunay(p.T).simplices.T
    # drop slivers Delaunay may add along the straight boundary (zero area)
    a = p[:, t[1]] - p[:, t[0]]
    b = p[:, t[2]] - p[:, t[0]]
    area = 0.5 * (a[0] * b[1] - a[1] * b[0])
    t = t[:, np.abs(area) > 1e-14 * (lx / n) ** 2]
    return MeshTri(p, t)


def assemble_poisson(n: int, seed: int, jump: float):
    from skfem import Basis, BilinearForm, ElementTriP1, LinearForm, condense
    from skfem.helpers import dot, grad

    mesh = unstructured_square(n, seed)
    basis = Basis(mesh, ElementTriP1())

    @BilinearForm
    def a(u, v, w):
        x, y = w.x
        k = np.where((x > 0.5) & (y > 0.5), jump, 1.0)
        return k * dot(grad(u), grad(v))

    @LinearForm
    def f(v, w):
        return 1.0 * v

    A, b = a.assemble(basis), f.assemble(basis)
    A, b, _, _ = condense(A, b, D=basis.get_dofs())
    return A.tocsr(), np.asarray(b), None, {"mesh_nodes": int(mesh.p.shape[1]), "mesh_triangles": int(mesh.t.shape[1])}


def assemble_elasticity(n: int, seed: int, young: float, nu: float):
    from skfem import Basis, ElementTriP1, ElementVector, LinearForm, condense
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    mesh = unstructured_square(n, seed)
    basis = Basis(mesh, ElementVector(ElementTriP1()))
    A = linear_elasticity(*lame_parameters(young, nu)).assemble(basis)

    @LinearForm
    def load(v, w):
        return -1.0 * v.value[1]

    b = load.assemble(basis)
    fixed = basis.get_dofs(lambda x: np.isclose(x[0], 0.0)).all()
    free = np.setdiff1d(np.arange(basis.N), fixed)
    A, b, _, _ = condense(A, b, D=fixed)
    # rigid-body modes: dof i is component c of node k (nodal_dofs[c, k] = i)
    x, y = mesh.p
    comp = np.empty(basis.N, dtype=int)
    node = np.empty(basis.N, dtype=int)
    for c in range(2):
        comp[basis.nodal_dofs[c]] = c
        node[basis.nodal_dofs[c]] = np.arange(mesh.p.shape[1])
    B = np.zeros((basis.N, 3))
    B[comp == 0, 0] = 1.0
    B[comp == 1, 1] = 1.0
    B[comp == 0, 2] = -y[node[comp == 0]]
    B[comp == 1, 2] = x[node[comp == 1]]
    return A.tocsr(), np.asarray(b), B[free], {"mesh_nodes": int(mesh.p.shape[1]),
                                               "mesh_triangles": int(mesh.t.shape[1]),
                                               "clamped_dofs": int(len(fixed))}


# ---------------------------------------------------------------- pyamg (worker, rank 0)

def run_pyamg(A, b, B, tol: float, maxiter: int):
    """One set-up and solve of pyamg's smoothed aggregation + CG."""
    import pyamg

    t0 = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(A, B=B)
    t1 = time.perf_counter()
    res: list[float] = []
    x = ml.solve(b, tol=tol, accel="cg", maxiter=maxiter, residuals=res)
    t2 = time.perf_counter()
    r = {"setup_seconds": t1 - t0, "solve_seconds": t2 - t1, "iterations": len(res) - 1,
         "true_residual": float(np.linalg.norm(b - A @ x) / np.linalg.norm(b)),
         "levels": len(ml.levels), "operator_complexity": float(ml.operator_complexity())}
    r["converged"] = r["true_residual"] <= tol
    r["total_seconds"] = r["setup_seconds"] + r["solve_seconds"]
    return r


# ---------------------------------------------------------------- desync (worker, under mpirun)

def worker(folder: str):
    import scipy.sparse as sp
    from mpi4py import MPI

    import desync

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    with open(os.path.join(folder, "plan.json")) as f:
        plan = json.load(f)
    out, pyamg_rows = [], []
    for prob in plan["problems"]:
        A = b = None
        if rank == 0:
            A = sp.load_npz(os.path.join(folder, prob["name"] + "-A.npz")).tocsr()
            b = np.load(os.path.join(folder, prob["name"] + "-b.npy"))
        runs = []
        B = None
        if rank == 0 and prob.get("near_kernel"):
            B = np.load(os.path.join(folder, prob["name"] + "-rbm.npy"))
        for rep in range(plan["reps"]):
            # pyamg on one process (rank 0), the other ranks waiting without spinning, interleaved with
            # desync's runs so that both meet the same load on the host
            if rank == 0:
                for kind, Bk in [("constant", None)] + ([("rigid-body", B)] if B is not None else []):
                    r = run_pyamg(A, b, Bk, plan["tol"], plan["max_iters"])
                    r.update(problem=prob["name"], method=f"pyamg sa cg ({kind})", near_kernel=kind, rep=rep,
                             loadavg_after=os.getloadavg()[0])
                    pyamg_rows.append(r)
                    print(f"  {prob['name']:10s} rep {rep} pyamg SA + CG, B {kind:10s}     its {r['iterations']:5d} "
                          f"setup {r['setup_seconds']:.3f} solve {r['solve_seconds']:.3f} res {r['true_residual']:.2e}",
                          flush=True)
            sleepy_barrier(comm)
            for name, opts in prob["methods"]:
                comm.Barrier()
                t0 = MPI.Wtime()
                error = None
                # the near-kernel as an array (rank 0's, with the whole matrix there)
                kw = {k: (B if v == NEAR_KERNEL else v) for k, v in opts.items()}
                try:
                    res = desync.solve(A, b, partition="metis", comm=comm, tol=plan["tol"], **kw)
                except Exception as e:  # noqa: BLE001 (recorded, the other methods go on)
                    res, error = None, f"{type(e).__name__}: {e}"
                comm.Barrier()
                call = MPI.Wtime() - t0
                row = {"problem": prob["name"], "method": name, "options": opts, "rep": rep,
                       "call_seconds": call, "ok": res is not None, "error": error,
                       "loadavg_after": os.getloadavg()[0]}
                if res is not None:
                    x = res.gather()
                    row.update(parse_record(res.record))
                    if rank == 0:
                        row["true_residual_scipy"] = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
                if rank == 0:
                    runs.append(row)
                    print(f"  {prob['name']:10s} rep {rep} {name:26s} "
                          + (f"its {row['iterations']:5d} setup {row['setup_seconds']:.3f} solve "
                             f"{row['solve_seconds']:.3f} call {call:.3f} res {row['true_residual_scipy']:.2e}"
                             f"{'' if row['converged'] else ' NOT CONVERGED (' + row['stop_reason'] + ')'}"
                             if res is not None else error), flush=True)
        out += runs
    if rank == 0:
        with open(os.path.join(folder, "desync.json"), "w") as f:
            json.dump({"desync": out, "pyamg": pyamg_rows}, f)


def sleepy_barrier(comm):
    """A barrier whose waiting ranks sleep instead of polling (Open MPI's Barrier spins a core)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.002)


def parse_record(j):
    """Set-up and solve seconds from a desync run record (docs/output.md), as bench/matrix_compare.py reads
    them: cg's wall_time includes the preconditioner's set-up (its time split's `setup`), schwarz's excludes
    both the subdomain set-up and the coarse set-up."""
    d = j.get("details") or {}
    ranks = j.get("per_rank") or []
    wall = float(j["wall_time"])
    it = j["iterations"]
    coarse_setup = d.get("coarse_setup_seconds")
    if j.get("solver") in ("krylov", "cg"):
        setup = max((float((p.get("time") or {}).get("setup", 0.0)) for p in ranks), default=0.0)
        solve = wall - setup
    else:
        setup = max((float(p.get("setup_seconds", 0.0)) for p in ranks), default=float(d.get("setup_seconds") or 0.0))
        setup += float(coarse_setup or 0.0)
        solve = wall
    part = d.get("partition") or {}
    return {
        "iterations": int(it["max"] if isinstance(it, dict) else it),
        "converged": bool(j.get("converged")),
        "stop_reason": j.get("stop_reason", ""),
        "true_residual": float(j["true_residual"]) if j.get("true_residual") is not None else None,
        "wall_time": wall, "setup_seconds": setup, "solve_seconds": solve,
        "coarse_setup_seconds": coarse_setup, "coarse_functions": d.get("coarse_functions"),
        "near_kernel": d.get("near_kernel"), "near_kernel_vectors": d.get("near_kernel_vectors"),
        "pc_description": d.get("pc_description"), "local_solvers": d.get("local_solvers"),
        "partition_seconds": part.get("seconds"), "edge_cut": part.get("edge_cut"),
        "read_seconds": (d.get("matrix") or {}).get("read_seconds"),
    }


# ---------------------------------------------------------------- driver

def git_commit():
    try:
        c = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "src", "include"],
                               capture_output=True, text=True).stdout.strip()
        return c + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def extension_built():
    """When the desync extension this Python imports was built (its file's time), without importing it (which
    would start MPI in the driver)."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("desync")
    if spec is None or not spec.submodule_search_locations:
        return None
    files = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "_core*"))
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(files[0]))) if files else None


def summarise(rows):
    """Per (problem, method): the run with the least set-up + solve among the converged ones (else the first)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["problem"], r["method"]), []).append(r)
    out = []
    for (p, m), rs in groups.items():
        ok = [r for r in rs if r.get("ok")]
        conv = [r for r in ok if r["converged"]]
        pick = min(conv or ok or rs, key=lambda r: r.get("setup_seconds", 0) + r.get("solve_seconds", 0) if r.get("ok") else 0)
        out.append({"problem": p, "method": m, "runs": len(rs), "converged_runs": len(conv), "best": pick})
    return out


def best_pyamg(rows):
    """pyamg's fastest converged repetition (set-up + solve) per problem and near-kernel."""
    best = {}
    for r in rows:
        k = (r["problem"], r["near_kernel"])
        key = (not r["converged"], r["total_seconds"])
        if k not in best or key < (not best[k]["converged"], best[k]["total_seconds"]):
            best[k] = r
    return list(best.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--poisson-n", type=int, default=362, help="mesh intervals per side of the Poisson mesh "
                    "((n-1)^2 unknowns; default 362: 130 321)")
    ap.add_argument("--elasticity-n", type=int, default=124, help="mesh intervals per side of the elasticity mesh "
                    "(2 n (n+1) unknowns; default 124: 31 000)")
    ap.add_argument("--jump", type=float, default=1000.0, help="Poisson coefficient on x > 0.5, y > 0.5")
    ap.add_argument("--seed", type=int, default=1, help="the mesh perturbation's seed")
    ap.add_argument("--problems", default="poisson,elasticity")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--max-iters", type=int, default=2000, help="CG's iteration limit (desync and pyamg)")
    ap.add_argument("--max-iters-stationary", type=int, default=3000)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the desync worker")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds the mpirun may take")
    ap.add_argument("--keep", metavar="DIR", help="write the systems and near-kernel array here and keep them")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return

    import pyamg
    import skfem

    t_start = time.time()
    load_before = list(os.getloadavg())
    folder = args.keep or tempfile.mkdtemp(prefix="fem_compare_")
    os.makedirs(folder, exist_ok=True)
    import scipy.sparse as sp

    problems, plan = [], {"reps": args.reps, "tol": args.tol, "max_iters": args.max_iters, "problems": []}
    for name in args.problems.split(","):
        t0 = time.perf_counter()
        if name == "poisson":
            A, b, B, info = assemble_poisson(args.poisson_n, args.seed, args.jump)
            info.update(mesh_intervals=args.poisson_n, coefficient_jump=args.jump,
                        description=f"P1 Poisson, unstructured triangles of the unit square, coefficient {args.jump:g} "
                                    "on x > 0.5, y > 0.5 and 1 elsewhere, f = 1, u = 0 on the boundary")
        elif name == "elasticity":
            A, b, B, info = assemble_elasticity(args.elasticity_n, args.seed, 1.0, 0.3)
            info.update(mesh_intervals=args.elasticity_n, young=1.0, poisson_ratio=0.3,
                        description="2D P1 linear elasticity (plane strain, E = 1, nu = 0.3), unstructured triangles "
                                    "of the unit square, clamped at x = 0, downward body force")
        else:
            sys.exit(f"fem_compare: unknown problem {name!r}")
        info.update(name=name, unknowns=int(A.shape[0]), nonzeros=int(A.nnz),
                    assembly_seconds=time.perf_counter() - t0)
        sp.save_npz(os.path.join(folder, name + "-A.npz"), A)
        np.save(os.path.join(folder, name + "-b.npy"), b)
        if B is not None:
            np.save(os.path.join(folder, name + "-rbm.npy"), B)
            info["near_kernel_residual"] = float(np.linalg.norm(A @ B) / np.linalg.norm(A.data))
        problems.append(info)
        print(f"{name}: {info['unknowns']} unknowns, {info['nonzeros']} nonzeros ({info['assembly_seconds']:.1f} s to assemble)",
              flush=True)
        plan["problems"].append({"name": name, "near_kernel": B is not None,
                                 "methods": methods(name, B is not None, args.max_iters, args.max_iters_stationary)})
    with open(os.path.join(folder, "plan.json"), "w") as f:
        json.dump(plan, f)

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [args.mpirun, "-np", str(args.ranks), args.python, os.path.abspath(__file__), "--worker", folder]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, timeout=args.timeout)
    mpi_seconds = time.time() - t0
    if proc.returncode != 0:
        print(f"fem_compare: the desync worker ended with exit code {proc.returncode}", file=sys.stderr)
    desync_rows, pyamg_rows = [], []
    if os.path.exists(os.path.join(folder, "desync.json")):
        with open(os.path.join(folder, "desync.json")) as f:
            got = json.load(f)
        desync_rows, pyamg_rows = got["desync"], got["pyamg"]
    doc = {
        "schema": "desync.fem_compare/1",
        "command": " ".join(sys.argv),
        "loadavg_before": load_before, "loadavg_after": list(os.getloadavg()),
        "duration_s": time.time() - t_start, "mpi_seconds": mpi_seconds, "worker_exit_code": proc.returncode,
        "versions": {"scikit-fem": skfem.__version__, "pyamg": pyamg.__version__, "numpy": np.__version__,
                     "scipy": __import__("scipy").__version__, "python": sys.version.split()[0],
                     "desync_commit": git_commit(), "desync_extension_built": extension_built()},
        "config": {"ranks": args.ranks, "reps": args.reps, "tol": args.tol, "partition": "metis",
                   "max_iters": args.max_iters, "max_iters_stationary": args.max_iters_stationary, "seed": args.seed,
                   "pyamg": "smoothed_aggregation_solver(A, B) then solve(b, tol, accel='cg'), on rank 0 of the worker (the other rank asleep in a barrier), every rep, interleaved with desync's",
                   "desync": "desync.solve(A, b, partition='metis', tol, ...) at `ranks` ranks, every rep of every method"},
        "problems": problems,
        "pyamg": pyamg_rows,
        "desync": desync_rows,
    }
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)

    print()
    print(f"{'problem':10s} {'method':28s} {'its':>5s} {'setup s':>8s} {'solve s':>8s} {'total s':>8s} {'true res':>9s} conv")
    for r in best_pyamg(pyamg_rows):
        print(f"{r['problem']:10s} {r['method']:28s} {r['iterations']:5d} {r['setup_seconds']:8.3f} {r['solve_seconds']:8.3f} "
              f"{r['total_seconds']:8.3f} {r['true_residual']:9.2e} {'yes' if r['converged'] else 'NO'}")
    for s in summarise(desync_rows):
        r = s["best"]
        if not r.get("ok"):
            print(f"{s['problem']:10s} {s['method']:28s} failed: {r.get('error')}")
            continue
        print(f"{s['problem']:10s} {'desync ' + s['method']:28s} {r['iterations']:5d} {r['setup_seconds']:8.3f} "
              f"{r['solve_seconds']:8.3f} {r['setup_seconds'] + r['solve_seconds']:8.3f} {r['true_residual_scipy']:9.2e} "
              f"{s['converged_runs']}/{s['runs']}")
    print(f"load average {load_before[0]:.2f} before, {doc['loadavg_after'][0]:.2f} after; {doc['duration_s']:.0f} s")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
