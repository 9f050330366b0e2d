#!/usr/bin/env python3
"""torch 2.x: all_reduce, reduce_scatter_tensor and all_gather_into_tensor over
rina and over Gloo, float32 and bfloat16, 4 ranks with CPU tensors.

    perf/torch/collectives_bench.py [--build DIR] [--python PY] [--ranks 4]
                                    [--sizes 4M,...,64M] [--rounds 7] [--calls ...]
                                    [--out FILE]

One torch job of --ranks processes (--python: the torch 2.x venv's
interpreter, default tools/deps.sh's) holds Gloo (the default group) and
rina (dist.new_group). For every call, dtype and size S (the bytes of the
tensor each rank reduces; all_gather_into_tensor's output and
reduce_scatter_tensor's input are S), it times blocks of rina and of Gloo
that take turns (which goes first alternates by round). A block is as many
back-to-back calls as move about 256 MiB (3 to 64), after a barrier and
two untimed calls; its time is the slowest rank's mean per call. Rows give
medians over rounds, algorithm bandwidth S / time and Gloo / rina (the median
of each round's ratio; target >= 2); bfloat16 all_reduce's elements per second against those of a float32
all_reduce of as many elements timed in the same rounds (target >= 1.6). Every result is checked once per size and dtype against torch's
own sum of every rank's input (small integers: exact in both dtypes).
Results (markdown, JSON) go to --out (perf/results/torch2-collectives.md).
"""

import datetime
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ranks import (driver_parser,  # noqa: E402
                   human, machine_note, parse_size, run_torch2_job, save_results, shown)

CALLS = ("all_reduce", "reduce_scatter_tensor", "all_gather_into_tensor")
DTYPES = ("float32", "bfloat16")
BACKENDS = ("rina", "gloo")


