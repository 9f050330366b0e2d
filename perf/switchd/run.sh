#!/usr/bin/env bash
# Runs the rina-switchd aggregation benchmark matrix of perf/results/switchd.md.
# Usage: perf/switchd/run.sh [BUILD_DIR] [REPS]  (build first: cmake --build BUILD_DIR)
# Round-robin: each repetition runs every configuration once, so on a shared
# machine all configurations see the same background load (and a loss run
# sits right after its loss-free twin).
set -euo pipefail
BUILD=${1:-build}
REPS=${2:-5}
BENCH="$BUILD/perf/switchd/rina-switchd-bench"
P64="--workers 4 --payload 64 --window 256 --elems 262144 --iters 5"
P1024="--workers 4 --payload 1024 --window 64 --elems 1048576 --iters 5"
CONFIGS=(
  "$P64"
  "$P64 --drop-rate 0.01"
  "$P1024"
  "$P1024 --drop-rate 0.01"
  "$P1024 --dtype float32"
  "$P1024 --threads 2"
)
for r in $(seq "$REPS"); do
  for c in "${CONFIGS[@]}"; do
    echo "load $(cut -d' ' -f1 /proc/loadavg) | rep $r | $BENCH $c"
    # shellcheck disable=SC2086
    "$BENCH" $c 2>/dev/null
  done
done
