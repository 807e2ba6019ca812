"""desync.solve and desync.run under mpirun -n 1, 2 and 3 (run_mpi_tests.py): the command line's
answers bitwise, the answers against SciPy's direct solve, the errors on every rank, sub-communicators
and the released GIL."""
import json
import os
import threading
import time

import numpy as np
import pytest
from mpi4py import MPI

pytest.importorskip("scipy", reason="these tests build their matrices with SciPy")
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402

import desync  # noqa: E402
from conftest import COMM, agree  # noqa: E402

RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def poisson2d(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), T) + sp.kron(T, sp.eye(n))).tocsr()


def convdiff(n, beta=0.3):
    """A non-symmetric convection-diffusion matrix (upwind), n x n points."""
    T = sp.diags([-1.0 - beta, 2.0 + beta, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), T) + sp.kron(T, sp.eye(n))).tocsr()


def on_root(value):
    return value if RANK == 0 else None


def relative_error(A, b, result):
    x = result.gather()
    err = 0.0
    if RANK == 0:
        ref = spla.spsolve(A.tocsc(), b)
        err = float(np.abs(x - ref).max() / np.abs(ref).max())
    return COMM.bcast(err)


# ---- the command line's answers, bitwise ----------------------------------------------------------

# name -> (matrix file, solve() arguments): the same methods and options as run_mpi_tests.REFERENCES.
BITWISE = {
    "jacobi": ("poisson2d.mtx", dict(solver="jacobi", mode="sync", tol=1e-6)),
    "schwarz": ("poisson2d.mtx", dict(solver="schwarz", mode="sync", overlap=1, tol=1e-8)),
    "cg": ("poisson2d.mtx", dict(solver="cg", method="cg", pc="jacobi", tol=1e-10)),
    "gmres": ("convdiff20.mtx", dict(solver="krylov", method="gmres", pc="ras", tol=1e-10)),
}


@pytest.mark.parametrize("name", sorted(BITWISE))
def test_solve_gives_the_command_lines_answer_bitwise(data, name):
    matrix, kwargs = BITWISE[name]
    A = on_root(scipy.io.mmread(os.path.join(data, matrix)).tocsr())
    result = desync.solve(A, None, partition="metis", **kwargs)
    x = result.gather()
    same = True
    if RANK == 0:
        ref = np.load(os.path.join(data, name + ".npy"))
        with open(os.path.join(data, name + ".json")) as f:
            record = json.load(f)
        same = (np.array_equal(x, ref) and result.record["iterations"] == record["iterations"]
                and result.true_residual == record["true_residual"])
    agree(same, f"desync.solve({name}) differs from `desync {name} --matrix {matrix}`")
    agree(result.converged, "not converged")


def test_run_gives_the_command_lines_record(data):
    result = desync.run("jacobi", mode="sync", local=16)
    with open(os.path.join(data, "jacobi-local16.json")) as f:
        record = json.load(f)
    agree(result.record["iterations"] == record["iterations"], "iterations differ")
    agree(result.true_residual == record["true_residual"], "true residual differs")
    agree(result.converged and result.x is None and result.record["schema"] == "desync.run", "record")


# ---- the answers against SciPy ---------------------------------------------------------------------

