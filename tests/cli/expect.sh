#!/usr/bin/env bash
# Runs a command and checks its exit code and its output (stdout and stderr together).
#
#   expect.sh CODE REGEX [COUNT] -- command [args...]
#
#   CODE   the exit code the command must return
#   REGEX  an extended regular expression (grep -E) some output line must match
#   COUNT  if given: exactly this many output lines must match REGEX (e.g. 1: a message printed
#          once, by rank 0 only, although every rank knows it)
# Prints the command's output when a check fails; exits 0 if all checks pass, 1 otherwise.
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 CODE REGEX [COUNT] -- command [args...]" >&2
  exit 64
fi
code=$1
regex=$2
shift 2
count=""
if [ "$1" != "--" ]; then
  count=$1
  shift
fi
if [ "$1" != "--" ]; then
  echo "expect.sh: expected -- before the command" >&2
  exit 64
fi
shift

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?

fail=0
if [ "$rc" -ne "$code" ]; then
  echo "expect.sh: exit code $rc, expected $code" >&2
  fail=1
fi
matches=$(grep -cE -- "$regex" "$out")
if [ "$matches" -eq 0 ]; then
  echo "expect.sh: no output line matches: $regex" >&2
  fail=1
elif [ -n "$count" ] && [ "$matches" -ne "$count" ]; then
  echo "expect.sh: $matches output lines match, expected exactly $count: $regex" >&2
  fail=1
fi
if [ "$fail" -ne 0 ]; then
  echo "---- command: $*" >&2
  echo "---- output:" >&2
  cat "$out" >&2
  exit 1
fi
echo "expect.sh: exit code $rc and output as expected ($matches line(s) match: $regex)"
exit 0
