#!/usr/bin/env bash
# Runs the rina-switchd aggregation benchmark matrix of perf/results/switchd.md.
# Usage: perf/switchd/run.sh [BUILD_DIR] [REPS]  (build first: cmake --build BUILD_DIR)
set -euo pipefail
BUILD=${1:-build}
REPS=${2:-3}
BENCH="$BUILD/perf/switchd/rina-switchd-bench"
run() {
  for r in $(seq "$REPS"); do
    echo "load $(cut -d' ' -f1 /proc/loadavg) | $BENCH $*"
    "$BENCH" "$@" 2>/dev/null
  done
}
# 4 senders (workers), int32 exact path; payload 64 and 1024 elements.
run --workers 4 --payload 64 --window 256 --elems 262144 --iters 5
run --workers 4 --payload 1024 --window 64 --elems 1048576 --iters 5
# float32 (quantized; one window of exponent-only slices per call).
run --workers 4 --payload 1024 --window 64 --elems 1048576 --iters 5 --dtype float32
# Two aggregation threads in the switch.
run --workers 4 --payload 1024 --window 64 --elems 1048576 --iters 5 --threads 2
# The cost of 1% loss (dropped on receive by the switch: contributions and resends).
run --workers 4 --payload 64 --window 256 --elems 262144 --iters 5 --drop-rate 0.01
run --workers 4 --payload 1024 --window 64 --elems 1048576 --iters 5 --drop-rate 0.01
