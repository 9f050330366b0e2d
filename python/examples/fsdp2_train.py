#!/usr/bin/env python3
"""FSDP2 (fully_shard) training of a small transformer on synthetic data, over
rina or Gloo, with bf16 mixed precision (torch 2.x).

    torchrun --nproc-per-node 4 python/examples/fsdp2_train.py --backend rina
    torchrun --nproc-per-node 4 python/examples/fsdp2_train.py --backend rina --reduce-dtype bfloat16

(PYTHONPATH=build/python-torch2 for a build tree; an installed rina_torch
needs nothing.) Every rank draws its own batches from a fixed seed; each
transformer block and the whole model are sharded over a 1-D CPU mesh of
all ranks (fully_shard(model, mesh=init_device_mesh("cpu", (world,)))) with
MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=--reduce-dtype):
parameters are all-gathered in bf16 (all_gather_into_tensor), gradients
reduce-scattered in reduce_dtype with ReduceOp.AVG (reduce_scatter_tensor).
Rank 0 prints the loss. With --save FILE each rank writes the loss of every
step and the full parameters (gathered from the shards) to FILE.<rank>.pt.
Gloo has no ReduceOp.AVG: its run asks FSDP2 to sum and divide itself
(set_force_sum_reduction_for_comms), which gives the same result.
"""

import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab, dim, heads, layers, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


def synthetic_batch(generator, batch, seq, vocab):
    """Sequences whose next token is a fixed function of the current one."""
    x = torch.randint(0, vocab, (batch, seq), generator=generator)
    return x, (x * 7 + 3) % vocab


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["rina", "gloo"], default="rina")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--reduce-dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--timeout", type=float, default=300, help="process group timeout, seconds")
    p.add_argument("--save", metavar="FILE",
                   help="each rank writes its losses and full parameters to FILE.<rank>.pt")
    args = p.parse_args()

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if args.backend == "rina":
        import rina_torch  # noqa: F401  registers the backend "rina"
    # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))

    torch.manual_seed(0)  # the same initial model on every rank
    model = TinyTransformer(args.vocab, args.dim, args.heads, args.layers, args.seq)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                              reduce_dtype=getattr(torch, args.reduce_dtype))
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    if args.backend == "gloo":
        model.set_force_sum_reduction_for_comms(True)  # Gloo has no ReduceOp.AVG
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = torch.Generator().manual_seed(1000 + rank)

    losses = []
    start = time.perf_counter()
    for step in range(args.steps):
        x, y = synthetic_batch(data, args.batch, args.seq, args.vocab)
        loss = F.cross_entropy(model(x).float().reshape(-1, args.vocab), y.reshape(-1))
        loss.backward()  # FSDP2 reduce-scatters the gradients here
        opt.step()
        opt.zero_grad()
        # The mean loss over the ranks (each rank's batch differs).
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.6f}", flush=True)
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"{args.backend}: {world} ranks, reduce_dtype {args.reduce_dtype}, {args.steps} "
              f"steps in {elapsed:.2f} s ({1000 * elapsed / max(1, args.steps):.1f} ms per step)")
    if args.save:
        params = [q.full_tensor().detach().clone() for q in model.parameters()]
        torch.save({"losses": losses, "params": params}, f"{args.save}.{rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
