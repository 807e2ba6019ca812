"""Helpers shared by the Python checks of the `desync` executable (standard library only).

The checks import this module from their own directory (Python puts a script's directory first on
sys.path), so they run as `python3 tests/<check>.py ...` from anywhere.
"""
import argparse
import math
import subprocess
import sys

FAILURES = []


def check(cond, what):
    """Records and prints a failed check; returns cond."""
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def finite(x):
    return is_number(x) and math.isfinite(x)


def positive(x):
    return finite(x) and x > 0


def arguments(description=None, exe_flag="--desync"):
    """The options every check takes: the executable (given as exe_flag, stored as args.desync), how
    to launch it and a scratch directory."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument(exe_flag, dest="desync", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np-flag", default="-n")
    ap.add_argument("--preflag", action="append", default=[])
    ap.add_argument("--workdir", required=True)
    return ap


def run_desync(args, ranks, command, *options, expect_code=0, extra=(), timeout=120):
    """Runs `desync COMMAND... OPTIONS...` on `ranks` ranks (extra: mpiexec flags) and checks its exit
    code; prints its output when the code is not the expected one."""
    cmd = [args.mpiexec, args.np_flag, str(ranks), *args.preflag, *extra, args.desync, *command, *options]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if not check(proc.returncode == expect_code, f"{' '.join(cmd)}: exit code {proc.returncode}, expected {expect_code}"):
        print(proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
    return proc


def run_checks(description, checks, done, pass_workdir=False, default=None):
    """The main of a check script made of named checks: `SCRIPT [options] [CHECK ...]` runs the named
    ones (default: `default`, or all), each as checks[name](args) (pass_workdir: (args, args.workdir)), then
    concludes with `done`."""
    import os

    ap = arguments(description)
    ap.add_argument("checks", nargs="*", default=[], help=" | ".join(checks))
    args = ap.parse_args()
    for name in args.checks:
        if name not in checks:
            ap.error(f"unknown check '{name}' (expected {', '.join(checks)})")
    os.makedirs(args.workdir, exist_ok=True)
    for name in args.checks or default or checks:
        checks[name](*((args, args.workdir) if pass_workdir else (args,)))
    return conclude(done)


def conclude(message):
    """The exit status of a check: 1 with the number of failures, or 0 after printing `message`."""
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print(message)
    return 0
