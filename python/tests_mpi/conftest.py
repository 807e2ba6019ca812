"""pytest under mpirun: every rank runs every test, in the same order (run_mpi_tests.py launches
`mpirun -n N python -m pytest python/tests_mpi`). Only rank 0 reports. A test that checks a value
on one rank must agree on the outcome (`agree`) so that every rank passes or fails together.

DESYNC_TEST_DATA: the folder run_mpi_tests.py filled with matrices and the desync executable's
answers on them (tests that need it are skipped without it)."""
import os
import sys

import pytest
from mpi4py import MPI

COMM = MPI.COMM_WORLD


def pytest_configure(config):
    if COMM.Get_rank() != 0:  # one report, rank 0's; the exit status stays every rank's own
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        config.option.verbose = -2


@pytest.fixture
def comm():
    return COMM


@pytest.fixture(scope="session")
def data():
    path = os.environ.get("DESYNC_TEST_DATA")
    if not path or not os.path.isdir(path):
        pytest.skip("DESYNC_TEST_DATA is not set (python/tests_mpi/run_mpi_tests.py makes it)")
    return path


def agree(ok: bool, what: str = "") -> None:
    """Fails on every rank if `ok` is false on any rank."""
    oks = COMM.allgather(bool(ok))
    assert all(oks), f"{what} (false on rank(s) {[r for r, o in enumerate(oks) if not o]})"
