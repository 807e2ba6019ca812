#!/usr/bin/env python3
"""Checks the JSON record of `desync cg` and `desync krylov`, the same command (standard library only).

  test_cg_output.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR

Runs a converging and a limited run on 2 ranks and checks the keys, types and consistency of the
record. Exits 0 if every check passes.
"""
import json
import os
import sys

from desync_test_util import arguments, check, conclude, is_number, run_desync


def run(args, ranks, *options, expect_code, solver="cg"):
    return run_desync(args, ranks, (solver,), *options, expect_code=expect_code)


TIME_KEYS = ("spmv", "halo_wait", "pc", "vector", "reduction", "reduction_wait", "setup", "other", "total")


def check_record(rec, method, converged, solver="cg"):
    # The top-level keys every solver shares, then CG's section.
    for key in ("schema", "schema_version", "solver", "method", "mpi_library", "ranks", "process_grid",
                "global_size", "unknowns", "options", "tolerance", "converged", "stop_reason", "message",
                "true_residual", "tested_residual", "iterations", "wall_time", "iteration_rate", "time_split",
                "outstanding_requests", "residual_history", "per_rank", "details"):
        check(key in rec, f"JSON lacks key {key!r}")
    details = rec.get("details", {})
    for key in ("engine", "reduction", "messages_per_iteration", "pc", "progress", "problem", "operator",
                "replacements", "time_per_iteration", "b_norm"):
        check(key in details, f"JSON details lack key {key!r}")
    check(rec.get("schema") == "desync.run" and rec.get("schema_version") == 2, "schema / schema_version")
    check(rec.get("solver") == solver and rec.get("method") == method, f"solver {rec.get('solver')!r} method {rec.get('method')!r}")
    check(rec.get("converged") is converged, f"converged {rec.get('converged')!r}, expected {converged}")
    check(is_number(rec.get("true_residual")), f"true_residual {rec.get('true_residual')!r}")
    if converged:
        check(rec["true_residual"] <= rec["tolerance"], "converged but true residual above tolerance")
    it = rec.get("iterations", {})
    check(isinstance(it, dict) and all(is_number(it.get(k)) for k in ("min", "mean", "max")), f"iterations {it!r}")
    check(it.get("min") == it.get("max") and it.get("min", 0) > 0, f"iterations {it!r}: equal on every rank, > 0")
    ts = rec.get("time_split", {})
    check(all(is_number(ts.get(k)) for k in TIME_KEYS), f"time_split {ts!r}")
    check(ts.get("halo_wait", 1) <= ts.get("spmv", 0) + 1e-12, "halo_wait exceeds spmv")
    check(ts.get("reduction_wait", 1) <= ts.get("reduction", 0) + 1e-12, "reduction_wait exceeds reduction")
    check(rec.get("time_split_shares") == ["halo_wait", "reduction_wait"],
          f"time_split_shares {rec.get('time_split_shares')!r}: halo_wait and reduction_wait are shares")
    check(rec.get("outstanding_requests") == 0, "outstanding_requests")
    check(rec.get("ranks") == 2, "ranks")
    pr = rec.get("per_rank", [])
    if check(isinstance(pr, list) and len(pr) == 2, "per_rank has 2 entries"):
        check([p.get("rank") for p in pr] == [0, 1], "per_rank order")
        check(sum(p.get("local_rows", 0) for p in pr) == rec.get("unknowns"), "local_rows sum to unknowns")
        for p in pr:
            check(all(is_number(p.get("time", {}).get(k)) for k in TIME_KEYS), f"per_rank time {p.get('time')!r}")
            check(p.get("iterations") == it.get("max"), "per_rank iterations")
    h = rec.get("residual_history", {})
    lens = {k: len(h.get(k, [])) for k in ("time", "iteration", "residual")}
    check(len(set(lens.values())) == 1 and lens["iteration"] > 0, f"residual_history lengths {lens}")
    check(h.get("iteration", [None])[-1] == it.get("max"), "last history iteration = iterations")
    check(h.get("residual", [None])[0] == 1.0, "first history residual is 1 (x0 = 0)")
    opts = rec.get("options", {})
    check(isinstance(opts, dict) and all(isinstance(v, str) for v in opts.values()), "options are strings")
    check(opts.get("method") == method, f"options.method {opts.get('method')!r}")


