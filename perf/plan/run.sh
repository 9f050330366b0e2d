#!/usr/bin/env bash
# GRID routing against its baselines, and the GRID LP timing: a k=8 fat tree (128
# hosts) with heterogeneous rates, GRID vs nearest-switch (ATP) vs no INA.
#   perf/plan/run.sh [BUILD_DIR]   (default build) -> perf/results/plan-grid.{csv,png}, table on stdout
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../results
seeds=${RINA_PLAN_SEEDS:-10}
{
  "$build/perf/plan/grid_bench" --k 8 --seeds "$seeds" --ina 0.25,0.5,1 --samples 64 \
    --host-mbit 10000,25000,40000,100000 | sed 's/^/mixed,/; 1s/^mixed,/host_links,/'
  "$build/perf/plan/grid_bench" --k 8 --seeds "$seeds" --ina 0.25,0.5,1 --samples 64 \
    --host-mbit 100000 | tail -n +2 | sed 's/^/100G,/'
} > "$out/plan-grid.csv"
/usr/bin/python3 "$here/summarize.py" "$out/plan-grid.csv" "$out/plan-grid.png"
echo "wrote $out/plan-grid.csv and plan-grid.png (table above)"
