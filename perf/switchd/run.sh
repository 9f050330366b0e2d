#!/usr/bin/env bash
# The rina-switchd benchmark matrix of perf/results/switchd.md.
# Usage: perf/switchd/run.sh [BUILD_DIR] [REPS] [BASELINE_BUILD_DIR]
#   (build first: cmake --build BUILD_DIR --target rina-switchd-bench rina-socket-ceiling)
# Round-robin: each repetition runs every configuration once, so on a shared
# machine all configurations see the same background load (and a loss run
# sits right after its loss-free twin). With a baseline build, each
# repetition also runs the baseline's switch under this build's workers (the
# switch's cost, A/B) and the baseline's own benchmark (its client and
# switch: resends, A/B) right beside this build's.
set -euo pipefail
BUILD=${1:-build}
REPS=${2:-5}
BASE=${3:-}
BENCH="$BUILD/perf/switchd/rina-switchd-bench"
CEILING="$BUILD/perf/switchd/rina-socket-ceiling"
P64="--workers 4 --payload 64 --window 256 --elems 262144 --iters 20"
P1024="--workers 4 --payload 1024 --window 64 --elems 1048576 --iters 40"
CONFIGS=(
  "$P1024 --dtype int32"
  "$P1024 --dtype float32"
  "$P1024 --dtype int32 --drop-rate 0.01"
  "$P64"
  "$P1024 --dtype int32 --threads 2"
)
run() {  # LABEL COMMAND...
  echo "load $(cut -d' ' -f1-3 /proc/loadavg) | rep $r | $1"
  shift
  "$@" 2>/dev/null
}
for r in $(seq "$REPS"); do
  for c in "${CONFIGS[@]}"; do
    # shellcheck disable=SC2086
    run "rina-switchd-bench $c" "$BENCH" $c
  done
  run "rina-socket-ceiling --workers 4 --payload 1024 --window 64" \
    "$CEILING" --workers 4 --payload 1024 --window 64 --datagrams 400000
  if [ -n "$BASE" ]; then
    for d in int32 float32; do
      # shellcheck disable=SC2086
      run "baseline switch: rina-switchd-bench $P1024 --dtype $d" \
        "$BENCH" $P1024 --dtype $d --switchd "$BASE/p4_agent/rina-switchd"
    done
    # The baseline's own workers and switch. Its benchmark feeds each sum
    # back as the next input, so fewer calls (int32 overflows after ~11).
    OLD="--workers 4 --payload 1024 --window 64 --elems 1048576 --iters 8"
    # shellcheck disable=SC2086
    run "baseline bench: rina-switchd-bench $OLD" "$BASE/perf/switchd/rina-switchd-bench" $OLD
    # shellcheck disable=SC2086
    run "rina-switchd-bench $OLD" "$BENCH" $OLD
  fi
done
