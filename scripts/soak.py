#!/usr/bin/env python3
"""Randomized soak of desync: many small runs of every solver, mode, transport and completion scheme,
on the built-in problems and on systems it generates, each under a timeout, each checked for what
must hold whatever the draw.

  python3 scripts/soak.py run  --desync build/mpich/desync --mpirun mpirun.mpich --minutes 2
  python3 scripts/soak.py run  --desync build/openmpi/desync --mpirun mpirun --oshrun oshrun --runs 1000 \\
                               --json soak.json
  python3 scripts/soak.py run  --inputs matrix --minutes 2 --workdir /tmp/soak   # generated systems only
  python3 scripts/soak.py check --desync build/mpich/desync --mpirun mpirun.mpich --ranks 3 --converge -- \\
                               schwarz --mode async --transport rma ...
  python3 scripts/soak.py check --case /tmp/soak/run-00042    # rerun a failed matrix draw with its checks
  python3 scripts/soak.py summary soak-openmpi.json soak-mpich.json   # the tables of docs/soak.md
  python3 scripts/soak.py selftest   # the judge's verdicts on stand-in runs (a ctest)

A built-in draw (`run`) picks a solver (jacobi, schwarz, pde, cg), its mode or method, a transport
(p2p, rma, and shmem where --oshrun is given) with a completion scheme, 1 to 4 ranks, a slow rank,
noise and limits (a tolerance, sometimes a small --max-iters or --time-limit). A matrix draw
(--inputs matrix, or half the draws of --inputs all) writes a generated system (MATRIX_KINDS: 2D
variable-coefficient diffusion, anisotropic 3D Laplacian, upwind convection-diffusion, a k-NN graph
Laplacian + 0.01 I, two disconnected blocks, a permuted and a badly scaled SPD matrix, an indefinite
symmetric matrix, and a matrix with an empty row) as Matrix Market or PETSc binary, a right-hand side
as .npy, PETSc Vec or Matrix Market (or none: A 1), and runs jacobi, schwarz or krylov --matrix on
it with their options and a --partition, about one in ten through the Python API (desync.solve).
Seeded generators: the same --seed gives the same sequence of runs. Every run must:

  * end before --timeout seconds (a hang is a failure; the launcher is killed);
  * exit with 0 or 1 (2 would mean the draw was refused, 3 a numerical failure, 4 an internal error,
    5 the wait watchdog), and write its JSON record;
  * exit 0 exactly when the record says converged, and, for the solvers with a tolerance, be
    converged exactly when the true residual meets it (a pde run has no tolerance: converged unless
    a numerical failure stopped it);
  * leave no MPI request pending (the record's outstanding_requests is 0).

A matrix draw also saves its solution (--save x.npy): the residual ||b - A x|| / ||b|| computed here
from the generated system must meet the tolerance when the exit code is 0 and equal the record's
true_residual (within 1e-6 relative plus a rounding bound, residual_check); a stop on the test may
leave the true residual at most FALSE_STOP times the tolerance; the empty-row matrix must be refused
(exit code 2, one 'desync: error:' line); a --robin draw and an asynchronous two-level draw with
--coarse-reuse 0 may diverge (exit code 3, one message: that it diverges, or that the iterate
overflowed to NaN or Inf).

`check` runs one given command the same way (the CI's 3-rank cases) and can also bound the ratio of
the largest to the smallest iteration count over the ranks (--balance), or reruns a kept matrix draw
(--case). Failures are printed with the command that reproduces them (a matrix draw's files kept in
the folder the line names); the exit status is 1 if any run failed. Standard library only.
"""
import argparse
import json
import math
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SOLVERS = ("jacobi", "schwarz", "pde", "cg")
RMA_SCHEMES = ("flush", "flush-local", "overlap", "overlap-local")
SHMEM_SCHEMES = ("put", "put-overlap")
# Solvers whose record's true residual is judged against its tolerance.
WITH_TOLERANCE = ("jacobi", "schwarz", "cg", "krylov")
# A matrix run that stops as tolerance_reached may end with its true residual above the tolerance
# (an asynchronous test saw values of different ages: exit code 1), but not this many times above it.
FALSE_STOP = 100.0
CORES = os.cpu_count() or 1
PETSC_MAT_CLASSID = 1211216  # PETSc's MAT_FILE_CLASSID
PETSC_VEC_CLASSID = 1211214  # VEC_FILE_CLASSID


def transport_args(rng, transports):
    t = rng.choice(transports)
    if t == "rma":
        return t, ["--transport", "rma", "--rma-sync", rng.choice(RMA_SCHEMES)]
    if t == "shmem":
        return t, ["--transport", "shmem", "--shmem-sync", rng.choice(SHMEM_SCHEMES)]
    return t, ["--transport", "p2p"]


def noise_args(rng, ranks):
    args = []
    if ranks > 1 and rng.random() < 0.3:
        args += ["--slow-rank", str(rng.randrange(ranks)), "--slow-factor", str(rng.choice((2, 3, 5)))]
    if rng.random() < 0.2:
        args += ["--noise", "jitter", "--noise-seed", str(rng.randrange(1000))]
    return args


def limit_args(rng):
    r = rng.random()
    if r < 0.12:
        return ["--max-iters", str(rng.choice((1, 3, 10, 40)))]
    if r < 0.2:
        return ["--time-limit", str(rng.choice((0.05, 0.2, 0.5)))]
    return []


def jacobi_async_args(rng, mode):
    """An asynchronous Jacobi draw's loop options (built-in problem or --matrix)."""
    if mode == "sync":
        return []
    args = ["--inflight", str(rng.choice((1, 2, 4))), "--idle", rng.choice(("yield", "spin")),
            "--reduction", rng.choice(("iallreduce", "tree", "doubling")),
            "--check-every", str(rng.choice((1, 10, 100)))]
    if rng.random() < 0.5:
        args.append("--polish")
    return args


def schwarz_loop_args(rng, mode, untested, ranks, transport):
    """A Schwarz draw's loop options (built-in problem or --matrix): asynchronous --inflight, --idle,
    --check-every and --polish, the noise, and the limits (one always where --termination none).
    Returns them and the ranks, at most a core each where the draw spins over shmem."""
    args = []
    if mode == "async":
        args += ["--inflight", str(rng.choice((1, 2, 4))), "--idle", rng.choice(("skip", "skip", "yield", "spin")),
                 "--check-every", str(rng.choice((1, 1, 5)))]
        if rng.random() < 0.3:
            args.append("--polish")
        if transport == "shmem" and "spin" in args:
            # As for Jacobi (draw_matrix): with more spinning ranks than cores a descheduled receiver
            # acknowledges a shmem message only once it runs again, and the asynchronous iteration
            # works from very old halos (soak seed 2, a two-block matrix at overlap 0, 4 ranks on 2
            # cores: 67 000-100 000 iterations to a residual of 4e-6 in one CI run of two, converged
            # in the other). A core per rank, as on a cluster: docs/soak.md.
            ranks = min(ranks, CORES)
    limits = limit_args(rng)
    if untested and not limits:
        limits = ["--max-iters", str(rng.choice((3, 10, 40)))] if rng.random() < 0.5 else ["--time-limit", "0.05"]
    return args + noise_args(rng, ranks) + limits, ranks


