#!/usr/bin/env python3
"""Asynchronous runs on users' matrices that once hung or stopped falsely, each checked from the saved
solution: exit 0 exactly when the true residual computed here meets the tolerance, the record's true
residual equal to it, no hang (every run under a timeout), nothing pending. Standard library only;
the matrices are generated here (scripts/soak.py's generators):

  test_async_trust.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR [CHECK ...]

CHECK is any of (default: all):

  coarse-rma     two-level Schwarz, async, over rma with the overlap completion schemes and both
                 terminations (2 ranks, METIS) on a k-nearest-neighbour graph Laplacian: it hung
                 (the root's last coarse correction was never announced) in 4 of 8 tries
  coarse-p2p     the same over p2p with iallreduce termination, 5 runs each of Nicolaides, GDSW and RGDSW: it
                 diverged (exit code 3) or stopped above the tolerance in 5 of 10 runs while each
                 coarse correction landed on an iterate the local solves had moved since its residual
                 was taken (now --coarse-reuse 0 alone, not the default)
  overlap0       async Schwarz with --overlap 0 (one level and GDSW, p2p and rma) on cell-centred
                 diffusion with log-normal coefficients: it stopped after 3-4 iterations on a local
                 residual of 1e-15 with a true residual of 0.1
  racy-slow      racy and async point and block Jacobi with rank 0 at half speed on the graph
                 Laplacian: it stopped with a true residual 1257 times the tolerance
  contradicted   a stop the true residual contradicts is reported as such: sync Jacobi with
                 --halo-period 7 stops on a stale test (exit 1, stop_reason true_residual_above_tol,
                 the note naming both residuals and --polish); with --polish it converges
"""
import json
import math
import os
import random
import subprocess
import sys

from desync_test_util import check, run_checks

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import soak  # noqa: E402  (the generators, writers and the residual check)

TIMEOUT = 60  # a hang is the failure mode: seconds per run


def knn_system(workdir):
    rng = random.Random(20261129)
    A, _ = soak.gen_knn(rng, 1500)
    b = [rng.gauss(0.0, 1.0) for _ in range(A.n)]
    path, rhs = os.path.join(workdir, "G.mtx"), os.path.join(workdir, "g.npy")
    soak.write_mtx(path, A, random.Random(1), symmetric=False)
    soak.write_npy(rhs, b)
    return A, b, path, rhs


def diffusion_system(workdir):
    rng = random.Random(36)
    A = soak.diffusion((36, 36), lambda axis: math.exp(1.5 * rng.gauss(0.0, 1.0)))
    b = [rng.gauss(0.0, 1.0) for _ in range(A.n)]
    path, rhs = os.path.join(workdir, "A.petsc"), os.path.join(workdir, "b.npy")
    soak.write_petsc_matrix(path, A)
    soak.write_npy(rhs, b)
    return A, b, path, rhs


