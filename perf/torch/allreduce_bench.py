#!/usr/bin/python3
"""dist.all_reduce over rina and over Gloo, and the torch layer's own cost.

    perf/torch/allreduce_bench.py [--build DIR] [--ranks 4] [--sizes 4K,...,64M]
                                  [--rounds 5] [--block-seconds 0.25] [--out FILE]

Each round runs two torch jobs of --ranks processes on this host, each
holding Gloo (the default group), rina (dist.new_group) and rina's C API on a
communicator of its own (ctypes). For every float32 size, one job times
dist.all_reduce over rina, the rina group's own allreduce().wait() (without
torch's Python wrapper), the C API, and `rina-allreduce-perf --local-ranks N
-a auto -i 1` (rina through its C API in a program of its own, which rank 0
runs while the other ranks wait in a Gloo barrier) in blocks that take turns,
each block as many back-to-back calls (SUM, in place): the torch layer's own
cost, split into its parts. The other job times dist.all_reduce over Gloo
and over rina the same way, so both see the same machine: the ratio. The
blocks' order changes from round to round (block_order). A torch block
starts after a Gloo barrier and two untimed calls of the backend timed
(ranks leave Gloo's barrier milliseconds apart); a call's time is the
block's mean, the slowest rank's (rina-allreduce-perf reports the same).
Times are medians over blocks, then over rounds; each ratio is the median
over rounds of the round's own ratio. Results (markdown and JSON) go to
--out (perf/results/torch-allreduce.md).
"""

import argparse
import datetime
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ranks import (shown, PYTHON, CApi, driver_parser, save_results, env_with_package,  # noqa: E402
                   human, machine_note, parse_size, run_ranks)

DEFAULT_SIZES = "4K,16K,64K,256K,1M,4M,16M,64M"
# rina through torch (dist.all_reduce), Gloo through torch, the rina process
# group's own allreduce().wait() (what dist.all_reduce calls, without torch's
# Python around it), rina's C API called directly (ctypes) on a communicator
# of its own in the same processes, and rina-allreduce-perf (rank 0 runs it
# while the other ranks wait in a Gloo barrier); one job of a round times the
# first two, the other rina and the last three.
AGAINST_GLOO = ("rina", "gloo")
LAYER_COST = ("rina", "pg", "capi", "perf")


def block_order(backends, block):
    """The order of the backends' blocks in block round `block`: over len(backends)
    rounds (twice as many for an odd count) each backend runs at every place,
    and right after every other backend equally often (a Williams design), so
    no backend always follows the same one (the block after
    rina-allreduce-perf's finds the caches cold)."""
    n = len(backends)
    seq, lo, hi = [0], 1, n - 1
    while len(seq) < n:
        seq.append(lo)
        lo += 1
        if len(seq) < n:
            seq.append(hi)
            hi -= 1
    order = [backends[(block + j) % n] for j in seq]
    return order[::-1] if n % 2 and (block // n) % 2 else order


def perf_command(args, size, calls):
    """rina-allreduce-perf at one size: `calls` back-to-back in-place calls
    after its warm-up, in blocks that each start at its own shared-memory
    barrier; it reports the slowest rank's mean."""
    return [os.path.join(os.path.abspath(args.build), "tools/rina-allreduce-perf"),
            "--local-ranks", str(args.world), "-a", "auto", "-i", "1", "-c", "1",
            "-b", str(size), "-e", str(size), "-n", str(calls), "-w", "5"]


def perf_block(args, size, calls):
    """One block of rina-allreduce-perf: seconds per call."""
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        cmd = perf_command(args, size, calls) + ["-J", j.name]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise SystemExit(f"{shlex.join(cmd)}: exit {run.returncode}\n{run.stdout}{run.stderr}")
        rows = json.load(open(j.name))["rows"]
    return rows[0]["time_us"] * 1e-6


def worker(args):
    import time
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{args.store}/store", rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=600))
    groups = {"gloo": dist.group.WORLD, "rina": dist.new_group(backend="rina")}
    capi = CApi(args.build, args.rank, args.world, torch, dist)
    n = args.world
    backends = args.backends.split(",")
    sum_opts = dist.AllreduceOptions()
    sum_opts.reduceOp = dist.ReduceOp.SUM
    results = []
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        count = size // 4
        t = torch.empty(count, dtype=torch.float32)
        call = {"rina": lambda: dist.all_reduce(t, group=groups["rina"]),
                "gloo": lambda: dist.all_reduce(t, group=groups["gloo"]),
                "pg": lambda: groups["rina"].allreduce([t], sum_opts).wait(),
                "capi": lambda: capi.all_reduce(t)}
        # Checked once per size and backend: every rank adds its rank + 1
        # (rina-allreduce-perf checks its own results: -c 1).
        timed_here = [b for b in backends if b != "perf"]
        for name in timed_here:
            t.fill_(args.rank + 1)
            call[name]()
            want = n * (n + 1) / 2
            if not torch.all(t == want):
                raise SystemExit(f"{name} {size} B: wrong sum {t[:4].tolist()}, expected {want}")
        t.zero_()
        # Calls per block: about block_seconds of the slowest (rank 0 decides).
        # (a size's first calls are slow: pages of new buffers, a new
        # algorithm's set-up; so two untimed calls, then three timed)
        probe = []
        for name in timed_here:
            call[name]()
            call[name]()
            start = time.perf_counter()
            for _ in range(3):
                call[name]()
            probe.append((time.perf_counter() - start) / 3)
        calls = torch.tensor([max(1, min(400, int(args.block_seconds / max(probe))))])
        dist.broadcast(calls, 0)
        calls = int(calls.item())
        times = {name: [] for name in backends}
        for block in range(args.blocks):
            for name in block_order(backends, block):
                if name == "perf":
                    dist.barrier(group=groups["gloo"])
                    times[name].append(perf_block(args, size, calls) if args.rank == 0 else 0.0)
                    dist.barrier(group=groups["gloo"])
                    continue
                run = call[name]
                dist.barrier(group=groups["gloo"])
                # Ranks leave Gloo's barrier up to a few ms apart; untimed
                # calls of the backend itself line them up before the clock
                # starts, as rina-allreduce-perf's shared-memory barrier does,
                # and warm the caches the previous block (another program's,
                # for the block after rina-allreduce-perf) took.
                run()
                run()
                start = time.perf_counter()
                for _ in range(calls):
                    run()
                times[name].append((time.perf_counter() - start) / calls)
        # The slowest rank's mean per block.
        mine = torch.tensor([times[b] for b in backends], dtype=torch.float64)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=groups["gloo"])
        results.append({"size": size, "calls_per_block": calls,
                        "perf_command": shown(perf_command(args, size, calls)),
                        "us": {b: [x * 1e6 for x in mine[i].tolist()]
                               for i, b in enumerate(backends)}})
    capi.close()
    dist.destroy_process_group(groups["rina"])
    dist.destroy_process_group()
    if args.rank == 0:
        print("RESULT " + json.dumps(results))
    return 0


