#!/usr/bin/python3
"""torchft's Manager on rina: a replica killed and restarted mid-run.

    torchft_check.py [--steps 12] [--kill-at 5] [--timeout 20] [--group-ranks 1|2]

Two replica groups of --group-ranks ranks each train the same small model
under torchft's Manager (Manager.allreduce of the gradients,
OptimizerWrapper), the gradients averaged across the groups by rina
(rina_torch.torchft_process_group: one group per rank of a replica, over
that rank of every replica). With 2 ranks a replica is data-parallel
inside too: each rank takes its own batch, its gradients are averaged
across the replicas, then between the ranks of its replica over a rina
group of their own (rina_torch.create_process_group through the
replica's store, which its rank 0 serves); in that order because a rank
that heals in torchft adds zeros to its rank's average, and which replica
heals is each rank's own choice. A lighthouse in this process forms the
quorums (two replicas each). Run 1: no failure. Run 2: replica 1 fails as
a whole at step --kill-at, before its backward pass: its rank 0 SIGKILLs
its other ranks wherever they are, then itself. Replica 0's allreduce
fails, torchft discards the step on all its ranks, and this script starts
every rank of replica 1 again; they heal from replica 0 and all go on.
Passes when, in each run, every rank of both replicas ends with the same
parameters, and run 2's final loss on a fixed batch is within 1e-5
(relative) of run 1's: the failed step was redone, not lost. Skips (77)
without torchft.
"""

import argparse
import datetime
import os
import signal
import subprocess
import sys
import shutil
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
TOLERANCE = 1e-5


def start(args, replica, lighthouse, kill_at, restarted, log, store_dir):
    """Starts every rank of a replica; returns {(replica, rank): process}."""
    procs = {}
    for rank in range(args.group_ranks):
        cmd = [sys.executable, os.path.abspath(__file__), "--replica", str(replica),
               "--group-rank", str(rank), "--group-ranks", str(args.group_ranks),
               "--store-dir", store_dir, "--lighthouse", lighthouse,
               "--steps", str(args.steps), "--kill-at", str(kill_at),
               "--timeout", str(args.timeout)]
        if restarted:
            cmd.append("--restarted")
        procs[(replica, rank)] = subprocess.Popen(cmd, stdout=log[rank], stderr=subprocess.STDOUT,
                                                  start_new_session=True)
    return procs


def run(args, kill_at, name):
    """One run; returns ({(replica, rank): final line}, ok)."""
    from torchft._torchft import LighthouseServer
    # Quorums of both replicas; a dead member of the last quorum is waited
    # for at most 1 s (the restarted replica joins under a new id).
    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=2, join_timeout_ms=1000,
                                  heartbeat_timeout_ms=1000)
    ranks = range(args.group_ranks)
    logs = {(r, k, restarted): tempfile.TemporaryFile(mode="w+")
            for r in (0, 1) for k in ranks for restarted in (False, True)}
    stores = tempfile.mkdtemp(prefix="rina-torchft-")

    def logs_of(replica, restarted):
        return [logs[(replica, k, restarted)] for k in ranks]

    procs = {}
    for r in (0, 1):
        procs.update(start(args, r, lighthouse.address(), kill_at, False, logs_of(r, False),
                           os.path.join(stores, f"replica{r}")))
    deadline = time.monotonic() + args.timeout * 6 + 60
    codes = {}
    killed = {}
    restarted = False
    ok = True
    try:
        while time.monotonic() < deadline and len(codes) < 2 * args.group_ranks:
            for key, p in list(procs.items()):
                code = p.poll()
                if code is None:
                    continue
                del procs[key]
                if (key[0] == 1 and code == -signal.SIGKILL and kill_at >= 0
                        and not restarted):
                    killed[key] = code
                else:
                    codes[key] = code
            # Replica 1 starts again once all its ranks are dead.
            if len(killed) == args.group_ranks and not restarted:
                restarted = True
                procs.update(start(args, 1, lighthouse.address(), kill_at, True,
                                   logs_of(1, True), os.path.join(stores, "replica1-restarted")))
            time.sleep(0.05)
    finally:
        for key, p in procs.items():
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            codes[key] = "timeout"
            ok = False
        lighthouse.shutdown()
        shutil.rmtree(stores, ignore_errors=True)
    finals = {}
    for (r, k, again), log in logs.items():
        log.seek(0)
        out = log.read()
        log.close()
        if again and not (r == 1 and restarted):
            continue  # never started
        code = codes.get((r, k)) if again else killed.get((r, k), codes.get((r, k)))
        print(f"---- {name}: replica {r} rank {k}{' restarted' if again else ''}: exit {code}")
        print(out.rstrip())
        for line in out.splitlines():
            if line.startswith("final "):
                finals[(r, k)] = line
    if kill_at >= 0 and not restarted:
        print(f"{name}: replica 1 was not killed")
        ok = False
    for key, code in codes.items():
        if code != 0:
            print(f"{name}: replica {key[0]} rank {key[1]} exited {code}")
            ok = False
    return finals, ok


def parse_final(line):
    fields = dict(kv.split("=") for kv in line.split()[1:])
    return float(fields["loss"]), fields["params"]