def run_checked(args, system, ranks, command, tol, expect_converged=True):
    """Runs `desync COMMAND --matrix --rhs --tol --save --json` and checks it from the saved solution."""
    A, b, path, rhs = system
    save = os.path.join(args.workdir, "x.npy")
    record = os.path.join(args.workdir, "r.json")
    for f in (save, record):
        if os.path.exists(f):
            os.remove(f)
    cmd = [args.mpiexec, args.np_flag, str(ranks), *args.preflag, args.desync, *command,
           "--matrix", path, "--rhs", rhs, "--tol", repr(tol), "--save", save, "--json", record]
    text = " ".join(cmd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        check(False, f"{text}: no answer in {TIMEOUT} s (hang or livelock)")
        return None
    if not check(proc.returncode in (0, 1), f"{text}: exit code {proc.returncode}"):
        print(proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
        return None
    rec = json.load(open(record))
    x = soak.read_npy(save)
    res, slack = soak.residual_check(A, b, x, default_b=False)
    converged = proc.returncode == 0
    check(converged == rec["converged"], f"{text}: exit {proc.returncode} but record converged {rec['converged']}")
    check(not converged or res <= tol + slack, f"{text}: exit 0 with a true residual of {res:.3e} > tol {tol:g}")
    check(abs(res - rec["true_residual"]) <= slack + 1e-12 * res,
          f"{text}: the record's true residual {rec['true_residual']:.6e}, recomputed {res:.6e}")
    check(rec["outstanding_requests"] == 0, f"{text}: {rec['outstanding_requests']} requests pending")
    if rec["stop_reason"] == "tolerance_reached":
        check(converged, f"{text}: stop_reason tolerance_reached with a true residual of {res:.3e} > {tol:g}")
    if expect_converged:
        check(converged, f"{text}: not converged ({rec['stop_reason']}, true residual {res:.3e})\n{proc.stdout}")
    return rec


def check_coarse_rma(args):
    system = knn_system(args.workdir)
    for scheme in ("overlap-local", "flush-local", "overlap"):
        for termination in ("iallreduce", "tree"):
            for coarse in ("nicolaides", "gdsw"):
                run_checked(args, system, 2, ["schwarz", "--partition", "metis", "--mode", "async", "--overlap",
                                              "1", "--max-iters", "20000", "--termination", termination,
                                              "--transport", "rma", "--rma-sync", scheme, "--coarse", coarse], 1e-6)


def check_coarse_p2p(args):
    system = knn_system(args.workdir)
    for coarse in ("nicolaides", "gdsw", "rgdsw"):
        for _ in range(5):
            run_checked(args, system, 2, ["schwarz", "--partition", "metis", "--mode", "async", "--overlap", "1",
                                          "--max-iters", "20000", "--termination", "iallreduce", "--transport",
                                          "p2p", "--coarse", coarse], 1e-6)


def check_overlap0(args):
    system = diffusion_system(args.workdir)
    for coarse in ("none", "gdsw"):
        for transport in ("p2p", "rma"):
            for termination in ("tree", "iallreduce"):
                rec = run_checked(args, system, 2, ["schwarz", "--partition", "metis", "--mode", "async",
                                                    "--overlap", "0", "--coarse", coarse, "--transport", transport,
                                                    "--termination", termination], 1e-8)
                if rec:
                    its = min(p["iterations"] for p in rec["per_rank"])
                    check(its > 20, f"overlap 0 {coarse} {transport} {termination}: stopped after {its} iterations")


def check_racy_slow(args):
    system = knn_system(args.workdir)
    for mode in ("racy", "async"):
        for variant in ("point", "block"):
            run_checked(args, system, 2, ["jacobi", "--mode", mode, "--variant", variant, "--transport", "p2p",
                                          "--slow-rank", "0", "--slow-factor", "2", "--partition", "rows"], 1e-6)


def check_contradicted(args):
    # The grid problem: a stale synchronous test (--halo-period 7) stops above the tolerance.
    out = os.path.join(args.workdir, "c.json")
    base = [args.mpiexec, args.np_flag, "2", *args.preflag, args.desync, "jacobi", "--local", "20",
            "--halo-period", "7", "--check-every", "10", "--json", out]
    proc = subprocess.run(base, capture_output=True, text=True, timeout=TIMEOUT)
    rec = json.load(open(out))
    check(proc.returncode == 1, f"{' '.join(base)}: exit code {proc.returncode}, expected 1")
    check(rec["stop_reason"] == "true_residual_above_tol", f"stop_reason {rec['stop_reason']!r}")
    check(rec["true_residual"] > rec["tolerance"] >= rec["tested_residual"],
          f"true {rec['true_residual']}, tested {rec['tested_residual']}, tolerance {rec['tolerance']}")
    check("NOT CONVERGED (stopped: true_residual_above_tol)" in proc.stdout, "the summary's result line")
    check("--polish" in rec["message"] and f"{rec['true_residual']:.3e}" in rec["message"],
          f"the note names the true residual and --polish: {rec['message']!r}")
    proc = subprocess.run(base + ["--polish"], capture_output=True, text=True, timeout=TIMEOUT)
    rec = json.load(open(out))
    check(proc.returncode == 0 and rec["stop_reason"] == "tolerance_reached" and rec["converged"],
          f"with --polish: exit {proc.returncode}, {rec['stop_reason']}")


CHECKS = {"coarse-rma": check_coarse_rma, "coarse-p2p": check_coarse_p2p, "overlap0": check_overlap0,
          "racy-slow": check_racy_slow, "contradicted": check_contradicted}
DEFAULT = list(CHECKS)


def main():
    return run_checks(__doc__, CHECKS, "asynchronous runs on generated matrices: every answer checked from its saved solution",
                      default=DEFAULT)


if __name__ == "__main__":
    sys.exit(main())
