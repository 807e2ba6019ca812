#!/usr/bin/env bash
# The wait watchdog's test (include/desync/core/waiting.hpp): a command in which rank 0 waits for a
# rank that never comes must end, print the watchdog's message once, and rank 0 must exit with
# desync's code 5 (exit_wait_limit).
#
#   wait_limit_fires.sh FLAVOUR REGEX -- launcher args... desync args...
#
# FLAVOUR is desync's MPI flavour (openmpi, mpich). What the launcher returns when one rank exits on its own differs:
# Open MPI's mpirun returns that rank's code. MPICH's mpiexec returns the bitwise OR of every rank's
# raw wait status, and the status of the rank it kills is 0 or that of the signal that killed it
# (SIGHUP was seen in CI: 5 << 8 | 1 reads as "killed by signal 1", exit code 1). So under MPICH the
# command must be launched with -print-all-exitcodes, and rank 0's raw status must be 5 << 8 = 1280.
set -u
if [ $# -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: $0 FLAVOUR REGEX -- command [args...]" >&2
  exit 64
fi
flavour=$1
regex=$2
shift 3

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?

fail=0
matches=$(grep -cE -- "$regex" "$out")
if [ "$matches" -ne 1 ]; then
  echo "wait_limit_fires.sh: $matches output lines match, expected exactly 1: $regex" >&2
  fail=1
fi
if [ "$rc" -eq 0 ]; then
  echo "wait_limit_fires.sh: exit code 0, expected the job to fail" >&2
  fail=1
fi
case "$flavour" in
  mpich)
    # "[mpiexec@host] Exit codes: [host] 1280,0": the raw wait statuses, rank 0 first.
    first=$(sed -nE 's/.*Exit codes: \[[^]]*\] ([0-9]+).*/\1/p' "$out" | head -n 1)
    if [ "$first" != "1280" ]; then
      echo "wait_limit_fires.sh: rank 0's raw exit status '${first}', expected 1280 (exit code 5)" >&2
      fail=1
    fi ;;
  *)
    if [ "$rc" -ne 5 ]; then
      echo "wait_limit_fires.sh: exit code $rc, expected 5" >&2
      fail=1
    fi ;;
esac
if [ "$fail" -ne 0 ]; then
  echo "---- command: $*" >&2
  echo "---- output:" >&2
  cat "$out" >&2
  exit 1
fi
echo "wait_limit_fires.sh: rank 0 exited with code 5 (launcher: $rc), one message: $regex"
exit 0
