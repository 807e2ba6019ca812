#!/usr/bin/env python3
"""Test and benchmark matrices for desync's matrix-input solvers (desync jacobi|schwarz|krylov --matrix)
and their PETSc counterparts (bench/petsc/petsc_matrix_asm.c, bench/matrix_compare.py).

Writes, for every matrix NAME, into OUT/NAME/:

  A.mtx    Matrix Market coordinate real, `symmetric` (lower triangle) for symmetric matrices, else `general`
  A.petsc  PETSc binary Mat (as MatView writes it): big-endian int32 [1211216, M, N, nnz], int32 row
           lengths, int32 column indices (sorted in each row), float64 values
  x.mtx, x.petsc   the known solution x, a smooth function of each unknown's position (Matrix Market array;
                   PETSc binary Vec: big-endian int32 [1211214, n], float64 values)
  b.mtx, b.petsc   the right-hand side b = A x (computed in float64 by SciPy), so a solver's error can be checked

and OUT/manifest.json: for every matrix its name, rows, nnz, symmetric, spd, description, the files
(relative to OUT) and the generating parameters. The matrices:

  poisson2d   -Laplace(u) on the unit square, 5-point differences on n x n interior points, Dirichlet
              boundary (2/h^2 + 2/h^2 on the diagonal, -1/h^2 off it; h = 1/(n+1)); SPD
  poisson3d   the same in 3D, 7-point, n^3 interior points; SPD
  aniso2d     -u_xx - eps u_yy, eps = 0.01 (the same 5-point differences, y couplings times eps); SPD
  jump2d      -div(k grad u), cell-centred finite volumes on n x n cells of the unit square, k = 1 or 1e4 on
              a checkerboard of 8 x 8 blocks (contrast 1e4), face coefficients the harmonic mean of the two
              cells' k, Dirichlet boundary half a cell away (2 k / h^2); SPD
  jump3d      the same in 3D, a 4 x 4 x 4 checkerboard; SPD
  convdiff2d  -eps Laplace(u) + w . grad(u), eps = 0.01, wind w = (1, 0.5), first-order upwind differences on
              n x n interior points (Dirichlet): a non-symmetric, irreducibly diagonally dominant M-matrix,
              cell Peclet number |w| h / eps (about 2.3 at small, 0.4 at medium)
  randspd     a random geometric graph: points uniform in the unit square, each joined to its 6 nearest
              neighbours (symmetrised), weights uniform in [0.1, 1]; A = its graph Laplacian + 0.01 x the
              mean weighted degree on the diagonal: SPD and strictly diagonally dominant (Jacobi converges),
              rows in a random order (no grid structure for a row-block partition to exploit)
  elasticity3d  only with --desync PATH: desync's own elasticity3d system, exported by
              `PATH cg --problem elasticity3d --global N --export-system DIR` (DIR/A.petsc, DIR/b.petsc,
              DIR/partition.txt), copied and converted to Matrix Market; skipped with a message otherwise

Sizes: --size small (the tests: 2k-3k rows each), medium (64k-80k rows), large (about 1e6 rows).
Everything is deterministic (numpy.random.default_rng(--seed)). --check reads every file written back
(the PETSc binary through this script's reader, Matrix Market through scipy.io.mmread) and compares it
with the matrix and vectors in memory, exactly (bitwise).

  build/venv/bin/python bench/make_matrices.py --size small --out build/matrices-small --check
  build/venv/bin/python bench/make_matrices.py --size medium --out build/bench/matrices --only poisson2d,randspd

Needs NumPy and SciPy (the project venv, make python-tools, carries them).
"""
import argparse
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.spatial import cKDTree

MAT_CLASSID = 1211216  # PETSc's MAT_FILE_CLASSID
VEC_CLASSID = 1211214  # PETSc's VEC_FILE_CLASSID

# Grid points per direction (randspd: points; elasticity3d: nodes per direction) for each size.
SIZES = {
    "small": {"n2": 48, "n3": 14, "rand": 3000, "elast": 10},
    "medium": {"n2": 256, "n3": 40, "rand": 80000, "elast": 28},
    "large": {"n2": 1000, "n3": 100, "rand": 1000000, "elast": 64},
}
NAMES = ("poisson2d", "poisson3d", "aniso2d", "jump2d", "jump3d", "convdiff2d", "randspd", "elasticity3d")
ANISO_EPS = 0.01
JUMP_CONTRAST = 1e4
CONVDIFF_EPS = 0.01
CONVDIFF_WIND = (1.0, 0.5)
RAND_NEIGHBOURS = 6
RAND_SHIFT = 0.01


