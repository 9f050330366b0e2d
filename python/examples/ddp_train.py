#!/usr/bin/python3
"""Data-parallel training of a small model on synthetic data, over rina or Gloo.

    torchrun --redirects 1 --tee 1 --nproc_per_node 4 python/examples/ddp_train.py --backend rina

(PYTHONPATH=build/python for a build tree; an installed rina_torch needs
nothing. Debian bookworm's torchrun needs --redirects 1 --tee 1 under Python
3.11, whatever the backend.) Every rank draws its own batches from a fixed seed, trains the same
model with DistributedDataParallel, and rank 0 prints the loss. With
--save-params FILE each rank writes its loss at every step and its final
parameters to FILE.<rank>.pt ({"losses": [...], "params": [...]}), so runs can
be compared bit for bit.
"""

import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def build_model(features, hidden, layers, classes):
    blocks = [nn.Linear(features, hidden), nn.ReLU()]
    for _ in range(layers - 1):
        blocks += [nn.Linear(hidden, hidden), nn.ReLU()]
    blocks.append(nn.Linear(hidden, classes))
    return nn.Sequential(*blocks)


def synthetic_batch(generator, batch, features, classes):
    """Inputs and labels a fixed linear rule ties together, so the loss falls."""
    x = torch.randn(batch, features, generator=generator)
    y = (x[:, :classes] * 3).argmax(dim=1)
    return x, y


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["rina", "gloo"], default="rina")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--timeout", type=float, default=300, help="process group timeout, seconds")
    p.add_argument("--save-params", metavar="FILE",
                   help="each rank writes its losses and final parameters to FILE.<rank>.pt")
    args = p.parse_args()

    if args.backend == "rina":
        import rina_torch  # noqa: F401  registers the backend "rina"
    # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
    dist.init_process_group(args.backend,
                            timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # the same initial model everywhere (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(
        build_model(args.features, args.hidden, args.layers, args.classes))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.Generator().manual_seed(1000 + rank)

    losses = []
    start = time.perf_counter()
    for step in range(args.steps):
        x, y = synthetic_batch(data, args.batch, args.features, args.classes)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP averages the gradients over the ranks here
        opt.step()
        losses.append(loss.item())
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {loss.item():.4f}", flush=True)
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"{args.backend}: {world} ranks, {args.steps} steps in {elapsed:.2f} s "
              f"({1000 * elapsed / max(1, args.steps):.1f} ms per step)")
    if args.save_params:
        torch.save({"losses": losses,
                    "params": [q.detach().clone() for q in model.module.parameters()]},
                   f"{args.save_params}.{rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
