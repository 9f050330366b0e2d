#!/usr/bin/env bash
# perf/lab/elastic_lab.sh [BUILD] [ROUNDS]: the elastic lab test
# (tests/lab/netlab_elastic_test.sh) at the issue's size: loops of 64 MiB
# float32 allreduces, then 100 allreduces of 4 KiB, 4 MiB and 64 MiB after
# each shrink; 20 rounds by default. Needs root. Writes the run's log (each
# round, each survivor's shrink time) to perf/results/elastic-lab.md with
# the command that made it.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
rounds=${2:-20}
out=$here/perf/results/elastic-lab.md
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmd=(tests/lab/netlab_elastic_test.sh tools/rina-netlab "$build/p4_agent/rina-switchd"
     "$build/p4_agent/rina-switchctl" "$build/tests/lab/netlab_elastic_rank"
     tests/lab/elastic/two_racks_of_three.json "$rounds" 16777216 1024,1048576,16777216)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
(cd "$here" && "${cmd[@]}") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# Elastic communicators in the lab at full size"
  echo
  echo "Two INA racks of 3 hosts and 2 autonomous hosts (1000 Mbit/s host links),"
  echo "one rank per host; $rounds rounds alternating a killed worker (revoke, shrink,"
  echo "100 exact allreduces on the switch, a grow) and a killed and restarted"
  echo "switch (fallback, return at a plan check); loops of 64 MiB float32"
  echo "allreduces. Taken $start on $(nproc) CPUs; load average $load_before before,"
  echo "$load_after after (1 / 5 / 15 min). Exit code $rc."
  echo
  echo '```'
  grep -E '^(round|netlab|FAIL|SKIP|inconclusive)' "$log"
  echo '```'
  echo
  echo "Command (from the repository root):"
  echo
  echo '```'
  echo "${cmd[*]}"
  echo '```'
} > "$out"
exit "$rc"