# ---------------------------------------------------------------------------------------------- I/O


def write_petsc_mat(path, A):
    """A (any SciPy sparse matrix) as a PETSc binary Mat: int32 [classid, M, N, nnz], row lengths,
    column indices sorted in each row, float64 values, all big-endian."""
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.sort_indices()
    m, n = A.shape
    if max(m, n, A.nnz) >= 2**31:
        raise ValueError(f"{path}: too large for PETSc's 32-bit binary format")
    with open(path, "wb") as f:
        f.write(struct.pack(">4i", MAT_CLASSID, m, n, A.nnz))
        f.write(np.diff(A.indptr).astype(">i4").tobytes())
        f.write(A.indices.astype(">i4").tobytes())
        f.write(A.data.astype(">f8").tobytes())


def write_petsc_vec(path, v):
    """v as a PETSc binary Vec: int32 [classid, n], float64 values, big-endian."""
    v = np.asarray(v, dtype=np.float64).ravel()
    with open(path, "wb") as f:
        f.write(struct.pack(">2i", VEC_CLASSID, v.size))
        f.write(v.astype(">f8").tobytes())


def _read_exact(f, nbytes, path, what):
    data = f.read(nbytes)
    if len(data) != nbytes:
        raise ValueError(f"{path}: truncated ({what}: {len(data)} of {nbytes} bytes)")
    return data


def read_petsc_mat(path):
    """A PETSc binary Mat (32-bit indices, float64 values) as a SciPy CSR matrix."""
    with open(path, "rb") as f:
        cid, m, n, nnz = struct.unpack(">4i", _read_exact(f, 16, path, "header"))
        if cid != MAT_CLASSID:
            raise ValueError(f"{path}: class id {cid}, not a PETSc Mat ({MAT_CLASSID})")
        if m < 0 or n < 0 or nnz < 0:
            raise ValueError(f"{path}: negative sizes in the header ({m} x {n}, {nnz} nonzeros)")
        lengths = np.frombuffer(_read_exact(f, 4 * m, path, "row lengths"), dtype=">i4").astype(np.int64)
        if lengths.min(initial=0) < 0 or lengths.sum() != nnz:
            raise ValueError(f"{path}: row lengths add up to {lengths.sum()}, the header says {nnz} nonzeros")
        cols = np.frombuffer(_read_exact(f, 4 * nnz, path, "column indices"), dtype=">i4").astype(np.int32)
        vals = np.frombuffer(_read_exact(f, 8 * nnz, path, "values"), dtype=">f8").astype(np.float64)
        if f.read(1):
            raise ValueError(f"{path}: data after the matrix")
    if nnz and (cols.min() < 0 or cols.max() >= n):
        raise ValueError(f"{path}: a column index outside 0..{n - 1}")
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    return sp.csr_matrix((vals, cols, indptr), shape=(m, n))


def read_petsc_vec(path):
    """A PETSc binary Vec (float64) as a NumPy array."""
    with open(path, "rb") as f:
        cid, n = struct.unpack(">2i", _read_exact(f, 8, path, "header"))
        if cid != VEC_CLASSID:
            raise ValueError(f"{path}: class id {cid}, not a PETSc Vec ({VEC_CLASSID})")
        v = np.frombuffer(_read_exact(f, 8 * n, path, "values"), dtype=">f8").astype(np.float64)
        if f.read(1):
            raise ValueError(f"{path}: data after the vector")
    return v


def write_mm_mat(path, A, symmetric):
    """Matrix Market coordinate real; symmetric: the lower triangle with the `symmetric` banner.
    Values are written with 17 significant digits, so they read back bitwise."""
    scipy.io.mmwrite(path, sp.coo_matrix(A), symmetry="symmetric" if symmetric else "general", precision=17)


def write_mm_vec(path, v):
    """Matrix Market array real general, one column."""
    scipy.io.mmwrite(path, np.asarray(v, dtype=np.float64).reshape(-1, 1), precision=17)


def same_matrix(A, B):
    """Whether A and B hold the same entries, bitwise (pattern and values)."""
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    for M in (A, B):
        M.sum_duplicates()
        M.sort_indices()
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices)
            and np.array_equal(A.data.view(np.uint64), B.data.view(np.uint64)))


