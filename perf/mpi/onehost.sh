#!/usr/bin/env bash
# rina against Open MPI and a bare copy of the same bytes on this host, with
# rina-onehost-bench under mpirun (the three interleaved inside one run: the
# same processes, the same machine noise), one result file per collective:
#   perf/results/p2p-pingpong.md       2 ranks, 8 B .. 16 MiB: rinaSend/rinaRecv,
#                                      MPI_Send/MPI_Recv, a flagged memcpy
#   perf/results/alltoall.md           4 ranks, 64 KiB .. 64 MiB per rank
#   perf/results/allreduce-onehost.md  4 ranks, 8 B .. 64 MiB, float32 sum
#
#   perf/mpi/onehost.sh [BUILD_DIR] [pingpong|alltoall|allreduce ...]
#
# BUILD_DIR defaults to build (relative to the repository root); the
# default runs all three. Environment: ROUNDS (default 7), NP (ranks of
# alltoall and allreduce, default 4), SUFFIX (added to the result files'
# names). Open MPI busy-polls when each rank has a core (ping-pong on 2
# cores); more ranks than cores add --oversubscribe --mca
# mpi_yield_when_idle 1, or its ranks starve each other (docs/testing.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build_arg=${1:-build}
shift || true
build=$(cd "$repo" && cd "$build_arg" && pwd)
bench=$build/perf/mpi/rina-onehost-bench
[[ -x $bench ]] || { echo "build rina-onehost-bench in $build first" >&2; exit 2; }
# The command as written into the results: relative to the repository root.
shown=${bench#"$repo"/}
rounds=${ROUNDS:-7}
np=${NP:-4}
suffix=${SUFFIX:-}
modes=("$@")
((${#modes[@]})) || modes=(pingpong alltoall allreduce)
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cores=$(nproc)
flags_for() {  # RANKS
  if (($1 > cores)); then echo "--oversubscribe --mca mpi_yield_when_idle 1"; fi
}

run() {  # OUT TITLE NOTE RANKS ARGS...
  local out=$1 title=$2 note=$3 ranks=$4
  shift 4
  local load_before started table commit flags
  flags=$(flags_for "$ranks")
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  started=$(date -u '+%Y-%m-%d %H:%M UTC')
  commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
  echo "running: mpirun -np $ranks $flags $shown $*" >&2
  # shellcheck disable=SC2086  # flags is a word list
  table=$(mpirun -np "$ranks" $flags "$bench" "$@")
  {
    echo "# $title"
    echo
    echo "$note Columns: time per call and bytes / time for the bare copy, rina and Open MPI; each one's share of the copy's bandwidth (copy time / its time); rina's time over Open MPI's. Medians of $rounds interleaved rounds. Taken $started on $cores CPUs at commit $commit; load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after (1 / 5 / 15 min)."
    echo
    echo '```'
    echo "$table"
    echo '```'
    echo
    echo "Command (perf/mpi/onehost.sh):"
    echo
    echo '```'
    echo "mpirun -np $ranks${flags:+ $flags} $shown $*"
    echo '```'
  } >"$out"
  cat "$out"
}

for mode in "${modes[@]}"; do
  case $mode in
    pingpong)
      run "$repo/perf/results/p2p-pingpong$suffix.md" \
        "Point-to-point ping-pong: rina against Open MPI and a bare copy" \
        "2 ranks on one host under mpirun; one-way time = round trip / 2: rinaSend/rinaRecv, MPI_Send/MPI_Recv, and the copy (each side memcpy's the bytes into the other's part of an MPI shared-memory window and raises a flag the other polls)." \
        2 pingpong -b 8 -e 16M -f 2 -r "$rounds"
      ;;
    alltoall)
      run "$repo/perf/results/alltoall$suffix.md" \
        "All-to-all: rinaAllToAll against MPI_Alltoall and a bare copy" \
        "$np ranks on one host under mpirun, float32, S bytes sent per rank (S / $np to each rank); the copy is a barrier, then each block copied once straight out of the other ranks' send buffers in one MPI shared-memory window." \
        "$np" alltoall -b 64K -e 64M -f 4 -r "$rounds"
      ;;
    allreduce)
      run "$repo/perf/results/allreduce-onehost$suffix.md" \
        "Allreduce on one host: rinaAllReduce against MPI_Allreduce and a bare copy" \
        "$np ranks on one host under mpirun, float32 sum, out of place, rina's default algorithm (auto); the copy is a barrier, then a memcpy of the same bytes on every rank." \
        "$np" allreduce -b 8 -e 64M -f 2 -r "$rounds"
      ;;
    *)
      echo "unknown mode $mode (pingpong, alltoall, allreduce)" >&2
      exit 2
      ;;
  esac
done
