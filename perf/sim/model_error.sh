#!/usr/bin/env bash
# The aggregate model (one coupled flow per allreduce: full overlap between
# ring steps) against the step-synchronous model (every step its own flows,
# no overlap): ring and rina, 1 GiB, 100 Gbit/s hosts, step latency 5 us.
# Usage: perf/sim/model_error.sh [BUILD_DIR]   (prints a markdown table)
set -euo pipefail
BUILD=${1:-build}
SIM="$BUILD/tools/sim/rina-sim"
echo "| racks x hosts, spines | algorithm | aggregate (ms) | steps (ms) | steps / aggregate |"
echo "|---|---|---|---|---|"
for shape in 4,4,1 16,8,2 64,16,4 16,32,4; do
  for algo in ring rina; do
    agg=$("$SIM" --leaf-spine "$shape" -a "$algo" -s 1G --top 0 | awk -v a="$algo" '$1 == a {print $5}')
    stp=$("$SIM" --leaf-spine "$shape" -a "$algo" -s 1G --top 0 --model steps |
          awk -v a="$algo" '$1 == a {print $5}')
    ratio=$(awk -v a="$agg" -v s="$stp" 'BEGIN{printf "%.2f", s / a}')
    echo "| $shape | $algo | $agg | $stp | $ratio |"
  done
done
