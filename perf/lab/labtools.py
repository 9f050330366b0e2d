"""What the perf/lab drivers share: the repository root, their error type,
size arguments (16M), and rina-netlab on a named lab."""

import argparse
import os
import re
import shlex
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Failure(Exception):
    pass


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{text}'")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def netlab(name, *args, timeout, stderr=False):
    """rina-netlab --name NAME ARGS: its stdout (with stderr=True: stdout and
    stderr); Failure with the command and the output's end if it fails."""
    cmd = [os.path.join(REPO, "tools/rina-netlab"), "--name", name, *args]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        raise Failure(f"{' '.join(shlex.quote(c) for c in cmd)}: exit {run.returncode}\n"
                      f"{run.stdout[-3000:]}{run.stderr[-3000:]}")
    return (run.stdout, run.stderr) if stderr else run.stdout
