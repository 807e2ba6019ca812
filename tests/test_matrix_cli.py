#!/usr/bin/env python3
"""Checks the assembled-system runs of `desync jacobi|schwarz|krylov --matrix` (docs/matrices.md)
against what they must reproduce. Standard library only; runs the real executable under mpiexec:

  test_matrix_cli.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR [CHECK ...]

CHECK is any of (default: all):

  jacobi-grid      the grid problem exported by `desync jacobi --export-system`: sync point Jacobi on
                   it repeats the grid solver's iterates bit for bit (iterate k + 1 against k, the
                   boundary values being identity rows), under the grid's own partition file and
                   under METIS; the record's edge cut equals the one recomputed here from the parts
  schwarz-grid     `desync schwarz --export-system` on a strip partition: --robin 1/(1 + alpha h)
                   reproduces the grid solver's --alpha alpha iterates, robin 0 its --alpha inf,
                   within 1e-12
  schwarz-direct   one rank: the subdomain is the whole matrix, one iteration is the direct solve
  block-jacobi     schwarz --overlap 0 and jacobi --variant block make the same iterates
  async            async point Jacobi, block Jacobi and Schwarz on a non-symmetric M-matrix converge
                   (with --polish) over p2p and rma and leave no request pending
  save             gmres with ras on a METIS partition: the saved solution (.npy, .mtx, PETSc
                   binary) is in the file's row order and is the known solution (b = A 1)
"""
import array
import json
import os
import struct
import sys

from desync_test_util import check, run_checks, run_desync

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "matrices")
NOT_CONVERGED = 1


def load(path):
    with open(path) as f:
        return json.load(f)


def read_npy(path):
    """A float64 .npy file as a flat list."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    header_len = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + header_len
    a = array.array("d")
    a.frombytes(data[start:])
    if sys.byteorder != "little":
        a.byteswap()
    return a.tolist()


def read_petsc_vec(path):
    with open(path, "rb") as f:
        data = f.read()
    cls, n = struct.unpack(">ii", data[:8])
    assert cls == 1211214, path
    return list(struct.unpack(f">{n}d", data[8:8 + 8 * n]))


def read_mtx_array(path):
    with open(path) as f:
        lines = [ln for ln in f if not ln.startswith("%")]
    n = int(lines[0].split()[0])
    return [float(v) for v in lines[1:1 + n]]


def read_petsc_pattern(path):
    """The rows' column lists of a PETSc binary matrix."""
    with open(path, "rb") as f:
        data = f.read()
    cls, m, n, nnz = struct.unpack(">4i", data[:16])
    assert cls == 1211216, path
    lengths = struct.unpack(f">{m}i", data[16:16 + 4 * m])
    cols = struct.unpack(f">{nnz}i", data[16 + 4 * m:16 + 4 * m + 4 * nnz])
    rows, p = [], 0
    for ln in lengths:
        rows.append(cols[p:p + ln])
        p += ln
    return rows


def read_parts(path):
    with open(path) as f:
        return [int(t) for ln in f if not ln.lstrip().startswith("#") for t in ln.split()]


def edge_cut(rows, part):
    """Undirected edges {i, j}, i != j, of the graph of A + A^T whose ends lie in different parts."""
    edges = set()
    for i, cols in enumerate(rows):
        for j in cols:
            if i != j and part[i] != part[j]:
                edges.add((min(i, j), max(i, j)))
    return len(edges)


def rel_diff(a, b):
    scale = max(abs(v) for v in a) or 1.0
    return max(abs(x - y) for x, y in zip(a, b)) / scale


