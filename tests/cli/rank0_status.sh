#!/usr/bin/env bash
# Runs an MPICH launch and exits with rank 0's own exit code instead of the launcher's.
#
#   rank0_status.sh mpiexec -n N [launcher options] -- command [args...]
#
# For a test of a code that one rank returns alone (5, the wait watchdog's) while the launcher kills
# the others: MPICH's mpiexec returns the bitwise OR of every rank's raw wait status, and its
# per-rank report (-print-all-exitcodes) is not reliable either: in about one launch in twenty it
# gives rank 0's status as 1 ("Hangup (signal 1)") although rank 0 exited with 5 (seen with SIGHUP
# ignored from the start, so no signal ended it). So rank 0 runs under a shell that writes the
# command's exit code to a file before it exits itself: the launcher cannot see rank 0 end (its
# output stays open in that shell) before the code is written. The other ranks are exec'd as they
# are (the launcher kills them, and nothing of theirs is left behind).
set -u
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  launcher+=("$1")
  shift
done
if [ $# -eq 0 ]; then
  echo "rank0_status.sh: no '--' between the launcher and the command" >&2
  exit 99
fi
shift
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
# shellcheck disable=SC2016  # expanded by the rank's shell
"${launcher[@]}" bash -c 'if [ "${PMI_RANK:-}" = 0 ]; then "$@"; code=$?; echo "$code" > "'"$folder"'/rank0"; exit "$code"; else exec "$@"; fi' rank "$@"
rc=$?
if [ ! -s "$folder/rank0" ]; then
  echo "rank0_status.sh: rank 0 wrote no exit code (PMI_RANK unset, or rank 0 killed); launcher's code $rc" >&2
  exit 99
fi
exit "$(cat "$folder/rank0")"