ANSWERS = [
    ("jacobi-sync", poisson2d, dict(solver="jacobi", mode="sync", tol=1e-10, partition="rows")),
    ("jacobi-racy", poisson2d, dict(solver="jacobi", mode="racy", tol=1e-10, polish=True)),
    ("schwarz-metis-sync", poisson2d, dict(solver="schwarz", mode="sync", overlap=2, tol=1e-10, partition="metis")),
    ("schwarz-metis-async-rma", poisson2d,
     dict(solver="schwarz", mode="async", transport="rma", overlap=2, tol=1e-10, partition="metis")),
    ("cg", poisson2d, dict(solver="cg", tol=1e-10)),
    ("pipecg-asm", poisson2d, dict(solver="cg", method="pipecg", pc="asm", tol=1e-10, partition="metis")),
    ("gmres", convdiff, dict(solver="krylov", method="gmres", tol=1e-10)),
    ("cg-asm-ilu0", poisson2d, dict(solver="cg", pc="asm", local_solver="ilu0", tol=1e-10, partition="metis")),
    ("gmres-ras-ilu0", convdiff, dict(solver="krylov", method="gmres", pc="ras", local_solver="ilu0", tol=1e-10)),
    ("schwarz-ilu0-sync", poisson2d,
     dict(solver="schwarz", mode="sync", overlap=2, local_solver="ilu0", tol=1e-10, partition="metis")),
    ("cg-asm-ilu2", poisson2d, dict(solver="cg", pc="asm", local_solver="ilu2", overlap=2, tol=1e-10)),
    ("schwarz-ilu1-async", convdiff,
     dict(solver="schwarz", mode="async", local_solver="ilu1", tol=1e-10, partition="metis")),
    ("cg-asm-milu1", poisson2d,
     dict(solver="cg", pc="asm", local_solver="ilu1", ilu_relax=0.99, tol=1e-10, partition="metis")),
    ("schwarz-milu0-sync", convdiff, dict(solver="schwarz", mode="sync", local_solver="ilu0", ilu_relax=0.5, tol=1e-10)),
    ("schwarz-fixed-point", poisson2d,
     dict(solver="schwarz", mode="sync", coarse="nicolaides", robin=0.6, coarse_form="fixed-point", tol=1e-10)),
    ("schwarz-fixed-point-async", poisson2d,
     dict(solver="schwarz", mode="async", coarse="nicolaides", robin=0.6, coarse_form="fixed-point", tol=1e-10)),
    ("cg-asm-pieces", poisson2d, dict(solver="cg", pc="asm", subdomains_per_rank=4, overlap=2, tol=1e-10)),
    ("schwarz-pieces-async", convdiff,
     dict(solver="schwarz", mode="async", subdomains_per_rank=3, tol=1e-10, partition="metis")),
    # the coarse level on the pieces (at 1 rank too: 4 pieces have an interface)
    ("cg-asm-pieces-rgdsw", poisson2d, dict(solver="cg", pc="asm", subdomains_per_rank=4, coarse="rgdsw", tol=1e-10)),
    ("schwarz-pieces-gdsw-async", poisson2d,
     dict(solver="schwarz", mode="async", subdomains_per_rank=3, coarse="gdsw", tol=1e-10, partition="metis")),
]


@pytest.mark.parametrize("name,make,kwargs", ANSWERS, ids=[a[0] for a in ANSWERS])
def test_answer_against_scipy(name, make, kwargs):
    A = make(20)
    b = np.sin(np.arange(A.shape[0]) + 1.0)
    result = desync.solve(on_root(A), on_root(b), **kwargs)
    agree(result.converged, f"{name}: not converged ({result.record.get('stop_reason')})")
    agree(result.true_residual <= 1e-10 * 1.0001, f"{name}: true residual {result.true_residual}")
    err = relative_error(A, b, result)
    agree(err < 1e-7, f"{name}: error {err} against scipy.sparse.linalg.spsolve")
    # x and rows: this rank's rows, indices into A, every row once over the ranks
    rows = COMM.allgather(result.rows)
    agree(len(result.x) == len(result.rows) and sorted(np.concatenate(rows).tolist()) == list(range(A.shape[0])),
          "rows")


def test_relaxed_ilu_takes_fewer_cg_iterations():
    """ilu_relax (relaxed modified ILU): CG + ASM with ILU(0) pieces on 2D Poisson takes fewer
    iterations with the dropped fill moved onto the diagonal (0.99) than with it dropped, both
    converging to SciPy's answer; the record keeps the relaxation."""
    A = poisson2d(48)
    b = np.sin(np.arange(A.shape[0]) + 1.0)
    its = {}
    for relax in (0.0, 0.99):
        result = desync.solve(on_root(A), on_root(b), solver="cg", pc="asm", local_solver="ilu0", ilu_relax=relax,
                              tol=1e-10)
        agree(result.converged, f"ilu_relax={relax}: not converged ({result.record.get('stop_reason')})")
        err = relative_error(A, b, result)
        agree(err < 1e-7, f"ilu_relax={relax}: error {err} against scipy.sparse.linalg.spsolve")
        agree(float(result.record["options"]["ilu-relax"]) == relax, f"record's options {result.record['options']}")
        its[relax] = result.record["iterations"]["max"]
    agree(its[0.99] < 0.75 * its[0.0], f"iterations {its}")


