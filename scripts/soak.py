#!/usr/bin/env python3
"""Randomized soak of desync: many small runs of every solver, mode, transport and completion scheme,
each under a timeout, each checked for what must hold whatever the draw.

  python3 scripts/soak.py run  --desync build/mpich/desync --mpirun mpirun.mpich --minutes 2
  python3 scripts/soak.py run  --desync build/openmpi/desync --mpirun mpirun --oshrun oshrun --runs 1000 \\
                               --json soak.json
  python3 scripts/soak.py check --desync build/mpich/desync --mpirun mpirun.mpich --ranks 3 --converge -- \\
                               schwarz --mode async --transport rma ...
  python3 scripts/soak.py summary soak-openmpi.json soak-mpich.json   # the table of docs/soak.md

A draw (`run`) picks a solver (jacobi, schwarz, pde, cg), its mode or method, a transport (p2p, rma,
and shmem where --oshrun is given) with a completion scheme, 1 to 4 ranks, a slow rank, noise and
limits (a tolerance, sometimes a small --max-iters or --time-limit), from a seeded generator: the
same --seed gives the same sequence of runs. Every run must:

  * end before --timeout seconds (a hang is a failure; the launcher is killed);
  * exit with 0 or 1 (2 would mean the draw was refused, 3 a numerical failure, 4 an internal error,
    5 the wait watchdog), and write its JSON record;
  * exit 0 exactly when the record says converged, and, for the solvers with a tolerance, be
    converged exactly when the true residual meets it (a pde run has no tolerance: converged unless
    a numerical failure stopped it);
  * leave no MPI request pending (the record's outstanding_requests is 0).

`check` runs one given command the same way (the CI's 3-rank cases) and can also bound the ratio of
the largest to the smallest iteration count over the ranks (--balance). Failures are printed with
the command that reproduces them; the exit status is 1 if any run failed. Standard library only.
"""
import argparse
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import time

SOLVERS = ("jacobi", "schwarz", "pde", "cg")
RMA_SCHEMES = ("flush", "flush-local", "overlap", "overlap-local")
SHMEM_SCHEMES = ("put", "put-overlap")
# Solvers whose record's true residual is judged against its tolerance.
WITH_TOLERANCE = ("jacobi", "schwarz", "cg")


def transport_args(rng, transports):
    t = rng.choice(transports)
    if t == "rma":
        return t, ["--transport", "rma", "--rma-sync", rng.choice(RMA_SCHEMES)]
    if t == "shmem":
        return t, ["--transport", "shmem", "--shmem-sync", rng.choice(SHMEM_SCHEMES)]
    return t, ["--transport", "p2p"]


def noise_args(rng, ranks):
    args = []
    if ranks > 1 and rng.random() < 0.3:
        args += ["--slow-rank", str(rng.randrange(ranks)), "--slow-factor", str(rng.choice((2, 3, 5)))]
    if rng.random() < 0.2:
        args += ["--noise", "jitter", "--noise-seed", str(rng.randrange(1000))]
    return args


def limit_args(rng):
    r = rng.random()
    if r < 0.12:
        return ["--max-iters", str(rng.choice((1, 3, 10, 40)))]
    if r < 0.2:
        return ["--time-limit", str(rng.choice((0.05, 0.2, 0.5)))]
    return []


