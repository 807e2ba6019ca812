"""Shared fixtures: real run records made by desync in this test session, and the repository's
benchmark scripts imported as modules.

DESYNC: the desync executable (default: the repository's build/openmpi/desync); MPIRUN: the launcher
(default mpirun). Tests that need desync are skipped, saying why, when it is not there."""
import importlib.util
import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def bench_script():
    """Imports a benchmark script of the repository (scripts, not part of the package) by its path
    relative to the repository, e.g. bench_script("bench/simgrid/validate.py")."""
    def load(relative):
        name = os.path.splitext(os.path.basename(relative))[0]
        spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, relative))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


def desync_path():
    return os.environ.get("DESYNC", os.path.join(REPO, "build", "openmpi", "desync"))


def mpirun():
    return os.environ.get("MPIRUN", "mpirun")


def child_env():
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root without these; MPICH ignores them
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


@pytest.fixture(scope="session")
def desync():
    path = desync_path()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.skip(f"desync executable {path} not found (build it, or set DESYNC)")
    return path


def run_desync(desync, ranks, args, timeout=120):
    cmd = [mpirun(), "-np", str(ranks), desync] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
    assert out.returncode == 0, f"{' '.join(cmd)} exited {out.returncode}: {out.stderr[-2000:]}"
    return out


@pytest.fixture(scope="session")
def records(desync, tmp_path_factory):
    """Paths of real records: jacobi sync and async at 2 ranks with rank 1 slowed 2x, cg at 1 rank,
    and a saved .npy field."""
    d = tmp_path_factory.mktemp("records")
    paths = {}
    for mode in ("sync", "async"):
        paths[mode] = str(d / f"{mode}.json")
        run_desync(desync, 2, ["jacobi", "--mode", mode, "--local", "12", "--slow-rank", "1", "--slow-factor", "2",
                               "--quiet", "--json", paths[mode]])
    paths["cg"] = str(d / "cg.json")
    run_desync(desync, 1, ["cg", "--global", "12", "--quiet", "--json", paths["cg"]])
    paths["field"] = str(d / "u.npy")
    run_desync(desync, 2, ["jacobi", "--global", "10x8x6", "--quiet", "--save", paths["field"]])
    return paths
