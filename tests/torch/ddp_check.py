#!/usr/bin/python3
"""DistributedDataParallel over rina, started by torchrun, against Gloo.

    ddp_check.py [--ranks 4] [--steps 20]

Runs python/examples/ddp_train.py under `python3 -m torch.distributed.run`
twice, with --backend rina and --backend gloo, each rank saving its loss at
every step and its final parameters. Passes when the rina run's parameters
are bitwise identical on every rank, rank 0's loss is within 1e-5 relative
of the Gloo run's at every step, and every parameter is within ATOL + RTOL
x |gloo| of the Gloo run's (the two sum the gradients in different orders,
so float32 rounding differs in the last bits of each step).
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
EXAMPLE = os.path.join(REPO, "python/examples/ddp_train.py")
RTOL = 1e-4
ATOL = 1e-6
LOSS_RTOL = 1e-5


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    out = tempfile.mkdtemp(prefix="rina-ddp-")
    try:
        flags = ["--steps", str(args.steps), "--timeout", "120"]
        rina = training_runs.run(EXAMPLE, "rina", args.ranks, flags, "--save-params", out)
        gloo = training_runs.run(EXAMPLE, "gloo", args.ranks, flags, "--save-params", out)
        failures = training_runs.same_on_every_rank(rina, "rina")
        bad, worst_loss = training_runs.losses_close(rina[0]["losses"], gloo[0]["losses"],
                                                     LOSS_RTOL, "rank 0")
        failures += bad
        worst = 0.0
        for i, (a, b) in enumerate(zip(rina[0]["params"], gloo[0]["params"])):
            excess = ((a - b).abs() - (ATOL + RTOL * b.abs())).max().item()
            rel = ((a - b).abs() / (b.abs() + ATOL)).max().item()
            worst = max(worst, rel)
            if excess > 0:
                failures.append(f"parameter {i}: rina and gloo differ beyond "
                                f"{ATOL} + {RTOL} x |gloo| (by {excess:.3g})")
        print(f"ddp_check: {len(rina[0]['params'])} parameter tensors, {args.steps} steps, "
              f"{args.ranks} ranks; largest |rina - gloo| / |gloo|: loss {worst_loss:.3g}, "
              f"parameters {worst:.3g}")
        for f in failures:
            print("FAIL", f)
        print("ddp_check:", "PASS" if not failures else "FAIL")
        return 1 if failures else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
