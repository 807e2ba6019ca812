#!/usr/bin/env python3
"""The rate of desync's synchronous two-level Schwarz iteration, transcribed in SciPy, against
desync's own counts.

desync schwarz --coarse gdsw (classical, --alpha inf) on the built-in 2D Poisson problem runs the
hybrid iteration on the assembled 5-point matrix A (docs/usage.md, "Two levels"):

    x <- x + Phi A0^-1 Phi^T (b - A x)          the coarse correction, A0 = Phi^T A Phi
    x <- x + sum_p R~_p^T A_p^-1 R_p (b - A x)  restricted additive Schwarz (RAS)

with the subdomains the grid's m x m blocks extended by graph distance `overlap`, A_p = A on the
extended block, R~_p keeping the block's own rows, and Phi desync's algebraic GDSW space
(src/solvers/schwarz/coarse/gdsw.cpp): a row is on the interface when it couples to another block's
row; interface rows are grouped by the set of blocks among their own and their neighbours' owners;
each group's function is 1 on its rows, 0 on the rest of the interface, extended harmonically
(phi_I = -A_II^-1 A_IG phi_G) into the interior rows. Its error propagates by
E = (I - M A)(I - Phi A0^-1 Phi^T A); rho(E) predicts the count to a tolerance tol as
log(tol) / log(rho). This script computes rho by ARPACK, the predicted count, the count of the
transcribed iteration itself (desync's right-hand side, from x = 0, to every block's
||r_p|| <= tol ||b_p||, tested after each coarse correction as desync does), and desync's count
(`mpirun -np P desync schwarz --mode sync --coarse gdsw --local m`, oversubscribed: counts only).

    build/venv/bin/python bench/two_level_rate.py --desync build/openmpi/desync --json rate.json
"""
import argparse
import json
import math
import os
import shlex
import sys
import tempfile

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import child_env, run_measured, write_json  # noqa: E402


def laplacian(n):
    """The 5-point Laplacian on an n x n grid of interior points (Dirichlet boundary), row k = i n + j."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    e = sp.identity(n)
    return (sp.kron(e, t) + sp.kron(t, e)).tocsr()


def owners(q, m):
    """The block (rank) of every row: the q x q grid of m x m blocks, rank = block row * q + block column."""
    i, j = np.divmod(np.arange(q * m * q * m), q * m)
    return (i // m) * q + (j // m)


def poisson2d_rhs(n):
    """desync's poisson2d right-hand side (src/problems/poisson2d.cpp) times h^2, for the unscaled
    Laplacian: the source at the interior points plus the exact solution on the boundary."""
    h = 1.0 / (n + 1)
    y, x = np.divmod(np.arange(n * n), n)
    px, py = (x + 1) * h, (y + 1) * h
    exact = lambda a, b: np.sin(np.pi * a) * np.sin(2 * np.pi * b) + a * a + b  # noqa: E731
    b = h * h * (5 * np.pi ** 2 * np.sin(np.pi * px) * np.sin(2 * np.pi * py) - 2)
    b += np.where(y == 0, exact(px, 0.0), 0) + np.where(x == 0, exact(0.0, py), 0)
    b += np.where(x == n - 1, exact(1.0, py), 0) + np.where(y == n - 1, exact(px, 1.0), 0)
    return b


def gdsw_basis(A, own):
    """desync's algebraic GDSW space for a scalar problem (near-kernel: the constant)."""
    n = A.shape[0]
    keys = []
    for k in range(n):
        cols = A.indices[A.indptr[k]:A.indptr[k + 1]]
        s = set(own[cols].tolist()) | {int(own[k])}
        keys.append(tuple(sorted(s)) if len(s) > 1 else None)
    comps = {}
    for key in keys:
        if key is not None and key not in comps:
            comps[key] = len(comps)
    iface = np.array([key is not None for key in keys])
    rows_g = np.flatnonzero(iface)
    rows_i = np.flatnonzero(~iface)
    phi_g = sp.csr_matrix((np.ones(len(rows_g)), (np.arange(len(rows_g)), [comps[keys[r]] for r in rows_g])),
                          shape=(len(rows_g), len(comps)))
    a_ii = A[rows_i][:, rows_i].tocsc()
    a_ig = A[rows_i][:, rows_g]
    phi_i = -spla.splu(a_ii).solve((a_ig @ phi_g).toarray())
    phi = np.zeros((n, len(comps)))
    phi[rows_g] = phi_g.toarray()
    phi[rows_i] = phi_i
    return phi


