"""Runs a training example under torchrun and compares runs: shared by
ddp_check.py and fsdp2_check.py.

run(example, backend, n, args, out) starts `python -m torch.distributed.run
--nproc_per_node n example --backend B ... --save OUT/B` (the example's save
flag) and loads what each rank saved: {"losses": [...], "params": [...]}.
"""

import os
import subprocess
import sys

import ranks


def run(example, backend, n, args, save_flag, out, tag=None):
    tag = tag or backend
    # --redirects 1 --tee 1: torch 1.13's default "0" fails under Python 3.11
    # (its Std.from_str finds no IntFlag member 0), so bookworm's torchrun
    # needs them whatever the backend; torch 2.x takes them too.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1",
           "--nproc_per_node", str(n),
           "--master_addr", "127.0.0.1", "--master_port", str(ranks.free_port()),
           example, "--backend", backend, *args, save_flag, os.path.join(out, tag)]
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"{os.path.basename(example)}: {tag} run failed with exit "
                         f"{done.returncode}")
    import torch
    return [torch.load(os.path.join(out, f"{tag}.{r}.pt")) for r in range(n)]


def same_on_every_rank(runs, what):
    """Failures: parameters that differ (bitwise) between rank 0 and another."""
    import torch
    failures = []
    for r in range(1, len(runs)):
        for i, (a, b) in enumerate(zip(runs[0]["params"], runs[r]["params"])):
            if not torch.equal(a, b):
                failures.append(f"{what} parameter {i} differs between rank 0 and rank {r}")
    return failures


def losses_close(a, b, rtol, what):
    """Failures: steps whose losses differ by more than rtol relative; and the
    largest relative difference."""
    failures, worst = [], 0.0
    for step, (x, y) in enumerate(zip(a, b)):
        rel = abs(x - y) / max(abs(y), 1e-12)
        worst = max(worst, rel)
        if rel > rtol:
            failures.append(f"{what}: step {step}: loss {x:.9g} against {y:.9g} "
                            f"({rel:.3g} relative, more than {rtol})")
    return failures, worst
