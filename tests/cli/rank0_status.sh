#!/usr/bin/env bash
# Runs an MPICH launch given -print-all-exitcodes, passes its output through, and exits with rank
# 0's own exit code instead of the launcher's.
#
#   rank0_status.sh mpiexec -print-all-exitcodes -n N command [args...]
#
# For a test of a code that one rank returns alone (5, the wait watchdog's): MPICH's mpiexec returns
# the bitwise OR of every rank's raw wait status, and the status of a rank it killed is 0 or the
# signal that killed it (SIGHUP seen in CI: 5 << 8 | 1 reads as "killed by signal 1", code 1).
# The line "[mpiexec@host] Exit codes: [host] 1280,0" lists the raw statuses, rank 0 first.
set -u
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
status=$(sed -nE 's/.*Exit codes: \[[^]]*\] ([0-9]+).*/\1/p' "$out" | head -n 1)
if [ -z "$status" ]; then
  echo "rank0_status.sh: no 'Exit codes' line (launch with -print-all-exitcodes); launcher's code $rc" >&2
  exit 99
fi
if (( status & 127 )); then  # killed by a signal: the shell's convention, 128 + the signal
  exit $(( 128 + (status & 127) ))
fi
exit $(( (status >> 8) & 255 ))
