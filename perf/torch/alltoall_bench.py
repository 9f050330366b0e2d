#!/usr/bin/python3
"""dist.all_to_all_single over rina and over Gloo, against a bare exchange.

    perf/torch/alltoall_bench.py [--build DIR] [--ranks 4] [--sizes 64K,...,64M]
                                 [--rounds 5] [--out FILE]

One torch job of --ranks processes on this host holds Gloo (the default
group), rina (dist.new_group) and rina's C API on a communicator of its own
(ctypes). For every size S (bytes of float32 each rank sends, S / n to each
rank) it times, in blocks that take turns (the order rotates by round):
  rina   dist.all_to_all_single on the rina group;
  gloo   the same on Gloo;
  capi   rinaAllToAll through ctypes (the torch layer's cost, by difference);
  copy   the bare exchange: every rank's input lives in one shared-memory
         file mapped by all (torch.from_file(shared=True)), and a call is a
         barrier (rinaAllReduce of one element through the C API) and then n
         copies of the blocks addressed to this rank straight out of the
         others' inputs: each block copied once, nothing else.
A block is as many back-to-back calls as move about 256 MiB (3 to 200),
after a barrier and two untimed calls; its time is the slowest rank's mean
per call. Rows give medians over rounds, throughput S / time, and Gloo /
rina and rina / copy (targets: >= 2 and <= 1.5). Every backend's result is
checked once per size. Results (markdown, JSON) go to --out
(perf/results/torch-alltoall.md).
"""

import datetime
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ranks import (shown, PYTHON, CApi, driver_parser, save_results, env_with_package,  # noqa: E402
                   human, machine_note, parse_size, run_ranks)

DEFAULT_SIZES = "64K,256K,1M,4M,16M,64M"
BACKENDS = ("rina", "gloo", "capi", "copy")


