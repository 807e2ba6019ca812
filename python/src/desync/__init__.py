"""desync from Python: the command line's solvers on a SciPy or PETSc matrix, in the same MPI job.

    from mpi4py import MPI
    import desync
    result = desync.solve(A, b, solver="schwarz", mode="async", overlap=2, tol=1e-8,
                          partition="metis", comm=MPI.COMM_WORLD)
    result.x, result.rows      # this rank's rows of the solution and their indices in A
    result.gather()            # the whole solution on rank 0 (None elsewhere)
    result.record              # the run record: the JSON document of `desync ... --json`

A thin layer over desync's C++ library (the extension module desync._core): the options are the
command line's, with underscores for dashes (`max_iters` for --max-iters, `global_` for --global),
parsed and checked by the same code, so that a bad option or value raises ValueError with the
command line's message, on every rank. `desync.help("schwarz")` prints a solver's options. The
methods and the papers behind them:

  jacobi   Jacobi's method, mode sync | async | racy (Bethune, Bull, Dingle and Higham, 2011)
  schwarz  restricted additive Schwarz with optimized interface conditions, mode sync | async over
           one-sided MPI (Yamazaki et al., 2019)
  cg       the CG family, method cg | cg-cg (Chronopoulos and Gear) | pipecg | groppcg, reductions
           overlapped by MPI_Iallreduce (Horikoshi et al., 2022), halo exchanges overlapped with the
           matrix-vector product (Hoefler et al., 2007); and restarted GMRES (method gmres)
  krylov   the same command as cg
  pde      explicit PDE time stepping (built-in problems only, desync.run), mode sync | bounded
           (Aditya et al.)

docs/python.md has a worked example.
"""
from __future__ import annotations

