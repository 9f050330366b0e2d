#!/usr/bin/python3
"""A rank killed in the middle of DDP training: the others raise, no hang.

    killed_rank_check.py [--ranks 4] [--victim 2] [--timeout 20]

Every rank trains with DistributedDataParallel over rina, process group
timeout --timeout seconds; the victim kills itself with SIGKILL at step 5,
before its backward pass. Passes when the victim died of SIGKILL and every
other rank got a RuntimeError from rina (naming a rank) within the timeout
of its last completed step, then left cleanly.
"""

import datetime
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

KILL_AT_STEP = 5
MAX_STEPS = 200


def launch(args):
    import ranks
    result = ranks.spawn(os.path.abspath(__file__), args.ranks,
                         ["--victim", str(args.victim), "--timeout", str(args.timeout)],
                         timeout=args.timeout * 3 + 60)
    expected = {r: 0 for r in range(args.ranks)}
    expected[args.victim] = -signal.SIGKILL
    ok = ranks.report(result, expected)
    print("killed_rank_check:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel
    import rina_torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group("rina", init_method=f"file://{args.store}/store", rank=args.rank,
                            world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 1024), nn.ReLU(),
                                                  nn.Linear(1024, 256)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    last_ok = time.monotonic()
    for step in range(MAX_STEPS):
        x = torch.randn(16, 256)
        loss = model(x).square().mean()
        if args.rank == args.victim and step == KILL_AT_STEP:
            print(f"rank {args.rank}: killing itself at step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            loss.backward()
            opt.step()
            opt.zero_grad()
        except RuntimeError as e:
            took = time.monotonic() - last_ok
            print(f"rank {args.rank}: step {step}: RuntimeError after {took:.2f} s: {e}",
                  flush=True)
            if "rina" not in str(e) or "rank" not in str(e):
                print(f"rank {args.rank}: FAIL: the error does not come from rina or names no rank")
                return 2
            if took > args.timeout + 5:
                print(f"rank {args.rank}: FAIL: took longer than the timeout ({args.timeout} s)")
                return 3
            dist.destroy_process_group()
            return 0
        last_ok = time.monotonic()
    print(f"rank {args.rank}: FAIL: {MAX_STEPS} steps without an error")
    return 4


def add_arguments(p):
    p.add_argument("--victim", type=int, default=2)
    p.add_argument("--timeout", type=int, default=20)


if __name__ == "__main__":
    import ranks
    sys.exit(ranks.main(launch, worker, default_ranks=4, add_arguments=add_arguments))