def draw(rng, transports, max_ranks=4):
    """One random run: (solver, ranks, transport, args after the solver name)."""
    solver = rng.choice(SOLVERS)
    ranks = rng.randint(1, max_ranks)
    transport, targs = transport_args(rng, transports)
    if solver == "jacobi":
        mode = rng.choice(("sync", "async", "racy"))
        args = ["--mode", mode, "--local", str(rng.choice((4, 6, 8, 10))),
                "--tol", rng.choice(("1e-3", "1e-4", "1e-6"))]
        if mode != "sync":
            args += ["--inflight", str(rng.choice((1, 2, 4))), "--idle", rng.choice(("yield", "spin")),
                     "--reduction", rng.choice(("iallreduce", "tree", "doubling")),
                     "--check-every", str(rng.choice((1, 10, 100)))]
            if rng.random() < 0.5:
                args.append("--polish")
        args += noise_args(rng, ranks) + limit_args(rng)
    elif solver == "schwarz":
        mode = rng.choice(("sync", "async"))
        if rng.random() < 0.7:
            args = ["--problem", "poisson2d", "--local", str(rng.choice((8, 12, 16)))]
        else:
            args = ["--problem", "laplace3d", "--local", str(rng.choice((5, 6, 8)))]
        args += ["--mode", mode, "--overlap", str(rng.choice((1, 2))),
                 "--alpha", rng.choice(("auto", "inf", "10")), "--tol", rng.choice(("1e-5", "1e-7"))]
        # --termination none (no test, no detection) runs to a limit: one is added where none was drawn
        untested = rng.random() < 0.1
        if untested:
            args += ["--termination", "none"]
        if mode == "async":
            if not untested:
                args += ["--termination", rng.choice(("tree", "iallreduce"))]
            args += ["--inflight", str(rng.choice((1, 2, 4))), "--idle", rng.choice(("skip", "skip", "yield", "spin")),
                     "--check-every", str(rng.choice((1, 1, 5)))]
            if rng.random() < 0.3:
                args.append("--polish")
        limits = limit_args(rng)
        if untested and not limits:
            limits = ["--max-iters", str(rng.choice((3, 10, 40)))] if rng.random() < 0.5 else ["--time-limit", "0.05"]
        args += noise_args(rng, ranks) + limits
    elif solver == "pde":
        mode = rng.choice(("sync", "bounded"))
        if rng.random() < 0.5:
            args = ["--problem", "advection-diffusion1d", "--local", str(rng.choice((32, 64)))]
        else:
            # The periodic cube: its size divisible by the ranks along every axis.
            dims = {1: "1x1x1", 2: "2x1x1", 3: "3x1x1", 4: "2x2x1"}[ranks]
            args = ["--problem", "burgers3d", "--global", str(rng.choice((6, 12))), "--dims", dims]
        # (--noise jitter measures the step over at least 5 warm-up steps)
        args += ["--mode", mode, "--steps", str(rng.choice((20, 60, 150))), "--warmup", str(rng.choice((5, 10)))]
        if mode == "bounded":
            args += ["--max-delay", str(rng.choice((1, 2, 5)))]
        args += noise_args(rng, ranks)
    else:
        method = rng.choice(("cg", "cg-cg", "pipecg", "groppcg"))
        args = ["--method", method, "--local", str(rng.choice((4, 6, 8))), "--rtol", rng.choice(("1e-6", "1e-8")),
                "--pc", rng.choice(("none", "jacobi"))]
        if rng.random() < 0.12:
            args += ["--max-iters", str(rng.choice((1, 5)))]
    return solver, ranks, transport, args + targs


def launcher(args, ranks, transport):
    if transport == "shmem":
        return shlex.split(args.oshrun) + ["-np", str(ranks), "--mca", "osc", "ucx"]
    return shlex.split(args.mpirun) + ["-np", str(ranks)]


def child_env():
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "0")
    return env