def test_two_level_schwarz_from_python():
    """Every interface coarse space from desync.solve: the stationary two-level iteration and CG + ASM
    converge to SciPy's answer, the record names the space, and RGDSW has fewer functions than GDSW
    where three or more subdomains meet (METIS parts of a 2D grid, 3 ranks), as many on 2 (strips);
    on one rank GDSW and RGDSW are refused (no interface)."""
    A = poisson2d(24)
    b = np.sin(np.arange(A.shape[0]) + 1.0)
    if SIZE == 1:
        for coarse in ("gdsw", "rgdsw"):
            with pytest.raises(ValueError, match=f"--coarse {coarse}: one subdomain has no interface"):
                desync.solve(on_root(A), on_root(b), solver="cg", pc="asm", coarse=coarse)
        return
    functions = {}
    for coarse in ("nicolaides", "gdsw", "rgdsw"):
        for kwargs in (dict(solver="schwarz", mode="sync", overlap=1), dict(solver="cg", pc="asm")):
            result = desync.solve(on_root(A), on_root(b), coarse=coarse, tol=1e-10, partition="metis", **kwargs)
            name = f"{kwargs['solver']} --coarse {coarse}"
            agree(result.converged, f"{name}: not converged ({result.record.get('stop_reason')})")
            err = relative_error(A, b, result)
            agree(err < 1e-7, f"{name}: error {err} against scipy.sparse.linalg.spsolve")
            details = result.record["details"]
            agree(details["coarse"] == coarse, f"{name}: the record's coarse is {details['coarse']}")
            functions[coarse] = details["coarse_functions"]
    if SIZE >= 3:
        agree(functions["rgdsw"] < functions["gdsw"], f"coarse functions {functions}")
    else:
        agree(functions["rgdsw"] == functions["gdsw"], f"coarse functions {functions}")


