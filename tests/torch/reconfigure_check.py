#!/usr/bin/python3
"""A group that loses a rank is made again with the survivors, as torchft does.

    reconfigure_check.py [--ranks 4] [--via plain|torchft] [--timeout 20]

Every rank makes a group of all ranks through a TCPStore (rank 0 serves
it), sums once (checked against the closed form), then the last rank kills
itself with SIGKILL. The survivors' next allreduce must raise naming that
rank, the backend must say it errored, and abort() must return; then they
make a group of the survivors under a new store prefix and its sums must be
exact. --via plain: rina_torch.create_process_group; --via torchft:
torchft's reconfigurable process group on rina (rina_torch.
torchft_process_group, its configure()), skipped (77) without torchft.
"""

import datetime
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def launch(args):
    import ranks
    if args.via == "torchft":
        try:
            import torchft  # noqa: F401
        except ImportError as e:
            print(f"reconfigure_check: SKIP: torchft cannot be imported: {e}")
            return 77
    victim = args.ranks - 1
    result = ranks.spawn(os.path.abspath(__file__), args.ranks,
                         ["--via", args.via, "--timeout", str(args.timeout)],
                         timeout=args.timeout * 3 + 60)
    expected = {r: 0 for r in range(args.ranks)}
    expected[victim] = -signal.SIGKILL
    ok = ranks.report(result, expected)
    print(f"reconfigure_check: {args.via}:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def worker(args):
    import ranks
    import torch
    import torch.distributed as dist
    import rina_torch
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    victim = args.world - 1
    # Rank 0 serves the store and outlives the victim.
    server = ranks.tcp_store(args.store, args.rank, args.world, timeout, f"rank {args.rank}")
    args.port = server.port

    if args.via == "torchft":
        group = rina_torch.torchft_process_group(timeout)

        def make(name, rank, size):
            group.configure(f"127.0.0.1:{args.port}/{name}", "replica", rank, size)
            return group

        def backend_of(_):
            return group.parent._get_backend(torch.device("cpu"))
    else:
        def make(name, rank, size):
            return rina_torch.create_process_group(dist.PrefixStore(name, server), rank, size,
                                                   timeout)

        def backend_of(pg):
            get = getattr(pg, "_get_backend", None)
            return get(torch.device("cpu")) if get else pg

    def allreduce(pg, t):
        if args.via == "torchft":
            pg.allreduce([t], dist.AllreduceOptions()).wait()
        else:
            pg.allreduce([t]).wait()

    def check_sum(pg, ids, what):
        rank = ids.index(args.rank)
        for dtype in (torch.int32, torch.float32):
            t = torch.arange(5000, dtype=dtype) + (args.rank + 1) * 1000
            allreduce(pg, t)
            want = torch.arange(5000, dtype=dtype) * len(ids) + sum(i + 1 for i in ids) * 1000
            if not torch.equal(t, want):
                bad = int((t != want).nonzero()[0])
                sys.exit(f"rank {args.rank} (rank {rank} of {what}): {dtype} sum wrong at "
                         f"{bad}: {t[bad].item()} != {want[bad].item()}")

    everyone = list(range(args.world))
    first = make("world1", args.rank, args.world)
    check_sum(first, everyone, "the first world")
    if args.rank == victim:
        print(f"rank {args.rank}: killing itself", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    t = torch.ones(1 << 16)
    try:
        allreduce(first, t)
        sys.exit(f"rank {args.rank}: an allreduce with rank {victim} dead succeeded")
    except RuntimeError as e:
        message = str(e)
    print(f"rank {args.rank}: raised: {message.splitlines()[0]}", flush=True)
    if f"rank {victim}" not in message and f"peer {victim}" not in message:
        sys.exit(f"rank {args.rank}: the error does not name rank {victim}: {message}")
    backend = backend_of(first)
    if not backend.errored():
        sys.exit(f"rank {args.rank}: errored() is False after a failed call")
    if hasattr(backend, "get_error"):  # torch 2.6 on: c10d's getError()
        from torch._C._distributed_c10d import ErrorType
        if backend.get_error() == ErrorType.SUCCESS:
            sys.exit(f"rank {args.rank}: get_error() says SUCCESS after a failed call")
    survivors = everyone[:-1]
    if args.via == "plain":
        first.abort()  # torchft's configure() aborts the old group itself
    second = make("world2", args.rank, len(survivors))
    check_sum(second, survivors, "the survivors' world")
    check_sum(second, survivors, "the survivors' world")
    if args.via == "plain":
        first.shutdown()
        second.shutdown()
    else:
        group.abort(errored=False)
    # Rank 0 serves the store: it leaves last.
    server.set(f"done{args.rank}", "1")
    if args.rank == 0:
        server.wait([f"done{r}" for r in survivors])
    print(f"rank {args.rank}: ok", flush=True)
    return 0


def add_arguments(p):
    p.add_argument("--via", choices=["plain", "torchft"], default="plain")
    p.add_argument("--timeout", type=int, default=20)


if __name__ == "__main__":
    import ranks
    sys.exit(ranks.main(launch, worker, 4, add_arguments))
