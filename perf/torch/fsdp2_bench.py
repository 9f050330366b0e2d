#!/usr/bin/env python3
"""torch 2.x: one FSDP2 training step of python/examples/fsdp2_train.py's model
over rina against Gloo, 4 ranks with CPU tensors.

    perf/torch/fsdp2_bench.py [--build DIR] [--python PY] [--ranks 4] [--steps 8]
                              [--reduce-dtype float32] [--out FILE] [MODEL FLAGS]

One torch job of --ranks processes (--python: the torch 2.x venv's
interpreter) holds Gloo (the default group) and rina (dist.new_group), and
two copies of the example's transformer (same seed, MODEL FLAGS as the
example's: --dim, --layers, --seq, --batch, --vocab, --heads), each
fully_shard-ed over a 1-D CPU mesh of one of the groups with
MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=--reduce-dtype)
(the Gloo copy sums and FSDP2 divides: Gloo has no AVG). Steps of the two
take turns (which goes first alternates); a step is forward, backward
(reduce-scatter), optimizer step, timed from a barrier to the slowest
rank's end. After two untimed steps each, --steps steps each; the table
gives the median step of each and rina / Gloo (target <= 0.7).
"""

import datetime
import importlib.util
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ranks import (REPO, driver_parser,  # noqa: E402
                   machine_note, run_torch2_job, save_results, shown)

EXAMPLE = os.path.join(REPO, "python/examples/fsdp2_train.py")


def load_example():
    spec = importlib.util.spec_from_file_location("fsdp2_train", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    import rina_torch  # noqa: F401  registers "rina"
    ex = load_example()
    torch.set_num_threads(1)
    n, me = args.world, args.rank
    dist.init_process_group("gloo", init_method=f"file://{args.store}/store", rank=me,
                            world_size=n, timeout=datetime.timedelta(seconds=600))
    rina = dist.new_group(backend="rina")
    meshes = {"gloo": DeviceMesh.from_group(dist.group.WORLD, "cpu"),
              "rina": DeviceMesh.from_group(rina, "cpu")}
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                              reduce_dtype=getattr(torch, args.reduce_dtype))
    models, opts = {}, {}
    for b, mesh in meshes.items():
        torch.manual_seed(0)
        m = ex.TinyTransformer(args.vocab, args.dim, args.heads, args.layers, args.seq)
        for block in m.blocks:
            fully_shard(block, mesh=mesh, mp_policy=mp)
        fully_shard(m, mesh=mesh, mp_policy=mp)
        if b == "gloo":
            m.set_force_sum_reduction_for_comms(True)
        models[b], opts[b] = m, torch.optim.AdamW(m.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1000 + me)
    batches = [ex.synthetic_batch(data, args.batch, args.seq, args.vocab)
               for _ in range(args.steps + 2)]

    def step(b, x, y):
        loss = F.cross_entropy(models[b](x).float().reshape(-1, args.vocab), y.reshape(-1))
        loss.backward()
        opts[b].step()
        opts[b].zero_grad()
        return loss.item()

    times = {b: [] for b in models}
    losses = {b: [] for b in models}
    for i, (x, y) in enumerate(batches):
        for b in (("rina", "gloo") if i % 2 == 0 else ("gloo", "rina")):
            dist.barrier(group=rina)
            t0 = time.perf_counter()
            losses[b].append(step(b, x, y))
            took = torch.tensor([time.perf_counter() - t0])
            dist.all_reduce(took, op=dist.ReduceOp.MAX, group=rina)
            if i >= 2:
                times[b].append(took.item() * 1e3)
    params = sum(p.numel() for p in models["rina"].parameters())  # DTensors: the full sizes
    dist.barrier()
    dist.destroy_process_group()
    if me == 0:
        print("RESULT " + json.dumps({"ms": times, "losses": losses, "params": params}),
              flush=True)
    return 0


def write_results(args, result, command, started, version):
    g = statistics.median(result["ms"]["gloo"])
    q = statistics.median(result["ms"]["rina"])
    model = (f"--dim {args.dim} --layers {args.layers} --heads {args.heads} --seq {args.seq} "
             f"--batch {args.batch} --vocab {args.vocab}")
    lines = [
        "# torch 2.x: one FSDP2 training step, rina against Gloo",
        "",
        f"torch {version}, {args.ranks} ranks on one host, CPU tensors; "
        f"python/examples/fsdp2_train.py's transformer ({model}: {result['params']:,} "
        f"parameters), each block and the model fully_shard-ed over a 1-D mesh of the "
        f"backend's group, bf16 parameters, reduce_dtype {args.reduce_dtype}, AdamW. "
        f"{args.steps} timed steps of each copy after two untimed ones, the copies taking turns "
        "in one job (perf/torch/fsdp2_bench.py); a step runs from a barrier to the slowest "
        f"rank's end. Taken {started} ({machine_note()}).",
        "",
        "| Gloo step (ms) | rina step (ms) | rina / Gloo | target <= 0.7 |",
        "|---|---|---|---|",
        f"| {g:.1f} | {q:.1f} | {q / g:.2f} | {'met' if q / g <= 0.7 else 'MISSED'} |",
        "",
        "Steps (ms, rina / Gloo): " + ", ".join(
            f"{a:.0f} / {b:.0f}" for a, b in zip(result["ms"]["rina"], result["ms"]["gloo"])),
        "",
        f"Loss at the last step (rank 0's batch): rina {result['losses']['rina'][-1]:.6f}, "
        f"Gloo {result['losses']['gloo'][-1]:.6f}.",
        "",
        "## Command", "", "```", shown(sys.argv),
        "# runs, per rank R:", command, "```", ""]
    save_results(args.out, "\n".join(lines), {"torch": version, **result})


def main():
    p = driver_parser(__doc__, "torch2-fsdp2-step.md", torch2=True)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--reduce-dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    result, command, started, version = run_torch2_job(__file__, args, ["--steps", str(args.steps), "--reduce-dtype", args.reduce_dtype, "--batch", str(args.batch), "--seq", str(args.seq), "--vocab", str(args.vocab), "--dim", str(args.dim), "--heads", str(args.heads), "--layers", str(args.layers)])
    write_results(args, result, command, started, version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
