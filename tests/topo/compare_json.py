#!/usr/bin/python3
"""compare_json.py EXPECTED.json COMMAND [ARGS...]: runs COMMAND and passes
only if it exits 0 and its stdout parses as JSON equal to EXPECTED."""
import json
import subprocess
import sys

expected = json.load(open(sys.argv[1]))
run = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=60)
if run.returncode != 0:
    sys.exit(f"exit code {run.returncode}: {run.stderr}")
actual = json.loads(run.stdout)
if actual != expected:
    print(json.dumps(actual, indent=1))
    sys.exit("output differs from " + sys.argv[1])
print("output matches", sys.argv[1])
