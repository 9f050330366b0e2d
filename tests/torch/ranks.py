"""Runs the ranks of a torch.distributed test as separate processes.

main(launch, worker) is a test script's entry point: without --rank it
calls launch(args) (which spawns the ranks), with it worker(args).

spawn(script, n, args) starts `python3 script --rank r --world n --store DIR
ARGS` for every rank (DIR: a fresh folder for a FileStore), waits for all with
a time limit, kills what is left after it, and returns each rank's exit code
(negative: killed by that signal) with its output.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Rank:
    def __init__(self, rank, proc, log):
        self.rank, self.proc, self.log = rank, proc, log
        self.code = None
        self.output = ""


def spawn(script, n, args=(), timeout=300, env=None):
    store = tempfile.mkdtemp(prefix="rina-torch-")
    ranks = []
    try:
        for r in range(n):
            log = tempfile.TemporaryFile(mode="w+")
            cmd = [sys.executable, script, "--rank", str(r), "--world", str(n),
                   "--store", store, *args]
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
            ranks.append(Rank(r, proc, log))
        deadline = time.monotonic() + timeout
        for rk in ranks:
            try:
                rk.code = rk.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(rk.proc.pid, signal.SIGKILL)
                rk.proc.wait()
                rk.code = "timeout"
        return ranks
    finally:
        for rk in ranks:
            if rk.proc.poll() is None:
                os.killpg(rk.proc.pid, signal.SIGKILL)
                rk.proc.wait()
            rk.log.seek(0)
            rk.output = rk.log.read()
            rk.log.close()
        shutil.rmtree(store, ignore_errors=True)


def report(ranks, expected=None):
    """Prints every rank's output; True when every rank exited as expected
    (a dict rank -> code; default 0 for all)."""
    ok = True
    for rk in ranks:
        want = (expected or {}).get(rk.rank, 0)
        print(f"---- rank {rk.rank}: exit {rk.code} (expected {want})")
        print(rk.output.rstrip())
        ok = ok and rk.code == want
    return ok


def tcp_store(folder, rank, world, timeout, who):
    """A TCPStore of world ranks that rank 0 serves on a port it takes where
    it listens (so no other process can take it in between) and tells the
    others through folder; who names the caller in the error when rank 0
    never does (timeout: a datetime.timedelta)."""
    import torch.distributed as dist
    port_file = os.path.join(folder, "tcp-store-port")
    if rank == 0:
        os.makedirs(folder, exist_ok=True)
        store = dist.TCPStore("127.0.0.1", 0, world, True, timeout=timeout,
                              wait_for_workers=False)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(store.port))
        os.rename(port_file + ".tmp", port_file)
        return store
    give_up = time.monotonic() + timeout.total_seconds()
    while not os.path.exists(port_file):
        if time.monotonic() > give_up:
            sys.exit(f"{who}: rank 0 did not serve its store within {timeout.total_seconds()} s")
        time.sleep(0.01)
    with open(port_file) as f:
        port = int(f.read())
    return dist.TCPStore("127.0.0.1", port, world, False, timeout=timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(launch, worker, default_ranks, add_arguments=None):
    """A test script's entry point: `--ranks N` (launch(args): spawn the
    ranks) or, in a rank, `--rank R --world N --store DIR` (worker(args))."""
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=default_ranks, help="launch this many ranks")
    p.add_argument("--rank", type=int)
    p.add_argument("--world", type=int)
    p.add_argument("--store")
    if add_arguments:
        add_arguments(p)
    args = p.parse_args()
    return launch(args) if args.rank is None else worker(args)