def draw(rng, transports, max_ranks=4, one_sided_ranks=4):
    """One random run: (solver, ranks, transport, args after the solver name). one_sided_ranks: the
    most ranks of a draw over rma or shmem (MPICH: 2, as draw_matrix)."""
    solver = rng.choice(SOLVERS)
    ranks = rng.randint(1, max_ranks)
    transport, targs = transport_args(rng, transports)
    if transport != "p2p":
        ranks = min(ranks, one_sided_ranks)
    if solver == "jacobi":
        mode = rng.choice(("sync", "async", "racy"))
        args = ["--mode", mode, "--local", str(rng.choice((4, 6, 8, 10))),
                "--tol", rng.choice(("1e-3", "1e-4", "1e-6"))]
        args += jacobi_async_args(rng, mode)
        args += noise_args(rng, ranks) + limit_args(rng)
    elif solver == "schwarz":
        mode = rng.choice(("sync", "async"))
        if rng.random() < 0.7:
            args = ["--problem", "poisson2d", "--local", str(rng.choice((8, 12, 16)))]
        else:
            args = ["--problem", "laplace3d", "--local", str(rng.choice((5, 6, 8)))]
        args += ["--mode", mode, "--overlap", str(rng.choice((1, 2))),
                 "--alpha", rng.choice(("auto", "inf", "10")), "--tol", rng.choice(("1e-5", "1e-7"))]
        # --termination none (no test, no detection) runs to a limit: one is added where none was drawn
        untested = rng.random() < 0.1
        if untested:
            args += ["--termination", "none"]
        if mode == "async" and not untested:
            args += ["--termination", rng.choice(("tree", "iallreduce"))]
        loop, ranks = schwarz_loop_args(rng, mode, untested, ranks, transport)
        args += loop
    elif solver == "pde":
        mode = rng.choice(("sync", "bounded"))
        if rng.random() < 0.5:
            args = ["--problem", "advection-diffusion1d", "--local", str(rng.choice((32, 64)))]
        else:
            # The periodic cube: its size divisible by the ranks along every axis.
            dims = {1: "1x1x1", 2: "2x1x1", 3: "3x1x1", 4: "2x2x1"}[ranks]
            args = ["--problem", "burgers3d", "--global", str(rng.choice((6, 12))), "--dims", dims]
        # (--noise jitter measures the step over at least 5 warm-up steps)
        args += ["--mode", mode, "--steps", str(rng.choice((20, 60, 150))), "--warmup", str(rng.choice((5, 10)))]
        if mode == "bounded":
            args += ["--max-delay", str(rng.choice((1, 2, 5)))]
        args += noise_args(rng, ranks)
    else:
        method = rng.choice(("cg", "cg-cg", "pipecg", "groppcg"))
        args = ["--method", method, "--local", str(rng.choice((4, 6, 8))), "--rtol", rng.choice(("1e-6", "1e-8")),
                "--pc", rng.choice(("none", "jacobi"))]
        if rng.random() < 0.12:
            args += ["--max-iters", str(rng.choice((1, 5)))]
    return solver, ranks, transport, args + targs


# ------------------------------------------------------------------------------------------------
# Generated systems (standard library only). A matrix is its order n and one dict {column: value}
# per row; every value is a Python float, written exactly (repr in Matrix Market, the IEEE bits in
# PETSc binary), so that the residual computed here is the residual of the system desync read.

class Matrix:
    def __init__(self, n):
        self.n = n
        self.rows = [dict() for _ in range(n)]
        self.symmetric = False  # the stored values are exactly symmetric (may be written 'symmetric')

    def add(self, i, j, v):
        r = self.rows[i]
        r[j] = r.get(j, 0.0) + v

    def nnz(self):
        return sum(len(r) for r in self.rows)


def diffusion(dims, coef):
    """Cell-centred diffusion on a box of cells (2 or 3 extents), Dirichlet boundary: each face's
    coefficient coef(axis) on the diagonal of the cells beside it and, negated, between them."""
    n = 1
    for d in dims:
        n *= d
    strides = [1]
    for d in dims[:-1]:
        strides.append(strides[-1] * d)
    A = Matrix(n)
    for p in range(n):
        rest = p
        for axis, extent in enumerate(dims):
            i = rest % extent
            rest //= extent
            c = coef(axis)  # the face below cell p along this axis
            A.add(p, p, c)
            if i > 0:
                q = p - strides[axis]
                A.add(q, q, c)
                A.add(p, q, -c)
                A.add(q, p, -c)
            if i == extent - 1:
                A.add(p, p, coef(axis))  # the boundary face above
    A.symmetric = True
    return A


def gen_diffusion2d(rng, small=False):
    """2D variable-coefficient diffusion: log-normal face coefficients exp(sigma N(0, 1))."""
    hi = 16 if small else 38
    nx, ny = rng.randint(10, hi), rng.randint(10, hi)
    sigma = rng.choice((0.5, 1.0, 2.0))
    return diffusion((nx, ny), lambda axis: math.exp(sigma * rng.gauss(0.0, 1.0))), f"{nx}x{ny} sigma {sigma}"


def gen_aniso3d(rng):
    """The 7-point Laplacian with a coefficient per axis: 1 and two of 1, 0.1, 0.01 in random order."""
    dims = (rng.randint(5, 11), rng.randint(5, 11), rng.randint(5, 11))
    eps = [1.0, rng.choice((1.0, 0.1, 0.01)), rng.choice((0.1, 0.01))]
    rng.shuffle(eps)
    return diffusion(dims, lambda axis: eps[axis]), "x".join(map(str, dims)) + f" eps {eps}"


def gen_convdiff2d(rng):
    """Upwind convection-diffusion on the 5-point stencil (times h^2): -1 to each neighbour, 4 on the
    diagonal, and the velocity's upwind difference beta (cos t, sin t): a non-symmetric M-matrix."""
    nx, ny = rng.randint(10, 38), rng.randint(10, 38)
    beta = rng.choice((0.1, 1.0, 5.0))
    t = rng.uniform(0.0, 2.0 * math.pi)
    bx, by = beta * math.cos(t), beta * math.sin(t)
    A = Matrix(nx * ny)
    for y in range(ny):
        for x in range(nx):
            p = x + nx * y
            A.add(p, p, 4.0 + abs(bx) + abs(by))
            for dx, dy, up in ((-1, 0, bx > 0), (1, 0, bx < 0), (0, -1, by > 0), (0, 1, by < 0)):
                if 0 <= x + dx < nx and 0 <= y + dy < ny:
                    A.add(p, p + dx + nx * dy, -1.0 - (abs(bx) if dx and up else abs(by) if dy and up else 0.0))
    return A, f"{nx}x{ny} beta {beta}"


def gen_knn(rng, n=None):
    """The graph Laplacian of the symmetrised k-nearest-neighbour graph of random points in the unit
    square (unit weights), plus 0.01 I."""
    n = n or rng.randint(100, 1200)
    k = rng.choice((4, 6, 8))
    pts = [(rng.random(), rng.random()) for _ in range(n)]
    m = max(1, int(math.sqrt(n / k)))  # about k points per cell
    h = 1.0 / m
    cells = {}
    for i, (x, y) in enumerate(pts):
        cells.setdefault((min(int(x * m), m - 1), min(int(y * m), m - 1)), []).append(i)
    edges = set()
    for i, (x, y) in enumerate(pts):
        cx, cy = min(int(x * m), m - 1), min(int(y * m), m - 1)
        radius = 1
        while True:
            cand = []
            for gx in range(cx - radius, cx + radius + 1):
                for gy in range(cy - radius, cy + radius + 1):
                    for j in cells.get((gx, gy), ()):
                        if j != i:
                            cand.append(((pts[j][0] - x) ** 2 + (pts[j][1] - y) ** 2, j))
            cand.sort()
            # every point within radius * h of point i lies in the cells searched
            if len(cand) >= k and (cand[k - 1][0] <= (radius * h) ** 2 or radius >= m):
                break
            radius += 1
        for _, j in cand[:k]:
            edges.add((min(i, j), max(i, j)))
    A = Matrix(n)
    for i, j in sorted(edges):
        A.add(i, j, -1.0)
        A.add(j, i, -1.0)
        A.add(i, i, 1.0)
        A.add(j, j, 1.0)
    for i in range(n):
        A.add(i, i, 0.01)
    A.symmetric = True
    return A, f"n {n} k {k}"


def gen_two_blocks(rng):
    """Two disconnected blocks: a 2D diffusion matrix and a k-NN Laplacian, one after the other."""
    first, d1 = gen_diffusion2d(rng, small=True)
    second, d2 = gen_knn(rng, rng.randint(80, 600))
    A = Matrix(first.n + second.n)
    A.rows = first.rows + [{j + first.n: v for j, v in r.items()} for r in second.rows]
    A.symmetric = True
    return A, f"diffusion2d {d1} + knn {d2}"


def gen_permuted(rng):
    """A 2D diffusion or anisotropic 3D matrix with its rows and columns randomly permuted."""
    base, d = gen_diffusion2d(rng) if rng.random() < 0.5 else gen_aniso3d(rng)
    perm = list(range(base.n))
    rng.shuffle(perm)
    A = Matrix(base.n)
    for i, r in enumerate(base.rows):
        A.rows[perm[i]] = {perm[j]: v for j, v in r.items()}
    A.symmetric = True
    return A, f"permuted {d}"