def ras(A, own, overlap):
    """M r = sum_p R~_p^T A_p^-1 R_p r: the blocks extended by graph distance `overlap`, each keeping its
    own rows of its local solve."""
    pattern = (A != 0).astype(np.int8).tocsr()
    parts = []
    for p in range(int(own.max()) + 1):
        mask = own == p
        ext = mask.copy()
        for _ in range(overlap):
            ext = ext | (pattern @ ext.astype(np.int8) > 0)
        rows = np.flatnonzero(ext)
        parts.append((rows, mask[rows], spla.splu(A[rows][:, rows].tocsc())))

    def apply(r):
        z = np.zeros_like(r)
        for rows, mine, lu in parts:
            z[rows[mine]] = lu.solve(r[rows])[mine]
        return z
    return apply


def rate(q, m, overlap, tol, max_iters=5000):
    """rho(E), the predicted count, the transcribed iteration's count and the coarse size."""
    A = laplacian(q * m)
    own = owners(q, m)
    phi = gdsw_basis(A, own)
    a0 = np.linalg.cholesky(phi.T @ (A @ phi))  # A0 is symmetric positive definite

    def coarse(r):
        return phi @ np.linalg.solve(a0.T, np.linalg.solve(a0, phi.T @ r))
    m_ras = ras(A, own, overlap)

    def error_step(e):  # E e = (I - M A)(I - Phi A0^-1 Phi^T A) e
        e = e - coarse(A @ e)
        return e - m_ras(A @ e)
    n = A.shape[0]
    op = spla.LinearOperator((n, n), matvec=error_step, dtype=float)
    rho = float(abs(spla.eigs(op, k=1, which="LM", tol=1e-8, maxiter=20000, return_eigenvectors=False)[0]))
    # desync's order: the coarse correction after each exchange, then the test of the corrected iterate
    # (Schwarz's local criterion, every rank's ||r_p|| <= tol ||b_p|| on its own rows), then the local
    # solves
    b = poisson2d_rhs(q * m)
    b_p = np.sqrt(np.bincount(own, weights=b * b))
    x = np.zeros(n)
    count = None
    for k in range(max_iters + 1):
        x = x + coarse(b - A @ x)
        r = b - A @ x
        if np.all(np.sqrt(np.bincount(own, weights=r * r)) <= tol * b_p):
            count = k
            break
        x = x + m_ras(r)
    return {"subdomains": q * q, "local": m, "overlap": overlap, "coarse_functions": phi.shape[1], "rho": rho,
            "predicted": math.ceil(math.log(tol) / math.log(rho)), "transcribed": count}


def desync_count(args, ranks):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = shlex.split(args.mpirun) + ["-np", str(ranks), args.desync, "schwarz", "--mode", "sync", "--coarse", "gdsw",
                                          "--local", str(args.local), "--overlap", str(args.overlap), "--tol",
                                          f"{args.tol:g}", "--quiet", "--json", out]
        p = run_measured(cmd, env=child_env(ranks), capture_output=True, text=True, timeout=args.timeout)
        if p.returncode not in (0, 1) or not os.path.exists(out):
            raise SystemExit(f"two_level_rate: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
        with open(out) as f:
            rec = json.load(f)
        return {"iterations": rec["iterations"]["max"], "converged": rec["converged"],
                "coarse_functions": rec["details"].get("coarse_functions"), "command": shlex.join(cmd)}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grids", default="4,6,8,10", help="process grids q (q x q subdomains), comma-separated")
    ap.add_argument("--local", type=int, default=12, help="points per subdomain side")
    ap.add_argument("--overlap", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--desync", help="desync executable; without it only the transcription runs")
    ap.add_argument("--mpirun", default=os.environ.get("MPIRUN", "mpirun"))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'subdomains':>10} {'functions':>9} {'rho':>7} {'predicted':>9} {'transcribed':>11} {'desync':>7} {'/ predicted':>11}")
    for q in (int(x) for x in args.grids.split(",")):
        row = rate(q, args.local, args.overlap, args.tol)
        if args.desync:
            row["desync"] = desync_count(args, q * q)
            row["desync_over_predicted"] = row["desync"]["iterations"] / row["predicted"]
        rows.append(row)
        d = row.get("desync", {})
        print(f"{row['subdomains']:>10} {row['coarse_functions']:>9} {row['rho']:7.4f} {row['predicted']:>9} "
              f"{row['transcribed'] or '-':>11} {d.get('iterations', '-'):>7} "
              f"{row.get('desync_over_predicted', float('nan')):11.2f}", flush=True)
    if args.json:
        write_json(args.json, {"benchmark": "two_level_rate", "local": args.local, "overlap": args.overlap,
                               "tol": args.tol, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
