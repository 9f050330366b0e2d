#!/usr/bin/env python3
"""FSDP2 (fully_shard) over rina, started by torchrun, against Gloo (torch 2.x).

    fsdp2_check.py [--ranks 4] [--steps 8]

Runs python/examples/fsdp2_train.py (a small transformer, bf16 parameters)
with --backend rina and --backend gloo, for reduce_dtype float32 and for
reduce_dtype bfloat16, each rank saving the mean loss of every step and the
full parameters gathered from the shards. Passes when each rina run's
parameters are bitwise identical on every rank and its loss at every step is
within LOSS_RTOL[reduce_dtype] relative of the Gloo run's: 1e-5 for float32,
1e-3 for bfloat16 (gradients reduced in bf16 carry 8 significant bits; rina
and Gloo add them in different orders, Gloo sums and FSDP2 divides after,
rina averages).
"""

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import training_runs  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(REPO, "python/examples/fsdp2_train.py")
LOSS_RTOL = {"float32": 1e-5, "bfloat16": 1e-3}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    out = tempfile.mkdtemp(prefix="rina-fsdp2-")
    failures = []
    try:
        for reduce_dtype in ("float32", "bfloat16"):
            # A short batch: the check is of the collectives, and bf16
            # matmuls on a CPU are slow.
            flags = ["--steps", str(args.steps), "--timeout", "120", "--batch", "2",
                     "--seq", "16", "--reduce-dtype", reduce_dtype]
            runs = {b: training_runs.run(EXAMPLE, b, args.ranks, flags, "--save", out,
                                         tag=f"{b}-{reduce_dtype}") for b in ("rina", "gloo")}
            failures += training_runs.same_on_every_rank(runs["rina"], f"rina {reduce_dtype}")
            bad, worst = training_runs.losses_close(runs["rina"][0]["losses"],
                                                    runs["gloo"][0]["losses"],
                                                    LOSS_RTOL[reduce_dtype], reduce_dtype)
            failures += bad
            print(f"fsdp2_check: reduce_dtype {reduce_dtype}: {args.steps} steps, {args.ranks} "
                  f"ranks; final loss rina {runs['rina'][0]['losses'][-1]:.7f}, gloo "
                  f"{runs['gloo'][0]['losses'][-1]:.7f}; largest relative difference {worst:.3g} "
                  f"(limit {LOSS_RTOL[reduce_dtype]})", flush=True)
        for f in failures:
            print("FAIL", f)
        print("fsdp2_check:", "PASS" if not failures else "FAIL")
        return 1 if failures else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