def gen_scaled(rng):
    """D A D, A a 2D diffusion matrix, D diagonal with entries 10^U(-s, s) (2s decades)."""
    base, d = gen_diffusion2d(rng)
    s = rng.choice((1.0, 1.5, 2.0))
    D = [10.0 ** rng.uniform(-s, s) for _ in range(base.n)]
    A = Matrix(base.n)
    for i, r in enumerate(base.rows):
        A.rows[i] = {j: v * (D[i] * D[j]) for j, v in r.items()}  # D_i D_j = D_j D_i: exactly symmetric
    A.symmetric = True
    return A, f"scaled {2 * s:g} decades, {d}"


def gen_indefinite(rng):
    """The 5-point Laplacian (4, -1) minus sigma I, sigma halfway between two of its smallest distinct
    eigenvalues (4 - 2 cos(i pi/(nx+1)) - 2 cos(j pi/(ny+1))): 1 to 4 negative eigenvalues."""
    nx = rng.randint(10, 30)
    ny = nx + rng.randint(1, 7)
    eig = sorted(4 - 2 * math.cos(i * math.pi / (nx + 1)) - 2 * math.cos(j * math.pi / (ny + 1))
                 for i in range(1, nx + 1) for j in range(1, ny + 1))
    distinct = [eig[0]]
    for e in eig[1:]:
        if e - distinct[-1] > 1e-3 * distinct[-1]:
            distinct.append(e)
    k = rng.randint(1, 4)
    sigma = 0.5 * (distinct[k - 1] + distinct[k])
    A = Matrix(nx * ny)
    for y in range(ny):
        for x in range(nx):
            p = x + nx * y
            A.add(p, p, 4.0 - sigma)
            for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                if 0 <= x + dx < nx and 0 <= y + dy < ny:
                    A.add(p, p + dx + nx * dy, -1.0)
    A.symmetric = True
    return A, f"{nx}x{ny} sigma {sigma:.4g} ({sum(1 for e in eig if e < sigma)} negative eigenvalues)"


def gen_empty_row(rng):
    """A small 2D diffusion or k-NN matrix with one row emptied (and its column too, half the time)."""
    base, d = gen_diffusion2d(rng, small=True) if rng.random() < 0.5 else gen_knn(rng, rng.randint(100, 300))
    r = rng.randrange(base.n)
    base.rows[r] = {}
    both = rng.random() < 0.5
    if both:
        for row in base.rows:
            row.pop(r, None)
    base.symmetric = False
    return base, f"row {r} empty{' (and its column)' if both else ''}, {d}"


# kind: (generator, properties). spd: symmetric positive definite (every method); sym: symmetric;
# refuse: desync must refuse it (exit code 2, one message).
# "dd": diagonally dominant M-matrices, where relaxed ILU (--ilu-relax) keeps its pivots positive
# (on "scaled" it does not, and desync refuses the factorisation).
MATRIX_KINDS = {
    "diffusion2d": (gen_diffusion2d, {"spd", "dd"}),
    "aniso3d": (gen_aniso3d, {"spd", "dd"}),
    "convdiff2d": (gen_convdiff2d, set()),
    "knn": (gen_knn, {"spd", "dd"}),
    "two-blocks": (gen_two_blocks, {"spd", "disconnected", "dd"}),
    "permuted": (gen_permuted, {"spd", "dd"}),
    "scaled": (gen_scaled, {"spd"}),
    "indefinite": (gen_indefinite, {"sym"}),
    "empty-row": (gen_empty_row, {"refuse"}),
}
# Draw weights: the solvable kinds alike, the refused matrix rarely.
KIND_WEIGHTS = {"diffusion2d": 13, "aniso3d": 13, "convdiff2d": 13, "knn": 13, "two-blocks": 10, "permuted": 10,
                "scaled": 13, "indefinite": 10, "empty-row": 5}


def generate(kind, seed):
    """(Matrix, description) of a kind from its seed: the same seed, the same matrix."""
    return MATRIX_KINDS[kind][0](random.Random(seed))


# ---- writers and readers ----

def write_mtx(path, A, rng, symmetric):
    """Matrix Market coordinate real, 'symmetric' (lower triangle) or 'general', the entries in row
    order or shuffled, and sometimes a few entries split into two halves (duplicates are summed; the
    halves of a float add up to it exactly)."""
    entries = []
    for i, r in enumerate(A.rows):
        for j, v in r.items():
            if symmetric and j > i:
                continue
            entries.append((i, j, v))
    if rng.random() < 0.15:
        for idx in rng.sample(range(len(entries)), min(len(entries), 10)):
            i, j, v = entries[idx]
            entries[idx] = (i, j, v / 2)
            entries.append((i, j, v / 2))
    if rng.random() < 0.3:
        rng.shuffle(entries)
    with open(path, "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate real {'symmetric' if symmetric else 'general'}\n")
        f.write("% generated by desync's scripts/soak.py\n")
        f.write(f"{A.n} {A.n} {len(entries)}\n")
        f.write("".join(f"{i + 1} {j + 1} {v!r}\n" for i, j, v in entries))


def write_petsc_matrix(path, A):
    """PETSc binary AIJ (MatView): big-endian int32 class id 1211216, rows, columns, non-zeros, the
    row lengths, the column indices (sorted in each row), then the float64 values."""
    cols, vals, lens = [], [], []
    for r in A.rows:
        js = sorted(r)
        lens.append(len(js))
        cols += js
        vals += [r[j] for j in js]
    with open(path, "wb") as f:
        f.write(struct.pack(">4i", PETSC_MAT_CLASSID, A.n, A.n, len(vals)))
        f.write(struct.pack(f">{A.n}i", *lens))
        f.write(struct.pack(f">{len(cols)}i", *cols))
        f.write(struct.pack(f">{len(vals)}d", *vals))


def write_npy(path, v):
    """A NumPy .npy file, format 1.0, dtype '<f8', shape (n,): the header padded to 64 bytes."""
    head = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % len(v)
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode("latin1"))
        f.write(struct.pack(f"<{len(v)}d", *v))


def write_petsc_vector(path, v):
    with open(path, "wb") as f:
        f.write(struct.pack(">2i", PETSC_VEC_CLASSID, len(v)) + struct.pack(f">{len(v)}d", *v))


def write_mtx_vector(path, v):
    write_mtx_columns(path, [v])


def write_mtx_columns(path, columns):
    """Vectors of one length as a Matrix Market array (column after column)."""
    with open(path, "w") as f:
        f.write(f"%%MatrixMarket matrix array real general\n{len(columns[0])} {len(columns)}\n"
                + "".join(f"{x!r}\n" for v in columns for x in v))


def near_kernel_columns(n, k):
    """--near-kernel's vectors for a draw: k = 1, a smooth positive vector; k = 2, the constant and a
    ramp over the rows (independent on every set of two or more rows; the coarse spaces keep the
    independent ones where a component has one row)."""
    ramp = [i / max(n - 1, 1) for i in range(n)]
    return [[1.0 + 0.5 * r for r in ramp]] if k == 1 else [[1.0] * n, ramp]


def read_npy(path):
    """A float64 vector from a .npy file (versions 1 to 3, '<f8', shape (n,) or (n, 1))."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        hlen, at = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, at = struct.unpack("<I", data[8:12])[0], 12
    header = data[at:at + hlen].decode("latin1")
    if "'<f8'" not in header or "'fortran_order': False" not in header:
        raise ValueError(f"{path}: not a C-ordered float64 .npy file: {header.strip()}")
    shape = header[header.index("'shape':"):].split("(")[1].split(")")[0]
    n = int(shape.split(",")[0])
    body = data[at + hlen:]
    if len(body) != 8 * n:
        raise ValueError(f"{path}: {len(body)} bytes of data for shape ({shape})")
    return list(struct.unpack(f"<{n}d", body))


def read_matrix(path):
    """A matrix this script wrote (Matrix Market coordinate or PETSc binary), for `check --case`."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == struct.pack(">i", PETSC_MAT_CLASSID):
        _, n, _, nz = struct.unpack(">4i", data[:16])
        lens = struct.unpack(f">{n}i", data[16:16 + 4 * n])
        cols = struct.unpack(f">{nz}i", data[16 + 4 * n:16 + 4 * n + 4 * nz])
        vals = struct.unpack(f">{nz}d", data[16 + 4 * n + 4 * nz:16 + 4 * n + 12 * nz])
        A, k = Matrix(n), 0
        for i in range(n):
            for _ in range(lens[i]):
                A.add(i, cols[k], vals[k])
                k += 1
        return A
    lines = [ln for ln in data.decode().splitlines() if ln.strip() and not ln.startswith("%")]
    symmetric = "symmetric" in data.decode().splitlines()[0]
    n = int(lines[0].split()[0])
    A = Matrix(n)
    for ln in lines[1:]:
        i, j, v = ln.split()
        i, j, v = int(i) - 1, int(j) - 1, float(v)
        A.add(i, j, v)
        if symmetric and i != j:
            A.add(j, i, v)
    return A