def run_one(cmd, solver, timeout, balance=None, per_message=None):
    """Runs `cmd` (which ends with --json PATH's PATH added here) and checks it. Returns (ok, why, info)."""
    with tempfile.TemporaryDirectory(prefix="desync-soak-") as tmp:
        path = os.path.join(tmp, "run.json")
        full = cmd + ["--json", path, "--quiet"]
        start = time.monotonic()
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env(),
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return False, f"hang: no exit after {timeout:g} s", {"seconds": timeout}
        seconds = time.monotonic() - start
        info = {"seconds": round(seconds, 3), "rc": proc.returncode}
        tail = " | ".join(line.strip() for line in out.strip().splitlines()[-3:])
        if proc.returncode not in (0, 1):
            return False, f"exit code {proc.returncode}: {tail}", info
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            return False, f"exit code {proc.returncode} but no readable JSON record ({e}): {tail}", info
    converged = bool(rec.get("converged"))
    info.update(converged=converged, true_residual=rec.get("true_residual"), tolerance=rec.get("tolerance"),
                stop=rec.get("stop_reason"))
    if (proc.returncode == 0) != converged:
        return False, f"exit code {proc.returncode} but the record says converged={converged}", info
    if solver in WITH_TOLERANCE:
        res, tol = rec.get("true_residual"), rec.get("tolerance")
        meets = isinstance(res, (int, float)) and isinstance(tol, (int, float)) and res <= tol
        if meets != converged:
            return False, f"true residual {res} against tolerance {tol}, but converged={converged}", info
    if rec.get("outstanding_requests", 0) != 0:
        return False, f"{rec.get('outstanding_requests')} MPI request(s) left pending", info
    its = [r.get("iterations") for r in rec.get("per_rank", []) if isinstance(r.get("iterations"), (int, float))]
    if its:
        info["iterations"] = [int(i) for i in its]
    if balance and its and min(its) > 0 and max(its) / min(its) > balance:
        return False, f"iterations per rank {info['iterations']}: more than {balance:g} times apart", info
    if per_message is not None:
        for r in rec.get("per_rank", []):
            if r["iterations"] > per_message * r["messages_received"] + 2:
                return False, (f"rank {r['rank']} made {r['iterations']:.0f} updates on {r['messages_received']:.0f} "
                               f"messages received (more than {per_message:g} per message + 2)"), info
    return True, "", info


def cmd_run(args):
    transports = ["p2p", "rma"] + (["shmem"] if args.oshrun else [])
    rng = random.Random(args.seed)
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    results, failures = [], 0
    n = 0
    while (args.runs is None or n < args.runs) and (deadline is None or time.monotonic() < deadline):
        solver, ranks, transport, sargs = draw(rng, transports, args.max_ranks)
        cmd = launcher(args, ranks, transport) + [args.desync, solver] + sargs
        ok, why, info = run_one(cmd, solver, args.timeout)
        n += 1
        shown = " ".join(shlex.quote(c) for c in cmd)
        results.append({"run": n, "command": shown, "ok": ok, "why": why, **info})
        if not ok:
            failures += 1
            print(f"FAIL run {n}: {why}\n  {shown}", flush=True)
        elif args.verbose:
            print(f"ok   run {n} ({info['seconds']:.1f} s): {shown}", flush=True)
    print(f"soak: {n} runs (seed {args.seed}), {failures} failed; desync {args.desync}, launcher {args.mpirun}")
    print(f"soak: {n - failures} passed, {failures} failed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": args.seed, "desync": args.desync, "mpirun": args.mpirun, "oshrun": args.oshrun,
                       "runs": n, "failed": failures, "timeout": args.timeout, "results": results}, f, indent=1)
            f.write("\n")
    return 1 if failures or n == 0 else 0


def cmd_check(args):
    rest = args.command
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest:
        print("soak.py check: give the desync arguments after --", file=sys.stderr)
        return 2
    transport = "shmem" if "shmem" in rest else "p2p"
    cmd = launcher(args, args.ranks, transport) + [args.desync] + rest
    ok, why, info = run_one(cmd, rest[0], args.timeout, args.balance, args.updates_per_message)
    if ok and args.converge and info.get("rc") != 0:
        ok, why = False, f"did not converge (exit code {info.get('rc')}, stop {info.get('stop')})"
    shown = " ".join(shlex.quote(c) for c in cmd)
    print(f"{'ok' if ok else 'FAIL'}: {shown}\n  {json.dumps(info)}" + ("" if ok else f"\n  {why}"))
    return 0 if ok else 1


