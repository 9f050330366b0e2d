#!/usr/bin/env bash
# Wall time of rina-sim for one 1 GiB allreduce on 10,240 workers in 1,024
# racks (10 hosts per rack, 8 spines), each algorithm separately, REPS runs.
# Usage: perf/sim/timing.sh [BUILD_DIR] [REPS]   (prints a markdown table)
set -euo pipefail
BUILD=${1:-build}
REPS=${2:-5}
SIM="$BUILD/tools/sim/rina-sim"
echo "load average before: $(cut -d" " -f1-3 /proc/loadavg) (2 cores, shared with other builds)"
echo
echo "| algorithm | INA racks | wall/user CPU seconds per run | simulated allreduce time (ms) |"
echo "|---|---|---|---|"
for frac in 1 0.5; do
  for algo in ring hier rina ps-ina; do
    times=()
    for _ in $(seq "$REPS"); do
      t=$( { /usr/bin/time -f "%e/%U" "$SIM" --leaf-spine 1024,10,8 -s 1G -a "$algo" --top 0 \
             --ina-fraction "$frac" > /tmp/rina-sim-timing.$$; } 2>&1 )
      times+=("$t")
    done
    sim=$(awk -v a="$algo" '$1 == a {print $5}' /tmp/rina-sim-timing.$$)
    echo "| $algo | $(awk -v f="$frac" 'BEGIN{print f*100}')% | ${times[*]} | $sim |"
  done
done
rm -f /tmp/rina-sim-timing.$$