def torch_round(args, sizes, backends):
    store = tempfile.mkdtemp(prefix="rina-torch-bench-")
    script = os.path.abspath(__file__)
    cmd = lambda r: [PYTHON, script, "--worker", "--rank", str(r), "--world", str(args.ranks),  # noqa: E731
                     "--store", store, "--build", os.path.abspath(args.build),
                     "--sizes", sizes, "--blocks", str(args.blocks),
                     "--block-seconds", str(args.block_seconds), "--backends", ",".join(backends)]
    try:
        out = run_ranks(cmd, args.ranks, env_with_package(args.build), timeout=3600)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    line = [l for l in out.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):]), shown(cmd(0))


def write_results(args, sizes, torch_rounds, commands, started):
    def of_round(r, size, backend):
        """A round's median over blocks."""
        return statistics.median(r[size][backend])

    def med(size, backend):
        return statistics.median(of_round(r, size, backend) for r in torch_rounds)

    def round_ratio(r, size, what, against):
        """A round's `what` / `against` time, both medians over the blocks
        interleaved in one job."""
        return of_round(r, size, what) / of_round(r, size, against)

    def ratio(size, what, against):
        """The median over rounds of each round's ratio."""
        return statistics.median(round_ratio(r, size, what, against) for r in torch_rounds)

    lines = [
        "# dist.all_reduce: rina against Gloo, and the torch layer's cost",
        "",
        f"{args.ranks} ranks on one host, float32 SUM in place, {args.rounds} rounds of "
        f"{args.blocks} alternating blocks per size and job; a call's time is a block's mean "
        "on the slowest rank; medians over blocks, then over rounds; a ratio is the median "
        "over rounds of each round's ratio. Taken "
        f"{started} ({machine_note()}; on a busy machine absolute times are noisy). Each "
        "ratio comes from blocks interleaved in one job (perf/torch/allreduce_bench.py).",
        "",
        "## rina against Gloo (dist.all_reduce, one torch job)",
        "",
        "| size | Gloo (us) | rina (us) | Gloo / rina | target |",
        "|---|---|---|---|---|",
    ]
    summary = {"sizes": sizes, "rows": []}
    for size in sizes:
        gloo, rina = med(size, "gloo"), med(size, "rina")
        target = 2.0 if size >= 1 << 20 else 1.0
        faster = ratio(size, "gloo", "rina")
        lines.append(f"| {human(size)} | {gloo:.0f} | {rina:.0f} | {faster:.2f} | "
                     f">= {target:.1f}: {'met' if faster >= target else 'MISSED'} |")
        summary["rows"].append({"size": size, "gloo_us": gloo, "rina_torch_us": rina,
                                "rina_torch_alone_us": med(size, "rina_alone"),
                                "rina_pg_us": med(size, "pg"), "rina_capi_us": med(size, "capi"),
                                "rina_perf_us": med(size, "perf")})
    lines += [
        "",
        "## The torch layer's own cost",
        "",
        "One job: blocks of dist.all_reduce on rina (no Gloo traffic between its blocks), "
        "of the rina process group's own `allreduce([t], opts).wait()` (what dist.all_reduce "
        "calls, without torch's Python around it: pybind, c10d's dispatch and rina_torch), "
        "of rina's C API called directly in the same processes (ctypes, a communicator of "
        "its own) and of "
        f"`rina-allreduce-perf --local-ranks {args.ranks} -a auto -i 1`, a program of its "
        "own that rank 0 runs while the torch ranks wait in a Gloo barrier, with as many "
        "calls per block as the torch blocks; the four take turns. Times are medians "
        "over blocks, then over rounds; each ratio is the median over rounds of the "
        "round's own ratio.",
        "",
        "| size | rina-allreduce-perf (us) | C API, same job (us) | process group call (us) | "
        "dist.all_reduce (us) | C API vs rina-allreduce-perf | process group vs C API | "
        "torch vs C API | torch vs rina-allreduce-perf | target (>= 1 MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    for row in summary["rows"]:
        size = row["size"]
        capi_perf = row["capi_vs_perf"] = ratio(size, "capi", "perf") - 1
        pg_capi = row["pg_vs_capi"] = ratio(size, "pg", "capi") - 1
        over = row["torch_vs_capi"] = ratio(size, "rina_alone", "capi") - 1
        over_perf = row["torch_vs_perf"] = ratio(size, "rina_alone", "perf") - 1
        big = size >= 1 << 20
        verdict = ("<= 10%: " + ("met" if over_perf <= 0.10 else "MISSED")) if big else "-"
        lines.append(f"| {human(size)} | {row['rina_perf_us']:.0f} | {row['rina_capi_us']:.0f} | "
                     f"{row['rina_pg_us']:.0f} | {row['rina_torch_alone_us']:.0f} | "
                     f"{100 * capi_perf:+.1f}% | {100 * pg_capi:+.1f}% | "
                     f"{100 * over:+.1f}% | {100 * over_perf:+.1f}% | {verdict} |")
    lines += ["", "Per round (us, medians over blocks; against Gloo: rina / gloo; layer cost: "
              "rina / process group / C API / rina-allreduce-perf (torch against "
              "rina-allreduce-perf)):", ""]
    for i, t in enumerate(torch_rounds):
        cells = ", ".join(
            f"{human(s)}: {of_round(t, s, 'rina'):.0f} / {of_round(t, s, 'gloo'):.0f}; "
            + " / ".join(f"{of_round(t, s, b):.0f}" for b in ("rina_alone", "pg", "capi", "perf"))
            + f" ({100 * (round_ratio(t, s, 'rina_alone', 'perf') - 1):+.1f}%)"
            for s in sizes)
        lines.append(f"- round {i + 1}: {cells}")
    lines += ["", "## Commands", "", "```", shown(sys.argv)]
    lines += ["# each round runs:"] + commands + ["```", ""]
    summary["rounds"] = torch_rounds
    save_results(args.out, "\n".join(lines), summary)


def main():
    p = driver_parser(__doc__, "torch-allreduce.md")
    p.add_argument("--sizes", default=DEFAULT_SIZES)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--blocks", type=int, default=8, help="blocks per backend and size")
    p.add_argument("--block-seconds", type=float, default=0.25)
    p.add_argument("--backends", default=",".join(AGAINST_GLOO), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    torch_rounds, commands = [], []
    for r in range(args.rounds):
        cost, cmd2 = torch_round(args, args.sizes, LAYER_COST)
        against, cmd = torch_round(args, args.sizes, AGAINST_GLOO)
        torch_rounds.append({row["size"]: {"gloo": row["us"]["gloo"], "rina": row["us"]["rina"]}
                             for row in against})
        for row in cost:
            torch_rounds[-1][row["size"]].update({"rina_alone": row["us"]["rina"],
                                                  "pg": row["us"]["pg"],
                                                  "capi": row["us"]["capi"],
                                                  "perf": row["us"]["perf"]})
        if r == 0:
            ranks = "   # and ranks 1.." + str(args.ranks - 1)
            commands = ([cmd2 + ranks, "# in it, rank 0 runs between blocks:"] +
                        [row["perf_command"] for row in cost] + [cmd + ranks])
        print(f"round {r + 1} of {args.rounds} done", flush=True)
    write_results(args, sizes, torch_rounds, commands, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
