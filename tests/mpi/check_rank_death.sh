#!/usr/bin/env bash
# check_rank_death.sh NRANKS VICTIM MPIRUN ARGS...
# Runs the mpirun line; every rank but VICTIM must report a failed
# MPI_Allreduce (rank_death.c) and its interposer WARN must name the
# victim: "peer VICTIM" from rina's message (the rank next to it sees its
# connection close; the others get the revoke that carries that error).
set -u
n=$1 victim=$2
shift 2
out=$("$@" 2>&1)
echo "$out"
for ((r = 0; r < n; r++)); do
  [ "$r" -eq "$victim" ] && continue
  grep -q "^rank_death: rank $r: MPI_Allreduce failed" <<< "$out" ||
    { echo "FAIL: rank $r did not report a failed call"; exit 1; }
  grep -Eq "rina-mpi: MPI_Allreduce on MPI_COMM_WORLD \(rank $r of $n\) failed: .*peer $victim[^0-9]" <<< "$out" ||
    { echo "FAIL: rank $r's error does not name rank $victim"; exit 1; }
done
echo "rank death test ok"
