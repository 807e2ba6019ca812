#!/usr/bin/env python3
"""Two-level Schwarz keeps CG's iteration counts flat as subdomains multiply (solvers/schwarz/coarse/coarse_space.hpp):
the 2D Poisson matrix exported by `desync schwarz --export-system` with 16 x 16 points per subdomain
(fixed H/h) on 2 x 2, 3 x 3 and 4 x 4 process grids, solved by `desync cg --pc asm --overlap 2` on the
grid's own partition, one-level (--coarse none) and two-level (--coarse gdsw, rgdsw). The GDSW counts
stay within +-20% of their mean; the one-level counts grow by more than 30% (both shown). RGDSW
(Dohrmann and Widlund, 2017) has 4 functions per cross point of the 5-point stencil's subdomains,
4 (p - 1)^2, where GDSW has 2 p (p - 1) edges more, and its counts stay within 1.35x GDSW's. The same
for the stationary two-level iteration (desync schwarz --coarse gdsw|rgdsw, sync) with a looser
bound. 9 and 16 ranks oversubscribe the machine: counts only, no times. Standard library only:

  test_coarse_counts.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR
"""
import json
import os
import shutil
import sys

from desync_test_util import arguments, check, conclude, run_desync


def main():
    args = arguments(__doc__).parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    counts = {"none": [], "gdsw": [], "rgdsw": []}
    functions = {"gdsw": [], "rgdsw": []}
    for p in (2, 3, 4):
        ranks = p * p
        folder = os.path.join(args.workdir, f"sys{ranks}")
        run_desync(args, ranks, ["schwarz"], "--problem", "poisson2d", "--global", f"{16 * p}x{16 * p}",
                   "--dims", f"{p}x{p}", "--export-system", folder, "--quiet", timeout=120)
        for coarse in counts:
            record = os.path.join(args.workdir, f"cg-{ranks}-{coarse}.json")
            run_desync(args, ranks, ["cg"], "--matrix", os.path.join(folder, "A.petsc"), "--rhs",
                       os.path.join(folder, "b.petsc"), "--partition", os.path.join(folder, "partition.txt"),
                       "--pc", "asm", "--overlap", "2", "--coarse", coarse, "--tol", "1e-8", "--quiet",
                       "--json", record, timeout=120)
            with open(record) as f:
                rec = json.load(f)
            check(rec["converged"], f"{ranks} subdomains, coarse {coarse}: not converged")
            counts[coarse].append(int(rec["iterations"]["max"]))
            if coarse in functions:
                functions[coarse].append(int(rec["details"]["coarse_functions"]))
    # The stationary two-level iteration (desync schwarz --coarse, sync: the hybrid form) on the
    # built-in problem, classical Schwarz with overlap 2: its counts flatten less than CG's, so the
    # bound is looser (the largest within 1.75 times the smallest) while one level's grow threefold.
    iters = {"none": [], "gdsw": [], "rgdsw": []}
    for p in (2, 3, 4):
        ranks = p * p
        for coarse in iters:
            record = os.path.join(args.workdir, f"schwarz-{ranks}-{coarse}.json")
            run_desync(args, ranks, ["schwarz"], "--local", "16", "--dims", f"{p}x{p}", "--alpha", "inf",
                       "--overlap", "2", "--coarse", coarse, "--tol", "1e-8", "--quiet", "--json", record,
                       timeout=120)
            with open(record) as f:
                rec = json.load(f)
            check(rec["converged"], f"schwarz, {ranks} subdomains, coarse {coarse}: not converged")
            iters[coarse].append(int(rec["iterations"]["max"]))
    print("Schwarz (sync) iterations, 4 / 9 / 16 subdomains of 16 x 16 points, overlap 2:")
    for coarse, c in iters.items():
        print(f"  coarse {coarse:5s} {c}")
    for coarse in ("gdsw", "rgdsw"):
        check(max(iters[coarse]) <= 1.75 * min(iters[coarse]),
              f"two-level Schwarz ({coarse}) counts {iters[coarse]} spread over 1.75x")
    check(max(iters["none"]) >= 3 * min(iters["none"]), f"one-level Schwarz counts {iters['none']} do not grow threefold")
    print("CG iterations, 4 / 9 / 16 subdomains of 16 x 16 points, asm overlap 2:")
    for coarse, c in counts.items():
        print(f"  coarse {coarse:5s} {c}")
    two = counts["gdsw"]
    mean = sum(two) / len(two)
    check(all(abs(c - mean) <= 0.2 * mean for c in two), f"two-level counts {two} not within 20% of their mean {mean:.1f}")
    print(f"coarse functions: gdsw {functions['gdsw']}, rgdsw {functions['rgdsw']}")
    check(functions["rgdsw"] == [4 * (p - 1) ** 2 for p in (2, 3, 4)],
          f"rgdsw functions {functions['rgdsw']}, expected 4 (p - 1)^2: 4, 16, 36")
    check(functions["gdsw"] == [4 * (p - 1) ** 2 + 2 * p * (p - 1) for p in (2, 3, 4)],
          f"gdsw functions {functions['gdsw']}, expected 4 (p - 1)^2 + 2 p (p - 1): 8, 28, 60")
    check(all(r <= 1.35 * g for r, g in zip(counts["rgdsw"], two)),
          f"rgdsw counts {counts['rgdsw']} above 1.35x gdsw's {two}")
    one = counts["none"]
    check(max(one) > 1.3 * min(one), f"one-level counts {one} do not grow by 30%: the test would not tell")
    return conclude("two-level counts flat")


if __name__ == "__main__":
    sys.exit(main())