def same_vector(u, v):
    u, v = np.asarray(u, dtype=np.float64).ravel(), np.asarray(v, dtype=np.float64).ravel()
    return u.shape == v.shape and np.array_equal(u.view(np.uint64), v.view(np.uint64))


# ------------------------------------------------------------------------------------ the matrices


def laplace_1d(n, h):
    """-d2/dx2 on n interior points, Dirichlet: tridiag(-1, 2, -1) / h^2."""
    e = np.ones(n)
    return sp.diags([-e[1:], 2 * e, -e[1:]], [-1, 0, 1], format="csr") / (h * h)


def grid_points(ns):
    """Coordinates ((i+1) h_d) of the interior points of a grid with ns[d] points per direction, x fastest;
    one array per direction."""
    axes = [(np.arange(n) + 1.0) / (n + 1) for n in ns]
    mesh = np.meshgrid(*axes, indexing="ij")  # mesh[d][i0, i1, ...]
    # x fastest: flatten in Fortran order of (x, y, z)
    return [m.ravel(order="F") for m in mesh]


def cell_centres(ns):
    """Cell centres ((i+1/2) h_d) of a grid of ns[d] cells per direction, x fastest."""
    axes = [(np.arange(n) + 0.5) / n for n in ns]
    mesh = np.meshgrid(*axes, indexing="ij")
    return [m.ravel(order="F") for m in mesh]


def smooth(coords):
    """The known solution: a smooth function of the position (coordinates in [0, 1])."""
    x = coords[0]
    y = coords[1] if len(coords) > 1 else 0.0
    z = coords[2] if len(coords) > 2 else 0.0
    return np.sin(np.pi * x) * np.cos(np.pi * y) * (1 + z) + x * x + 0.5 * y - 0.25 * z + 1.0


def kron_laplace(ns, scale):
    """sum_d scale[d] * (-d2/dx_d^2) on the interior points, x fastest (kron(I_z, I_y, L_x) + ...)."""
    hs = [1.0 / (n + 1) for n in ns]
    dim = len(ns)
    A = None
    for d in range(dim):
        factors = [sp.identity(ns[e], format="csr") for e in range(dim)]
        factors[d] = laplace_1d(ns[d], hs[d]) * scale[d]
        # x fastest: kron(..., z, y, x) with x the last factor
        term = factors[dim - 1]
        for e in range(dim - 2, -1, -1):
            term = sp.kron(term, factors[e], format="csr")
        A = term if A is None else A + term
    return sp.csr_matrix(A)