def describe(command):
    """(solver, ranks, transport with scheme) of a recorded run's command line."""
    words = shlex.split(command)
    solver = next((w for w in words if w in SOLVERS), "?")
    ranks = words[words.index("-np") + 1] if "-np" in words else "?"
    transport = words[words.index("--transport") + 1] if "--transport" in words else "p2p"
    for flag in ("--rma-sync", "--shmem-sync"):
        if flag in words:
            transport += " " + words[words.index(flag) + 1]
    return solver, ranks, transport


def cmd_summary(args):
    """A markdown table per file: runs and failures by solver, by rank count and by transport."""
    for path in args.files:
        with open(path) as f:
            doc = json.load(f)
        results = doc["results"]
        seconds = sum(r.get("seconds", 0) for r in results)
        print(f"`{os.path.basename(path)}`: {doc['runs']} runs (seed {doc['seed']}, launcher `{doc['mpirun']}`"
              f"{', `' + doc['oshrun'] + '`' if doc.get('oshrun') else ''}), {doc['failed']} failed, "
              f"{sum(1 for r in results if r.get('rc') == 0)} converged (exit 0), "
              f"{sum(1 for r in results if r.get('rc') == 1)} not (exit 1), {seconds / 60:.1f} minutes of runs\n")
        for title, key in (("solver", 0), ("ranks", 1), ("transport", 2)):
            counts = {}
            for r in results:
                k = describe(r["command"])[key]
                runs, failed = counts.get(k, (0, 0))
                counts[k] = (runs + 1, failed + (0 if r["ok"] else 1))
            print(f"| {title} | " + " | ".join(str(k) for k in sorted(counts)) + " |")
            print("|---|" + "---|" * len(counts))
            print("| runs (failed) | " + " | ".join(f"{counts[k][0]} ({counts[k][1]})" for k in sorted(counts)) + " |")
            print()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="what", required=True)
    sm = sub.add_parser("summary")
    sm.add_argument("files", nargs="+", help="JSON files written by run --json")
    for name in ("run", "check"):
        s = sub.add_parser(name)
        s.add_argument("--desync", default=os.environ.get("DESYNC", "build/openmpi/desync"))
        s.add_argument("--mpirun", default=os.environ.get("MPIRUN", "mpirun"),
                       help="launcher, split like a shell line (default $MPIRUN or mpirun)")
        s.add_argument("--oshrun", default=None, help="OpenSHMEM launcher: also draw --transport shmem (Open MPI)")
        s.add_argument("--timeout", type=float, default=90.0, help="seconds before a run counts as hung (default 90)")
    r = sub.choices["run"]
    r.add_argument("--runs", type=int, default=None, help="stop after this many runs")
    r.add_argument("--minutes", type=float, default=None, help="stop drawing new runs after this many minutes")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--max-ranks", type=int, default=4)
    r.add_argument("--json", default=None, help="write every run's command and result here")
    r.add_argument("--verbose", action="store_true", help="print passing runs too")
    c = sub.choices["check"]
    c.add_argument("--ranks", type=int, required=True)
    c.add_argument("--balance", type=float, default=None,
                   help="fail if the largest iteration count over the ranks exceeds the smallest this many times")
    c.add_argument("--converge", action="store_true", help="fail unless the run converges (exit 0)")
    c.add_argument("--updates-per-message", type=float, default=None,
                   help="fail if a rank made more than this many updates per message it received, plus 2 (a "
                        "rank that updates on unchanged values while a neighbour starves)")
    c.add_argument("command", nargs=argparse.REMAINDER, help="-- then desync's arguments (solver first)")
    args = p.parse_args(argv)
    if args.what == "summary":
        return cmd_summary(args)
    if args.what == "run":
        if args.runs is None and args.minutes is None:
            p.error("run: give --runs or --minutes")
        if not 1 <= args.max_ranks <= 4:
            p.error("run: --max-ranks must be 1 to 4")
        return cmd_run(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
