#!/usr/bin/python3
"""torchft's Manager on rina: a replica killed and restarted mid-run.

    torchft_check.py [--steps 12] [--kill-at 5] [--timeout 20]

Two replica groups of one rank each train the same small model under
torchft's Manager (Manager.allreduce of the gradients, OptimizerWrapper),
the gradients averaged across the groups by rina (rina_torch.
torchft_process_group). A lighthouse in this process forms the quorums
(two replicas each). Run 1: no failure. Run 2: replica 1 kills itself with
SIGKILL at step --kill-at, before its backward pass; replica 0's allreduce
fails, torchft discards the step, and this script starts replica 1 again;
it heals from replica 0 and both go on. Passes when, in each run, both
replicas end with the same parameters, and run 2's final loss on a fixed
batch is within 1e-5 (relative) of run 1's: the failed step was redone,
not lost. Skips (77) without torchft.
"""

import argparse
import datetime
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
TOLERANCE = 1e-5


def start(args, replica, lighthouse, kill_at, restarted, log):
    cmd = [sys.executable, os.path.abspath(__file__), "--replica", str(replica),
           "--lighthouse", lighthouse, "--steps", str(args.steps),
           "--kill-at", str(kill_at), "--timeout", str(args.timeout)]
    if restarted:
        cmd.append("--restarted")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def run(args, kill_at, name):
    """One run; returns ({replica: final line}, ok)."""
    from torchft._torchft import LighthouseServer
    # Quorums of both replicas; a dead member of the last quorum is waited
    # for at most 1 s (the restarted replica joins under a new id).
    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=2, join_timeout_ms=1000,
                                  heartbeat_timeout_ms=1000)
    logs = {r: tempfile.TemporaryFile(mode="w+") for r in (0, 1, "1 restarted")}
    procs = {r: start(args, r, lighthouse.address(), kill_at, False, logs[r])
             for r in (0, 1)}
    deadline = time.monotonic() + args.timeout * 6 + 60
    codes = {}
    restarted = None
    killed = None
    ok = True
    try:
        while time.monotonic() < deadline and len(codes) < 2:
            for r, p in list(procs.items()):
                code = p.poll()
                if code is None:
                    continue
                del procs[r]
                if r == 1 and code == -signal.SIGKILL and kill_at >= 0 and restarted is None:
                    restarted = time.monotonic()
                    killed = code
                    procs["1 restarted"] = start(args, 1, lighthouse.address(), kill_at, True,
                                                 logs["1 restarted"])
                else:
                    codes[r] = code
            time.sleep(0.05)
    finally:
        for r, p in procs.items():
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            codes[r] = "timeout"
            ok = False
        lighthouse.shutdown()
    finals = {}
    for r, log in logs.items():
        log.seek(0)
        out = log.read()
        log.close()
        code = killed if r == 1 and killed is not None else codes.get(r)
        if code is None:
            continue  # never started
        print(f"---- {name}: replica {r}: exit {code}")
        print(out.rstrip())
        for line in out.splitlines():
            if line.startswith("final "):
                finals[1 if r == "1 restarted" else r] = line
    if kill_at >= 0 and restarted is None:
        print(f"{name}: replica 1 was not killed")
        ok = False
    for r, code in codes.items():
        if code != 0:
            print(f"{name}: replica {r} exited {code}")
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
    for name, finals in (("run 1", healthy), ("run 2", failed)):
        if sorted(finals) != [0, 1]:
            print(f"{name}: a replica did not finish: {finals}")
            ok = False
        elif parse_final(finals[0])[1] != parse_final(finals[1])[1]:
            print(f"{name}: the replicas' parameters differ: {finals}")
            ok = False
    if ok:
        want, got = parse_final(healthy[0])[0], parse_final(failed[0])[0]
        rel = abs(got - want) / abs(want)
        print(f"final loss: {want:.8f} without the failure, {got:.8f} with it "
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

    # The replica group's store (torchrun's, in a real job), which the
    # Manager joins as a client; it and the Manager's server take free ports.
    group_store = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=timeout,
                                wait_for_workers=False)
    manager = Manager(pg=rina_torch.torchft_process_group(timeout), min_replica_size=2,
                      load_state_dict=load_state_dict, state_dict=state_dict,
                      replica_id=f"replica{args.replica}", store_addr="127.0.0.1",
                      store_port=group_store.port, rank=0, world_size=1,
                      lighthouse_addr=args.lighthouse, port=0, timeout=timeout,
                      quorum_timeout=timeout * 3, connect_timeout=timeout)
    optimizer = OptimizerWrapper(manager, sgd)
    while manager.current_step() < args.steps:
        step = manager.current_step()
        # Each replica's batch of a step is the same in every run.
        g = torch.Generator().manual_seed(1000 * step + args.replica)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        optimizer.zero_grad()  # starts the step's quorum
        loss = (model(x) - y).square().mean()
        if args.replica == 1 and step == args.kill_at and not args.restarted:
            print(f"replica 1: killing itself at step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        loss.backward()
        # The gradients averaged across the replicas in one call; a failed
        # call makes torchft's should_commit() false, so the step is not
        # applied and is done again with the next quorum.
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        manager.allreduce(grads).wait()
        offset = 0
        for p in model.parameters():
            p.grad.copy_(grads[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()  # applied only where torchft commits the step
        print(f"replica {args.replica}: step {step} loss {loss.item():.6f}, "
              f"now at step {manager.current_step()}", flush=True)
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(64, 16, generator=g), torch.randn(64, 4, generator=g)
    with torch.no_grad():
        final = (model(x) - y).square().mean().item()
        params = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = "".join(f"{b:02x}" for b in params.numpy().tobytes()[:4096:97])
    print(f"final loss={final:.10f} params={digest}", flush=True)
    manager.shutdown(wait=False)
    del group_store
    os._exit(0)  # torchft's threads need not be joined


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--replica", type=int)
    p.add_argument("--restarted", action="store_true")
    p.add_argument("--lighthouse")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--kill-at", type=int, default=5)
    p.add_argument("--timeout", type=int, default=20)
    args = p.parse_args()
    return launch(args) if args.replica is None else worker(args)


if __name__ == "__main__":
    sys.exit(main())
