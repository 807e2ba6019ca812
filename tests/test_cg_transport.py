#!/usr/bin/env python3
"""`desync cg --transport`: every transport of the ghost channels gives bitwise the same iterates.

  test_cg_transport.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR
                       [--oshrun PATH] [--ranks 2 3 4]

Runs poisson3d (matrix-free and assembled) and elasticity3d with --transport p2p, rma (every
--rma-sync scheme) and, given --oshrun, shmem (under oshrun --mca osc ucx), and checks that the
residual history (iterations and residuals) in the JSON records is identical, that the options
record the transport, and that an unknown transport is refused with one message and exit code 2.
"""
import json
import os
import subprocess
import sys

from desync_test_util import arguments, check, conclude, run_desync

PROBLEMS = (
    ("poisson3d", "--global", "12x10x9"),
    ("poisson3d", "--global", "12x10x9", "--operator", "csr"),
    ("elasticity3d", "--global", "6x5x6"),
)


def history(args, ranks, name, problem, transport, launcher=None):
    path = os.path.join(args.workdir, f"{name}.json")
    options = ("--problem", *problem, "--rtol", "1e-6", "--max-iters", "2000", "--quiet", "--json", path, *transport)
    if launcher:
        cmd = [launcher, "-np", str(ranks), "--mca", "osc", "ucx", args.desync, "cg", *options]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if not check(proc.returncode == 0, f"{' '.join(cmd)}: exit code {proc.returncode}"):
            print(proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
            return None
    elif run_desync(args, ranks, ("cg",), *options).returncode != 0:
        return None
    with open(path) as f:
        rec = json.load(f)
    opts = rec.get("options", {})
    want = transport[1] if transport else "p2p"
    check(opts.get("transport") == want, f"{name}: options.transport {opts.get('transport')!r}, expected {want!r}")
    check(rec.get("outstanding_requests") == 0, f"{name}: outstanding_requests")
    h = rec.get("residual_history", {})
    return h.get("iteration"), h.get("residual")


def main():
    ap = arguments(__doc__)
    ap.add_argument("--oshrun", default="")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 3])
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    variants = [("rma", s) for s in ("flush", "flush-local", "overlap", "overlap-local")]
    if args.oshrun:
        variants += [("shmem", s) for s in ("put", "put-overlap")]
    for ranks in args.ranks:
        for p, problem in enumerate(PROBLEMS):
            ref = history(args, ranks, f"p2p_{p}_np{ranks}", problem, ())
            if ref is None:
                continue
            check(ref[0] and len(ref[0]) > 5, f"problem {problem}: too few iterations to compare")
            for transport, scheme in variants:
                flags = ("--transport", transport, f"--{transport}-sync", scheme)
                got = history(args, ranks, f"{transport}_{scheme}_{p}_np{ranks}", problem, flags,
                              launcher=args.oshrun if transport == "shmem" else None)
                check(got == ref, f"{' '.join(problem)} on {ranks} ranks: --transport {transport} --{transport}-sync "
                                  f"{scheme} iterates differ from p2p")

    proc = run_desync(args, 2, ("cg",), "--global", "8", "--transport", "bogus", expect_code=2)
    lines = [l for l in (proc.stdout + proc.stderr).splitlines() if "error" in l]
    check(lines == ["desync: error: --transport 'bogus': unknown transport (expected p2p, rma or shmem)"],
          f"unknown transport message: {lines!r}")
    return conclude("cg transports: bitwise the same iterates")


if __name__ == "__main__":
    sys.exit(main())
