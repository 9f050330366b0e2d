"""librina_mpi under mpi4py (run with LD_PRELOAD): Comm.Allreduce on numpy
buffers must give what a serial numpy reduction of every rank's input gives.
Prints "interposer_mpi4py: N ranks, F failures" on rank 0; exit code 1 if any
rank failed. The ctest entry also checks the RINA_MPI_STATS report, which
shows whether the calls really went through rina."""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
failures = 0


def expect(ok, what):
    global failures
    if not ok:
        failures += 1
        print(f"FAIL rank {rank}: {what}", file=sys.stderr)


def inputs(r, dtype, n):
    # Small integers: sums and products are exact in every dtype.
    values = (np.arange(n) * 7 + r * 13) % 11 - 5
    return values.astype(dtype)


N = 100003  # odd: chunks do not divide evenly
OPS = [(MPI.SUM, np.add), (MPI.PROD, np.multiply), (MPI.MIN, np.minimum), (MPI.MAX, np.maximum)]
for dtype in (np.float32, np.float64, np.int32, np.int64):
    for op, combine in OPS:
        n = N if op != MPI.PROD else 20011
        mine = inputs(rank, dtype, n)
        if op == MPI.PROD:
            mine = np.where(mine > 0, 2, 1).astype(dtype)  # no overflow
        got = np.empty_like(mine)
        comm.Allreduce(mine, got, op=op)
        want = None
        for r in range(size):
            theirs = inputs(r, dtype, n)
            if op == MPI.PROD:
                theirs = np.where(theirs > 0, 2, 1).astype(dtype)
            want = theirs if want is None else combine(want, theirs)
        expect(np.array_equal(got, want), f"Allreduce {np.dtype(dtype).name} {op}")

# In place.
buf = inputs(rank, np.float64, N)
comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
expect(np.array_equal(buf, sum(inputs(r, np.float64, N) for r in range(size))), "in place")

# Below the threshold: delegated, still right.
total = np.array([failures], dtype=np.int32)
comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
if rank == 0:
    print(f"interposer_mpi4py: {size} ranks, {int(total[0])} failures", flush=True)
sys.exit(0 if total[0] == 0 else 1)
