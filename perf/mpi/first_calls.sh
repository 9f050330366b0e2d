#!/usr/bin/env bash
# Per-call time of the first calls on a fresh communicator: librina_mpi.so
# (LD_PRELOAD) against the MPI library, n = 4 ranks on this host, float32 sum,
# 64 KiB and 4 MiB. mpi-first-calls interleaves the two in one run (trial by
# trial, each on its own fresh communicator: MPI_Allreduce is rina,
# PMPI_Allreduce the MPI library), so both see the same machine noise; a
# second run without the preload checks that the two columns then agree.
# The preloaded run logs, per communicator and rank, how long rina's set-up
# took and where (the unique id allgather, rina's own set-up, the agreement).
#
#   perf/mpi/first_calls.sh [BUILD_DIR]            (default: build)
#
# Environment: NP (4), CALLS (200), TRIALS (7). Raw outputs go to
# perf/results/raw/ (not committed); the tables to perf/results/mpi-first-calls.md.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$repo" && cd "${1:-build}" && pwd)
bench=$build/perf/mpi/mpi-first-calls
lib=$build/lib/mpi/librina_mpi.so
[[ -x $bench && -e $lib ]] || { echo "build mpi-first-calls and rina_mpi in $build first" >&2; exit 2; }

np=${NP:-4}
calls=${CALLS:-200}
trials=${TRIALS:-7}
raw=$repo/perf/results/raw
out=$repo/perf/results/mpi-first-calls.md
mkdir -p "$raw"

if [[ $(id -u) == 0 ]]; then
  # Open MPI refuses root without these, and then exits 0 (shared/LAB-NOTES.md).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np $np"
args="-s 64K,4M -n $calls -t $trials"
# RINA_DEBUG=INFO: each rank's set-up time and its parts, once per communicator.
preloaded="$mpirun -x LD_PRELOAD=$lib -x RINA_DEBUG=INFO $bench $args -o $raw/first-calls-preloaded.csv"
native="$mpirun $bench $args -o $raw/first-calls-native.csv"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
for run in preloaded native; do
  echo "$run: ${!run}" >&2
  # A run whose output has no table (mpirun refused, a crash) fails here.
  ${!run} > "$raw/first-calls-$run.txt" 2>&1 || { cat "$raw/first-calls-$run.txt" >&2; exit 1; }
  grep -q '^# wrong elements: 0$' "$raw/first-calls-$run.txt" ||
    { cat "$raw/first-calls-$run.txt" >&2; exit 1; }
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

/usr/bin/python3 "$repo/perf/mpi/first_calls_summary.py" --raw "$raw" --np "$np" \
  --calls "$calls" --trials "$trials" --start "$start" --load "$load_before / $load_after" \
  --commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --command "preloaded=${preloaded//$repo\//}" --command "native=${native//$repo\//}" > "$out"
echo "wrote $out" >&2