def checkerboard(ns, blocks):
    """k per cell (x fastest): 1 or JUMP_CONTRAST on a checkerboard of `blocks` blocks per direction."""
    idx = np.meshgrid(*[np.arange(n) * blocks // n for n in ns], indexing="ij")
    parity = sum(idx) % 2
    return np.where(parity.ravel(order="F") == 1, JUMP_CONTRAST, 1.0)


def finite_volume(ns, k):
    """-div(k grad u) on a grid of ns[d] cells of the unit cube (x fastest), cell-centred finite
    volumes: face coefficient 2 k_i k_j / (k_i + k_j) / h^2 between neighbours (harmonic mean), and
    2 k_i / h^2 to the Dirichlet boundary half a cell away."""
    dim = len(ns)
    n = int(np.prod(ns))
    strides = np.cumprod([1] + list(ns[:-1]))
    index = np.arange(n)
    pos = [(index // strides[d]) % ns[d] for d in range(dim)]
    rows, cols, vals = [], [], []
    diag = np.zeros(n)
    for d in range(dim):
        h2 = (1.0 / ns[d]) ** 2
        inner = pos[d] < ns[d] - 1  # cells with a neighbour in +d
        i = index[inner]
        j = i + strides[d]
        t = 2 * k[i] * k[j] / (k[i] + k[j]) / h2
        rows += [i, j]
        cols += [j, i]
        vals += [-t, -t]
        np.add.at(diag, i, t)
        np.add.at(diag, j, t)
        for side in (pos[d] == 0, pos[d] == ns[d] - 1):  # boundary faces
            diag[side] += 2 * k[side] / h2
    rows.append(index)
    cols.append(index)
    vals.append(diag)
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))


def upwind_convdiff(n, eps, wind):
    """-eps Laplace(u) + w . grad(u) on n x n interior points (Dirichlet, h = 1/(n+1)), first-order
    upwind differences for w >= 0: w_x (u_i - u_{i-1}) / h + w_y (u_j - u_{j-1}) / h."""
    h = 1.0 / (n + 1)
    e = np.ones(n)
    I = sp.identity(n, format="csr")
    # one-dimensional upwind first difference (u_i - u_{i-1}) / h
    D = sp.diags([-e[1:], e], [-1, 0], format="csr") / h
    A = eps * kron_laplace((n, n), (1.0, 1.0)) + wind[0] * sp.kron(I, D, format="csr") + wind[1] * sp.kron(D, I, format="csr")
    return sp.csr_matrix(A)


def random_spd(npts, rng):
    """The graph Laplacian of a random geometric k-nearest-neighbour graph (random weights) plus a small
    diagonal shift, rows randomly permuted; returns (A, coordinates per row)."""
    pts = rng.random((npts, 2))
    tree = cKDTree(pts)
    _, nb = tree.query(pts, k=RAND_NEIGHBOURS + 1)  # the point itself first
    i = np.repeat(np.arange(npts), RAND_NEIGHBOURS)
    j = nb[:, 1:].ravel()
    w = rng.uniform(0.1, 1.0, size=i.size)
    W = sp.coo_matrix((w, (i, j)), shape=(npts, npts)).tocsr()
    W = W.maximum(W.T)  # symmetrise: an edge found from both ends keeps the larger weight
    W.setdiag(0)
    W.eliminate_zeros()
    degree = np.asarray(W.sum(axis=1)).ravel()
    shift = RAND_SHIFT * degree.mean()
    A = sp.diags(degree + shift) - W
    perm = rng.permutation(npts)  # new row r is old row perm[r]
    A = sp.csr_matrix(A)[perm][:, perm]
    return sp.csr_matrix(A), [pts[perm, 0], pts[perm, 1]], shift


def build(name, size, rng):
    """(A, coordinates per row, symmetric, spd, description, parameters) of a generated matrix."""
    s = SIZES[size]
    n2, n3 = s["n2"], s["n3"]
    if name == "poisson2d":
        A = kron_laplace((n2, n2), (1.0, 1.0))
        return (A, grid_points((n2, n2)), True, True,
                f"-Laplace(u) on the unit square, 5-point differences on {n2} x {n2} interior points, Dirichlet",
                {"grid": [n2, n2]})
    if name == "poisson3d":
        A = kron_laplace((n3, n3, n3), (1.0, 1.0, 1.0))
        return (A, grid_points((n3, n3, n3)), True, True,
                f"-Laplace(u) on the unit cube, 7-point differences on {n3}^3 interior points, Dirichlet",
                {"grid": [n3, n3, n3]})
    if name == "aniso2d":
        A = kron_laplace((n2, n2), (1.0, ANISO_EPS))
        return (A, grid_points((n2, n2)), True, True,
                f"-u_xx - {ANISO_EPS:g} u_yy on the unit square, 5-point differences on {n2} x {n2} interior points",
                {"grid": [n2, n2], "epsilon": ANISO_EPS})
    if name == "jump2d":
        blocks = 8
        k = checkerboard((n2, n2), blocks)
        return (finite_volume((n2, n2), k), cell_centres((n2, n2)), True, True,
                f"-div(k grad u), cell-centred finite volumes on {n2} x {n2} cells, k = 1 | {JUMP_CONTRAST:g} on a "
                f"{blocks} x {blocks} checkerboard, harmonic face averages, Dirichlet",
                {"grid": [n2, n2], "contrast": JUMP_CONTRAST, "checkerboard": blocks})
    if name == "jump3d":
        blocks = 4
        k = checkerboard((n3, n3, n3), blocks)
        return (finite_volume((n3, n3, n3), k), cell_centres((n3, n3, n3)), True, True,
                f"-div(k grad u), cell-centred finite volumes on {n3}^3 cells, k = 1 | {JUMP_CONTRAST:g} on a "
                f"{blocks}^3 checkerboard, harmonic face averages, Dirichlet",
                {"grid": [n3, n3, n3], "contrast": JUMP_CONTRAST, "checkerboard": blocks})
    if name == "convdiff2d":
        A = upwind_convdiff(n2, CONVDIFF_EPS, CONVDIFF_WIND)
        h = 1.0 / (n2 + 1)
        peclet = float(np.hypot(*CONVDIFF_WIND) * h / CONVDIFF_EPS)
        return (A, grid_points((n2, n2)), False, False,
                f"-{CONVDIFF_EPS:g} Laplace(u) + w . grad(u), w = {CONVDIFF_WIND}, first-order upwind on {n2} x {n2} "
                f"interior points, Dirichlet: non-symmetric M-matrix, cell Peclet {peclet:.2f}",
                {"grid": [n2, n2], "epsilon": CONVDIFF_EPS, "wind": list(CONVDIFF_WIND), "cell_peclet": peclet})
    if name == "randspd":
        A, coords, shift = random_spd(s["rand"], rng)
        return (A, coords, True, True,
                f"graph Laplacian of a random geometric {RAND_NEIGHBOURS}-nearest-neighbour graph on {s['rand']} "
                f"points (weights in [0.1, 1]) + {RAND_SHIFT:g} x mean degree on the diagonal, randomly permuted",
                {"points": s["rand"], "neighbours": RAND_NEIGHBOURS, "shift": shift})
    raise ValueError(name)


# ------------------------------------------------------------------------------------ writing


def write_system(out, name, A, x, b, symmetric, check):
    """Writes A, x, b in both formats under out/name; returns the files (relative to out). With check,
    reads each back and compares exactly (ValueError on a difference)."""
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    files = {"A": {"mtx": f"{name}/A.mtx", "petsc": f"{name}/A.petsc"}}
    write_petsc_mat(os.path.join(out, files["A"]["petsc"]), A)
    write_mm_mat(os.path.join(out, files["A"]["mtx"]), A, symmetric)
    for key, v in (("x", x), ("b", b)):
        if v is None:
            continue
        files[key] = {"mtx": f"{name}/{key}.mtx", "petsc": f"{name}/{key}.petsc"}
        write_petsc_vec(os.path.join(out, files[key]["petsc"]), v)
        write_mm_vec(os.path.join(out, files[key]["mtx"]), v)
    if check:
        check_files(out, files, A, x, b)
    return files


def check_files(out, files, A, x, b):
    """Reads every file in `files` back and compares with A, x, b bitwise; ValueError on a difference."""
    path = os.path.join(out, files["A"]["petsc"])
    if not same_matrix(read_petsc_mat(path), A):
        raise ValueError(f"{path}: differs from the matrix written")
    path = os.path.join(out, files["A"]["mtx"])
    if not same_matrix(scipy.io.mmread(path), A):
        raise ValueError(f"{path}: differs from the matrix written")
    for key, v in (("x", x), ("b", b)):
        if key not in files:
            continue
        path = os.path.join(out, files[key]["petsc"])
        if not same_vector(read_petsc_vec(path), v):
            raise ValueError(f"{path}: differs from the vector written")
        path = os.path.join(out, files[key]["mtx"])
        if not same_vector(scipy.io.mmread(path), v):
            raise ValueError(f"{path}: differs from the vector written")


def is_symmetric(A):
    A = sp.csr_matrix(A)
    return bool((A - A.T).count_nonzero() == 0)


def export_elasticity(args, size, out):
    """Runs desync's --export-system for elasticity3d and copies/converts what it writes; returns the
    manifest entry, or None (with a message) when that fails."""
    nodes = SIZES[size]["elast"]
    with tempfile.TemporaryDirectory(prefix="desync-export-") as tmp:
        launch = (shlex.split(args.mpirun) + ["-np", str(args.export_ranks)]) if args.mpirun else []
        cmd = launch + [args.desync, "cg", "--problem", "elasticity3d", "--global", str(nodes),
                        "--export-system", tmp]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=args.timeout)
        except (OSError, subprocess.SubprocessError) as e:
            print(f"make_matrices.py: elasticity3d skipped: {shlex.join(cmd)}: {e}", file=sys.stderr)
            return None
        src_A, src_b = os.path.join(tmp, "A.petsc"), os.path.join(tmp, "b.petsc")
        if p.returncode != 0 or not os.path.exists(src_A):
            tail = (p.stdout or "").strip().splitlines()[-3:]
            print(f"make_matrices.py: elasticity3d skipped: {shlex.join(cmd)} failed (exit {p.returncode}): "
                  + " | ".join(tail), file=sys.stderr)
            return None
        A = read_petsc_mat(src_A)
        b = read_petsc_vec(src_b) if os.path.exists(src_b) else None
        if b is not None and b.size != A.shape[0]:
            print(f"make_matrices.py: elasticity3d skipped: b.petsc has {b.size} entries, A {A.shape[0]} rows",
                  file=sys.stderr)
            return None
        symmetric = is_symmetric(A)
        files = write_system(out, "elasticity3d", A, None, b, symmetric, args.check)
        part = os.path.join(tmp, "partition.txt")
        if os.path.exists(part):
            shutil.copyfile(part, os.path.join(out, "elasticity3d", "partition.txt"))
            files["partition"] = "elasticity3d/partition.txt"
    return {"name": "elasticity3d", "rows": int(A.shape[0]), "nnz": int(A.nnz), "symmetric": symmetric,
            "spd": symmetric,  # desync's elasticity3d: SPD (Dirichlet on the face z = 0)
            "description": f"desync's elasticity3d (linear elasticity, trilinear hexahedra) on {nodes}^3 nodes, "
                           f"exported by `desync cg --problem elasticity3d --global {nodes} --export-system`"
                           + ("" if b is not None else "; no b.petsc was written"),
            "files": files, "parameters": {"nodes": nodes, "export_ranks": args.export_ranks},
            "exact_solution": False}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--size", choices=tuple(SIZES), default="small", help="matrix sizes (default small)")
    p.add_argument("--out", required=True, help="output folder (created; the manifest is OUT/manifest.json)")
    p.add_argument("--only", default="", help=f"comma-separated names (default all: {', '.join(NAMES)})")
    p.add_argument("--seed", type=int, default=0, help="seed of the random matrices (default 0)")
    p.add_argument("--check", action="store_true", help="read every file written back and compare exactly")
    p.add_argument("--desync", help="desync executable: export its elasticity3d system (else skipped)")
    p.add_argument("--mpirun", default="", help="launcher for the export run (default: run desync directly, 1 rank)")
    p.add_argument("--export-ranks", type=int, default=1, help="ranks of the export run with --mpirun (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds allowed for the export run (default 600)")
    a = p.parse_args(argv)
    a.only = [x for x in a.only.split(",") if x] or list(NAMES)
    for x in a.only:
        if x not in NAMES:
            p.error(f"unknown matrix {x!r} (choose from {', '.join(NAMES)})")
    return a


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rng_seeds = np.random.SeedSequence(args.seed).spawn(len(NAMES))
    entries = []
    for name in args.only:
        if name == "elasticity3d":
            if not args.desync:
                print("make_matrices.py: elasticity3d skipped (give --desync PATH to export desync's system)",
                      file=sys.stderr)
                continue
            entry = export_elasticity(args, args.size, args.out)
            if entry:
                entries.append(entry)
                print(f"{name:<12} {entry['rows']:>8} rows {entry['nnz']:>9} nonzeros  symmetric "
                      f"{entry['symmetric']}" + ("  (checked)" if args.check else ""), flush=True)
            continue
        rng = np.random.default_rng(rng_seeds[NAMES.index(name)])  # each matrix its own stream
        A, coords, symmetric, spd, description, params = build(name, args.size, rng)
        A = sp.csr_matrix(A)
        A.sum_duplicates()
        A.sort_indices()
        if is_symmetric(A) != symmetric:
            raise SystemExit(f"make_matrices.py: {name}: symmetric is {is_symmetric(A)}, expected {symmetric}")
        x = smooth(coords)
        b = A @ x
        files = write_system(args.out, name, A, x, b, symmetric, args.check)
        entries.append({"name": name, "rows": int(A.shape[0]), "nnz": int(A.nnz), "symmetric": symmetric, "spd": spd,
                        "description": description, "files": files, "parameters": params, "exact_solution": True})
        print(f"{name:<12} {A.shape[0]:>8} rows {A.nnz:>9} nonzeros  symmetric {symmetric}"
              + ("  (checked)" if args.check else ""), flush=True)
    written = len(entries)
    path = os.path.join(args.out, "manifest.json")
    try:  # --only into an existing folder of the same size and seed: keep the other matrices' entries
        with open(path) as f:
            old = json.load(f)
        if old.get("size") == args.size and old.get("seed") == args.seed:
            done = {e["name"] for e in entries}
            entries = [e for e in old.get("matrices", []) if e.get("name") not in done] + entries
            entries.sort(key=lambda e: NAMES.index(e["name"]) if e["name"] in NAMES else len(NAMES))
    except (OSError, ValueError, KeyError):
        pass
    manifest = {"generator": "bench/make_matrices.py", "size": args.size, "seed": args.seed,
                "tolerance_note": "b = A x with x the known smooth solution (x.*); elasticity3d: desync's own b",
                "matrices": entries}
    text = json.dumps(manifest, indent=1) + "\n"  # whole before the file is touched
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {written} matrices" + (", every file read back and equal" if args.check else "")
          + f"; {path} lists {len(entries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
