"""What the perf/torch drivers share: the repository root, the build's
package folder, running N ranks of a worker as separate processes, and
rina's C API through ctypes."""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
# The torch 2.x venv tools/deps.sh makes.
TORCH2_PYTHON = os.environ.get("RINA_TORCH2_PYTHON") or os.path.expanduser(
    "~/.cache/rina/torch2-venv/bin/python")


class Failure(Exception):
    pass


def shown(cmd):
    """cmd as a result file gives it, for anyone to run from the repository
    root: paths inside the repository relative to it, a temporary folder as
    a fresh one, the home folder as ~."""
    temp = (tempfile.gettempdir() + os.sep, "/dev/shm/")
    home = os.path.expanduser("~") + os.sep

    def one(a):
        if a.startswith(REPO + os.sep) or a == REPO:
            return os.path.relpath(a, REPO)
        if a.startswith(temp):
            return "TEMPDIR"
        if a.startswith(home):
            return "HOMEDIR/" + a[len(home):]
        return a
    return (shlex.join([one(a) for a in cmd]).replace("TEMPDIR", '"$(mktemp -d)"')
            .replace("HOMEDIR/", "~/"))


def env_with_package(build, extra=None, package="python"):
    """The environment of a rank: the build's package folder (python/ for
    RINA_PYTHON's torch, python-torch2/ for the torch 2.x venv's) first on
    PYTHONPATH, one OpenMP thread."""
    env = dict(os.environ)
    pkg = os.path.join(os.path.abspath(build), package)
    env["PYTHONPATH"] = pkg + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra or {})
    return env


def add_worker_arguments(parser):
    """The hidden arguments a driver passes to its own worker processes
    (`--worker --rank R --world N --store PATH`)."""
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)


def driver_parser(doc, out, torch2=False):
    """A driver's argument parser with what every driver takes: --build,
    --ranks, --out (default perf/results/OUT; None: no default), --python for
    a torch 2.x driver, and the hidden worker arguments."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    if torch2:
        parser.add_argument("--python", default=TORCH2_PYTHON, help="a torch 2.x interpreter")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--out", default=out and os.path.join(REPO, "perf/results", out))
    add_worker_arguments(parser)
    return parser


def run_ranks(cmd_of_rank, n, env, timeout):
    """Starts cmd_of_rank(r) for r in 0..n-1, waits for all (killing every
    one after timeout seconds); returns rank 0's stdout. Failure with the
    ranks' output when one fails."""
    procs = []
    logs = []
    try:
        for r in range(n):
            log = tempfile.TemporaryFile(mode="w+")
            logs.append(log)
            # A process group of its own (killpg below) but this session:
            # with the scheduler's autogroups (one per session), ranks in
            # sessions of their own are scheduled as separate groups, unlike
            # torchrun's workers or rina-allreduce-perf's forked ranks, which
            # share one.
            procs.append(subprocess.Popen(cmd_of_rank(r), stdout=log, stderr=subprocess.STDOUT,
                                          env=env, process_group=0))
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(timeout=timeout))
            except subprocess.TimeoutExpired:
                codes.append("timeout")
                break
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    if any(c != 0 for c in codes) or len(codes) < n:
        detail = "\n".join(f"---- rank {r} (exit {codes[r] if r < len(codes) else '?'}):\n"
                           f"{outputs[r][-3000:]}" for r in range(n))
        raise Failure(f"{shlex.join(cmd_of_rank(0))} failed\n{detail}")
    return outputs[0]


class CApi:
    """librina's rinaAllReduce through ctypes, one communicator over the ranks
    of torch's default group (rank 0's unique id goes out over it)."""
    FLOAT32, SUM, SUCCESS = 8, 0, 0

    def __init__(self, build, rank, world, torch, dist):
        import ctypes
        self.ctypes = ctypes
        self.lib = ctypes.CDLL(os.path.join(build, "lib/librina.so"))
        self.lib.rinaAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        self.lib.rinaCommGetLastError.restype = ctypes.c_char_p

        class UniqueId(ctypes.Structure):  # rinaUniqueId, passed by value
            _fields_ = [("internal", ctypes.c_char * 128)]
        self.lib.rinaCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                              UniqueId, ctypes.c_int]
        uid = UniqueId()
        if rank == 0:
            self.check(self.lib.rinaGetUniqueId(ctypes.byref(uid)), None)
        shared = torch.frombuffer(bytearray(bytes(uid)), dtype=torch.uint8).clone()
        dist.broadcast(shared, 0)
        ctypes.memmove(ctypes.byref(uid), shared.numpy().tobytes(), ctypes.sizeof(uid))
        self.comm = ctypes.c_void_p()
        self.check(self.lib.rinaCommInitRank(ctypes.byref(self.comm), world, uid, rank), None)

    def check(self, rc, comm):
        if rc != self.SUCCESS:
            raise SystemExit(f"rina C API: {rc}: {self.lib.rinaCommGetLastError(comm)}")

    def all_reduce(self, t):
        p = t.data_ptr()
        self.check(self.lib.rinaAllReduce(p, p, t.numel(), self.FLOAT32, self.SUM, self.comm),
                   self.comm)

    def close(self):
        self.lib.rinaCommDestroy(self.comm)


def run_torch2_job(script, args, extra):
    """Runs script's worker (`--worker --rank R ...` plus extra) on args.ranks
    ranks of args.python with the build's python-torch2 package; returns
    rank 0's RESULT data, the command of rank R, when it started and torch's
    version."""
    import datetime
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    version = torch_version(args.python)
    with tempfile.TemporaryDirectory(prefix="rina-torch2-", dir="/dev/shm") as store:
        def cmd(r):
            return [args.python, os.path.abspath(script), "--worker", "--rank", str(r),
                    "--world", str(args.ranks), "--store", store, "--build",
                    os.path.abspath(args.build), *extra]
        out = run_ranks(cmd, args.ranks, env_with_package(args.build, package="python-torch2"),
                        timeout=3600)
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), shown(cmd("R")), started, version


def torch_version(python):
    """The version of the torch that python imports."""
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def save_results(out, markdown, data):
    """Writes a driver's table to out (markdown) and its data beside it (.json)."""
    with open(out, "w") as f:
        f.write(markdown)
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(data, f, indent=1)
    print(markdown)


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip(), re.I)
    if not m:
        raise ValueError(f"bad size '{text}'")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def machine_note():
    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
            f"at the start")