def launch(args):
    try:
        import torchft  # noqa: F401
    except ImportError as e:
        print(f"torchft_check: SKIP: torchft cannot be imported: {e}")
        return 77
    healthy, ok1 = run(args, -1, "run 1 (no failure)")
    failed, ok2 = run(args, args.kill_at, "run 2 (replica 1 killed)")
    ok = ok1 and ok2
    everyone = [(r, k) for r in (0, 1) for k in range(args.group_ranks)]
    for name, finals in (("run 1", healthy), ("run 2", failed)):
        if sorted(finals) != everyone:
            print(f"{name}: a rank did not finish: {finals}")
            ok = False
        elif len({parse_final(line)[1] for line in finals.values()}) != 1:
            print(f"{name}: the ranks' parameters differ: {finals}")
            ok = False
    if ok:
        want, got = parse_final(healthy[(0, 0)])[0], parse_final(failed[(0, 0)])[0]
        rel = abs(got - want) / abs(want)
        print(f"{args.group_ranks} rank(s) per replica: final loss: {want:.8f} without the failure, {got:.8f} with it "
              f"(relative difference {rel:.2e}, tolerance {TOLERANCE:g})")
        ok = rel <= TOLERANCE
    print("torchft_check:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import rina_torch
    from torchft import Manager
    from torchft.optim import OptimizerWrapper
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)

    def state_dict():
        return {"model": model.state_dict(), "optim": sgd.state_dict()}

    def load_state_dict(state):
        model.load_state_dict(state["model"])
        sgd.load_state_dict(state["optim"])

    # The replica group's store (torchrun's, in a real job), served by its
    # rank 0; the Manager joins it as a client.
    import ranks
    group_store = ranks.tcp_store(args.store_dir, args.group_rank, args.group_ranks, timeout,
                                  f"replica {args.replica} rank {args.group_rank}")
    group_store.set(f"pid{args.group_rank}", str(os.getpid()))
    # The ranks of this replica average their gradients among themselves.
    inside = None
    if args.group_ranks > 1:
        inside = rina_torch.create_process_group(dist.PrefixStore("inside", group_store),
                                                 args.group_rank, args.group_ranks, timeout)
    manager = Manager(pg=rina_torch.torchft_process_group(timeout), min_replica_size=2,
                      load_state_dict=load_state_dict, state_dict=state_dict,
                      replica_id=f"replica{args.replica}", store_addr="127.0.0.1",
                      store_port=group_store.port, rank=args.group_rank,
                      world_size=args.group_ranks,
                      lighthouse_addr=args.lighthouse, port=0, timeout=timeout,
                      quorum_timeout=timeout * 3, connect_timeout=timeout)
    optimizer = OptimizerWrapper(manager, sgd)
    while manager.current_step() < args.steps:
        step = manager.current_step()
        # Each rank's batch of a step is the same in every run.
        g = torch.Generator().manual_seed(1000 * step + 10 * args.replica + args.group_rank)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        optimizer.zero_grad()  # starts the step's quorum
        loss = (model(x) - y).square().mean()
        # Replica 1 fails as a whole, as when its host goes: its rank 0
        # kills every rank of it (the others wherever they are), then itself.
        if (args.replica == 1 and args.group_rank == 0 and step == args.kill_at
                and not args.restarted):
            for k in range(1, args.group_ranks):
                os.kill(int(group_store.get(f"pid{k}")), signal.SIGKILL)
            print(f"replica 1: rank 0 killed its {args.group_ranks} rank(s) at step {step}",
                  flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        loss.backward()
        # The gradients averaged across the replicas in one call; a failed
        # call makes torchft's should_commit() false, so the step is not
        # applied and is done again with the next quorum.
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        manager.allreduce(grads).wait()
        # Then inside the replica: torchft averages each rank of a replica
        # with that rank of the others, and a rank that heals adds zeros
        # (at step 0 too, with init_sync), which replica heals being each
        # rank's own choice; so the ranks of a replica agree only after it.
        if inside is not None:
            inside.allreduce([grads]).wait()
            grads /= args.group_ranks
        offset = 0
        for p in model.parameters():
            p.grad.copy_(grads[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()  # applied only where torchft commits the step
        print(f"replica {args.replica} rank {args.group_rank}: step {step} loss {loss.item():.6f}, "
              f"now at step {manager.current_step()}", flush=True)
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(64, 16, generator=g), torch.randn(64, 4, generator=g)
    with torch.no_grad():
        final = (model(x) - y).square().mean().item()
        params = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = "".join(f"{b:02x}" for b in params.numpy().tobytes()[:4096:97])
    print(f"final loss={final:.10f} params={digest}", flush=True)
    manager.shutdown(wait=False)
    # Rank 0 serves the replica's store: it leaves last.
    group_store.set(f"done{args.group_rank}", "1")
    if args.group_rank == 0:
        group_store.wait([f"done{k}" for k in range(args.group_ranks)])
    del group_store
    os._exit(0)  # torchft's threads need not be joined


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--replica", type=int)
    p.add_argument("--group-rank", type=int, default=0)
    p.add_argument("--group-ranks", type=int, default=1, choices=[1, 2])
    p.add_argument("--store-dir")
    p.add_argument("--restarted", action="store_true")
    p.add_argument("--lighthouse")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--kill-at", type=int, default=5)
    p.add_argument("--timeout", type=int, default=20)
    args = p.parse_args()
    return launch(args) if args.replica is None else worker(args)


if __name__ == "__main__":
    sys.exit(main())
