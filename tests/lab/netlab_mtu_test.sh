#!/usr/bin/env bash
# netlab_mtu_test.sh NETLAB SWITCHD PERF TOPOLOGY
# INA datagrams and the path MTU. Lab: 2 INA racks of 2 hosts and 2 plain
# hosts (lab_topology.json), every link at MTU 1500, RINA_PLAN_INA=on (the
# racks would be on their switches), rina at 1 MiB, every result checked.
#  - The switches started with --payload 2048: a datagram is 8244 bytes on
#    IP, which a 1500-byte path fragments. Each rack's agent says so in the
#    fallback's WARN (the sizes, the MTU, the --payload that fits: 362) and
#    both racks sum on their hosts: no switch call, 4 workers fall back.
#  - The switches at rina-netlab's default for MTU 1500 (--payload 362, a
#    1500-byte datagram): the racks stay on their switches, no fallback.
# Exits 77 without root, namespaces or mpirun.
set -u
netlab=$1 switchd=$2 perf=$3 topology=$4

. "$(cd "$(dirname "$0")" && pwd)/lab_common.sh"
lab_init tmtu

run_rina() {
  lab run --timeout 150 --env RINA_PLAN_INA=on --env RINA_DEBUG=INFO -- \
    "$perf" -a rina -b 1M -e 1M -n 2 -w 1 -c 1 2>&1
}

# calls_and_fallbacks OUTPUT: "CALLS FALLBACKS" from the stats line.
calls_and_fallbacks() {
  sed -nE 's/^# rina INA, all ranks: switch calls ([0-9]+) .* fallbacks ([0-9]+) .*/\1 \2/p' <<< "$1"
}

lab up "$topology" --switchd "$switchd" --mtu 1500 --switchd-args "--payload 2048" > /dev/null ||
  fail "up failed"
out=$(run_rina)
rc=$?
[ "$rc" -eq 0 ] || fail "rina-allreduce-perf exited $rc: $out"
grep -Eq "^# Out of bounds values : 0 OK$" <<< "$out" || fail "wrong results: $out"
for rack in a b; do
  grep -Eq "rack $rack: falling back to host aggregation \(hier\) for this and later collectives: an INA datagram of 2048 elements is 8244 bytes on IP, more than the path MTU 1500 of rank [0-9]+'s route to switch [0-9.]+:[0-9]+ .*--payload 362 or less" <<< "$out" ||
    fail "rack $rack: no fallback naming the MTU: $(grep -E 'rack|WARN' <<< "$out")"
done
read -r calls fallbacks <<< "$(calls_and_fallbacks "$out")"
[ "${calls:-x}" = 0 ] && [ "${fallbacks:-x}" = 4 ] ||
  fail "expected 0 switch calls and 4 fallbacks, got '${calls:-}' and '${fallbacks:-}': $(grep '^# rina INA' <<< "$out")"
lab down > /dev/null || fail "down failed"

lab up "$topology" --switchd "$switchd" --mtu 1500 > /dev/null || fail "second up failed"
out=$(run_rina)
rc=$?
[ "$rc" -eq 0 ] || fail "rina-allreduce-perf exited $rc at the default payload: $out"
grep -Eq "^# Out of bounds values : 0 OK$" <<< "$out" || fail "wrong results: $out"
grep -Eq "rack a: INA job [0-9]+ on switch .* payload 362" <<< "$out" ||
  fail "rack a's grant is not 362 elements: $(grep 'INA job' <<< "$out")"
read -r calls fallbacks <<< "$(calls_and_fallbacks "$out")"
[ "${calls:-0}" -gt 0 ] && [ "${fallbacks:-x}" = 0 ] ||
  fail "expected switch calls and no fallback, got '${calls:-}' and '${fallbacks:-}': $(grep '^# rina INA' <<< "$out")"
lab_done "INA datagrams larger than the path MTU are refused; sized to it they run"
