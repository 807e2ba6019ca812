#!/usr/bin/env python3
"""The Python bindings' tests under MPI (make test runs this for Open MPI and for MPICH).

For each rank count it first runs the desync executable on matrices written here with SciPy (its
--save answers and --json records are the references of test_solve.py's bitwise tests), then
`mpirun -n N python -m pytest python/tests_mpi` with DESYNC_TEST_DATA pointing at them. Every launch
has a timeout: a hang is a failure.

    run_mpi_tests.py --desync build/openmpi/desync --python build/venv/bin/python --mpirun mpirun
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

# The references: (name, desync arguments after --matrix FILE). One method of each family and GMRES.
REFERENCES = [
    ("jacobi", "poisson2d.mtx", ["jacobi", "--mode", "sync", "--tol", "1e-6", "--partition", "metis"]),
    ("schwarz", "poisson2d.mtx", ["schwarz", "--mode", "sync", "--overlap", "1", "--tol", "1e-8", "--partition", "metis"]),
    ("cg", "poisson2d.mtx", ["cg", "--method", "cg", "--pc", "jacobi", "--tol", "1e-10", "--partition", "metis"]),
    ("gmres", "convdiff20.mtx", ["krylov", "--method", "gmres", "--pc", "ras", "--tol", "1e-10", "--partition", "metis"]),
]


def write_matrices(folder, python):
    """poisson2d.mtx (5-point Laplacian, 24 x 24 points: SPD) and the repository's convdiff20.mtx."""
    code = (
        "import scipy.sparse as sp, scipy.io as io, shutil, sys\n"
        "n = 24\n"
        "T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))\n"
        "A = (sp.kron(sp.eye(n), T) + sp.kron(T, sp.eye(n))).tocsr()\n"
        "io.mmwrite(sys.argv[1] + '/poisson2d.mtx', A)\n"
        "shutil.copy(sys.argv[2], sys.argv[1] + '/convdiff20.mtx')\n"
    )
    subprocess.run([python, "-c", code, folder, os.path.join(REPO, "tests", "data", "matrices", "convdiff20.mtx")],
                   check=True, timeout=120)


def launch(mpirun, np, argv, env, timeout):
    """Runs `mpirun -n np argv`; on timeout kills the launcher and its ranks and returns 124."""
    cmd = [mpirun, "-n", str(np)] + argv
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        print(f"timed out after {timeout} s: {' '.join(cmd)}", flush=True)
        return 124


def references(args, np, data, tmp, env):
    """The desync executable's answers at `np` ranks into `data`; what failed."""
    os.makedirs(data)
    for name in ("poisson2d.mtx", "convdiff20.mtx"):
        os.symlink(os.path.join(tmp, name), os.path.join(data, name))
    runs = [(name, [args.desync] + cli + ["--matrix", os.path.join(data, matrix), "--quiet",
                                          "--save", os.path.join(data, name + ".npy"),
                                          "--json", os.path.join(data, name + ".json")])
            for name, matrix, cli in REFERENCES]
    runs.append(("jacobi --local 16", [args.desync, "jacobi", "--mode", "sync", "--local", "16", "--quiet",
                                       "--json", os.path.join(data, "jacobi-local16.json")]))
    return [f"{np} ranks: desync {name} (a reference)" for name, argv in runs
            if launch(args.mpirun, np, argv, env, args.timeout) != 0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--desync", required=True, help="the desync executable built with the same MPI")
    ap.add_argument("--python", default=sys.executable, help="the Python with desync installed")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--ranks", default="1,2,3", help="rank counts (default 1,2,3)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per launch")
    ap.add_argument("--no-references", action="store_true",
                    help="run no desync references (their tests skip), e.g. with -k for a few tests")
    ap.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    args = ap.parse_args()
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    failed = []
    pytest = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", HERE] + args.pytest_args
    with tempfile.TemporaryDirectory(prefix="desync-py-") as tmp:
        if not args.no_references:
            write_matrices(tmp, args.python)
        for np in [int(r) for r in args.ranks.split(",")]:
            env_np = {k: v for k, v in env.items() if k != "DESYNC_TEST_DATA"}
            if not args.no_references:
                env_np["DESYNC_TEST_DATA"] = data = os.path.join(tmp, f"np{np}")
                failed += references(args, np, data, tmp, env)
            if launch(args.mpirun, np, pytest, env_np, args.timeout) != 0:
                failed.append(f"{np} ranks: pytest")
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    print("python/tests_mpi: passed at " + args.ranks + " ranks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
