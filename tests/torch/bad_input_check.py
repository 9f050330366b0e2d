#!/usr/bin/python3
"""Bad input and failures through torch.distributed on backend "rina": every
one must raise a Python exception naming the call or the argument, on every
rank, promptly; never a hang or a wrong result.

    bad_input_check.py --ranks N

Cases, each on a group of its own (a failed call leaves its communicator
failed): a tensor on a device the backend was not registered for (meta);
sizes that differ across ranks in all_reduce, broadcast,
all_gather_into_tensor and reduce_scatter_tensor; a call that passes its
own timeout (the group's is longer); abort() while a call waits for peers
that never come, which must return at once and fail the call. Exits 0 when
every rank passed.
"""

import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

GROUP_TIMEOUT = 30  # seconds: a mismatch must fail well before it


def launch(args):
    n = args.ranks
    import ranks
    result = ranks.spawn(os.path.abspath(__file__), n, timeout=300)
    ok = ranks.report(result)
    print(f"bad_input_check: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def backend_of(group):
    """rina's object behind a group: the group itself on torch 1.13, its CPU
    backend on torch 2.x."""
    import torch
    return group._get_backend(torch.device("cpu")) if hasattr(group, "_get_backend") else group


def worker(args):
    import torch
    import torch.distributed as dist
    import rina_torch
    torch.set_num_threads(1)
    dist.init_process_group("rina", init_method=f"file://{args.store}/store", rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=120))
    me, n = args.rank, args.world
    failures, passed = [], 0

    def expect_raise(what, needles, call, limit=GROUP_TIMEOUT + 10):
        nonlocal passed
        start = time.monotonic()
        try:
            call()
        except Exception as e:  # noqa: BLE001 -- any Python exception, checked below
            took = time.monotonic() - start
            text = str(e)
            missing = [x for x in needles if x.lower() not in text.lower()]
            if missing:
                failures.append(f"{what}: {type(e).__name__} without {missing}: {text[:300]}")
            elif took > limit:
                failures.append(f"{what}: raised after {took:.1f} s (limit {limit} s)")
            else:
                passed += 1
                print(f"rank {me}: {what}: {type(e).__name__} after {took:.2f} s: {text[:200]}",
                      flush=True)
            return
        failures.append(f"{what}: no exception")

    # A device the backend was not registered for (meta). torch 2.x's
    # dispatcher runs c10d's meta kernels for meta tensors (shapes only, no
    # data: nothing reaches a backend), so the backend's own check is
    # called directly there.
    # (torch 1.13's dispatcher refuses meta tensors itself, naming the op.)
    from torch._C._distributed_c10d import AllgatherOptions, AllreduceOptions
    world = dist.distributed_c10d._get_default_group()
    torch2 = rina_torch._C.torch_backend_api == "Backend"
    expect_raise("allreduce of a meta tensor", ["tensors[0]", "meta"] if torch2 else ["meta"],
                 lambda: backend_of(world).allreduce([torch.ones(3, device="meta")],
                                                     AllreduceOptions()).wait(), limit=5)
    expect_raise("all_gather_into_tensor into a meta tensor",
                 ["output_tensor", "meta"] if torch2 else ["meta"],
                 lambda: backend_of(world)._allgather_base(
                     torch.empty(3 * n, device="meta"), torch.ones(3),
                     AllgatherOptions()).wait(), limit=5)

    # Sizes that differ across ranks: each call on a group of its own.
    def mismatch(what, call):
        g = dist.new_group(backend="rina", timeout=datetime.timedelta(seconds=GROUP_TIMEOUT))
        expect_raise(what, ["rina_torch", f"rank {me}"], lambda: call(g))
        dist.barrier()
        dist.destroy_process_group(g)

    k = 1000 + 8 * me  # elements, different on every rank
    mismatch("all_reduce of sizes that differ across ranks",
             lambda g: dist.all_reduce(torch.ones(k), group=g))
    # The root of a broadcast sends and returns; the ranks it sends to raise.
    if me == 0:
        g = dist.new_group(backend="rina", timeout=datetime.timedelta(seconds=GROUP_TIMEOUT))
        t = torch.ones(k)
        try:
            dist.broadcast(t, src=0, group=g)
            passed += torch.equal(t, torch.ones(k))
        except RuntimeError as e:
            passed += "rina_torch" in str(e)
        dist.barrier()
        dist.destroy_process_group(g)
    else:
        mismatch("broadcast of sizes that differ across ranks",
                 lambda g: dist.broadcast(torch.ones(k), src=0, group=g))
    mismatch("all_gather_into_tensor of sizes that differ across ranks",
             lambda g: dist.all_gather_into_tensor(torch.empty(n * k), torch.ones(k), group=g))
    mismatch("reduce_scatter_tensor of sizes that differ across ranks",
             lambda g: dist.reduce_scatter_tensor(torch.empty(k), torch.ones(n * k), group=g))

    # A call's own timeout: rank 0 calls alone with a 2 s timeout on a group
    # whose timeout is 60 s.
    g = dist.new_group(backend="rina", timeout=datetime.timedelta(seconds=60))
    if me == 0 and n > 1:
        opts = AllreduceOptions()
        opts.timeout = datetime.timedelta(seconds=2)

        def alone():
            backend_of(g).allreduce([torch.ones(8)], opts).wait()
        expect_raise("all_reduce past its own timeout", ["timed out", "2000 ms", "rank 0"], alone,
                     limit=15)
        if backend_of(g).errored():
            passed += 1
        else:
            failures.append("errored() is False after a call timed out")
    dist.barrier()
    dist.destroy_process_group(g)

    # abort() never blocks: rank 0's call waits for peers that never come.
    g = dist.new_group(backend="rina", timeout=datetime.timedelta(seconds=60))
    if me == 0 and n > 1:
        work = dist.all_reduce(torch.ones(1 << 12), group=g, async_op=True)
        work.get_future()  # the group's thread runs it: it waits for the others
        start = time.monotonic()
        backend_of(g).abort()
        took = time.monotonic() - start
        if took > 1.0:
            failures.append(f"abort() took {took:.2f} s")
        else:
            passed += 1
        expect_raise("the call in progress when abort() came", ["abort"], work.wait, limit=10)
        if not backend_of(g).errored():
            failures.append("errored() is False after abort()")
    dist.barrier()
    dist.destroy_process_group(g)

    dist.destroy_process_group()
    for f in failures:
        print(f"rank {me}: FAIL {f}")
    print(f"rank {me}: {passed} checks passed, {len(failures)} failed "
          f"(torch {torch.__version__}, {rina_torch._C.torch_backend_api})")
    return 1 if failures else 0


if __name__ == "__main__":
    import ranks
    sys.exit(ranks.main(launch, worker, default_ranks=3))
