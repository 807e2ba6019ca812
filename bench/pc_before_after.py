#!/usr/bin/env python3
"""Preconditioner application time of two desync builds, alternating run by run (1 rank, 64^3).

    python3 bench/pc_before_after.py OLD/desync NEW/desync [ROUNDS]

Runs pipecg and groppcg with the Jacobi and block-Jacobi IC(0) preconditioners for 120 iterations
(no progress control) and prints the median `pc` time of the JSON record's time split per build and
their ratio. Each round alternates which build goes first. ROUNDS defaults to 5.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

if len(sys.argv) < 3:
    sys.exit(__doc__)
old, new = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
cases = [("pipecg", "jacobi"), ("groppcg", "jacobi"), ("pipecg", "bjacobi-ic0"), ("groppcg", "bjacobi-ic0")]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
res = {(c, side): [] for c in cases for side in ("old", "new")}
tmp = tempfile.mkdtemp()
for r in range(rounds):
    for c in cases:
        for side, exe in (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old)):
            out = os.path.join(tmp, f"{side}.json")
            subprocess.run(["mpirun", "-np", "1", exe, "cg", "--method", c[0], "--pc", c[1], "--local", "64",
                            "--rtol", "1e-30", "--max-iters", "120", "--quiet", "--json", out], check=False, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rec = json.load(open(out))
            res[(c, side)].append(rec["time_split"]["pc"]["max"] if isinstance(rec["time_split"]["pc"], dict)
                                  else rec["time_split"]["pc"])
print(f"{'method':8} {'pc':12} {'old pc s':>9} {'new pc s':>9} {'new/old':>8}   (median of {rounds}, 64^3, 1 rank, 120 iterations)")
for c in cases:
    o, n = statistics.median(res[(c, 'old')]), statistics.median(res[(c, 'new')])
    print(f"{c[0]:8} {c[1]:12} {o:9.4f} {n:9.4f} {n/o:8.3f}")