def test_near_kernel_as_an_array_is_the_files():
    """near_kernel= a NumPy array (rows x k, as pyamg's B) builds the coarse space --near-kernel's file
    builds: the same answer bitwise from rank 0's whole matrix and from each rank's own rows
    ("given"), for the stationary two-level iteration and CG + ASM; the record says where the
    vectors came from; a wrong shape, or vectors without a coarse level, is refused on every rank."""
    A = poisson2d(16)
    n = A.shape[0]
    b = np.sin(np.arange(n) + 1.0)
    # The constant and a linear function of the grid's x: two vectors (Poisson's near-kernel and one more).
    Z = np.column_stack([np.ones(n), (np.arange(n) % 16) / 15.0])
    path = None
    if RANK == 0:
        import tempfile
        path = os.path.join(tempfile.mkdtemp(prefix="desync-nk-"), "z.mtx")
        scipy.io.mmwrite(path, Z)
    path = COMM.bcast(path)
    sizes = [n // SIZE + (r < n % SIZE) for r in range(SIZE)]  # the balanced blocks of partition "rows"
    lo = sum(sizes[:RANK])
    hi = lo + sizes[RANK]
    coarse = "nicolaides" if SIZE == 1 else "gdsw"
    for kwargs in (dict(solver="schwarz", mode="sync", overlap=1), dict(solver="cg", pc="asm")):
        kwargs.update(coarse=coarse, tol=1e-10)
        by_file = desync.solve(on_root(A), on_root(b), near_kernel=path, **kwargs)
        in_memory = desync.solve(on_root(A), on_root(b), near_kernel=on_root(Z), **kwargs)
        given = desync.solve(A[lo:hi], b[lo:hi], near_kernel=Z[lo:hi], partition="given", **kwargs)
        name = f"{kwargs['solver']} --coarse {coarse}"
        agree(by_file.converged and np.array_equal(by_file.x, in_memory.x), f"{name}: the array's answer is not the file's")
        agree(np.array_equal(in_memory.x, given.x), f"{name}: each rank's own rows give another answer")
        d = in_memory.record["details"]
        agree(d["near_kernel"] == "given" and d["near_kernel_vectors"] == 2, f"{name}: record {d['near_kernel']}")
        agree(by_file.record["details"]["near_kernel"] == "file:" + path, f"{name}: the file's record")
        agree(relative_error(A, b, in_memory) < 1e-7, f"{name}: error against SciPy")
        one = desync.solve(on_root(A), on_root(b), near_kernel=on_root(Z[:, 0]), **kwargs)
        agree(one.record["details"]["near_kernel_vectors"] == 1, f"{name}: a 1-D near_kernel is one vector")
    with pytest.raises(ValueError, match=r"near_kernel: expected an array of shape \(256, k\)"):
        desync.solve(on_root(A), None, solver="cg", pc="asm", coarse=coarse, near_kernel=on_root(Z[:-1]))
    with pytest.raises(ValueError, match="--near-kernel goes with --coarse"):
        desync.solve(on_root(A), None, solver="cg", pc="asm", near_kernel=on_root(Z))
    with pytest.raises(ValueError, match="jacobi has none"):
        desync.solve(on_root(A), None, solver="jacobi", near_kernel=on_root(Z))
    with pytest.raises(ValueError, match="different numbers of near-kernel vectors" if SIZE > 1 else "NaN"):
        bad = Z[lo:hi, :1 + RANK % 2] if SIZE > 1 else np.full((n, 1), np.nan)
        desync.solve(A[lo:hi], None, solver="cg", pc="asm", coarse=coarse, partition="given", near_kernel=bad)


def test_partition_array_and_given_blocks():
    A = poisson2d(12)
    n = A.shape[0]
    parts = (np.arange(n) * SIZE) // n  # consecutive blocks, as "given" below
    r1 = desync.solve(on_root(A), None, solver="cg", tol=1e-10, partition=on_root(parts))
    lo, hi = (RANK * n) // SIZE, ((RANK + 1) * n) // SIZE
    r2 = desync.solve(A[lo:hi], np.asarray(A[lo:hi] @ np.ones(n)), solver="cg", tol=1e-10, partition="given")
    agree(np.array_equal(r2.rows, np.arange(lo, hi)), "given: this rank's rows")
    agree(np.array_equal(r1.x, r2.x) and np.array_equal(r1.rows, r2.rows), "array and given differ")
    agree(r1.record["details"]["partition"]["method"] == "array", "record's partition method")
    agree(np.allclose(r2.x, 1.0, atol=1e-8), "x = 1")


def test_booleans_tuples_and_aliases():
    r = desync.run("schwarz", mode="sync", global_=(24, 24), tol=1e-6, quiet=True)
    agree(r.record["options"]["global"] == "24x24" and r.converged, "global_=(24, 24)")
    r = desync.solve(on_root(poisson2d(10)), None, solver="cg", rtol=1e-9)  # --rtol, --tol's other name
    agree(r.record["tolerance"] == 1e-9 and r.converged, "rtol=1e-9")
    r = desync.solve(on_root(poisson2d(10)), None, solver="jacobi", mode="async", polish=True, tol=1e-9)
    agree(r.record["options"]["polish"] == "true" and r.converged, "polish=True")


# ---- errors: on every rank, and the next solve works -----------------------------------------------

def square_matrix():
    return on_root(poisson2d(8))


ERRORS = [
    ("non-square", lambda: desync.solve(on_root(sp.random(10, 8, density=0.5, format="csr")), None),
     "not square"),
    ("wrong-length-b", lambda: desync.solve(square_matrix(), on_root(np.ones(7))), "b has 7 entries"),
    ("unknown-option", lambda: desync.solve(square_matrix(), None, solver="cg", bogus_option=3), "bogus-option"),
    ("negative-tolerance", lambda: desync.solve(square_matrix(), None, solver="jacobi", tol=-1.0), "tol"),
    ("bad-value", lambda: desync.solve(square_matrix(), None, solver="schwarz", mode="fast"), "mode"),
    ("unknown-solver", lambda: desync.solve(square_matrix(), None, solver="multigrid"), "unknown solver"),
    ("partition-out-of-range", lambda: desync.solve(square_matrix(), None, partition=on_root(np.full(64, SIZE))),
     "not a rank"),
]


@pytest.mark.parametrize("name,call,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_raises_on_every_rank_and_mpi_stays_usable(name, call, words):
    with pytest.raises(ValueError, match=words):
        call()
    # The interpreter and MPI are still usable: a second solve in the same process succeeds.
    r = desync.solve(square_matrix(), None, solver="cg", tol=1e-10)
    agree(r.converged, f"after {name}: the next solve did not converge")


@pytest.mark.skipif(SIZE < 2, reason="with one rank, rank 0 is every rank")
def test_given_partition_with_the_matrix_on_rank_0_only():
    with pytest.raises(ValueError, match="rank 1 passed no matrix"):
        desync.solve(square_matrix(), None, partition="given")
    r = desync.solve(square_matrix(), None, solver="schwarz", tol=1e-8)
    agree(r.converged, "the next solve did not converge")


def test_numerical_failure_raises_numerical_error(capfd):
    # Jacobi on a matrix whose iteration diverges (spectral radius of D^-1 (L + U) is 2)
    A = sp.csr_matrix(np.array([[1.0, 2.0], [2.0, 1.0]]))
    capfd.readouterr()
    with pytest.raises(desync.NumericalError) as e:
        desync.solve(on_root(A), None, solver="jacobi", partition="rows") if SIZE <= 2 else \
            desync.solve(on_root(sp.kron(sp.eye(SIZE), A).tocsr()), None, solver="jacobi")
    agree(e.value.result.record["converged"] is False, "record of the failed run")
    agree("Jacobi diverges" in str(e.value), f"the exception's message: {e.value}")
    # quiet (the default): the exception says it, nothing is printed (the command line's error line was)
    err = capfd.readouterr().err
    agree("desync: error" not in err, f"printed with quiet=True: {err!r}")


def test_unconverged_run_returns_converged_false():
    r = desync.solve(square_matrix(), None, solver="cg", tol=1e-12, max_iters=2)
    agree(not r.converged and r.iterations == 2 and r.record["stop_reason"] == "max_iters", "max_iters")


# ---- communicators and threads ---------------------------------------------------------------------

@pytest.mark.skipif(SIZE != 3, reason="needs 3 ranks")
def test_sub_communicator_of_two_ranks():
    sub = COMM.Split(0 if RANK < 2 else MPI.UNDEFINED, RANK)
    if sub != MPI.COMM_NULL:
        A = poisson2d(16)
        r = desync.solve(A if sub.Get_rank() == 0 else None, None, solver="schwarz", mode="async",
                         transport="rma", tol=1e-9, partition="metis", comm=sub)
        x = r.gather()
        ok = r.record["ranks"] == 2 and r.converged
        if sub.Get_rank() == 0:
            ok = ok and np.abs(x - 1.0).max() < 1e-7
        ok = all(sub.allgather(ok))
        sub.Free()
    else:
        ok = True  # rank 2 takes no part
    agree(ok, "the sub-communicator's solve")
    # shmem's processing elements are the world's ranks: refused on a sub-communicator
    sub = COMM.Split(0 if RANK < 2 else MPI.UNDEFINED, RANK)
    if sub != MPI.COMM_NULL:
        with pytest.raises(ValueError, match="shmem"):
            desync.solve(poisson2d(8) if sub.Get_rank() == 0 else None, None, solver="jacobi", mode="async",
                         transport="shmem", comm=sub)
        sub.Free()
    COMM.Barrier()


def test_gil_is_released_during_a_solve():
    counts = {"during": 0}
    inside = threading.Event()
    done = threading.Event()

    def tick():  # about a thousand ticks a second, each needing the GIL
        while not done.is_set():
            if inside.is_set():
                counts["during"] += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    A = on_root(poisson2d(40))
    inside.set()
    start = time.perf_counter()
    solves = 0
    while True:  # solves until 0.2 s have passed (every rank agrees when)
        r = desync.solve(A, None, solver="jacobi", mode="sync", tol=1e-9)
        solves += 1
        seconds = COMM.allreduce(time.perf_counter() - start, op=MPI.MAX)
        if seconds > 0.2:
            break
    inside.clear()
    done.set()
    t.join()
    # A thread shut out by the GIL during the solves would tick only between them, once or twice each.
    agree(r.converged, "not converged")
    agree(counts["during"] > max(100 * seconds, 5 * solves),
          f"the other thread ticked {counts['during']} times during {solves} solves in {seconds:.3f} s")


# ---- docs/python.md's example ----------------------------------------------------------------------

@pytest.mark.skipif(SIZE != 2, reason="run at 2 ranks, as docs/python.md shows it")
def test_the_documented_example_runs(tmp_path):
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "examples", "solve_sync_async.py")
    spec = importlib.util.spec_from_file_location("solve_sync_async", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    folder = COMM.bcast(str(tmp_path) if RANK == 0 else None)
    figure = os.path.join(folder, "example.png")
    argv = sys.argv
    sys.argv = [path, figure, "--n", "32"]
    try:
        example.main()
    finally:
        sys.argv = argv
    ok = True
    if RANK == 0:
        records = [json.load(open(os.path.join(folder, f"example_{m}.json"))) for m in ("sync", "async")]
        ok = os.path.getsize(figure) > 0 and all(r["converged"] for r in records)
    agree(ok, "the example's figure and records")
