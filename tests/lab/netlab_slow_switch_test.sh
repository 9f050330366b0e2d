#!/usr/bin/env bash
# netlab_slow_switch_test.sh NETLAB SWITCHD PERF TOPOLOGY
# A rack whose switch sums slowly is taken off it after the first
# measures. Lab: an INA rack of 3 hosts and one host, 200 Mbit/s links; the
# rack's rina-switchd takes 200 datagrams/s (--capacity-pps 200, 8 KiB
# each: about 13 Mbit/s, where its hosts could send 600). The plan starts
# with the rack on its switch (its hosts carry 4/3 S against the flat
# ring's 1.5 S); rina runs 1 MiB allreduces with a check before each
# (RINA_PLAN_CHECK_EVERY=1). Checks:
#  - every result right (ring and rina, -c 1);
#  - rank 0 re-planned once, naming the switch's measured rate, and made
#    the rack autonomous (summed on its hosts it would carry 5/3 S);
#  - the switch saw only the first call's datagrams: the ranks' switch
#    calls are those of one allreduce (2 per worker);
#  - rina's mean time over the timed calls is within 1.2x of the ring's
#    (off the switch both move the ring's bytes; on it each call took
#    seconds).
# Exits 77 without root, namespaces or mpirun.
set -u
netlab=$1 switchd=$2 perf=$3 topology=$4

. "$(cd "$(dirname "$0")" && pwd)/lab_common.sh"
lab_init tsw

lab up "$topology" --switchd "$switchd" --mtu 9000 --switchd-args "--payload 2048 --capacity-pps 200" \
  > /dev/null || fail "up failed"
out=$(lab run --timeout 150 --env RINA_PLAN_CHECK_EVERY=1 --env RINA_DEBUG=INFO -- \
  "$perf" -a ring,rina -b 1M -e 1M -n 4 -w 1 -c 1 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "rina-allreduce-perf exited $rc: $out"
grep -Eq "^# Out of bounds values : 0 OK$" <<< "$out" || fail "wrong results: $out"

grep -Eq "^# rina plans: epoch 2 replans 1 checks" <<< "$out" ||
  fail "not one re-plan: $(grep '^# rina plans' <<< "$out")"
reason=$(grep -Eo "plan #2 \(the switch of rack r0 measured [0-9.]+ Mbit/s \(plan #1: no limit\)\)" <<< "$out" | sed -n 1p)
[ -n "$reason" ] || fail "no re-plan naming the switch: $(grep 'plan #' <<< "$out")"
grep -Eq "plan #2: rack r0 \(INA, 3 hosts, switch [0-9]+ Mbit/s\): .* -> autonomous" <<< "$out" ||
  fail "the rack did not go autonomous: $(grep 'plan #2' <<< "$out")"
calls=$(sed -nE 's/^# rina INA, all ranks: switch calls ([0-9]+) .*/\1/p' <<< "$out")
[ "${calls:-99}" -le 6 ] || fail "the switch was used after the re-plan ($calls switch calls)"
echo "re-plan: $reason"

times=$(awk '$1 ~ /^[0-9]+$/ {print $5, $6}' <<< "$out")
ring=$(awk '$1 == "ring" {print $2}' <<< "$times")
rina=$(awk '$1 == "rina" {print $2}' <<< "$times")
[ -n "$ring" ] && [ -n "$rina" ] || fail "no ring and rina rows: $out"
echo "1 MiB: ring $ring us, rina $rina us"
awk -v a="$rina" -v b="$ring" 'BEGIN {exit !(a <= 1.2 * b)}' ||
  timing_miss "rina $rina us against the ring's $ring us (bound 1.2x)"

lab down > /dev/null || fail "down failed"
lab_done "netlab slow switch test ok"
