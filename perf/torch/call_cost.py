#!/usr/bin/python3
"""The torch layer's own cost per call, apart from the collective.

    perf/torch/call_cost.py [--build DIR] [--calls 20000] [--rounds 7] [--out FILE]

One process, a world of one rank: rina's allreduce then moves nothing, so a
call's time is what each layer adds around the collective. In rounds, it
times back-to-back calls (float32 SUM in place, 16 elements) of

- an empty Python lambda (the timing loop itself),
- rina's C API (`rinaAllReduce` through ctypes, a communicator of its own),
- the rina process group's `allreduce([t], opts).wait()` (pybind, c10d's
  Work and Future, rina_torch's queue, then the C API),
- `dist.all_reduce(t)` (torch's Python wrapper around the process group),
- and the process group's call and `dist.all_reduce` on Gloo for comparison,

and reports each one's median over rounds of the wall time and the process
CPU time per call. With more ranks than cores these microseconds are paid by
every rank on every call while the others wait (perf/results/torch-allreduce.md).
Results (markdown and JSON) go to --out (perf/results/torch-call-cost.md).
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ranks import REPO, PYTHON, CApi, env_with_package, machine_note, shown  # noqa: E402

# (name, what it calls), in the order of the table.
PATHS = (
    ("loop", "an empty Python lambda: the timing loop alone"),
    ("capi", "rina's C API through ctypes (`rinaAllReduce`)"),
    ("pg", "the rina process group: `allreduce([t], opts).wait()`"),
    ("dist", "`dist.all_reduce(t)` on rina"),
    ("gloo_pg", "Gloo's process group: `allreduce([t], opts).wait()`"),
    ("gloo_dist", "`dist.all_reduce(t)` on Gloo"),
)


def worker(args):
    import time
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401
    torch.set_num_threads(1)
    store = tempfile.mkdtemp(prefix="rina-call-cost-")
    dist.init_process_group("rina", init_method=f"file://{store}/store", rank=0, world_size=1)
    gloo = dist.new_group(backend="gloo")
    rina = dist.group.WORLD

    capi = CApi(args.build, 0, 1, torch, dist)
    t = torch.ones(16, dtype=torch.float32)
    # The C API's bare call (CApi.all_reduce adds a Python method around it).
    p, n, all_reduce, comm = t.data_ptr(), t.numel(), capi.lib.rinaAllReduce, capi.comm
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.SUM
    calls = {"loop": lambda: None,
             "capi": lambda: all_reduce(p, p, n, CApi.FLOAT32, CApi.SUM, comm),
             "pg": lambda: rina.allreduce([t], opts).wait(),
             "dist": lambda: dist.all_reduce(t, group=rina),
             "gloo_pg": lambda: gloo.allreduce([t], opts).wait(),
             "gloo_dist": lambda: dist.all_reduce(t, group=gloo)}
    # A sum over one rank leaves t as it was: each path is checked once
    # (the C API's return code too).
    capi.all_reduce(t)
    for name, call in calls.items():
        if name != "loop":
            call()
            if not torch.all(t == 1):
                raise SystemExit(f"{name}: a sum over one rank changed the tensor: {t.tolist()}")
    wall = {name: [] for name in calls}
    cpu = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            for _ in range(args.calls // 10):  # warm
                call()
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(args.calls):
                call()
            wall[name].append((time.perf_counter() - w0) / args.calls * 1e6)
            cpu[name].append((time.process_time() - c0) / args.calls * 1e6)
    capi.close()
    dist.destroy_process_group(gloo)
    dist.destroy_process_group()
    print("RESULT " + json.dumps({"wall_us": wall, "cpu_us": cpu}))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--calls", type=int, default=20000, help="calls per path and round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default=os.path.join(REPO, "perf/results/torch-call-cost.md"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.calls < 10 or args.rounds < 1:
        p.error("--calls must be at least 10 and --rounds at least 1")
    if args.worker:
        return worker(args)
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    note = machine_note()
    cmd = [PYTHON, os.path.abspath(__file__), "--worker", "--build", os.path.abspath(args.build),
           "--calls", str(args.calls), "--rounds", str(args.rounds)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800,
                         env=env_with_package(args.build))
    if run.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)}: exit {run.returncode}\n{run.stdout}{run.stderr}")
    result = json.loads([l for l in run.stdout.splitlines() if l.startswith("RESULT ")][-1][7:])
    wall = {k: statistics.median(v) for k, v in result["wall_us"].items()}
    cpu = {k: statistics.median(v) for k, v in result["cpu_us"].items()}
    lines = [
        "# The torch layer's own cost per call",
        "",
        f"One process, a world of one rank (the collective moves nothing), {args.rounds} rounds "
        f"of {args.calls} back-to-back calls per path (float32 SUM in place, 16 elements); "
        "medians over rounds. Taken "
        f"{started} ({note}).",
        "",
        "| path | wall per call (us) | CPU per call (us) | wall over the C API (us) | rounds (wall, us) |",
        "|---|---|---|---|---|",
    ]
    for name, what in PATHS:
        over = "-" if name in ("loop", "capi") else f"{wall[name] - wall['capi']:+.2f}"
        rounds = ", ".join(f"{x:.2f}" for x in result["wall_us"][name])
        lines.append(f"| {what} | {wall[name]:.2f} | {cpu[name]:.2f} | {over} | {rounds} |")
    lines += ["", "## Command", "", "```", shown(sys.argv),
              "# which ran:", shown(cmd), "```", ""]
    md = "\n".join(lines)
    with open(args.out, "w") as f:
        f.write(md)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(result, f, indent=1)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