def check_jacobi_grid(args, work):
    nx, ny, nz = 12, 10, 9
    sysdir = os.path.join(work, "laplace")
    grid_npy = os.path.join(work, "jacobi_grid.npy")
    run_desync(args, 4, ("jacobi",), "--global", f"{nx}x{ny}x{nz}", "--export-system", sysdir, timeout=60)
    n = 40
    run_desync(args, 4, ("jacobi",), "--global", f"{nx}x{ny}x{nz}", "--max-iters", str(n), "--tol", "1e-15",
               "--save", grid_npy, "--quiet", expect_code=NOT_CONVERGED, timeout=60)
    grid = read_npy(grid_npy)
    rows = read_petsc_pattern(os.path.join(sysdir, "A.petsc"))
    for label, ranks, partition in (("grid partition", 4, os.path.join(sysdir, "partition.txt")),
                                    ("metis", 2, "metis")):
        out = os.path.join(work, f"jacobi_matrix_{ranks}.npy")
        js = os.path.join(work, f"jacobi_matrix_{ranks}.json")
        run_desync(args, ranks, ("jacobi",), "--matrix", os.path.join(sysdir, "A.petsc"), "--rhs",
                   os.path.join(sysdir, "b.petsc"), "--partition", partition, "--max-iters", str(n + 1), "--tol",
                   "1e-15", "--save", out, "--json", js, "--quiet", expect_code=NOT_CONVERGED, timeout=60)
        if not os.path.exists(out):
            continue
        x = read_npy(out)
        # The interior cells of the (nx + 2) x (ny + 2) x (nz + 2) nodes, in the grid's (z, y, x) order.
        inner = [x[((k + 1) * (ny + 2) + (j + 1)) * (nx + 2) + (i + 1)]
                 for k in range(nz) for j in range(ny) for i in range(nx)]
        same = sum(1 for a, b in zip(inner, grid) if a == b)
        check(same == len(grid), f"jacobi --matrix ({label}): {len(grid) - same} of {len(grid)} cells differ from "
                                 f"the grid solver's iterate {n}")
        rec = load(js)
        check(rec.get("outstanding_requests") == 0, f"jacobi --matrix ({label}): requests left pending")
        p = rec.get("details", {}).get("partition", {})
        if label == "grid partition":
            parts = read_parts(partition)
            check(p.get("edge_cut") == edge_cut(rows, parts),
                  f"jacobi --matrix: recorded edge cut {p.get('edge_cut')}, recomputed {edge_cut(rows, parts)}")
            check(p.get("method") == "file", f"partition method {p.get('method')}")
        else:
            check(p.get("method") == "metis" and p.get("edge_cut", 0) > 0, f"metis partition record {p}")


def check_schwarz_grid(args, work):
    nx, ny, ranks = 40, 40, 4
    sysdir = os.path.join(work, "poisson2d")
    run_desync(args, ranks, ("schwarz",), "--global", f"{nx}x{ny}", "--dims", f"1x{ranks}", "--export-system", sysdir,
               timeout=60)
    h = 1.0 / (nx + 1)
    for alpha, robin in (("10", 1.0 / (1.0 + 10.0 * h)), ("inf", 0.0)):
        common = ("--overlap", "2", "--max-iters", "12", "--tol", "1e-15", "--quiet")
        g, a = os.path.join(work, f"sg_{alpha}.npy"), os.path.join(work, f"sa_{alpha}.npy")
        run_desync(args, ranks, ("schwarz",), "--global", f"{nx}x{ny}", "--dims", f"1x{ranks}", "--alpha", alpha,
                   "--save", g, *common, expect_code=NOT_CONVERGED, timeout=60)
        run_desync(args, ranks, ("schwarz",), "--matrix", os.path.join(sysdir, "A.petsc"), "--rhs",
                   os.path.join(sysdir, "b.petsc"), "--partition", os.path.join(sysdir, "partition.txt"), "--robin",
                   repr(robin), "--save", a, *common, expect_code=NOT_CONVERGED, timeout=60)
        if os.path.exists(g) and os.path.exists(a):
            d = rel_diff(read_npy(g), read_npy(a))
            check(d < 1e-12, f"schwarz --matrix --robin {robin} against --alpha {alpha}: iterates differ by {d:.3e}")