import atexit
import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Open MPI before 5.0.6 can corrupt collective MPI-IO writes with data sieving on (desync's --save
# and --json of fields); as the desync executable does, switch it off unless MPI already runs.
os.environ.setdefault("OMPI_MCA_fbtl_posix_write_datasieving", "0")

from mpi4py import MPI  # noqa: E402  (initialises MPI, at MPI_THREAD_MULTIPLE by default)

from . import _core  # noqa: E402

__all__ = ["solve", "run", "help", "options", "Result", "NumericalError", "InputError", "SOLVERS"]

#: Bad input: an unknown option, a bad value, a matrix that is not square... (a ValueError).
InputError = _core.InputError


def _library_name(version: str) -> str:
    """An MPI library's version string as desync's record writes it: first line, up to a comma."""
    v = version.replace("\t", " ")
    for stop in ("\n", ","):
        v = v.split(stop)[0]
    return v.strip()


_LINKED = _library_name(_core.mpi_library_version())
_RUNNING = _library_name(MPI.Get_library_version())
if _LINKED.split()[:2] != _RUNNING.split()[:2]:
    raise ImportError(
        f"desync's extension is linked against {_LINKED} but mpi4py runs {_RUNNING}: install desync "
        "with the MPI that mpi4py uses (DESYNC_MPI=openmpi|mpich pip install ./python, docs/python.md)"
    )

# OpenSHMEM (transport="shmem") must end before MPI does: atexit runs this before mpi4py's
# MPI_Finalize, which was registered first (importing mpi4py.MPI above).
atexit.register(_core.finalize_transports)

#: The solvers desync.solve takes a matrix for; desync.run also runs "pde" (built-in problems only).
SOLVERS = ("jacobi", "schwarz", "cg", "krylov")
_RUN_SOLVERS = SOLVERS + ("pde",)
_PARTITIONS = ("rows", "metis", "ptscotch", "given")


class NumericalError(RuntimeError):
    """NaN, Inf or runaway growth stopped the run (the command line's exit code 3). `.result`
    holds the record of the run up to the failure."""

    def __init__(self, message: str, result: "Result"):
        super().__init__(message)
        self.result = result


@dataclass
class Result:
    """One run: its record (the JSON document of --json, as a dict, on every rank) and, for a
    matrix, this rank's rows of the solution."""

    record: dict[str, Any]
    exit_code: int
    x: np.ndarray | None = None      #: this rank's rows of the solution (None: a built-in problem)
    rows: np.ndarray | None = None   #: their indices in the matrix (int64)
    comm: Any = field(default=None, repr=False)

    @property
    def converged(self) -> bool:
        """The final true residual met the tolerance (the command line's exit code 0)."""
        return bool(self.record["converged"])

    @property
    def iterations(self) -> int:
        """Iterations of the slowest rank (record["iterations"] has min, mean and max)."""
        return int(self.record["iterations"]["max"])

    @property
    def true_residual(self) -> float:
        """||b - A x|| / ||b|| of the returned solution, computed synchronously after the solve."""
        return float(self.record["true_residual"])

    def gather(self, root: int = 0) -> np.ndarray | None:
        """The whole solution in the matrix's own row order on rank `root`, None elsewhere.
        Collective over the result's communicator."""
        if self.x is None:
            raise ValueError("this run solved a built-in problem: there is no solution vector to gather")
        parts = self.comm.gather((self.rows, self.x), root=root)
        if self.comm.Get_rank() != root:
            return None
        n = sum(len(r) for r, _ in parts)
        out = np.empty(n)
        for r, x in parts:
            out[r] = x
        return out


def help(solver: str) -> str:  # noqa: A001  (the command line's --help)
    """`desync <solver> --help`: the options solve() and run() take (with underscores for dashes)."""
    return _core.command_help(solver)


def options(solver: str | None = None) -> dict[str, Any]:
    """Every solver's options as the command line declares them (name, type, default, help), or
    one solver's. The type stubs (__init__.pyi) are generated from it."""
    data = json.loads(_core.options_json())
    if solver is None:
        return data
    for s in data["solvers"]:
        if s["name"] == solver:
            return s
    raise ValueError(f"unknown solver '{solver}' (solvers: {', '.join(s['name'] for s in data['solvers'])})")


def _argv(solver: str, opts: dict[str, Any]) -> list[str]:
    """Keyword options as command-line arguments: overlap=2 -> --overlap 2, polish=True -> --polish,
    polish=False -> --polish=false, global_=(64, 64) -> --global 64x64; None leaves an option out."""
    args = [solver]
    for key, value in opts.items():
        if value is None:
            continue
        name = "--" + key.rstrip("_").replace("_", "-")
        if isinstance(value, (bool, np.bool_)):
            args.append(name if value else name + "=false")
        elif isinstance(value, (tuple, list)):
            args += [name, "x".join(str(v) for v in value)]
        elif isinstance(value, float):
            args += [name, repr(value)]
        else:
            args += [name, str(value)]
    return args


def _comm_or_world(comm):
    return MPI.COMM_WORLD if comm is None else comm


def _agree(comm, problem: str | None) -> None:
    """Raises ValueError on every rank if any rank found a problem (the lowest such rank's)."""
    problems = comm.allgather(problem)
    for p in problems:
        if p:
            raise InputError(p)


def _comm_problem(comm, options: dict[str, Any]) -> str | None:
    """What the communicator rules out: OpenSHMEM's processing elements are MPI_COMM_WORLD's ranks,
    so transport="shmem" runs on the whole world (or a communicator congruent with it) only."""
    if options.get("transport") == "shmem" and MPI.Comm.Compare(comm, MPI.COMM_WORLD) not in (MPI.IDENT, MPI.CONGRUENT):
        return ("transport 'shmem' needs every rank of MPI_COMM_WORLD (OpenSHMEM's processing elements are "
                "the world's ranks): use transport='rma' on a sub-communicator")
    return None


def _finish(comm, code: int, record_json: str, has_x: bool, x, rows) -> Result:
    result = Result(record=json.loads(record_json) if record_json else {}, exit_code=code,
                    x=x if has_x else None, rows=rows if has_x else None, comm=comm)
    if code == 3:
        raise NumericalError(result.record.get("message") or "numerical failure", result)
    if code not in (0, 1):
        raise RuntimeError(f"desync ended with exit code {code}: {result.record.get('message', '')} "
                           "(an output file not written, or MPI requests left pending; see standard error)")
    return result


def _invoke(comm, args, system=None) -> Result:
    empty_i = np.empty(0, dtype=np.int64)
    empty_d = np.empty(0)
    if system is None:
        out = _core.invoke(comm.py2f(), args, False, True, False, 0, 0, empty_i, empty_i, empty_d, False,
                           empty_d, "rows", np.empty(0, dtype=np.int32), "", 0, empty_d)
    else:
        out = _core.invoke(comm.py2f(), args, True, **system)
    return _finish(comm, *out)


def run(solver: str, *, comm=None, quiet: bool = True, **options: Any) -> Result:
    """Runs a solver on its built-in problem (or on matrix="file.mtx"), as `desync <solver>
    [options]` would, on `comm` (default MPI.COMM_WORLD). Returns the run's Result; a run that
    ends unconverged returns converged=False; bad options raise ValueError on every rank; a
    numerical failure raises NumericalError. quiet=False prints the command line's summary."""
    comm = _comm_or_world(comm)
    problem = _comm_problem(comm, options)
    if solver not in _RUN_SOLVERS:
        problem = f"unknown solver '{solver}' (solvers: {', '.join(_RUN_SOLVERS)})"
    _agree(comm, problem)
    return _invoke(comm, _argv(solver, {**options, "quiet": quiet}))


def _is_petsc(obj, kind: str) -> bool:
    return type(obj).__module__.startswith("petsc4py") and type(obj).__name__ == kind


def _csr_of(A):
    """(indptr, indices, data, rows, cols) of a SciPy sparse matrix, a dense array or a petsc4py
    AIJ Mat (this rank's rows, global columns)."""
    if _is_petsc(A, "Mat"):
        indptr, indices, data = A.getValuesCSR()
        lo, hi = A.getOwnershipRange()
        return indptr, indices, data, hi - lo, A.getSize()[1]
    try:
        import scipy.sparse as sp
    except ImportError as e:  # pragma: no cover
        raise InputError("desync.solve needs SciPy for a matrix that is not a petsc4py Mat") from e
    if not sp.issparse(A):
        A = np.asarray(A)
        if A.ndim != 2:
            raise InputError(f"the matrix must be a 2-D sparse matrix or array, not {A.ndim}-D")
        A = sp.csr_matrix(A)
    A = A.tocsr()
    if np.iscomplexobj(A.data):
        raise InputError("desync solves real systems; the matrix is complex")
    return A.indptr, A.indices, A.data, A.shape[0], A.shape[1]


def _vector_of(b):
    if _is_petsc(b, "Vec"):
        return np.array(b.getArray(readonly=True), dtype=np.float64)
    v = np.asarray(b)
    if np.iscomplexobj(v):
        raise InputError("desync solves real systems; b is complex")
    if v.ndim != 1:
        v = v.reshape(-1) if v.ndim == 2 and 1 in v.shape else v
    if v.ndim != 1:
        raise InputError(f"b must be a vector, not an array of shape {v.shape}")
    return np.ascontiguousarray(v, dtype=np.float64)


def _vectors_of(z, rows: int) -> tuple[int, np.ndarray]:
    """near_kernel as (k, its k columns one after another): an array of shape (rows, k) or (rows,),
    or a petsc4py Vec (one vector)."""
    v = np.array(z.getArray(readonly=True)) if _is_petsc(z, "Vec") else np.asarray(z)
    if np.iscomplexobj(v) or not (np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_):
        raise InputError(f"near_kernel: expected real numbers, not {v.dtype}")
    if v.ndim == 1:
        v = v.reshape(-1, 1)
    if v.ndim != 2 or v.shape[0] != rows or v.shape[1] < 1:
        raise InputError(f"near_kernel: expected an array of shape ({rows}, k) or ({rows},) for the matrix's "
                         f"{rows} rows, not {v.shape}")
    return v.shape[1], np.ascontiguousarray(v.T, dtype=np.float64).reshape(-1)


def _describe(A, rows: int, cols: int, nnz: int) -> str:
    kind = type(A).__module__.split(".")[0] + "." + type(A).__name__
    return f"{kind} {rows}x{cols} ({nnz} stored entries)"


def solve(A, b=None, *, solver: str = "cg", partition: Any = None, comm=None, quiet: bool = True,
          **options: Any) -> Result:
    """Solves A x = b with one of desync's methods on `comm` (default MPI.COMM_WORLD; with a
    petsc4py Mat, the Mat's). Collective.

    A: a SciPy sparse matrix (any format) or dense array, or a petsc4py AIJ Mat.
      partition "rows" (default: balanced consecutive blocks), "metis", "ptscotch" or an array of
      ranks (one per row): rank 0 passes the whole matrix and b, the other ranks' are ignored;
      partition "given" (a petsc4py Mat's own layout): each rank passes its own block of
      consecutive rows with global column indices, rank r's after rank r-1's.
    b: the right-hand side (NumPy, petsc4py Vec), the same rows as A; None: b = A 1.
    near_kernel (with coarse="gdsw" | "rgdsw" | "nicolaides"): the vectors the coarse functions are
      built from, as pyamg's B: an array of shape (rows, k) or (rows,), the same rows as A and
      held like it (rank 0's with a whole matrix there, each rank's own with partition "given");
      e.g. elasticity's rigid-body modes. A path string reads a file as --near-kernel does.
    solver: "jacobi", "schwarz", "cg" or "krylov" (desync.SOLVERS), then that command's options
      with underscores for dashes: mode="async", method="gmres", pc="asm", overlap=2, tol=1e-8,
      max_iters=500, transport="rma", partition_seed=3, ... (desync.help(solver) lists them).
    quiet: False prints the command line's summary on rank 0.

    Returns a Result: x and rows (this rank's rows of the solution as the partition placed them),
    record, converged, iterations, true_residual, gather(). Bad input (options, values, a matrix
    that is not square, a b of the wrong length) raises ValueError on every rank; NaN or Inf
    raises NumericalError; a run that stops unconverged returns converged=False.
    """
    petsc = _is_petsc(A, "Mat")
    if comm is None:
        comm = A.getComm().tompi4py() if petsc else MPI.COMM_WORLD
    rank = comm.Get_rank()
    problem = _comm_problem(comm, options)
    # The partition: rank 0's kind decides (the other ranks may pass None with an array).
    if petsc and partition not in (None, "given"):
        problem = f"a petsc4py Mat keeps its own rows: partition must be 'given' or None, not {partition!r}"
    if partition is None:
        partition = "given" if petsc else "rows"
    kind = partition if isinstance(partition, str) else "array"
    if isinstance(partition, str) and partition not in _PARTITIONS:
        problem = problem or f"partition '{partition}': expected rows, metis, ptscotch, given or an array of ranks"
    kind = comm.bcast(kind, root=0)
    on_root = kind != "given"
    holds = rank == 0 or not on_root
    if solver not in SOLVERS:
        problem = problem or (f"unknown solver '{solver}' for a matrix (solvers: {', '.join(SOLVERS)}; "
                              "desync.run runs the built-in problems)")
    for reserved in ("matrix", "rhs", "partition"):
        if reserved in options:
            problem = problem or (f"solve() takes the matrix as A and b: '{reserved}' cannot be given "
                                  "(desync.run(solver, matrix='file.mtx') reads a file)")
    system = dict(on_root=on_root, has_matrix=False, rows=0, cols=0, indptr=np.zeros(1, dtype=np.int64),
                  indices=np.empty(0, dtype=np.int64), data=np.empty(0), has_rhs=False, b=np.empty(0),
                  partition=kind, parts=np.empty(0, dtype=np.int32), description="a matrix in memory",
                  near_kernel_vectors=0, near_kernel=np.empty(0))
    # near_kernel: a path stays the command line's --near-kernel; an array travels with the matrix.
    near_kernel = options.get("near_kernel")
    if near_kernel is not None and not isinstance(near_kernel, (str, os.PathLike)):
        del options["near_kernel"]
    else:
        near_kernel = None
    if holds and problem is None and A is not None:
        try:
            indptr, indices, data, rows, cols = _csr_of(A)
            system.update(has_matrix=True, rows=int(rows), cols=int(cols),
                          indptr=np.ascontiguousarray(indptr, dtype=np.int64),
                          indices=np.ascontiguousarray(indices, dtype=np.int64),
                          data=np.ascontiguousarray(data, dtype=np.float64),
                          description=_describe(A, rows, cols, len(data)))
            if b is not None:
                system.update(has_rhs=True, b=_vector_of(b))
            if near_kernel is not None:
                system.update(zip(("near_kernel_vectors", "near_kernel"), _vectors_of(near_kernel, rows)))
            if kind == "array" and rank == 0:
                parts = np.asarray(partition)
                if parts.ndim != 1 or not np.issubdtype(parts.dtype, np.integer):
                    raise InputError("partition: an array of ranks must be 1-D integers, one per row")
                if len(parts) and (parts.min() < np.iinfo(np.int32).min or parts.max() > np.iinfo(np.int32).max):
                    raise InputError("partition: a part number is not a rank")
                system["parts"] = np.ascontiguousarray(parts, dtype=np.int32)
        except (ValueError, TypeError) as e:
            problem = str(e)
    elif holds and problem is None and b is not None and A is None:
        problem = "b was given without A"
    _agree(comm, problem)
    # The same description on every rank (the record's "matrix").
    system["description"] = comm.bcast(system["description"] if rank == 0 else None, root=0)
    return _invoke(comm, _argv(solver, {**options, "quiet": quiet}), system)
