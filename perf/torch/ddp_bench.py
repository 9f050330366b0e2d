#!/usr/bin/python3
"""DDP training step time with a communication-heavy model: rina against Gloo.

    perf/torch/ddp_bench.py [--build DIR] [--ranks 4] [--steps 8] [--warmup 2]
                            [--lab TOPOLOGY.json [--mtu BYTES] [--lab-name NAME]]
                            [--out FILE]

One torch job holds two process groups, Gloo (the default group) and rina
(dist.new_group), and two DistributedDataParallel copies of one MLP of about
21M float32 parameters (84 MB of gradients per step): one reduces its
gradients over rina, the other over Gloo; a third copy without DDP gives the
compute alone. The job rotates their training steps, so all see the same
machine. A step is forward, backward
(DDP's bucketed allreduce overlapping it) and the optimizer step; its time is
the slowest rank's. The table holds the median step time of each.

Without --lab the ranks run on this host. With --lab the script brings up
the emulated cluster of TOPOLOGY (tools/rina-netlab up, as perf/lab does),
starts one rank in each lab host's namespace (`rina-netlab exec`), rina's
communicator reading the lab's resolved topology (its INA racks and
switches; RINA_ALGO auto), Gloo on the hosts' eth0, and brings the lab down.
Results: --out (perf/results/torch-ddp.md, or torch-ddp-lab-NAME.md).
"""

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
from ranks import (shown, REPO, PYTHON, Failure, driver_parser, env_with_package,  # noqa: E402
                   machine_note, run_ranks)

BACKENDS = ("rina", "gloo")
# The same steps without DDP (no communication): the compute alone.
VARIANTS = BACKENDS + ("none",)
LAB_PORT = 29531


def build_model(nn, width, depth, features, classes):
    layers = [nn.Linear(features, width), nn.ReLU()]
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def worker(args):
    import time
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel
    import rina_torch  # noqa: F401
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.store:
        dist.init_process_group("gloo", init_method=f"file://{args.store}/store", rank=args.rank,
                                world_size=args.world, timeout=timeout)
    else:  # MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE (the lab)
        dist.init_process_group("gloo", timeout=timeout)
    rank = dist.get_rank()
    groups = {"gloo": dist.group.WORLD, "rina": dist.new_group(backend="rina", timeout=timeout)}
    models, opts = {}, {}
    for name in VARIANTS:
        torch.manual_seed(0)
        module = build_model(nn, args.width, args.depth, args.features, args.classes)
        models[name] = (module if name == "none" else
                        DistributedDataParallel(module, process_group=groups[name]))
        opts[name] = torch.optim.SGD(models[name].parameters(), lr=1e-3)
    params = sum(p.numel() for p in models["rina"].parameters())
    loss_fn = nn.CrossEntropyLoss()
    data = torch.Generator().manual_seed(1000 + rank)
    times = {name: [] for name in VARIANTS}
    for step in range(args.warmup + args.steps):
        x = torch.randn(args.batch, args.features, generator=data)
        y = torch.randint(0, args.classes, (args.batch,), generator=data)
        order = VARIANTS[step % 3:] + VARIANTS[:step % 3]
        for name in order:
            dist.barrier(group=groups["gloo"])
            start = time.perf_counter()
            opts[name].zero_grad()
            loss_fn(models[name](x), y).backward()
            opts[name].step()
            took = time.perf_counter() - start
            if step >= args.warmup:
                times[name].append(took)
    # Both copies trained on the same data from the same start: they agree.
    worst = max((a - b).abs().max().item() for a, b in
                zip(models["rina"].parameters(), models["gloo"].parameters()))
    mine = torch.tensor([times[b] for b in VARIANTS], dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    dist.destroy_process_group(groups["rina"])
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps({"params": params, "max_param_diff": worst,
                                      "step_s": {b: mine[i].tolist()
                                                 for i, b in enumerate(VARIANTS)}}))
    return 0


def worker_args(args):
    return ["--worker", "--steps", str(args.steps), "--warmup", str(args.warmup),
            "--batch", str(args.batch), "--width", str(args.width), "--depth", str(args.depth),
            "--timeout", str(args.timeout)]


def choices(output):
    """rina's INFO lines of rank 0 that say what it set up and chose."""
    keep = ("ready on", "auto runs", "switch", "fallback", "falls back", "UDP", "RDMA")
    return [line.strip() for line in output.splitlines()
            if "RINA" in line and " config " not in line and any(k in line for k in keep)]


def run_local(args):
    store = tempfile.mkdtemp(prefix="rina-ddp-bench-")
    script = os.path.abspath(__file__)
    cmd = lambda r: [PYTHON, script, *worker_args(args), "--rank", str(r),  # noqa: E731
                     "--world", str(args.ranks), "--store", store]
    try:
        out = run_ranks(cmd, args.ranks, env_with_package(args.build, {"RINA_DEBUG": "INFO"}),
                    timeout=3600)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return out, [shown(cmd(0)) + f"   # and ranks 1..{args.ranks - 1}"]


def netlab(args, *cmd, timeout=600):
    full = [os.path.join(REPO, "tools/rina-netlab"), "--name", args.lab_name, *cmd]
    run = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        raise Failure(f"{shlex.join(full)}: exit {run.returncode}\n{run.stdout}{run.stderr}")
    return run.stdout