def read_vector(path):
    """A vector this script wrote (.npy, PETSc binary Vec or Matrix Market array)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] == b"\x93NUMPY":
        return read_npy(path)
    if data[:4] == struct.pack(">i", PETSC_VEC_CLASSID):
        n = struct.unpack(">i", data[4:8])[0]
        return list(struct.unpack(f">{n}d", data[8:8 + 8 * n]))
    lines = [ln for ln in data.decode().splitlines() if ln.strip() and not ln.startswith("%")]
    return [float(x) for x in lines[1:]]


def residual_check(A, b, x, default_b):
    """(||b - A x|| / ||b||, slack): the relative residual with exactly rounded sums (math.fsum), and
    a bound on how far a double-precision evaluation of it may be from that, 4 m eps ||(|b| + |A||x|
    (+ |A| 1 where b is the default A 1))|| / ||b||, m the most entries of a row plus 2: desync's
    sums of the same terms in another order (and its own A 1) differ from the exact ones by at most
    about that much."""
    r2, s2, m = [], [], 0
    for i, row in enumerate(A.rows):
        terms = [b[i]] + [-v * x[j] for j, v in row.items()]
        r2.append(math.fsum(terms))
        mag = abs(b[i]) + math.fsum(abs(t) for t in terms[1:])
        if default_b:
            mag += math.fsum(abs(v) for v in row.values())
        s2.append(mag)
        m = max(m, len(row) + 2)
    bnorm = math.sqrt(math.fsum(v * v for v in b))
    rnorm = math.sqrt(math.fsum(v * v for v in r2))
    snorm = math.sqrt(math.fsum(v * v for v in s2))
    return rnorm / bnorm, 4 * m * 2.0 ** -52 * snorm / bnorm


# ------------------------------------------------------------------------------------------------
# Matrix draws: a generated system (MATRIX_KINDS) in a file, solved by jacobi, schwarz or krylov
# --matrix, from the command line or (a share) through the Python API desync.solve.

def partition_args(rng, features):
    p = rng.random()
    if p < 0.45:
        args = [] if rng.random() < 0.5 else ["--partition", "rows"]
    elif p < 0.75 or not features.get("ptscotch"):
        args = ["--partition", "metis"]
    else:
        args = ["--partition", "ptscotch"]
    if args[1:] and args[1] != "rows" and rng.random() < 0.3:
        args += ["--partition-seed", str(rng.randrange(100))]
    return args


def coarse_ranks_choice(rng, ranks, features, allow_many=True):
    """--coarse-ranks: 0 (dense LU on every rank), 1 (rank 0), or 2..ranks with MUMPS."""
    r = rng.random()
    if r < 0.6:
        return []
    if r < 0.8 or ranks < 2 or not allow_many or not features.get("mumps"):
        return ["--coarse-ranks", rng.choice(("0", "1"))]
    return ["--coarse-ranks", str(rng.randint(2, ranks))]


def local_solver_args(rng, spd, ilu=False, relax=()):
    """--local-solver: mostly the default; umfpack; on SPD blocks the CHOLMOD modes and, with ilu
    (the matrix one of the SPD kinds, M-matrices, where ILU(k) exists; no Robin shift), the
    approximate ilu0..ilu3, half of them relaxed (--ilu-relax, one of `relax`, where given)."""
    r = rng.random()
    if r < 0.75:
        return []
    if ilu and r < 0.84:
        args = ["--local-solver", rng.choice(("ilu0", "ilu1", "ilu2", "ilu3"))]
        if relax and rng.random() < 0.5:
            args += ["--ilu-relax", rng.choice(relax)]
        return args
    if r < 0.9 or not spd:
        return ["--local-solver", "umfpack"]
    return ["--local-solver", rng.choice(("cholmod-simplicial", "cholmod-supernodal", "cholmod"))]


def pieces_args(rng):
    """--subdomains-per-rank: mostly one subdomain per rank, else 2-4 pieces (every kind has 25 or
    more rows per rank at 4 ranks)."""
    return ["--subdomains-per-rank", str(rng.randint(2, 4))] if rng.random() < 0.2 else []


def coarse_ok(props, ranks, pieces=1):
    """The coarse spaces that can be drawn: gdsw and rgdsw need 2 subdomains or more (ranks, or
    --subdomains-per-rank pieces, which the coarse level is built on), each with an interface (not
    so on two disconnected blocks, where a rank or piece can hold one whole block)."""
    spaces = ["nicolaides"]
    if ranks * pieces >= 2 and "disconnected" not in props:
        spaces += ["gdsw", "rgdsw"]
    return spaces


def draw_matrix(rng, transports, max_ranks, features):
    """One random matrix run: a dict with the matrix kind and seed, its file format, the right-hand
    side, the solver and its arguments (without --matrix, --rhs and --save), the ranks, the transport
    and whether it runs through the Python API."""
    kinds = list(KIND_WEIGHTS)
    kind = rng.choices(kinds, weights=[KIND_WEIGHTS[k] for k in kinds])[0]
    props = MATRIX_KINDS[kind][1]
    spd = "spd" in props
    d = {"kind": kind, "seed": rng.randrange(2 ** 31), "format": rng.choice(("mtx", "petsc"))}
    d["ext"] = {"mtx": rng.choice((".mtx",) * 8 + (".mm", ".matrix")),
                "petsc": rng.choice((".petsc",) * 6 + (".bin", ".dat", ".matrix"))}[d["format"]]
    d["mtx_symmetric"] = rng.random() < 0.6  # a symmetric matrix as 'symmetric' (its lower triangle)
    r = rng.random()
    d["rhs"] = "none" if r < 0.3 else "npy" if r < 0.8 else rng.choice(("petsc", "mtx"))
    ranks = rng.randint(1, max_ranks)
    transport, targs = transport_args(rng, transports)
    if transport != "p2p":
        ranks = min(ranks, features.get("one_sided_ranks", 4))
    if kind == "indefinite":
        # GMRES only: point Jacobi's spectral estimate stops it (exit 3) and CG breaks down on it, by design
        solver = "krylov"
    else:
        solver = rng.choice(("jacobi", "schwarz", "krylov"))
    args = []
    if solver == "jacobi":
        mode = rng.choice(("sync", "async", "racy"))
        # (a knn matrix's Jacobi iteration matrix has a spectral radius near 0.999: 10^4 sweeps for 1e-4)
        tol = rng.choice(("1e-3", "1e-4", "1e-6"))
        args = ["--mode", mode, "--variant", rng.choice(("point", "block")), "--tol", tol]
        args += jacobi_async_args(rng, mode)
        if transport == "shmem" and "spin" in args:
            # Over shmem a message waits for its receiver's acknowledgement; with more spinning ranks
            # than cores a descheduled receiver gives it only once it runs again, and asynchronous
            # Jacobi iterates on halo values thousands of sweeps old (4 ranks on 2 cores: a mean
            # delay of 2 000-5 800 sweeps, not converged in 10^6; with --idle yield or 2 ranks it
            # converges). A core per rank, as on a cluster: docs/soak.md.
            ranks = min(ranks, CORES)
        if rng.random() < 0.1:
            args += ["--spectral-steps", rng.choice(("0", "60"))]
        args += noise_args(rng, ranks) + limit_args(rng)
    elif solver == "schwarz":
        mode = rng.choice(("sync", "async"))
        tol = rng.choice(("1e-5", "1e-7", "1e-9"))
        args = ["--mode", mode, "--overlap", str(rng.randint(0, 3)), "--tol", tol]
        coarse = rng.choice(coarse_ok(props, ranks)) if rng.random() < 0.35 else None
        if coarse:
            args += ["--coarse", coarse]
            # the asynchronous coarse solve is rank 0's alone: --coarse-ranks 0 or 1
            args += coarse_ranks_choice(rng, ranks, features, allow_many=mode == "sync")
            # Asynchronously the fixed-point form needs a symmetric matrix, exact local solves and
            # --coarse-reuse 1 (refused otherwise); drawn on the symmetric kinds.
            fixed_point = rng.random() < 0.3 and (mode == "sync" or "spd" in props or "sym" in props)
            if fixed_point:
                # The fixed-point coarse form: its correction is a Petrov-Galerkin projection, not an
                # A-orthogonal one, and can diverge (beta = 0.5 on 2D Poisson; classical Nicolaides on
                # the badly scaled matrix, soak seed 2: docs/matrices.md), so exit code 3 saying so is
                # a correct outcome of such a draw.
                args += ["--coarse-form", "fixed-point"]
                d["may_diverge"] = True
                if rng.random() < 0.5:
                    args += ["--robin", rng.choice(("0.8", "0.9"))]
            if mode == "async" and not fixed_point:
                if rng.random() < 0.4:
                    reuse = rng.randint(0, 3)
                    args += ["--coarse-reuse", str(reuse)]
                    # --coarse-reuse 0 never waits: each coarse correction adds to the progress the
                    # local solves made since its residual was taken, an additive two-level
                    # iteration that may diverge (matrices.md); exit code 3 saying so is correct.
                    d["may_diverge"] = reuse == 0
                if rng.random() < 0.4:
                    args += ["--coarse-fan-in", rng.choice(("1", "2", "3", "auto"))]
        elif rng.random() < 0.35:
            # the Robin variant; with a coarse space the Galerkin correction can diverge (matrices.md)
            robin = rng.choice(("0", "0.2", "0.5", "0.9"))
            args += ["--robin", robin]
            # The Robin variant can diverge on these matrices: its synchronous iteration matrix has a
            # spectral radius above 1 on many of them (overlap 0 above all), so exit code 3 with a
            # message that it diverges is a correct outcome of such a draw.
            d["may_diverge"] = robin != "0"
        # (CHOLMOD forced only where the local matrices are SPD: not with the Robin diagonal shift,
        # which can make them indefinite on a matrix that is not diagonally dominant)
        args += local_solver_args(rng, spd and not d.get("may_diverge"), ilu=spd and not d.get("may_diverge"),
                                  relax=("0.3", "0.5", "0.9") if "dd" in props else ())
        if "--ilu-relax" in args:
            # the relaxed ILU step's M^-1 A has eigenvalues past 2 as the relaxation nears 1 (2D
            # Poisson: 0.7 converged, 0.9 diverged), so the stationary iteration may diverge
            d["may_diverge"] = True
        if spd and not d.get("may_diverge"):
            # several pieces per rank make the rank's solve approximate (one step of restricted
            # Schwarz on its pieces), convergent on the M-matrices as ilu0's step is
            args += pieces_args(rng)
        untested = rng.random() < 0.1
        if untested:
            args += ["--termination", "none"]
        elif mode == "async":
            args += ["--termination", rng.choice(("tree", "iallreduce"))]
        elif rng.random() < 0.3:
            args += ["--termination", "allreduce"]
        if mode == "sync" and rng.random() < 0.3:
            args += ["--sync-wait", rng.choice(("one", "all"))]
        loop, ranks = schwarz_loop_args(rng, mode, untested, ranks, transport)
        args += loop
    else:
        solver = "krylov"
        if spd or ("refuse" in props and rng.random() < 0.5):
            method = rng.choice(("cg", "cg-cg", "pipecg", "groppcg", "gmres"))
        else:
            method = "gmres"
        tol = rng.choice(("1e-6", "1e-8", "1e-10"))
        args = ["--method", method, "--rtol", tol]
        if method == "gmres":
            pc = rng.choice(("none", "jacobi", "ras", "ras", "asm"))
            if rng.random() < 0.4:
                args += ["--restart", str(rng.choice((5, 20, 60)))]
        else:
            pc = rng.choice(("none", "jacobi", "asm", "asm") + (("bjacobi-ic0",) if spd else ()))
        args += ["--pc", pc]
        if pc in ("asm", "ras"):
            args += ["--overlap", str(rng.randint(0, 3))]
            # The Robin variant of the subdomain matrices (--robin) with GMRES only: on a matrix that
            # is not diagonally dominant the shifted diagonal can make them indefinite, which CG
            # cannot take as a preconditioner and CHOLMOD cannot factor.
            robin = method == "gmres" and rng.random() < 0.3
            if robin:
                args += ["--robin", rng.choice(("0.2", "0.5"))]
            args += local_solver_args(rng, (spd or method != "gmres") and not robin, ilu=spd and not robin,
                                      relax=("0.5", "0.9", "0.99", "1") if "dd" in props else ())
            pieces = pieces_args(rng) if kind != "indefinite" else []  # (an indefinite matrix's small pieces can be singular)
            args += pieces
            if rng.random() < (0.6 if pieces else 0.4):  # on the pieces where there are (one rank with pieces has an interface)
                args += ["--coarse", rng.choice(coarse_ok(props, ranks, int(pieces[1]) if pieces else 1))]
                args += coarse_ranks_choice(rng, ranks, features)
        if rng.random() < 0.5:
            args += ["--reduction", rng.choice(("blocking", "iallreduce", "doubling", "nonblocking"))]
        engine = rng.choice(("p2p", "p2p", "p2p", "neighbor", "blocking"))
        if engine != "p2p":
            args += ["--engine", engine]
            transport, targs = "p2p", []  # --transport is the p2p engine's
        if rng.random() < 0.2:
            args += ["--progress", "test", "--test-interval", str(rng.choice((16, 256)))]
        if rng.random() < 0.1:
            args += ["--replace-every", str(rng.choice((10, 50)))]
        if rng.random() < 0.1:
            args += ["--max-iters", str(rng.choice((1, 5, 30)))]
        elif kind == "indefinite":
            args += ["--max-iters", "3000"]  # restarted GMRES can stagnate on it: a run of seconds, not minutes
    if "--coarse" in args and rng.random() < 0.3:
        d["near_kernel"] = rng.randint(1, 2)  # --near-kernel FILE (materialise; an array through Python)
    args += partition_args(rng, features)
    # ~10 % through desync.solve, over p2p or rma (OpenSHMEM wants oshrun and every rank of the world)
    d["api"] = "python" if rng.random() < 0.1 else "cli"
    if d["api"] == "python" and transport == "shmem":
        transport, targs = "p2p", ["--transport", "p2p"]
    d.update(solver=solver, ranks=ranks, transport=transport, args=args + targs, tol=float(tol),
             expect="refuse" if "refuse" in props else "solve")
    if d["api"] == "python":
        d["format"], d["ext"] = "mtx", ".mtx"  # the driver reads it with scipy.io.mmread
        if d["rhs"] in ("petsc", "mtx"):
            d["rhs"] = "npy"
    return d


# The Python draws' driver, written into each such run's folder: `mpirun -np P PYTHON solve.py
# MATRIX RHS|- SOLVER --option value ...` runs desync.solve with the command line's options
# (--partition as solve's partition, --json and --save as json= and save=, --near-kernel's file read
# into an array on rank 0) and exits with the
# command line's code (2 and one 'desync: error:' line on rank 0 for bad input, 3 numerical (the
# library prints that message itself), 4 other).
PY_DRIVER = r'''"""One soak draw through desync.solve (written by desync's scripts/soak.py)."""
import sys

import numpy as np
import scipy.io
import scipy.sparse
from mpi4py import MPI

import desync


def main():
    matrix, rhs, solver, *words = sys.argv[1:]
    opts, i = {}, 0
    while i < len(words):
        key = words[i][2:].replace("-", "_")
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            opts[key], i = words[i + 1], i + 2
        else:
            opts[key], i = True, i + 1
    partition = opts.pop("partition", None)
    comm = MPI.COMM_WORLD
    A = b = None
    near_kernel = opts.pop("near_kernel", None)  # a file here, an array (rank 0's) for desync.solve
    if comm.rank == 0:
        A = scipy.sparse.csr_matrix(scipy.io.mmread(matrix))
        b = None if rhs == "-" else np.load(rhs)
        if near_kernel is not None:
            opts["near_kernel"] = np.asarray(scipy.io.mmread(near_kernel))
    try:
        result = desync.solve(A, b, solver=solver, partition=partition, **opts)
    except desync.NumericalError as e:
        code, message = 3, str(e)  # (the library prints nothing: the exception carries its message)
    except ValueError as e:
        code, message = 2, str(e)
    except RuntimeError as e:
        code, message = 4, str(e)
    else:
        return result.exit_code
    if comm.rank == 0:
        print(f"desync: error: {message}", flush=True)
    return code


sys.exit(main())
'''


def materialise(d, folder, desync, python, mpirun_argv):
    """Writes the draw's matrix (and right-hand side) into `folder` and returns (command, case): the
    command line to run and what the checks need."""
    os.makedirs(folder, exist_ok=True)
    A, description = generate(d["kind"], d["seed"])
    frng = random.Random(d["seed"] + 1)  # the file's layout (entry order, duplicates)
    mpath = os.path.join(folder, "A" + d["ext"])
    if d["format"] == "mtx":
        write_mtx(mpath, A, frng, symmetric=d["mtx_symmetric"] and A.symmetric)
    else:
        write_petsc_matrix(mpath, A)
    b, rpath = None, None
    if d["rhs"] != "none":
        b = [frng.gauss(0.0, 1.0) for _ in range(A.n)]
        rpath = os.path.join(folder, "b." + d["rhs"])
        {"npy": write_npy, "petsc": write_petsc_vector, "mtx": write_mtx_vector}[d["rhs"]](rpath, b)
    xpath = os.path.join(folder, "x.npy")
    extra = []
    if d.get("near_kernel"):
        zpath = os.path.join(folder, "Z.mtx")
        write_mtx_columns(zpath, near_kernel_columns(A.n, d["near_kernel"]))
        extra = ["--near-kernel", zpath]
    if d["api"] == "python":
        driver = os.path.join(folder, "solve.py")
        with open(driver, "w") as f:
            f.write(PY_DRIVER)
        cmd = mpirun_argv + [python, driver, mpath, rpath or "-", d["solver"]] + d["args"] + extra + ["--save", xpath]
    else:
        cmd = mpirun_argv + [desync, d["solver"], "--matrix", mpath] + (["--rhs", rpath] if rpath else []) \
            + d["args"] + extra + ["--save", xpath]
    case = {"folder": folder, "kind": d["kind"], "description": description, "matrix": mpath, "rhs": rpath,
            "save": xpath, "tol": d["tol"], "expect": d["expect"], "may_diverge": d.get("may_diverge", False),
            "solver": d["solver"], "command": cmd}
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    case["A"], case["b"] = A, b
    return cmd, case


def check_solution(case, rec, rc):
    """The checks of a matrix run's answer: (ok, why, extra info)."""
    A = case["A"]
    try:
        x = read_npy(case["save"])
    except (OSError, ValueError, struct.error) as e:
        return False, f"exit code {rc} but no readable --save file ({e})", {}
    if len(x) != A.n:
        return False, f"--save wrote {len(x)} entries, the matrix has {A.n} rows", {}
    if not all(math.isfinite(v) for v in x):
        return False, f"exit code {rc} but the saved solution is not finite", {}
    default_b = case["b"] is None
    b = case["b"] if not default_b else [math.fsum(r.values()) for r in A.rows]
    res, slack = residual_check(A, b, x, default_b)
    info = {"residual_here": res, "slack": slack}
    tol = case["tol"]
    if rc == 0 and not res <= tol * (1 + 1e-6) + slack:
        return False, (f"exit code 0 but ||b - A x||/||b|| of the saved solution is {res:.6e} here, above the "
                       f"tolerance {tol:g}"), info
    rec_res = rec.get("true_residual")
    if not isinstance(rec_res, (int, float)):
        return False, f"the record's true_residual is {rec_res!r}", info
    if abs(res - rec_res) > 1e-6 * max(res, rec_res) + slack:
        return False, (f"the record's true_residual {rec_res:.9e} is not ||b - A x||/||b|| = {res:.9e} of the saved "
                       f"solution (allowed difference {1e-6 * max(res, rec_res) + slack:.2e})"), info
    rec_tol = rec.get("tolerance")
    if not isinstance(rec_tol, (int, float)) or abs(rec_tol - tol) > 1e-12 * tol:
        return False, f"the record's tolerance {rec_tol!r} is not the {tol:g} given", info
    return True, "", info


def launcher(args, ranks, transport):
    if transport == "shmem":
        return shlex.split(args.oshrun) + ["-np", str(ranks), "--mca", "osc", "ucx"]
    return shlex.split(args.mpirun) + ["-np", str(ranks)]


def child_env():
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "0")
    return env


def run_one(cmd, solver, timeout, balance=None, per_message=None, case=None):
    """Runs `cmd` (which ends with --json PATH's PATH added here) and checks it. Returns (ok, why, info).
    `case` (a matrix draw): its record goes into the draw's folder, and the saved solution is checked
    against the generated system, or (case expect 'refuse') the run must be refused with exit code 2
    and one 'desync: error:' line."""
    with tempfile.TemporaryDirectory(prefix="desync-soak-") as tmp:
        path = os.path.join(case["folder"] if case else tmp, "run.json")
        full = cmd + ["--json", path, "--quiet"]
        start = time.monotonic()
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env(),
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return False, f"hang: no exit after {timeout:g} s", {"seconds": timeout}
        seconds = time.monotonic() - start
        info = {"seconds": round(seconds, 3), "rc": proc.returncode}
        lines = out.strip().splitlines()
        errors = [ln.strip() for ln in lines if ln.startswith("desync: error:")]
        # what to show: desync's own message where there is one, else the output's last lines
        tail = errors[0] if errors else " | ".join(line.strip() for line in lines[-3:])
        if case and case["expect"] == "refuse":
            info["message"] = tail
            if proc.returncode != 2:
                return False, f"exit code {proc.returncode}, expected 2 (refused: {case['description']}): {tail}", info
            if len(errors) != 1:
                return False, f"exit code 2 with {len(errors)} 'desync: error:' lines, expected one: {tail}", info
            return True, "", info
        if case and case.get("may_diverge") and proc.returncode == 3 and len(set(errors)) == 1 and \
                ("diverg" in errors[0] or "non-finite value" in errors[0]):
            # a draw whose method can diverge (the Robin variant): exit code 3 with one message saying so,
            # or saying that the iterate overflowed (NaN or Inf): an asynchronous run whose growth outruns
            # its tests (a tree termination votes once per rank) ends there, as reruns of a kept draw
            # show (aniso3d, --robin 0.9 --overlap 0 over shmem: either message, by the timing)
            info["message"] = tail
            return True, "", info
        if proc.returncode not in (0, 1):
            return False, f"exit code {proc.returncode}: {tail}", info
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            return False, f"exit code {proc.returncode} but no readable JSON record ({e}): {tail}", info
    converged = bool(rec.get("converged"))
    info.update(converged=converged, true_residual=rec.get("true_residual"), tolerance=rec.get("tolerance"),
                stop=rec.get("stop_reason"))
    if (proc.returncode == 0) != converged:
        return False, f"exit code {proc.returncode} but the record says converged={converged}", info
    if solver in WITH_TOLERANCE:
        res, tol = rec.get("true_residual"), rec.get("tolerance")
        meets = isinstance(res, (int, float)) and isinstance(tol, (int, float)) and res <= tol
        if meets != converged:
            return False, f"true residual {res} against tolerance {tol}, but converged={converged}", info
    if rec.get("outstanding_requests", 0) != 0:
        return False, f"{rec.get('outstanding_requests')} MPI request(s) left pending", info
    its = [r.get("iterations") for r in rec.get("per_rank", []) if isinstance(r.get("iterations"), (int, float))]
    if its:
        info["iterations"] = [int(i) for i in its]
    if balance and its and min(its) > 0 and max(its) / min(its) > balance:
        return False, f"iterations per rank {info['iterations']}: more than {balance:g} times apart", info
    if per_message is not None:
        for r in rec.get("per_rank", []):
            if r["iterations"] > per_message * r["messages_received"] + 2:
                return False, (f"rank {r['rank']} made {r['iterations']:.0f} updates on {r['messages_received']:.0f} "
                               f"messages received (more than {per_message:g} per message + 2)"), info
    if case:
        res, tol = rec.get("true_residual"), rec.get("tolerance")
        # (a stop on the test that the true residual contradicts: "true_residual_above_tol" where the
        # build names it so, "tolerance_reached" with exit code 1 where it does not)
        if rec.get("stop_reason") in ("tolerance_reached", "true_residual_above_tol") and \
                isinstance(res, (int, float)) and \
                isinstance(tol, (int, float)) and not res <= FALSE_STOP * tol:
            return False, (f"false stop: stopped as {rec.get('stop_reason')} with the true residual {res:.3e}, "
                           f"{res / tol:.3g} times the tolerance {tol:g} (allowed: {FALSE_STOP:g} times)"), info
        limited = any(w in cmd for w in ("--max-iters", "--time-limit"))
        if solver in ("jacobi", "schwarz") and not limited and rec.get("stop_reason") == "max_iters" and \
                not converged and not case.get("may_diverge"):
            # these matrices are ones the methods converge on (M-matrices): no limit was drawn, and the
            # default --max-iters is far beyond what any of them needs
            return False, (f"ran to the default --max-iters without converging (iterations per rank "
                           f"{info.get('iterations')}, true residual {res}, tolerance {tol})"), info
        ok, why, extra = check_solution(case, rec, proc.returncode)
        info.update(extra)
        if not ok:
            return False, why, info
    return True, "", info


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_python(desync):
    """The virtual environment of the desync build: build/venv-mpich for build/mpich, else build/venv."""
    flavour = os.path.basename(os.path.dirname(os.path.abspath(desync)))
    return os.path.join(repo_root(), "build", "venv-mpich" if flavour == "mpich" else "venv", "bin", "python")


def python_problem(python, desync):
    """None if `python -c 'import desync'` works with an extension module built after `desync`, else
    why not (one line). The extension links the build's library statically: one older than the
    executable would run older code than the command line does (make python builds it again)."""
    if not os.path.exists(python):
        return f"{python} does not exist (make python builds it)"
    try:
        p = subprocess.run([python, "-c", "import desync, desync._core, scipy.io; print(desync._core.__file__)"],
                           capture_output=True, text=True, timeout=120, env=child_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{python} -c 'import desync': {e}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["exit code " + str(p.returncode)])[-1]
        return f"{python} -c 'import desync, scipy.io' failed: {last}"
    ext = (p.stdout.strip().splitlines() or [""])[-1]
    try:
        if os.path.getmtime(ext) < os.path.getmtime(desync):
            return f"its extension {ext} is older than {desync} (make python builds it again)"
    except OSError:
        pass
    return None


def one_sided_ranks(args):
    """The most ranks of a draw over rma or shmem, built-in or matrix: 4, or 2 under MPICH."""
    # MPICH makes RMA progress only inside the target's MPI calls: with more busy ranks than cores
    # every flush waits for the target to be scheduled, and an asynchronous run on a slow-converging
    # system takes minutes (docs/channel.md). Its one-sided draws use at most 2 ranks, as the MPICH
    # test suites do (tests/CMakeLists.txt, _solver_ranks).
    try:  # (--mpirun is a shell-like line: the launcher and its flags, as CMake passes it)
        p = subprocess.run(shlex.split(args.mpirun) + ["--version"], capture_output=True, text=True, timeout=60,
                           env=child_env())
        version = p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    return 2 if "HYDRA" in version or "mpich" in args.mpirun.lower() else 4


def probe_features(args, workdir):
    """What the build has: PT-Scotch (--partition ptscotch) and MUMPS (--coarse-ranks >= 2), found by
    asking it on a small matrix (a build without them refuses with exit code 2)."""
    path = os.path.join(workdir, "probe.mtx")
    A = diffusion((6, 6), lambda axis: 1.0)
    write_mtx(path, A, random.Random(0), symmetric=False)
    features = {}
    for name, ranks, extra in (("ptscotch", 1, ["--partition", "ptscotch"]),
                               ("mumps", 2, ["--pc", "asm", "--coarse", "nicolaides", "--coarse-ranks", "2"])):
        cmd = launcher(args, ranks, "p2p") + [args.desync, "krylov", "--matrix", path, "--quiet"] + extra
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=child_env())
            features[name] = p.returncode == 0
        except subprocess.TimeoutExpired:
            features[name] = False
    os.remove(path)
    return features


def cmd_run(args):
    transports = ["p2p", "rma"] + (["shmem"] if args.oshrun else [])
    # Three generators: the built-in draws' (seeded as before, so a seed gives the same built-in
    # commands whatever --inputs), the matrix draws', and the choice between them (--inputs all).
    rng = random.Random(args.seed)
    mrng = random.Random(f"matrix-{args.seed}")
    pick = random.Random(f"inputs-{args.seed}")
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    results, failures = [], 0
    n = 0
    own_workdir = args.workdir is None
    workdir = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="desync-soak-")
    os.makedirs(workdir, exist_ok=True)
    features, python, no_python = {}, None, None
    if args.inputs != "builtin":
        features = probe_features(args, workdir)
        python = args.python or default_python(args.desync)
        no_python = python_problem(python, args.desync)
        print(f"soak: matrix draws in {workdir}; the build has PT-Scotch: {'yes' if features['ptscotch'] else 'no'}, "
              f"MUMPS: {'yes' if features['mumps'] else 'no'}", flush=True)
        if no_python:
            print(f"soak: skipping the Python draws (run on the command line instead): {no_python}", flush=True)
    features["one_sided_ranks"] = one_sided_ranks(args)  # the built-in draws' too
    while (args.runs is None or n < args.runs) and (deadline is None or time.monotonic() < deadline):
        matrix = args.inputs == "matrix" or (args.inputs == "all" and pick.random() < 0.5)
        n += 1
        entry = {"run": n}
        case = None
        if matrix:
            d = draw_matrix(mrng, transports, args.max_ranks, features)
            if d["api"] == "python" and no_python:
                d["api"] = "cli"
            solver = d["solver"]
            folder = os.path.join(workdir, f"run-{n:05d}")
            cmd, case = materialise(d, folder, args.desync, python, launcher(args, d["ranks"], d["transport"]))
            entry.update(input=d["kind"], format=d["format"], rhs=d["rhs"], api=d["api"], expect=d["expect"],
                         partition=(d["args"][d["args"].index("--partition") + 1] if "--partition" in d["args"]
                                    else "rows"))
        else:
            solver, ranks, transport, sargs = draw(rng, transports, args.max_ranks, features.get("one_sided_ranks", 4))
            cmd = launcher(args, ranks, transport) + [args.desync, solver] + sargs
            entry.update(input="builtin")
        ok, why, info = run_one(cmd, solver, args.timeout, case=case)
        shown = " ".join(shlex.quote(c) for c in cmd)
        entry.update(command=shown, ok=ok, why=why, **info)
        if case and not ok:
            entry["case"] = case["folder"]
        results.append(entry)
        if not ok:
            failures += 1
            where = f" (files kept in {case['folder']}; rerun: python3 {sys.argv[0]} check --case {case['folder']})" if case \
                else ""
            print(f"FAIL run {n}{where}: {why}\n  {shown}", flush=True)
        else:
            if case:
                shutil.rmtree(case["folder"], ignore_errors=True)
            if args.verbose:
                print(f"ok   run {n} ({info['seconds']:.1f} s): {shown}", flush=True)
    print(f"soak: {n} runs (seed {args.seed}), {failures} failed; desync {args.desync}, launcher {args.mpirun}")
    print(f"soak: {n - failures} passed, {failures} failed")
    if any(r.get("case") for r in results):
        print(f"soak: the failed matrix runs' files are kept in {workdir}")
    elif own_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": args.seed, "desync": args.desync, "mpirun": args.mpirun, "oshrun": args.oshrun,
                       "inputs": args.inputs, "features": features, "python": None if no_python else python,
                       "runs": n, "failed": failures, "timeout": args.timeout, "results": results}, f, indent=1)
            f.write("\n")
    return 1 if failures or n == 0 else 0


def cmd_check(args):
    if args.case:
        with open(os.path.join(args.case, "case.json")) as f:
            case = json.load(f)
        case["A"] = read_matrix(case["matrix"])
        case["b"] = read_vector(case["rhs"]) if case["rhs"] else None
        cmd = case["command"]
        ok, why, info = run_one(cmd, case["solver"], args.timeout, case=case)
        shown = " ".join(shlex.quote(c) for c in cmd)
        print(f"{'ok' if ok else 'FAIL'}: {shown}\n  {case['kind']}: {case['description']}\n  {json.dumps(info)}"
              + ("" if ok else f"\n  {why}"))
        return 0 if ok else 1
    rest = args.command
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest or args.ranks is None:
        print("soak.py check: give --ranks and the desync arguments after --, or --case DIR", file=sys.stderr)
        return 2
    transport = "shmem" if "shmem" in rest else "p2p"
    cmd = launcher(args, args.ranks, transport) + [args.desync] + rest
    ok, why, info = run_one(cmd, rest[0], args.timeout, args.balance, args.updates_per_message)
    if ok and args.converge and info.get("rc") != 0:
        ok, why = False, f"did not converge (exit code {info.get('rc')}, stop {info.get('stop')})"
    shown = " ".join(shlex.quote(c) for c in cmd)
    print(f"{'ok' if ok else 'FAIL'}: {shown}\n  {json.dumps(info)}" + ("" if ok else f"\n  {why}"))
    return 0 if ok else 1


def describe(command):
    """(solver, ranks, transport with scheme) of a recorded run's command line."""
    words = shlex.split(command)
    solver = next((w for w in words if w in SOLVERS + ("krylov",)), "?")
    ranks = words[words.index("-np") + 1] if "-np" in words else "?"
    transport = words[words.index("--transport") + 1] if "--transport" in words else "p2p"
    for flag in ("--rma-sync", "--shmem-sync"):
        if flag in words:
            transport += " " + words[words.index(flag) + 1]
    return solver, ranks, transport


def table(title, counts, columns=None):
    """One markdown table row of runs (failed) per key."""
    keys = columns or sorted(counts)
    print(f"| {title} | " + " | ".join(str(k) for k in keys) + " |")
    print("|---|" + "---|" * len(keys))
    print("| runs (failed) | " + " | ".join(f"{counts[k][0]} ({counts[k][1]})" for k in keys) + " |")
    print()


def count(results, key):
    counts = {}
    for r in results:
        k = key(r)
        runs, failed = counts.get(k, (0, 0))
        counts[k] = (runs + 1, failed + (0 if r["ok"] else 1))
    return counts


def cmd_summary(args):
    """A markdown table per file: runs and failures by solver, by rank count and by transport; where
    the file has matrix draws, by solver and input (built-in or the generated kind) and by the
    matrix runs' file format, right-hand side, partition and interface."""
    for path in args.files:
        with open(path) as f:
            doc = json.load(f)
        results = doc["results"]
        seconds = sum(r.get("seconds", 0) for r in results)
        refused = sum(1 for r in results if r.get("expect") == "refuse" and r.get("rc") == 2)
        diverged = sum(1 for r in results if r.get("ok") and r.get("rc") == 3)
        print(f"`{os.path.basename(path)}`: {doc['runs']} runs (seed {doc['seed']}, launcher `{doc['mpirun']}`"
              f"{', `' + doc['oshrun'] + '`' if doc.get('oshrun') else ''}), {doc['failed']} failed, "
              f"{sum(1 for r in results if r.get('rc') == 0)} converged (exit 0), "
              f"{sum(1 for r in results if r.get('rc') == 1)} not (exit 1), "
              + (f"{refused} refused as expected (exit 2), " if refused else "")
              + (f"{diverged} diverged where the method may (exit 3), " if diverged else "")
              + f"{seconds / 60:.1f} minutes of runs\n")
        for title, key in (("solver", 0), ("ranks", 1), ("transport", 2)):
            table(title, count(results, lambda r: describe(r["command"])[key]))
        # The exit-1 runs by why they stopped: a limit the draw set, or none (the default limits, a
        # stop the true residual contradicted).
        def stopped(r):
            drawn = any(w in r["command"] for w in ("--max-iters", "--time-limit", "--termination none"))
            return f"{r.get('stop')}{' (drawn limit)' if drawn else ''}"
        table("exit 1: stop", count([r for r in results if r.get("rc") == 1], stopped))
        if not any(r.get("input", "builtin") != "builtin" for r in results):
            continue
        # solver x input: one row per input, one column per solver
        cells = count(results, lambda r: (r.get("input", "builtin"), describe(r["command"])[0]))
        solvers = sorted({s for _, s in cells})
        inputs = sorted({i for i, _ in cells}, key=lambda i: (i != "builtin", i))
        print("| input \\ solver | " + " | ".join(solvers) + " |")
        print("|---|" + "---|" * len(solvers))
        for i in inputs:
            print(f"| {i} | " + " | ".join(f"{cells[(i, s)][0]} ({cells[(i, s)][1]})" if (i, s) in cells else ""
                                           for s in solvers) + " |")
        print()
        matrix = [r for r in results if r.get("input", "builtin") != "builtin"]
        for title, field in (("matrix file", "format"), ("right-hand side", "rhs"), ("partition", "partition"),
                             ("interface", "api")):
            table(title, count(matrix, lambda r: r.get(field, "?")))
    return 0


def cmd_selftest():
    """The judge (run_one) on stand-in runs whose exit code and message are known: a check that cannot
    fail checks nothing. Returns 0 when every verdict is the one expected."""
    diverging = {"may_diverge": True, "expect": "solve", "description": "stand-in", "tol": 1e-9}
    cases = [  # (message, exit code, may_diverge, the verdict expected)
        ("residual grew from 1.000e+00 to 2.3e+09 (more than 1e+06 times): diverging", 3, True, True),
        ("non-finite value (NaN or Inf) in the solution at iteration 978 on 2 rank(s)", 3, True, True),
        ("non-finite value (NaN or Inf) in the solution at iteration 978 on 2 rank(s)", 3, False, False),
        ("residual grew from 1.000e+00 to 2.3e+09 (more than 1e+06 times): diverging", 3, False, False),
        ("the local matrix of its subdomain could not be factored", 3, True, False),
        ("an internal error", 4, True, False),
    ]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="desync-soak-selftest-") as folder:
        for message, code, may, want in cases:
            case = dict(diverging, may_diverge=may, folder=folder, save=os.path.join(folder, "x.npy"))
            cmd = ["bash", "-c", f"echo 'desync: error: {message}'; exit {code}", "stand-in"]
            ok, why, _ = run_one(cmd, "schwarz", 30, case=case)
            if ok != want:
                failed += 1
                print(f"FAIL: exit {code}, may_diverge {may}, '{message}': judged {'ok' if ok else 'failed'} "
                      f"({why}), expected {'ok' if want else 'failed'}")
    print(f"soak selftest: {len(cases) - failed} of {len(cases)} verdicts as expected")
    return 1 if failed else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("selftest", help="check the judge's verdicts on stand-in runs")
    sm = sub.add_parser("summary")
    sm.add_argument("files", nargs="+", help="JSON files written by run --json")
    for name in ("run", "check"):
        s = sub.add_parser(name)
        s.add_argument("--desync", default=os.environ.get("DESYNC", "build/openmpi/desync"))
        s.add_argument("--mpirun", default=os.environ.get("MPIRUN", "mpirun"),
                       help="launcher, split like a shell line (default $MPIRUN or mpirun)")
        s.add_argument("--oshrun", default=None, help="OpenSHMEM launcher: also draw --transport shmem (Open MPI)")
        s.add_argument("--timeout", type=float, default=90.0, help="seconds before a run counts as hung (default 90)")
    r = sub.choices["run"]
    r.add_argument("--runs", type=int, default=None, help="stop after this many runs")
    r.add_argument("--minutes", type=float, default=None, help="stop drawing new runs after this many minutes")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--max-ranks", type=int, default=4)
    r.add_argument("--inputs", choices=("all", "builtin", "matrix"), default="all",
                   help="draw the built-in problems, generated matrices (--matrix), or both, half and half "
                        "(default all)")
    r.add_argument("--python", default=None,
                   help="the Python with `import desync` for the Python draws (default: build/venv-mpich/bin/python "
                        "for a desync in a folder named mpich, else build/venv/bin/python)")
    r.add_argument("--workdir", default=None,
                   help="folder for the matrix draws' files (default: a new one in the temporary folder, removed "
                        "at the end unless a run failed); a failed run's folder is kept")
    r.add_argument("--json", default=None, help="write every run's command and result here")
    r.add_argument("--verbose", action="store_true", help="print passing runs too")
    c = sub.choices["check"]
    c.add_argument("--ranks", type=int, default=None)
    c.add_argument("--case", default=None, help="rerun a matrix draw kept by run (its folder) with its checks")
    c.add_argument("--balance", type=float, default=None,
                   help="fail if the largest iteration count over the ranks exceeds the smallest this many times")
    c.add_argument("--converge", action="store_true", help="fail unless the run converges (exit 0)")
    c.add_argument("--updates-per-message", type=float, default=None,
                   help="fail if a rank made more than this many updates per message it received, plus 2 (a "
                        "rank that updates on unchanged values while a neighbour starves)")
    c.add_argument("command", nargs=argparse.REMAINDER, help="-- then desync's arguments (solver first)")
    args = p.parse_args(argv)
    if args.what == "summary":
        return cmd_summary(args)
    if args.what == "selftest":
        return cmd_selftest()
    if args.what == "run":
        if args.runs is None and args.minutes is None:
            p.error("run: give --runs or --minutes")
        if not 1 <= args.max_ranks <= 4:
            p.error("run: --max-ranks must be 1 to 4")
        return cmd_run(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
