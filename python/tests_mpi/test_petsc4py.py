"""desync.solve on a petsc4py AIJ Mat and Vec (each rank's own rows, partition "given"), where
Debian's python3-petsc4py is installed (make test runs it with the system Python's petsc4py:
build/venv-petsc); skipped, saying why, elsewhere."""
import numpy as np
import pytest

import desync
from conftest import agree


def test_petsc4py_mat_and_vec():
    try:
        from petsc4py import PETSc
    except ImportError as e:
        pytest.skip(f"petsc4py is not importable here ({e}): Debian's python3-petsc4py")
    n = 100
    A = PETSc.Mat().createAIJ([n, n], comm=PETSc.COMM_WORLD)
    A.setUp()
    lo, hi = A.getOwnershipRange()
    for i in range(lo, hi):
        A[i, i] = 4.0
        if i > 0:
            A[i, i - 1] = -1.0
        if i < n - 1:
            A[i, i + 1] = -1.0
    A.assemble()
    b = A.createVecLeft()
    b.setArray(np.sin(np.arange(lo, hi) + 1.0))
    for kwargs in (dict(solver="cg", tol=1e-12), dict(solver="schwarz", mode="async", tol=1e-12)):
        r = desync.solve(A, b, **kwargs)
        agree(np.array_equal(r.rows, np.arange(lo, hi)), "the Mat's own rows")
        x = A.createVecRight()
        x.setArray(r.x)
        res = b.duplicate()
        A.mult(x, res)
        res.axpy(-1.0, b)
        agree(r.converged and res.norm() < 1e-10 * b.norm(), f"{kwargs}: A x = b")
        agree(r.record["details"]["partition"]["method"] == "rows", "the Mat's layout kept")
