#!/usr/bin/env bash
# netlab_spines_test.sh NETLAB SWITCHD PERF TOPOLOGY
# A lab with two spines (planes): 2 INA racks of 2 hosts at 200 Mbit/s, every
# rack's uplink to spine 0 at 50 Mbit/s and to spine 1 at 200. Checks: each
# host has a NIC and an address per plane (resolved file's spine_addrs);
# TCP between racks runs at spine 0's rate over the plane-0 address and at
# spine 1's over the plane-1 address (within 10% of 0.956 x rate); `shape`
# lowers rack a's uplink to spine 1 to 100 Mbit/s mid-lab and TCP follows;
# bad `shape` input is refused by name; ring and rina under RINA_PATHS=planned
# give correct results with the hops on spine 1 (INFO line) over per-spine
# connections; `down` leaves nothing. Exits 77 without root or namespaces.
set -u
netlab=$1 switchd=$2 perf=$3 topology=$4
here=$(cd "$(dirname "$0")" && pwd)
rate_tool=$here/tcp_rate.py

. "$here/lab_common.sh"
lab_init ts

# TCP goodput from a0 to ADDR (a host of rack b) in Mbit/s.
tcp_rate() {
  local server=$1 addr=$2 port=$3
  lab exec "$server" -- "$rate_tool" serve "$addr" "$port" > "$work/rate" 2>&1 &
  local pid=$!
  lab exec a0 -- "$rate_tool" send "$addr" "$port" 2 || fail "the TCP sender to $addr failed"
  wait "$pid" || fail "the TCP receiver at $addr failed: $(cat "$work/rate")"
  sed -n 's/^rate_mbit=\([0-9.]*\).*/\1/p' "$work/rate"
}
# check_rate RATE LINK WHAT: RATE within 10% of 0.956 x LINK (TCP goodput).
# Above it the shaping is wrong; below it, crowded CPUs may be the cause.
check_rate() {
  awk -v r="$1" -v l="$2" 'BEGIN {exit !(r <= 1.1 * 0.956 * l)}' ||
    fail "$3 ran at $1 Mbit/s, above its shaped rate"
  awk -v r="$1" -v l="$2" 'BEGIN {exit !(r >= 0.9 * 0.956 * l)}' || timing_miss "$3 ran at $1 Mbit/s"
}

lab up "$topology" --switchd "$switchd" || fail "up failed"
grep -q "uplink of rack a .* to spine 1: 200 Mbit/s" <<<"$(lab status)" || fail "status lists no uplinks"

# 1. One NIC and address per plane.
addrs=$(lab exec b0 -- ip -4 -o addr show | awk '{print $2, $4}' | sort | tr '\n' ' ')
[ "$addrs" = "eth0 10.77.2.1/16 eth1 10.78.2.1/16 lo 127.0.0.1/8 " ] ||
  fail "b0's addresses: '$addrs'"
resolved=$state/topology.json
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["racks"][1]["hosts"][0]["spine_addrs"])' "$resolved")
[ "$got" = "['10.77.2.1', '10.78.2.1']" ] || fail "resolved spine_addrs of b0: $got"

# 2. Each plane at its spine's rate; then spine 1 of rack a lowered mid-lab.
r0=$(tcp_rate b0 10.77.2.1 5301)
r1=$(tcp_rate b0 10.78.2.1 5302)
echo "TCP a0 -> b0: plane 0 $r0 Mbit/s, plane 1 $r1 Mbit/s"
check_rate "$r0" 50 "plane 0 (50 Mbit/s uplinks)"
check_rate "$r1" 200 "plane 1 (200 Mbit/s uplinks)"
out=$(lab shape --rack a --spine 1 --mbit 100) || fail "shape failed"
grep -q "rack a's uplink to spine 1: 200 -> 100 Mbit/s at [0-9.]*$" <<< "$out" || fail "shape said: $out"
r1=$(tcp_rate b1 10.78.2.2 5303)
echo "after shape: plane 1 $r1 Mbit/s"
check_rate "$r1" 100 "plane 1 after shaping rack a's uplink to 100 Mbit/s"
grep -q "uplink of rack a .* to spine 1: 100 Mbit/s" <<<"$(lab status)" || fail "status after shape"
lab shape --rack a --spine 1 --mbit 200 > /dev/null || fail "shape back failed"

# 3. Bad shape input, each refused by name (exit 2).
expect_refusal() {
  local want=$1
  shift
  local msg
  msg=$(lab shape "$@" 2>&1)
  local rc=$?
  [ "$rc" -eq 2 ] || fail "shape $* exited $rc, expected 2 ($msg)"
  grep -qF -- "$want" <<< "$msg" || fail "shape $*: '$msg' does not say '$want'"
}
expect_refusal "no rack 'zz' in lab '$name' (racks: a, b)" --rack zz --mbit 10
expect_refusal "--spine 2: lab '$name' has spines 0 to 1" --rack a --spine 2 --mbit 10
expect_refusal "--mbit 0: give a positive rate in Mbit/s" --rack a --mbit 0
expect_refusal "no host 'q' in lab '$name' (hosts: a0, a1, b0, b1)" --host q --mbit 10

# 4. ring and rina over the planned spine: results checked by the tool.
out=$(lab run --timeout 200 --env RINA_PATHS=planned --env RINA_DEBUG=INFO -- \
  "$perf" -a ring,rina -b 1M -e 1M -n 2 -w 1 -c 1 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "rina-allreduce-perf exited $rc: $out"
grep -Eq "^# Out of bounds values : 0 OK$" <<< "$out" || fail "wrong results: $out"
grep -q "paths planned over 2 spines a->b:s1 b->a:s1" <<< "$out" || fail "no planned paths in: $out"
grep -q "rank 1 of 4 ready .* peers .*2/s1:socket" <<< "$out" || fail "no spine-1 connection"
for algo in ring rina; do
  awk -v a="$algo" '$1 ~ /^[0-9]+$/ && $5 == a {n++; if ($NF != 0) bad = 1} END {exit bad || n != 1}' \
    <<< "$out" || fail "$algo: no row or #wrong != 0"
done

# 5. Down removes everything.
lab down || fail "down failed"
[ -z "$(lab_namespaces)" ] || fail "namespaces left after down: $(lab_namespaces)"
[ ! -e "$state" ] || fail "state folder left after down"
lab_done "netlab spines test ok"