def run_lab(args):
    up = ["up", args.lab, "--mtu", str(args.mtu), "--switchd",
          os.path.join(os.path.abspath(args.build), "p4_agent/rina-switchd")]
    commands = [shown([os.path.join(REPO, "tools/rina-netlab"), "--name", args.lab_name, *up])]
    netlab(args, *up)
    try:
        state = json.load(open(os.path.join("/run/rina-netlab", args.lab_name, "state.json")))
        hosts = [h["name"] for h in state["hosts"]]
        master = state["hosts"][0]["addr"]
        env = env_with_package(args.build, {"MASTER_ADDR": master, "MASTER_PORT": str(LAB_PORT),
                                            "WORLD_SIZE": str(len(hosts)),
                                            "GLOO_SOCKET_IFNAME": "eth0",
                                            "RINA_DEBUG": "INFO"})
        script = os.path.abspath(__file__)

        def cmd(r):
            return [os.path.join(REPO, "tools/rina-netlab"), "--name", args.lab_name, "exec",
                    hosts[r], "--", "env", f"RANK={r}", PYTHON, script, *worker_args(args)]
        commands.append(shown(cmd(0)) + f"   # and ranks 1..{len(hosts) - 1}, at once, "
                        f"with MASTER_ADDR={master} MASTER_PORT={LAB_PORT} "
                        f"WORLD_SIZE={len(hosts)} GLOO_SOCKET_IFNAME=eth0")
        out = run_ranks(cmd, len(hosts), env, timeout=3600)
        # rina and the ring on bare buffers in the same lab: what the
        # collectives alone give at the sizes of DDP's buckets and more.
        perf = [os.path.join(os.path.abspath(args.build), "tools/rina-allreduce-perf"),
                "-b", "16M", "-e", "64M", "-f", "4", "-n", "3", "-w", "1", "-c", "1",
                "-a", "ring,rina"]
        run = ["run", "--timeout", "1200", "--"] + perf
        commands.append(shown([os.path.join(REPO, "tools/rina-netlab"), "--name", args.lab_name, *run]))
        out += "\nALLREDUCE\n" + netlab(args, *run, timeout=1500)
    finally:
        netlab(args, "down")
    commands.append(shlex.join(["tools/rina-netlab", "--name", args.lab_name, "down"]))
    return out, commands


def main():
    p = driver_parser(__doc__, None)
    p.add_argument("--steps", type=int, default=8, help="timed steps per backend")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch", type=int, default=16, help="samples per rank and step")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--depth", type=int, default=4, help="hidden width x width layers")
    p.add_argument("--features", type=int, default=1024)
    p.add_argument("--classes", type=int, default=1024)
    p.add_argument("--timeout", type=int, default=600, help="process groups' timeout, seconds")
    p.add_argument("--lab", metavar="TOPOLOGY", help="run in the netns lab of this topology")
    p.add_argument("--mtu", type=int, default=9000)
    p.add_argument("--lab-name", default="torchddp")
    args = p.parse_args()
    if args.worker:
        return worker(args)
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    note = machine_note()
    out, commands = run_lab(args) if args.lab else run_local(args)
    result = json.loads([l for l in out.splitlines() if l.startswith("RESULT ")][-1][7:])
    where = (f"the netns lab of {os.path.relpath(args.lab, REPO)} (MTU {args.mtu})" if args.lab
             else f"{args.ranks} ranks on this host")
    name = ("torch-ddp-lab-" + os.path.splitext(os.path.basename(args.lab))[0].replace("lab-", "")
            if args.lab else "torch-ddp")
    out_path = args.out or os.path.join(REPO, "perf/results", name + ".md")
    med = {b: statistics.median(result["step_s"][b]) * 1e3 for b in VARIANTS}
    ratio = med["rina"] / med["gloo"]
    lines = [
        f"# DDP step time: rina against Gloo, {where}",
        "",
        f"An MLP of {result['params'] / 1e6:.1f}M float32 parameters "
        f"({result['params'] * 4 / 2**20:.0f} MiB of gradients per step), batch {args.batch} "
        f"per rank, {args.steps} timed steps per backend after {args.warmup} warm-up steps, "
        "the two DDP copies' steps alternating in one job. Taken "
        f"{started} ({note}; the load average says how busy the machine was).",
        "",
        "| backend | median step (ms) | of which beyond compute (ms) | steps (ms) |",
        "|---|---|---|---|",
    ]
    for b in VARIANTS:
        steps = ", ".join(f"{1e3 * s:.0f}" for s in result["step_s"][b])
        label = "none (no DDP: compute alone)" if b == "none" else b
        extra = "-" if b == "none" else f"{med[b] - med['none']:.0f}"
        lines.append(f"| {label} | {med[b]:.0f} | {extra} | {steps} |")
    beyond = (med["rina"] - med["none"]) / max(1e-9, med["gloo"] - med["none"])
    # The target is the lab's: an INA rack halves the bytes on host links.
    target = (f" (target in the lab <= 0.75: {'met' if ratio <= 0.75 else 'MISSED'})"
              if args.lab else "")
    lines += ["", f"rina / Gloo step time: **{ratio:.2f}**{target}; time beyond compute, rina "
              f"/ Gloo: {beyond:.2f}. Largest parameter difference between the two copies "
              f"after training: {result['max_param_diff']:.3g}.", "",
              "What rina set up and chose (RINA_DEBUG=INFO, rank 0):", "", "```"] + \
        choices(out.split("\nALLREDUCE\n")[0])[:12] + ["```", ""]
    if "\nALLREDUCE\n" in out:
        table = [l for l in out.split("\nALLREDUCE\n")[1].splitlines()
                 if l.strip() and not l.startswith("#  ")]
        lines += ["The collectives alone in the same lab (`rina-allreduce-perf`, float32 sum, "
                  "ring and rina interleaved):", "", "```"] + table + ["```", ""]
    lines += ["## Commands", "", "```", shown(sys.argv),
              "# which ran:"] + commands + ["```", ""]
    md = "\n".join(lines)
    with open(out_path, "w") as f:
        f.write(md)
    with open(os.path.splitext(out_path)[0] + ".json", "w") as f:
        json.dump(result, f, indent=1)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