def worker(args):
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401  registers "rina"
    torch.set_num_threads(1)
    n, me = args.world, args.rank
    dist.init_process_group("gloo", init_method=f"file://{args.store}/store", rank=me,
                            world_size=n, timeout=datetime.timedelta(seconds=600))
    groups = {"gloo": None, "rina": dist.new_group(backend="rina")}
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    rows = []
    for call in args.calls.split(","):
        for dname in DTYPES:
            dtype = getattr(torch, dname)
            for size in sizes:
                elems = size // torch.tensor([], dtype=dtype).element_size()
                block = elems // n

                def value(r):  # every rank's input, small integers
                    return (torch.arange(elems) % 7 + r).to(dtype)
                mine = value(me)
                if call == "all_reduce":
                    buf = mine.clone()
                    want = sum(value(r).double() for r in range(n)).to(dtype)

                    def run(g, buf=buf):
                        dist.all_reduce(buf, group=g)

                    def reset(buf=buf, mine=mine):
                        buf.copy_(mine)
                    got = buf
                elif call == "reduce_scatter_tensor":
                    out = torch.empty(block, dtype=dtype)
                    want = sum(value(r).double() for r in range(n)).to(dtype)[
                        me * block:(me + 1) * block]

                    def run(g, out=out, mine=mine):
                        dist.reduce_scatter_tensor(out, mine, group=g)
                    reset = None
                    got = out
                else:
                    out = torch.empty(elems, dtype=dtype)
                    small = mine[:block].clone()
                    want = torch.cat([value(r)[:block] for r in range(n)])

                    def run(g, out=out, small=small):
                        dist.all_gather_into_tensor(out, small, group=g)
                    reset = None
                    got = out
                for b in BACKENDS:
                    if reset:
                        reset()
                    run(groups[b])
                    if not torch.equal(got, want):
                        raise SystemExit(f"rank {me}: {b} {call} {dname} {size} bytes is wrong")
                blocks = {b: (lambda b=b: run(groups[b])) for b in BACKENDS}
                if call == "all_reduce" and dname == "bfloat16":
                    # float32 of as many elements, in the same rounds: the
                    # elements per second of the two dtypes side by side.
                    same = torch.ones(elems)
                    blocks["rina_float32"] = lambda: dist.all_reduce(same, group=groups["rina"])
                iters = max(3, min(64, (256 << 20) // size))
                times = {b: [] for b in blocks}
                for r in range(args.rounds):
                    names = list(blocks)
                    for b in (names if r % 2 == 0 else names[::-1]):
                        dist.barrier(group=groups["rina"])
                        blocks[b]()
                        blocks[b]()
                        dist.barrier(group=groups["rina"])
                        t0 = time.perf_counter()
                        for _ in range(iters):
                            blocks[b]()
                        took = torch.tensor([(time.perf_counter() - t0) / iters])
                        dist.all_reduce(took, op=dist.ReduceOp.MAX, group=groups["rina"])
                        times[b].append(took.item() * 1e6)
                rows.append({"call": call, "dtype": dname, "size": size, "iters": iters,
                             "us": times})
                if me == 0:
                    print(f"{call} {dname} {human(size)}: " + ", ".join(
                        f"{b} {statistics.median(times[b]):.0f} us" for b in BACKENDS), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if me == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    return 0


def write_results(args, rows, command, started, version):
    def med(row, b):
        return statistics.median(row["us"][b])

    lines = [
        "# torch 2.x: rina against Gloo for all_reduce, reduce_scatter_tensor, "
        "all_gather_into_tensor",
        "",
        f"torch {version}, {args.ranks} ranks on one host, CPU tensors, SUM; S is the tensor each "
        "rank reduces (all_reduce), reduce-scatters (the input) or gathers into (the output). "
        f"{args.rounds} rounds of one block per backend, call, dtype and size (which goes first "
        "alternates by round); a call's time is a block's mean on the slowest rank; times are "
        "medians over rounds, Gloo / rina the median of each round's ratio. "
        f"Taken {started} ({machine_note()}; on a busy machine absolute times are noisy, the "
        "ratios come from blocks interleaved in one job: perf/torch/collectives_bench.py).",
        "",
        "| call | dtype | S | Gloo (us) | rina (us) | rina GB/s | Gloo / rina | target >= 2 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        g, q = med(row, "gloo"), med(row, "rina")
        # Each round's two blocks ran back to back: the ratio of a round is
        # the figure that the machine's load moves least.
        ratio = statistics.median(a / b for a, b in zip(row["us"]["gloo"], row["us"]["rina"]))
        row["median_us"] = {"gloo": g, "rina": q}
        row["gloo_over_rina"] = ratio
        lines.append(f"| {row['call']} | {row['dtype']} | {human(row['size'])} | {g:.0f} | "
                     f"{q:.0f} | {row['size'] / q / 1e3:.2f} | {ratio:.2f} | "
                     f"{'met' if ratio >= 2 else 'MISSED'} |")
    lines += ["", "## bfloat16 against float32 (rina all_reduce, elements per second)", "",
              "A block of float32 with as many elements ran in the same rounds as each "
              "bfloat16 row's blocks; the ratio is the median of each round's float32 time "
              "over bfloat16 time.", "",
              "| elements | bfloat16 S | bfloat16 (us) | float32 (us) | "
              "bfloat16 / float32 elements per second | target >= 1.6 |",
              "|---|---|---|---|---|---|"]
    for row in rows:
        if "rina_float32" not in row["us"]:
            continue
        h, f = med(row, "rina"), med(row, "rina_float32")
        ratio = statistics.median(a / b for a, b in zip(row["us"]["rina_float32"],
                                                        row["us"]["rina"]))
        row["bf16_over_f32_elements_per_s"] = ratio
        lines.append(f"| {row['size'] // 2:,} | {human(row['size'])} | {h:.0f} | {f:.0f} | "
                     f"{ratio:.2f} | {'met' if ratio >= 1.6 else 'MISSED'} |")
    lines += ["", "Per round (us, rina / Gloo):", ""]
    for row in rows:
        cells = ", ".join(f"{row['us']['rina'][r]:.0f} / {row['us']['gloo'][r]:.0f}"
                          for r in range(args.rounds))
        lines.append(f"- {row['call']} {row['dtype']} {human(row['size'])} ({row['iters']} calls "
                     f"per block): {cells}")
    lines += ["", "## Command", "", "```", shown(sys.argv),
              "# runs, per rank R:", command, "```", ""]
    save_results(args.out, "\n".join(lines), {"torch": version, "rows": rows})


def main():
    p = driver_parser(__doc__, "torch2-collectives.md", torch2=True)
    p.add_argument("--sizes", default="4M,8M,16M,32M,64M")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", default=",".join(CALLS), help="which of %(default)s")
    args = p.parse_args()
    if args.worker:
        return worker(args)
    result, command, started, version = run_torch2_job(__file__, args, ["--sizes", args.sizes, "--rounds", str(args.rounds), "--calls", args.calls])
    write_results(args, result, command, started, version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