def main():
    args = arguments().parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    path = os.path.join(args.workdir, "cg.json")
    run(args, 2, "--method", "pipecg", "--pc", "jacobi", "--global", "12x10x9", "--quiet", "--json", path,
        expect_code=0)
    with open(path) as f:
        rec = json.load(f)
    check_record(rec, "pipecg", True)
    check(rec["details"].get("reduction") == "iallreduce", f"reduction {rec['details'].get('reduction')!r}")
    check(rec.get("global_size") == [12, 10, 9] and rec.get("unknowns") == 1080, "sizes")
    check(rec.get("stop_reason") == "tolerance_reached", f"stop_reason {rec.get('stop_reason')!r}")

    path = os.path.join(args.workdir, "cg_limit.json")
    run(args, 2, "--method", "cg", "--operator", "csr", "--global", "12x10x9", "--max-iters", "7", "--quiet",
        "--json", path, expect_code=1)
    with open(path) as f:
        rec = json.load(f)
    check_record(rec, "cg", False)
    check(rec["details"].get("reduction") == "allreduce", f"reduction {rec['details'].get('reduction')!r}")
    check(rec.get("stop_reason") == "max_iters" and rec["iterations"]["max"] == 7, "max_iters stop at 7")
    check(rec["details"].get("operator") == "csr", f"operator {rec['details'].get('operator')!r}")

    # Progress control in the preconditioner: with --progress test and --reduction doubling each IC(0)
    # application polls once per --test-interval rows in each of its two passes; the iterates are
    # those of a run without polls, bitwise.
    recs = {}
    for name, progress in (("none", ("--progress", "none")), ("test", ("--progress", "test", "--test-interval", "64"))):
        path = os.path.join(args.workdir, f"cg_pc_polls_{name}.json")
        run(args, 2, "--method", "groppcg", "--pc", "bjacobi-ic0", "--reduction", "doubling", "--global", "12x10x9",
            "--rtol", "1e-8", *progress, "--quiet", "--json", path, expect_code=0)
        with open(path) as f:
            recs[name] = json.load(f)
    check_record(recs["test"], "groppcg", True)
    hist = {k: (r["residual_history"].get("iteration"), r["residual_history"].get("residual")) for k, r in recs.items()}
    check(hist["test"] == hist["none"], "--progress test: residual history differs from --progress none")
    for p in recs["none"]["per_rank"]:
        check(p.get("pc_polls") == 0, f"--progress none: rank {p.get('rank')} pc_polls {p.get('pc_polls')!r}, expected 0")
    for p in recs["test"]["per_rank"]:
        want = p.get("pc_applications", 0) * 2 * -(-p.get("local_rows", 0) // 64)
        check(p.get("pc_applications", 0) > 0 and p.get("pc_polls") == want,
              f"--progress test: rank {p.get('rank')} pc_polls {p.get('pc_polls')!r}, expected {want}")

    # desync krylov: the record names the command it ran under; gmres records its restart length,
    # which the CG methods' records do not hold.
    path = os.path.join(args.workdir, "krylov_gmres.json")
    run(args, 2, "--method", "gmres", "--restart", "7", "--pc", "jacobi", "--global", "12x10x9", "--quiet",
        "--json", path, expect_code=0, solver="krylov")
    with open(path) as f:
        rec = json.load(f)
    check_record(rec, "gmres", True, solver="krylov")
    check(rec["options"].get("restart") == "7", f"options.restart {rec['options'].get('restart')!r}")
    check(rec["details"].get("restart") == 7, f"details.restart {rec['details'].get('restart')!r}")
    check(rec["details"].get("reduction") == "allreduce", f"reduction {rec['details'].get('reduction')!r}")
    check("restart" not in recs["none"]["options"] and "restart" not in recs["none"]["details"],
          "a CG method's record holds a restart length")
    for p in rec["per_rank"]:
        its = p.get("iterations", 0)
        # one per step, one per restart (every 7 steps) and the final true residual's
        check(p.get("spmvs", 0) >= its + 1 and p.get("pc_applications", 0) >= its,
              f"gmres: rank {p.get('rank')} spmvs {p.get('spmvs')!r} pc_applications {p.get('pc_applications')!r}")
        check(p.get("reductions", 0) >= 3 * its, f"gmres: rank {p.get('rank')} reductions {p.get('reductions')!r}")

    return conclude("all cg output checks passed")


if __name__ == "__main__":
    sys.exit(main())
