#!/bin/sh
# Inside the RDMA VM: runs the checks of a manifest one after the other and
# leaves each one's output and exit status in OUT (NAME.log, NAME.rc, and
# its seconds in NAME.secs), for tests/rdma/result.sh to report on the host.
# A manifest line is "NAME LIMIT_SECONDS COMMAND...", the command in shell
# words (its paths quoted); a check still running after its limit is killed
# (status 124).
#
# usage: checks.sh OUT MANIFEST
set -u
out=$1
manifest=$2
[ -r "$manifest" ] || { echo "checks.sh: cannot read the manifest $manifest"; exit 2; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
while read -r name limit cmd; do
  case "$name" in '' | '#'*) continue ;; esac
  start=$(uptime_s)
  echo "=== $name (limit ${limit} s) at ${start} s"
  # The rest of the line is shell words (paths quoted by the manifest).
  timeout -k 10 "$limit" sh -c "$cmd" >"$out/$name.log" 2>&1 </dev/null
  rc=$?
  end=$(uptime_s)
  echo "$rc" >"$out/$name.rc"
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' >"$out/$name.secs"
  echo "=== $name: status $rc after $(cat "$out/$name.secs") s"
  tail -5 "$out/$name.log"
done <"$manifest"
exit 0
