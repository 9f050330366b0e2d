#!/usr/bin/env python3
"""CUDA tensors through torch.distributed on backend "rina" (librina stages
them through pinned host memory), against the same calls on CPU tensors
computed with torch.

    cuda_check.py --ranks N

Skips (exit 77, saying why) where torch sees no CUDA device. Every rank
uses device rank % device_count. Cases: all_reduce (float32, bfloat16; SUM,
AVG, PREMUL_SUM), reduce_scatter_tensor and all_gather_into_tensor,
broadcast, all_to_all_single, send / recv, a coalesced batch, and an
all_reduce issued on a side stream right after a kernel that writes its
input (the call must see the kernel's result).
"""

import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def launch(args):
    n = args.ranks
    import torch
    if not torch.cuda.is_available():
        print(f"cuda_check: skipped: no CUDA device (torch {torch.__version__}: "
              "torch.cuda.is_available() is False)")
        return 77
    import ranks
    result = ranks.spawn(os.path.abspath(__file__), n, timeout=300)
    ok = ranks.report(result)
    print(f"cuda_check: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def worker(args):
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401
    dev = torch.device("cuda", args.rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("rina", init_method=f"file://{args.store}/store", rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=120))
    me, n = args.rank, args.world
    failures, passed = [], 0

    def inputs(case, shape, dtype):
        return [torch.randint(-8, 9, shape, generator=torch.Generator().manual_seed(case * 101 + r))
                .to(dtype) for r in range(n)]

    def expect(what, got, want):
        nonlocal passed
        got = got.cpu()
        if got.dtype == want.dtype and torch.equal(got, want):
            passed += 1
        else:
            failures.append(f"{what}: got {got.flatten()[:6].tolist()}, expected "
                            f"{want.flatten()[:6].tolist()}")

    case = 0
    for dtype in (torch.float32, torch.bfloat16):
        for op in ("SUM", "AVG", "PREMUL_SUM"):
            case += 1
            vals = inputs(case, (1 << 16,), dtype)
            t = vals[me].to(dev)
            rop = dist._make_nccl_premul_sum(0.5) if op == "PREMUL_SUM" else getattr(
                dist.ReduceOp, op)
            dist.all_reduce(t, op=rop)
            total = torch.stack(vals).double().sum(0)
            want = {"SUM": total, "AVG": total / n, "PREMUL_SUM": total * 0.5}[op].to(dtype)
            expect(f"all_reduce {dtype} {op}", t, want)
        case += 1
        vals = inputs(case, (n * 1000,), dtype)
        out = torch.empty(1000, dtype=dtype, device=dev)
        dist.reduce_scatter_tensor(out, vals[me].to(dev))
        expect(f"reduce_scatter_tensor {dtype}", out,
               torch.stack(vals).double().sum(0).to(dtype)[me * 1000:(me + 1) * 1000])
        case += 1
        vals = inputs(case, (1000,), dtype)
        out = torch.empty(n * 1000, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(out, vals[me].to(dev))
        expect(f"all_gather_into_tensor {dtype}", out, torch.cat(vals))
    case += 1
    vals = inputs(case, (777,), torch.float32)
    t = vals[me].to(dev)
    dist.broadcast(t, src=n - 1)
    expect("broadcast", t, vals[n - 1])
    case += 1
    vals = inputs(case, (n * 4, 3), torch.float32)
    out = torch.empty(n * 4, 3, device=dev)
    dist.all_to_all_single(out, vals[me].to(dev))
    expect("all_to_all_single", out, torch.cat([vals[s][me * 4:(me + 1) * 4] for s in range(n)]))
    if n > 1:
        case += 1
        vals = inputs(case, (5000,), torch.float32)
        got = torch.empty(5000, device=dev)
        ops = [dist.P2POp(dist.isend, vals[me].to(dev), (me + 1) % n),
               dist.P2POp(dist.irecv, got, (me - 1) % n)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        expect("batch_isend_irecv ring", got, vals[(me - 1) % n])
    # A side stream: a kernel writes the input, the call must see it.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.zeros(1 << 20, device=dev)
        t.add_(me + 1)
        dist.all_reduce(t)
    side.synchronize()
    expect("all_reduce after a kernel on a side stream", t,
           torch.full((1 << 20,), float(n * (n + 1) // 2)))
    dist.destroy_process_group()
    for f in failures:
        print(f"rank {me}: FAIL {f}")
    print(f"rank {me}: {passed} checks passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    import ranks
    sys.exit(ranks.main(launch, worker, default_ranks=2))
