#!/usr/bin/env bash
# librina_mpi.so against Open MPI alone, n = 4 ranks on this host: the same
# unmodified program (mpi-allreduce-bench) run natively and with
# LD_PRELOAD=librina_mpi.so, float32 sum, 4 KiB .. 64 MiB. LD_PRELOAD is per
# process, so the configurations cannot be interleaved within one run:
# they alternate run by run, ROUNDS times, and the table shows medians.
#
#   perf/mpi/run.sh [BUILD_DIR]            (default: build)
#
# Configurations, in this order every round:
#   native     Open MPI alone
#   preload    librina_mpi.so, default RINA_MPI_MIN_BYTES
#   rina-all   librina_mpi.so, RINA_MPI_MIN_BYTES=0 (rina at every size;
#              where it loses to native is where the threshold belongs)
# and, for the cost of delegation alone, 1 rank (every call delegated:
# single-rank) natively and preloaded, 4 KiB .. 32 KiB; and, for the
# threshold, rina-allreduce-perf with rina ("auto") and Open MPI ("mpi")
# interleaved in the same processes, 4 KiB .. 128 KiB: the two see the same
# machine noise, so their ratio is the trustworthy crossover.
#
# Environment: ROUNDS (default 5), NP (default 4). Raw outputs go to
# perf/results/raw/ (not committed); the table to perf/results/mpi-interposer.md.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$repo" && cd "${1:-build}" && pwd)
bench=$build/perf/mpi/mpi-allreduce-bench
lib=$build/lib/mpi/librina_mpi.so
perf_tool=$build/tools/rina-allreduce-perf
[[ -x $bench && -e $lib && -x $perf_tool ]] ||
  { echo "build mpi-allreduce-bench, rina_mpi and rina-allreduce-perf in $build first" >&2; exit 2; }

np=${NP:-4}
rounds=${ROUNDS:-5}
raw=$repo/perf/results/raw
out=$repo/perf/results/mpi-interposer.md
mkdir -p "$raw"
rm -f "$raw"/mpi-*.txt

if [[ $(id -u) == 0 ]]; then
  # Open MPI refuses root without these, and then exits 0 (docs/testing.md, "The lab").
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --mca mpi_yield_when_idle 1"
declare -A commands=(
  [native]="$mpirun -np $np $bench -b 4K -e 64M -f 2"
  [preload]="$mpirun -np $np -x LD_PRELOAD=$lib $bench -b 4K -e 64M -f 2"
  [rina-all]="$mpirun -np $np -x LD_PRELOAD=$lib -x RINA_MPI_MIN_BYTES=0 $bench -b 4K -e 64M -f 2"
  [native-1rank]="$mpirun -np 1 $bench -b 4K -e 32K -f 2 -r 15"
  [preload-1rank]="$mpirun -np 1 -x LD_PRELOAD=$lib $bench -b 4K -e 32K -f 2 -r 15"
  [interleaved]="$mpirun -np $np $perf_tool -b 4K -e 128K -f 2 -a auto,mpi -n 40"
)
order=(native preload rina-all native-1rank preload-1rank interleaved)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
for ((r = 1; r <= rounds; r++)); do
  for name in "${order[@]}"; do
    file=$raw/mpi-$name-run$r.txt
    echo "[$r/$rounds] $name: ${commands[$name]}" >&2
    # A run whose output has no table (mpirun refused, a crash) fails here.
    ${commands[$name]} > "$file" 2>&1 || { cat "$file" >&2; exit 1; }
    grep -q '^ *[0-9]' "$file" || { cat "$file" >&2; exit 1; }
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

command_args=()
for name in "${order[@]}"; do command_args+=(--command "$name=${commands[$name]}"); done
python3 "$repo/perf/mpi/summarize.py" --raw "$raw" --rounds "$rounds" --np "$np" \
  --start "$start" --load "$load_before / $load_after" \
  --commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" --build "${build#"$repo"/}" \
  --min-bytes "$(grep -o '"RINA_MPI_MIN_BYTES", "[^"]*"' "$repo/lib/core/config.cc" | cut -d'"' -f4)" \
  "${command_args[@]}" > "$out"
echo "wrote $out" >&2
