#!/bin/sh
# expect_output.sh RC REGEX COMMAND [ARGS...]
# Runs COMMAND, shows its output, and passes only if it exits with RC and a
# line of its output (stdout and stderr) matches the extended REGEX. Both
# matter: mpirun, for one, can refuse to run and still exit 0.
expected_rc=$1
regex=$2
shift 2
output=$("$@" 2>&1)
rc=$?
printf '%s\n' "$output"
if [ "$rc" -ne "$expected_rc" ]; then
  echo "expect_output.sh: exit code $rc, expected $expected_rc" >&2
  exit 1
fi
if ! printf '%s\n' "$output" | grep -Eq -- "$regex"; then
  echo "expect_output.sh: no line matches: $regex" >&2
  exit 1
fi
exit 0