def check_schwarz_direct(args, work):
    js = os.path.join(work, "direct.json")
    run_desync(args, 1, ("schwarz",), "--matrix", os.path.join(DATA, "convdiff20.mtx"), "--tol", "1e-12", "--json", js,
               "--quiet", timeout=60)
    if os.path.exists(js):
        rec = load(js)
        its = [p.get("iterations") for p in rec.get("per_rank", [])]
        check(its == [1], f"schwarz --matrix on one rank: iterations {its}, expected 1 (the direct solve)")
        check(rec.get("true_residual", 1) < 1e-12, f"one rank: true residual {rec.get('true_residual')}")
        check(rec.get("details", {}).get("local_solvers") == ["umfpack"],
              f"non-symmetric matrix: local solver {rec.get('details', {}).get('local_solvers')}, expected umfpack")


def check_block_jacobi(args, work):
    common = ("--matrix", os.path.join(DATA, "convdiff20.mtx"), "--partition", "metis", "--max-iters", "8", "--tol",
              "1e-15", "--quiet")
    s, j = os.path.join(work, "bj_schwarz.npy"), os.path.join(work, "bj_jacobi.npy")
    run_desync(args, 2, ("schwarz",), "--overlap", "0", "--save", s, *common, expect_code=NOT_CONVERGED, timeout=60)
    run_desync(args, 2, ("jacobi",), "--variant", "block", "--save", j, *common, expect_code=NOT_CONVERGED, timeout=60)
    if os.path.exists(s) and os.path.exists(j):
        d = rel_diff(read_npy(j), read_npy(s))
        check(d < 1e-12, f"schwarz --overlap 0 against jacobi --variant block: iterates differ by {d:.3e}")


def check_async(args, work):
    mat = os.path.join(DATA, "convdiff20.petsc")
    # --polish: an asynchronous test's residual is assembled from values of different ages and may
    # pass while the true residual is still above --tol (Bethune et al., 2011, 3.1.2).
    runs = [("jacobi",), ("jacobi", "--variant", "block"), ("schwarz",)]
    for transport in ("p2p", "rma"):
        for cmd in runs:
            js = os.path.join(work, f"async_{cmd[0]}_{len(cmd)}_{transport}.json")
            run_desync(args, 2, cmd[:1], *cmd[1:], "--matrix", mat, "--mode", "async", "--transport", transport,
                       "--polish", "--tol", "1e-8", "--time-limit", "30", "--json", js, "--quiet", timeout=60)
            if os.path.exists(js):
                rec = load(js)
                what = f"{' '.join(cmd)} async over {transport}"
                check(rec.get("converged") is True and rec.get("true_residual", 1) <= 1e-8,
                      f"{what}: converged {rec.get('converged')}, true residual {rec.get('true_residual')}")
                check(rec.get("outstanding_requests") == 0, f"{what}: requests left pending")


def check_save(args, work):
    mat = os.path.join(DATA, "convdiff20.mtx")
    for ext, reader in ((".npy", read_npy), (".mtx", read_mtx_array), (".petsc", read_petsc_vec)):
        out = os.path.join(work, "x" + ext)
        run_desync(args, 2, ("krylov",), "--method", "gmres", "--pc", "ras", "--matrix", mat, "--partition", "metis",
                   "--rtol", "1e-10", "--save", out, "--quiet", timeout=60)
        if os.path.exists(out):
            x = reader(out)
            err = max(abs(v - 1.0) for v in x)
            check(len(x) == 400 and err < 1e-7, f"krylov --save {ext}: {len(x)} entries, max |x - 1| = {err:.3e}")


CHECKS = {
    "jacobi-grid": check_jacobi_grid,
    "schwarz-grid": check_schwarz_grid,
    "schwarz-direct": check_schwarz_direct,
    "block-jacobi": check_block_jacobi,
    "async": check_async,
    "save": check_save,
}


def main():
    return run_checks(__doc__, CHECKS, "matrix runs: every check passed", pass_workdir=True)


if __name__ == "__main__":
    sys.exit(main())
