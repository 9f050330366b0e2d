#!/bin/sh
# compare_output.sh EXPECTED COMMAND [ARGS...]
# Runs COMMAND and passes only if it exits 0 and its stdout is EXPECTED,
# byte for byte (a diff is shown otherwise).
expected=$1
shift
actual=$("$@")
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "compare_output.sh: exit code $rc" >&2
  exit 1
fi
printf '%s\n' "$actual" | diff -u "$expected" - || exit 1
echo "output matches $expected"
