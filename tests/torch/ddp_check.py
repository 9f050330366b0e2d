#!/usr/bin/python3
"""DistributedDataParallel over rina, started by torchrun, against Gloo.

    ddp_check.py [--ranks 4] [--steps 20]

Runs python/examples/ddp_train.py under `python3 -m torch.distributed.run`
twice, with --backend rina and --backend gloo, each rank saving its final
parameters. Passes when the rina run's parameters are bitwise identical on
every rank and every parameter is within ATOL + RTOL x |gloo| of the Gloo
run's (the two sum the gradients in different orders, so float32 rounding
differs in the last bits of each step).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ranks  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(REPO, "python/examples/ddp_train.py")
RTOL = 1e-4
ATOL = 1e-6


def train(backend, n, steps, out):
    # --redirects 1 --tee 1: torch 1.13's default "0" fails under Python 3.11
    # (its Std.from_str finds no IntFlag member 0), so bookworm's torchrun
    # needs them whatever the backend.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1",
           "--nproc_per_node", str(n),
           "--master_addr", "127.0.0.1", "--master_port", str(ranks.free_port()),
           EXAMPLE, "--backend", backend, "--steps", str(steps), "--timeout", "120",
           "--save-params", os.path.join(out, backend)]
    print("+", " ".join(cmd), flush=True)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(run.stdout[-3000:], run.stderr[-3000:], sep="\n", flush=True)
    if run.returncode != 0:
        raise SystemExit(f"ddp_check: {backend} run failed with exit {run.returncode}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    import torch
    out = tempfile.mkdtemp(prefix="rina-ddp-")
    try:
        train("rina", args.ranks, args.steps, out)
        train("gloo", args.ranks, args.steps, out)
        load = lambda b, r: torch.load(os.path.join(out, f"{b}.{r}.pt"))  # noqa: E731
        rina = [load("rina", r) for r in range(args.ranks)]
        gloo = load("gloo", 0)
        failures = []
        for r in range(1, args.ranks):
            for i, (a, b) in enumerate(zip(rina[0], rina[r])):
                if not torch.equal(a, b):
                    failures.append(f"rina parameter {i} differs between rank 0 and rank {r}")
        worst = 0.0
        for i, (a, b) in enumerate(zip(rina[0], gloo)):
            excess = ((a - b).abs() - (ATOL + RTOL * b.abs())).max().item()
            rel = ((a - b).abs() / (b.abs() + ATOL)).max().item()
            worst = max(worst, rel)
            if excess > 0:
                failures.append(f"parameter {i}: rina and gloo differ beyond "
                                f"{ATOL} + {RTOL} x |gloo| (by {excess:.3g})")
        print(f"ddp_check: {len(rina[0])} parameter tensors, {args.steps} steps, {args.ranks} "
              f"ranks; largest |rina - gloo| / |gloo| = {worst:.3g}")
        for f in failures:
            print("FAIL", f)
        print("ddp_check:", "PASS" if not failures else "FAIL")
        return 1 if failures else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
