#!/usr/bin/env python3
"""The coarse matrix of two-level Schwarz on --coarse-ranks k ranks (MUMPS, solvers/schwarz/coarse/coarse_solver.hpp)
solves the same coarse problem as dense LU on every rank: `desync krylov --method gmres --pc ras
--coarse gdsw` on the non-symmetric convection-diffusion matrix (a non-symmetric A0) at 3 ranks takes
the same iterations with --coarse-ranks 0, 1 and 2 and reaches the same true residual (within 1e-6
relative), and the record's details name the coarse level (functions, nonzeros, solver, ranks,
set-up and apply seconds). Standard library only:

  test_coarse_ranks.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --matrix FILE --workdir DIR
"""
import json
import os
import shutil
import sys

from desync_test_util import arguments, check, conclude, finite, run_desync


def main():
    ap = arguments(__doc__)
    ap.add_argument("--matrix", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    records = {}
    for k in (0, 1, 2):
        path = os.path.join(args.workdir, f"gmres-coarse-ranks-{k}.json")
        run_desync(args, 3, ["krylov"], "--method", "gmres", "--pc", "ras", "--coarse", "gdsw", "--coarse-ranks",
                   str(k), "--matrix", args.matrix, "--tol", "1e-8", "--quiet", "--json", path, timeout=60)
        with open(path) as f:
            records[k] = json.load(f)
    base = records[0]
    for k, rec in records.items():
        d = rec["details"]
        check(rec["converged"], f"--coarse-ranks {k}: not converged")
        check(rec["iterations"] == base["iterations"],
              f"--coarse-ranks {k}: iterations {rec['iterations']} != {base['iterations']} with dense LU")
        check(abs(rec["true_residual"] - base["true_residual"]) <= 1e-6 * base["true_residual"],
              f"--coarse-ranks {k}: true residual {rec['true_residual']} != {base['true_residual']}")
        check(d.get("coarse") == "gdsw", f"--coarse-ranks {k}: details coarse {d.get('coarse')}")
        check(d.get("coarse_ranks") == k, f"--coarse-ranks {k}: details coarse_ranks {d.get('coarse_ranks')}")
        check(d.get("coarse_solver") == ("mumps" if k else "dense-lu"),
              f"--coarse-ranks {k}: details coarse_solver {d.get('coarse_solver')}")
        check(d.get("coarse_functions") == base["details"].get("coarse_functions") and d.get("coarse_functions", 0) > 0,
              f"--coarse-ranks {k}: details coarse_functions {d.get('coarse_functions')}")
        check(d.get("coarse_nonzeros") == base["details"].get("coarse_nonzeros"),
              f"--coarse-ranks {k}: details coarse_nonzeros {d.get('coarse_nonzeros')}")
        # A0's factors: dense LU n^2 entries; MUMPS's LU at least A0's own entries, at most n^2.
        n, nnz, fill = d.get("coarse_functions", 0), d.get("coarse_nonzeros", 0), d.get("coarse_factor_nonzeros")
        check(fill == n * n if k == 0 else isinstance(fill, int) and nnz <= fill <= n * n,
              f"--coarse-ranks {k}: details coarse_factor_nonzeros {fill} (A0 {n} x {n}, {nnz} nonzeros)")
        for key in ("coarse_setup_seconds", "coarse_apply_seconds"):
            check(finite(d.get(key)) and d[key] >= 0, f"--coarse-ranks {k}: details {key} {d.get(key)}")
    return conclude(f"--coarse-ranks 0, 1, 2: {base['iterations']['max']:.0f} iterations each")


if __name__ == "__main__":
    sys.exit(main())
