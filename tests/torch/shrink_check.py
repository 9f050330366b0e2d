#!/usr/bin/python3
"""torch.distributed.shrink_group on rina (torch 2.x; skipped, 77, before 2.10).

    shrink_check.py [--ranks 4] [--timeout 20]

Every rank joins the default group ("rina"). First the bad inputs, on every
rank, before any shrink: torch's own checks (empty list, out of range, this
rank) and the backend's, called straight (this rank, every rank, out of
range, a rank twice, an empty list, unknown flags), each must raise naming
what is wrong. Then the last rank is excluded while alive (it destroys its
group and leaves) and the others shrink the default group away from it;
then rank 1 kills itself (SIGKILL), the survivors' next allreduce raises,
and they shrink again with SHRINK_ABORT. After each shrink the group's
size and ranks are checked, and allreduce (sum, max), broadcast,
all_gather and reduce_scatter are compared exactly with the same
reductions done serially with torch's own ops on every member's input.
"""

import datetime
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def launch(args):
    import ranks
    import torch
    import torch.distributed as dist
    if not hasattr(dist, "shrink_group"):
        print(f"shrink_check: SKIP: torch {torch.__version__} has no shrink_group")
        return 77
    result = ranks.spawn(os.path.abspath(__file__), args.ranks, ["--timeout", str(args.timeout)],
                         timeout=args.timeout * 3 + 60)
    expected = {r: 0 for r in range(args.ranks)}
    expected[1] = -signal.SIGKILL
    ok = ranks.report(result, expected)
    print("shrink_check:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def input_of(rank, dtype):
    import torch
    return (torch.arange(3000, dtype=torch.int64) * (rank + 3) % 1001 - 500 + rank).to(dtype)


def check_calls(members, me, what):
    """The group's calls against serial references of members' inputs
    (members: the original ranks of the group, in its order)."""
    import torch
    import torch.distributed as dist
    n = len(members)
    if dist.get_world_size() != n or dist.get_rank() != members.index(me):
        sys.exit(f"rank {me}: {what}: size {dist.get_world_size()} rank {dist.get_rank()}, "
                 f"expected {n} and {members.index(me)}")
    for dtype in (torch.int32, torch.float32):
        inputs = [input_of(r, dtype) for r in members]
        for op, reference in ((dist.ReduceOp.SUM, torch.stack(inputs).sum(0)),
                              (dist.ReduceOp.MAX, torch.stack(inputs).max(0).values)):
            t = input_of(me, dtype)
            dist.all_reduce(t, op=op)
            if not torch.equal(t, reference.to(dtype)):
                bad = int((t != reference).nonzero()[0])
                sys.exit(f"rank {me}: {what}: {dtype} allreduce {op} wrong at {bad}: "
                         f"{t[bad].item()} != {reference[bad].item()}")
        t = input_of(me, dtype)
        dist.broadcast(t, src=n - 1)
        if not torch.equal(t, inputs[n - 1]):
            sys.exit(f"rank {me}: {what}: {dtype} broadcast from {n - 1} differs")
        gathered = [torch.empty(3000, dtype=dtype) for _ in range(n)]
        dist.all_gather(gathered, input_of(me, dtype))
        for i in range(n):
            if not torch.equal(gathered[i], inputs[i]):
                sys.exit(f"rank {me}: {what}: {dtype} all_gather block {i} differs")
        chunk = 3000 // n
        out = torch.empty(chunk, dtype=dtype)
        dist.reduce_scatter(out, [x[i * chunk:(i + 1) * chunk] for i, x in
                                  enumerate([input_of(me, dtype)] * n)])
        i = members.index(me)
        want = torch.stack([x[i * chunk:(i + 1) * chunk] for x in inputs]).sum(0)
        if not torch.equal(out, want):
            sys.exit(f"rank {me}: {what}: {dtype} reduce_scatter differs")


def expect_raise(what, fn, words):
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        message = str(e)
        if not all(w in message for w in words):
            sys.exit(f"{what}: raised without naming {words}: {message}")
        return
    sys.exit(f"{what}: did not raise")


def worker(args):
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group("rina", init_method=f"file://{args.store}/store", rank=args.rank,
                            world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    me, n = args.rank, args.world
    everyone = list(range(n))
    check_calls(everyone, me, "the full group")

    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    if not backend.supports_shrinking:
        sys.exit(f"rank {me}: supports_shrinking is False")
    tag = f"rank {me}: bad input"
    expect_raise(f"{tag}: shrink_group([])", lambda: dist.shrink_group([]), ["empty"])
    expect_raise(f"{tag}: shrink_group([{n}])", lambda: dist.shrink_group([n]), [str(n), "range"])
    expect_raise(f"{tag}: shrink_group([self])", lambda: dist.shrink_group([me]), [str(me)])
    expect_raise(f"{tag}: shrink(self)", lambda: backend.shrink([me], 0, None),
                 [f"rank {me}", "excludes itself"])
    expect_raise(f"{tag}: shrink_group(everyone)", lambda: dist.shrink_group(everyone),
                 ["all"])
    expect_raise(f"{tag}: shrink(everyone)", lambda: backend.shrink(everyone, 0, None),
                 [f"all {n} ranks"])
    expect_raise(f"{tag}: shrink([-1])", lambda: backend.shrink([-1], 0, None),
                 ["rank -1", f"outside [0, {n})"])
    expect_raise(f"{tag}: shrink([{n}])", lambda: backend.shrink([n], 0, None),
                 [f"rank {n}", f"outside [0, {n})"])
    other = (me + 1) % n
    expect_raise(f"{tag}: shrink twice", lambda: backend.shrink([other, other], 0, None),
                 [f"rank {other}", "twice"])
    expect_raise(f"{tag}: shrink([])", lambda: backend.shrink([], 0, None), ["no rank"])
    expect_raise(f"{tag}: shrink flags", lambda: backend.shrink([other], 7, None),
                 ["flags 7"])
    # The group is untouched by all of that.
    check_calls(everyone, me, "the full group after the bad inputs")

    # The last rank is excluded while alive: it does not shrink.
    if me == n - 1:
        dist.destroy_process_group()
        print(f"rank {me}: excluded, left", flush=True)
        return 0
    dist.shrink_group([n - 1])
    survivors = everyone[:-1]
    check_calls(survivors, me, "the group without the last rank")

    # Rank 1 dies; the others see it and shrink with SHRINK_ABORT.
    victim = 1
    if me == victim:
        print(f"rank {me}: killing itself", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    t = torch.ones(1 << 16)
    try:
        dist.all_reduce(t)
        sys.exit(f"rank {me}: an allreduce with rank {victim} dead succeeded")
    except RuntimeError as e:
        print(f"rank {me}: raised: {str(e).splitlines()[0]}", flush=True)
    from torch.distributed.distributed_c10d import SHRINK_ABORT
    dist.shrink_group([survivors.index(victim)], shrink_flags=SHRINK_ABORT)
    last = [r for r in survivors if r != victim]
    check_calls(last, me, "the group without rank 1")
    check_calls(last, me, "the group without rank 1, again")
    dist.destroy_process_group()
    print(f"rank {me}: ok", flush=True)
    return 0


def add_arguments(p):
    p.add_argument("--timeout", type=int, default=20)


if __name__ == "__main__":
    import ranks
    sys.exit(ranks.main(launch, worker, 4, add_arguments))
