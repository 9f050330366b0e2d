#!/usr/bin/env bash
# netlab_replan_test.sh NETLAB PERF TOPOLOGY
# A mid-run rate change in the lab makes the communicator re-plan, and the
# allreduce time comes back. Lab: 2 racks of 2 hosts (no INA: hier), host
# links 400 Mbit/s, 2 spines with every uplink at 200. hier runs 2 MiB
# allreduces back to back (every call checked, -c 2) under
# RINA_PLAN_THRESHOLD=0.5, RINA_PLAN_INTERVAL=0 and RINA_PLAN_CHECK_EVERY=1;
# the first plan puts both rack hops on spine 0 (equal rates: the first of
# equals). Once rank 0 has timed 12 allreduces (its --timeline grows as they
# end), rack a's uplink to spine 0 drops to 50 Mbit/s (`shape`, both
# directions). Checks:
#  - every result right, and the stats line counts at least one re-plan;
#  - rank 0's INFO line gives the reason: a link between the racks on
#    spine 0 moved, and that plan puts both rack hops on spine 1;
#  - the change hit the run: some allreduce within 2 s of it took >= 1.5x
#    the median before (the slowed hops carry 4x less);
#  - recovery: the median of the allreduces starting 2 s or more after the
#    change is within 1.3x of the median before. After the re-plan the hops
#    run on spine 1, whose 200 Mbit/s uplinks are what spine 0 had before,
#    so the time is that of before; 1.3x covers the spread of single
#    iterations on a shared two-core host (about +-15% here), while staying
#    on the slowed spine would be >= 2x.
# Exits 77 without root, namespaces or mpirun.
set -u
netlab=$1 perf=$2 topology=$3

. "$(cd "$(dirname "$0")" && pwd)/lab_common.sh"
shaper=
lab_before_cleanup() { [ -n "$shaper" ] && kill "$shaper" 2> /dev/null; }
lab_init trp

lab up "$topology" > /dev/null || fail "up failed"

# wait_lines FILE N SECS: until FILE has N lines, at most SECS seconds.
wait_lines() {
  local file=$1 n=$2 deadline=$((SECONDS + $3)) have
  while :; do
    have=$(wc -l 2> /dev/null < "$file") || have=0
    [ "$have" -ge "$n" ] && return 0
    [ "$SECONDS" -lt "$deadline" ] || {
      echo "rank 0 timed $((have > 0 ? have - 1 : 0)) allreduces in $3 s, not $((n - 1))"
      return 1
    }
    sleep 0.1
  done
}
# The change once rank 0 has timed 12 allreduces (a header line, then one
# line each), so that it falls inside the run on any machine: ~9 of them
# count as "before" below, ~68 are left for after.
(wait_lines "$work/timeline" 13 90 > "$work/shape" &&
  lab shape --rack a --spine 0 --mbit 50 > "$work/shape") &
shaper=$!
out=$(lab run --timeout 100 --env RINA_PATHS=planned --env RINA_PLAN_THRESHOLD=0.5 \
  --env RINA_PLAN_INTERVAL=0 --env RINA_PLAN_CHECK_EVERY=1 --env RINA_DEBUG=INFO -- \
  "$perf" -a hier -b 2M -e 2M -n 80 -w 0 -c 2 --timeline "$work/timeline" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "rina-allreduce-perf exited $rc: $out"
wait "$shaper" || fail "shape failed: $(cat "$work/shape" 2> /dev/null)"
shaper=
grep -Eq "^# Out of bounds values : 0 OK$" <<< "$out" || fail "wrong results: $out"
awk '$1 ~ /^[0-9]+$/ && $5 == "hier" {n++; if ($NF != 0) bad = 1} END {exit bad || n != 1}' \
  <<< "$out" || fail "no hier row or #wrong != 0: $out"
changed=$(sed -n 's/.* at \([0-9.]*\)$/\1/p' "$work/shape")
[ -n "$changed" ] || fail "shape printed no time: $(cat "$work/shape")"

# 1. A re-plan, for the moved link, onto spine 1.
grep -Eq "^# rina plans: epoch [0-9]+ replans [1-9][0-9]* checks" <<< "$out" ||
  fail "no re-plan counted: $(grep '^# rina plans' <<< "$out")"
line=$(grep -Eo "plan #[0-9]+ \(link [0-3]->[0-3] on spine 0 moved [0-9]+ -> [0-9]+ Mbit/s[^)]*\)\): ring .*" <<< "$out" | sed -n 1p)
[ -n "$line" ] || fail "no INFO line naming a link on spine 0: $(grep 'plan #' <<< "$out")"
read -r from to < <(sed -E 's/.*\(link ([0-3])->([0-3]) .*/\1 \2/' <<< "$line")
[ $((from / 2)) -ne $((to / 2)) ] || fail "the reason names a link inside a rack: $line"
ring=${line#*: ring }
hops=$(grep -Eo -- "-s[0-9]->" <<< "$ring" | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')
[ "$hops" = "2-s1-> " ] || fail "the re-plan's rack hops are not both on spine 1 ($hops): $line"
echo "re-plan: $line"

# 2. Slowed, then back (exit 3: a time outside its bound).
python3 - "$work/timeline" "$changed" << 'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
t = [(float(r[2]), float(r[3]) * 1e-6) for r in rows]
change = float(sys.argv[2])
before = [d for s, d in t[3:] if s + d < change]
during = [d for s, d in t if s + d >= change and s < change + 2]
after = [d for s, d in t if s >= change + 2]
if len(before) < 5 or len(after) < 5:
    sys.exit(f"too few allreduces around the change: {len(before)} before, {len(after)} after")
b, a = statistics.median(before), statistics.median(after)
slowest = max(during) if during else 0
print(f"median before {b * 1e3:.1f} ms ({len(before)}), slowest within 2 s of the change "
      f"{slowest * 1e3:.1f} ms, median from 2 s on {a * 1e3:.1f} ms ({len(after)}), "
      f"after/before {a / b:.2f}")
if slowest < 1.5 * b:
    print("the change did not slow any allreduce: it did not reach the run")
    sys.exit(3)
if a > 1.3 * b:
    print(f"no recovery: {a / b:.2f}x the time before the change (bound 1.3x)")
    sys.exit(3)
PY
case $? in
  0) ;;
  3) timing_miss "allreduce times around the change (above)" ;;
  *) fail "timeline (above)" ;;
esac

lab down > /dev/null || fail "down failed"
lab_done "netlab replan test ok"