def worker(args):
    import ctypes
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401  registers "rina"
    torch.set_num_threads(1)
    n, me = args.world, args.rank
    dist.init_process_group("gloo", init_method=f"file://{args.store}/store", rank=me,
                            world_size=n, timeout=datetime.timedelta(seconds=600))
    rina = dist.new_group(backend="rina")
    capi = CApi(args.build, me, n, torch, dist)
    capi.lib.rinaAllToAll.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_int, ctypes.c_void_p]
    one = torch.ones(1)

    def barrier():
        capi.all_reduce(one)

    sizes = [parse_size(s) for s in args.sizes.split(",")]
    shared_path = os.path.join(args.store, "inputs")
    rows = []
    for size in sizes:
        elems = size // 4
        block = elems // n
        # Every rank's input at its place in the shared file (the copy
        # exchange reads it there; the others send the same tensor).
        def mapped():
            return torch.from_file(shared_path + str(size), shared=True, size=n * elems,
                                   dtype=torch.float32)
        allin = mapped() if me == 0 else None  # rank 0 makes the file
        barrier()
        if me != 0:
            allin = mapped()
        inp = allin[me * elems:(me + 1) * elems]
        inp.copy_(torch.arange(elems, dtype=torch.float32) + me * 1000003.0)
        out = torch.empty(elems)

        def call_rina():
            dist.all_to_all_single(out, inp, group=rina)

        def call_gloo():
            dist.all_to_all_single(out, inp)

        def call_capi():
            capi.check(capi.lib.rinaAllToAll(inp.data_ptr(), out.data_ptr(), block, 8, capi.comm),
                       capi.comm)

        def call_copy():
            barrier()
            for k in range(n):
                p = (me + k) % n
                out[p * block:(p + 1) * block].copy_(
                    allin[p * elems + me * block:p * elems + (me + 1) * block])

        calls = {"rina": call_rina, "gloo": call_gloo, "capi": call_capi, "copy": call_copy}
        barrier()  # every input is in place
        want = torch.cat([allin[p * elems + me * block:p * elems + (me + 1) * block]
                          for p in range(n)])
        for name, fn in calls.items():
            out.fill_(-1)
            fn()
            barrier()
            if not torch.equal(out, want):
                raise SystemExit(f"rank {me}: {name} all_to_all of {size} bytes is wrong")
        iters = max(3, min(200, (256 << 20) // size))
        times = {b: [] for b in BACKENDS}
        for r in range(args.rounds):
            order = BACKENDS[r % len(BACKENDS):] + BACKENDS[:r % len(BACKENDS)]
            for name in order:
                barrier()
                calls[name]()
                calls[name]()
                barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    calls[name]()
                took = torch.tensor([(time.perf_counter() - t0) / iters])
                dist.all_reduce(took, op=dist.ReduceOp.MAX, group=rina)
                times[name].append(took.item() * 1e6)
        rows.append({"size": size, "iters": iters, "us": times})
        del allin
        if me == 0:
            os.unlink(shared_path + str(size))
    capi.close()
    dist.barrier()
    dist.destroy_process_group()
    if me == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    return 0


def write_results(args, rows, command, started):
    def med(row, b):
        return statistics.median(row["us"][b])

    lines = [
        "# dist.all_to_all_single: rina against Gloo and a bare exchange",
        "",
        f"{args.ranks} ranks on one host, float32; S is what each rank sends (S / "
        f"{args.ranks} to each rank). {args.rounds} rounds of one block per backend and size, "
        "the order rotating by round; a call's time is a block's mean on the slowest rank; "
        f"medians over rounds. Taken {started} ({machine_note()}). All four run in the same "
        "job (perf/torch/alltoall_bench.py); `copy` is the bare exchange: a barrier (one "
        "rinaAllReduce of one element) and then each block copied once straight out of the "
        "other ranks' inputs in shared memory.",
        "",
        "| S | Gloo (us) | rina (us) | C API (us) | copy (us) | rina GB/s | Gloo / rina | "
        "target >= 2 | rina / copy | target <= 1.5 | C API / copy |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        size = row["size"]
        g, q, c, k = (med(row, b) for b in ("gloo", "rina", "capi", "copy"))
        faster, near = g / q, q / k
        row.update({"median_us": {b: med(row, b) for b in BACKENDS}})
        lines.append(f"| {human(size)} | {g:.0f} | {q:.0f} | {c:.0f} | {k:.0f} | "
                     f"{size / q / 1e3:.2f} | {faster:.2f} | {'met' if faster >= 2 else 'MISSED'} "
                     f"| {near:.2f} | {'met' if near <= 1.5 else 'MISSED'} | {c / k:.2f} |")
    lines += ["", "Per round (us: rina / Gloo / C API / copy):", ""]
    for row in rows:
        cells = ", ".join(" / ".join(f"{row['us'][b][r]:.0f}" for b in BACKENDS)
                          for r in range(args.rounds))
        lines.append(f"- {human(row['size'])} ({row['iters']} calls per block): {cells}")
    lines += ["", "## Command", "", "```", shown(sys.argv),
              "# runs, per rank R:", command, "```", ""]
    save_results(args.out, "\n".join(lines), {"sizes": [r["size"] for r in rows], "rows": rows})


def main():
    p = driver_parser(__doc__, "torch-alltoall.md")
    p.add_argument("--sizes", default=DEFAULT_SIZES)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory(prefix="rina-a2a-", dir="/dev/shm") as store:
        def cmd(r):
            return [PYTHON, os.path.abspath(__file__), "--worker", "--rank", str(r), "--world",
                    str(args.ranks), "--store", store, "--build", os.path.abspath(args.build),
                    "--sizes", args.sizes, "--rounds", str(args.rounds)]
        out = run_ranks(cmd, args.ranks, env_with_package(args.build), timeout=3600)
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    write_results(args, json.loads(line[len("RESULT "):]), shown(cmd("R")), started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
