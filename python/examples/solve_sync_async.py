"""desync from Python: the 2D Poisson matrix built with SciPy, solved by restricted additive Schwarz
synchronously and asynchronously (Yamazaki et al., 2019), both convergence histories in one figure.

    mpirun -n 2 python python/examples/solve_sync_async.py [FIGURE.png] [--n 64]

Prints one line per run on rank 0 and writes FIGURE.png (default python_sync_async.png) with
desync_tools.plot.plot_convergence, and both run records beside it (FIGURE_sync.json,
FIGURE_async.json), which `desync-plot convergence` reads as well. docs/python.md shows its output.
"""
import argparse
import json
import os

from mpi4py import MPI
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import desync


def poisson2d(n):
    """The 5-point Laplacian on an n x n interior grid of the unit square (Dirichlet boundary),
    scaled by h^2: 4 on the diagonal, -1 to each grid neighbour; n^2 unknowns in row-major order."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    eye = sp.identity(n)
    return (sp.kron(eye, t) + sp.kron(t, eye)).tocsr()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("figure", nargs="?", default="python_sync_async.png", help="output figure (.png, .svg, .pdf)")
    parser.add_argument("--n", type=int, default=64, help="grid points per side (default 64: 4096 unknowns)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()

    # Rank 0 builds the system; with partition "metis" the other ranks pass nothing, desync
    # distributes the rows.
    A = b = exact = None
    if rank == 0:
        A = poisson2d(args.n)
        h = 1.0 / (args.n + 1)
        xs = np.arange(1, args.n + 1) * h
        X, Y = np.meshgrid(xs, xs)
        b = (2 * np.pi**2 * h**2 * np.sin(np.pi * X) * np.sin(np.pi * Y)).ravel()  # -lap u = f, u = sin sin
        exact = spla.spsolve(A.tocsc(), b)

    results = {}
    for mode in ("sync", "async"):
        results[mode] = desync.solve(A, b, solver="schwarz", mode=mode, partition="metis", overlap=2, tol=1e-8,
                                     comm=comm)
        x = results[mode].gather()  # collective: the whole solution on rank 0
        if rank == 0:
            r = results[mode]
            print(f"{mode:>5}: converged {r.converged}, {r.iterations} iterations, true residual "
                  f"{r.true_residual:.2e}, wall time {r.record['wall_time']:.4f} s, "
                  f"max |x - spsolve| {np.max(np.abs(x - exact)):.2e}")

    if rank == 0:
        from desync_tools.plot import plot_convergence  # matplotlib only where the figure is drawn

        stem = os.path.splitext(args.figure)[0]
        for mode, r in results.items():
            with open(f"{stem}_{mode}.json", "w", encoding="utf-8") as f:
                json.dump(r.record, f, indent=1)
        fig = plot_convergence(list(results.values()), title=f"Schwarz on the {args.n}x{args.n} Poisson matrix, "
                               f"{comm.Get_size()} ranks")
        fig.savefig(args.figure, dpi=110)
        print(f"wrote {args.figure}, {stem}_sync.json and {stem}_async.json")


if __name__ == "__main__":
    main()
