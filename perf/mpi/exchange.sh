#!/usr/bin/env bash
# rina's point-to-point and all-to-all against Open MPI on this host, with
# rina-exchange-bench under mpirun (each comparison interleaved inside one
# run: the same processes, the same machine noise):
#   perf/results/p2p-pingpong.md  2 ranks, 8 B .. 16 MiB, rinaSend/rinaRecv
#                                 against MPI_Send/MPI_Recv
#   perf/results/alltoall.md      4 ranks, 64 KiB .. 64 MiB per rank,
#                                 rinaAllToAll against MPI_Alltoall and a
#                                 bare shared-memory copy
#
#   perf/mpi/exchange.sh [BUILD_DIR]         (default: build)
#
# Environment: ROUNDS (default 9). Open MPI runs as it does by default with
# as many ranks as cores (busy polling, no yield); 4 ranks on fewer cores
# add --oversubscribe --mca mpi_yield_when_idle 1 (docs/testing.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$repo" && cd "${1:-build}" && pwd)
bench=$build/perf/mpi/rina-exchange-bench
[[ -x $bench ]] || { echo "build rina-exchange-bench in $build first" >&2; exit 2; }
rounds=${ROUNDS:-9}
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cores=$(nproc)
flags=()
if ((cores < 4)); then flags=(--oversubscribe --mca mpi_yield_when_idle 1); fi

run() {  # OUT TITLE NOTE COMMAND...
  local out=$1 title=$2 note=$3
  shift 3
  local load_before started table
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  started=$(date -u '+%Y-%m-%d %H:%M UTC')
  echo "running: $*" >&2
  table=$("$@")
  {
    echo "# $title"
    echo
    echo "$note Taken $started on $cores CPUs; load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after (1 / 5 / 15 min)."
    echo
    echo '```'
    echo "$table"
    echo '```'
    echo
    echo "Command (perf/mpi/exchange.sh):"
    echo
    echo '```'
    echo "$*"
    echo '```'
  } > "$out"
  cat "$out"
}

run "$repo/perf/results/p2p-pingpong.md" "Point-to-point ping-pong: rina against Open MPI" \
  "2 ranks on one host under mpirun; per size and round one block of round trips through MPI_Send/MPI_Recv and one through rinaSend/rinaRecv, alternating; one-way time = round trip / 2, medians over $rounds rounds (rina-exchange-bench pingpong)." \
  mpirun -np 2 "$bench" pingpong -b 8 -e 16M -f 2 -r "$rounds"
run "$repo/perf/results/alltoall.md" "All-to-all: rinaAllToAll against MPI_Alltoall and a bare copy" \
  "4 ranks on one host under mpirun, float32, S bytes sent per rank (S / 4 to each rank); per size and round a block of each of: copy (a barrier, then each block copied once straight out of the other ranks' send buffers in one MPI shared-memory window), rinaAllToAll, MPI_Alltoall, in rotating order; a block's time is the slowest rank's mean per call; medians over $rounds rounds (rina-exchange-bench alltoall)." \
  mpirun -np 4 "${flags[@]}" "$bench" alltoall -b 64K -e 64M -f 4 -r "$rounds"
