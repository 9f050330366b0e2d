#!/usr/bin/env bash
# netlab_bmv2_test.sh NETLAB SWITCHD BMV2CTL SWITCHCTL PERF JSON TOPOLOGY
# One INA rack of 3 hosts whose switch is BMv2 running rina_v1model.p4
# (JSON), programmed by rina-bmv2ctl from the rack agent's unchanged CTRL:
# rina-allreduce-perf -a rina gives int32 exactly and float32 within the
# documented bound, through the switch (switch calls, no fallback); the same
# runs on rina-switchd (--payload 64, the program's) give the same results
# and the two switches count the same completed slices and contributions;
# a simple_switch killed mid-run makes the rack fall back with right sums.
# Skipped (77) without root, namespaces, mpirun, simple_switch, its CLI or
# the compiled program.
set -u
netlab=$1 switchd=$2 bmv2ctl=$3 switchctl=$4 perf=$5 json=$6 topology=$7
here=$(cd "$(dirname "$0")" && pwd)
. "$here/p4_tools.sh"
p4_need simple_switch simple_switch_CLI
[ -f "$json" ] || { echo "SKIP: no $json (the p4_compile_v1model test makes it)"; exit 77; }
. "$here/../lab/lab_common.sh"
lab_init tp4

ctrl() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["racks"][0]["switch"])' "$state/topology.json"; }
stat() { lab exec a0 -- "$switchctl" "$(ctrl)" STATS | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
# Small sizes: BMv2 runs every datagram through an interpreter. The INA
# timeout is 10 s, not 2: a switch starved of the CPU on a loaded machine
# must not look lost (a killed one is still noticed within it).
ina_timeout_ms=10000
runs() {  # LABEL: the int32 and float32 runs, their counters into $work/LABEL.*
  local label=$1 type
  for type in int32 float32; do
    lab run --timeout 300 --env RINA_DEBUG=WARN --env RINA_INA_TIMEOUT_MS=$ina_timeout_ms -- \
      "$perf" -b 1K -e 64K -f 8 -n 2 -w 1 -c 1 \
      -a rina -d $type > "$work/$label.$type" 2>&1
    local rc=$?
    cat "$work/$label.$type"
    [ "$rc" -eq 0 ] || fail "$label $type: rina-allreduce-perf exited $rc"
    grep -Eq "^# Out of bounds values : 0 OK$" "$work/$label.$type" || fail "$label $type: wrong results"
    grep -Eq "^# rina INA, all ranks: switch calls [1-9][0-9]* .* fallbacks 0 " "$work/$label.$type" ||
      fail "$label $type: the rack did not aggregate in its switch"
  done
  for counter in completed first added; do
    stat $counter > "$work/$label.$counter"
    [ -s "$work/$label.$counter" ] || fail "$label: STATS has no '$counter'"
  done
}

# 1. BMv2 as the rack's switch.
lab up "$topology" --bmv2 "$json" --simple-switch "$SIMPLE_SWITCH" --bmv2-cli "$SIMPLE_SWITCH_CLI" \
  --bmv2ctl "$bmv2ctl" || fail "up with BMv2 failed"
lab status || fail "the BMv2 lab is not healthy"
runs bmv2

# 2. simple_switch killed in the middle of a run: the rack falls back (its
# agent warns once), every call is still checked and right.
pid=$(python3 -c 'import json,sys; print([p["pid"] for p in json.load(open(sys.argv[1]))["pids"] if p["what"] == "simple_switch of rack a"][0])' "$state/state.json")
before=$(stat completed)
lab run --timeout 300 --env RINA_DEBUG=WARN --env RINA_INA_TIMEOUT_MS=$ina_timeout_ms -- \
  "$perf" -b 64K -e 64K -n 60 -w 0 -c 2 -a rina \
  -d int32 > "$work/kill.out" 2>&1 &
runner=$!
for _ in $(seq 1 600); do
  now=$(stat completed 2> /dev/null)
  [ -n "$now" ] && [ "$now" -gt $((before + 200)) ] && break
  kill -0 "$runner" 2> /dev/null || break
  sleep 0.05
done
kill -0 "$runner" 2> /dev/null || fail "the run ended before simple_switch was killed: $(cat "$work/kill.out")"
kill -9 "$pid"
wait "$runner"
rc=$?
cat "$work/kill.out"
[ "$rc" -eq 0 ] || fail "the run with a killed simple_switch exited $rc"
grep -Eq "^# Out of bounds values : 0 OK$" "$work/kill.out" || fail "wrong results after the kill"
[ "$(grep -c "WARN.*falling back to host aggregation" "$work/kill.out")" -eq 1 ] ||
  fail "expected one WARN about the fallback"
grep -Eq "^# rina INA, all ranks: switch calls [1-9][0-9]* .* fallbacks 3 " "$work/kill.out" ||
  fail "expected switch calls and 3 fallbacks (the rack's workers)"
lab down || fail "down failed"

# 3. The same runs on rina-switchd with the program's payload.
lab up "$topology" --switchd "$switchd" --switchd-args "--payload 64" || fail "up with rina-switchd failed"
runs switchd
lab down || fail "down failed"
for counter in completed first added; do
  b=$(cat "$work/bmv2.$counter") s=$(cat "$work/switchd.$counter")
  echo "$counter: BMv2 $b, rina-switchd $s"
  [ "$b" = "$s" ] || fail "BMv2 counted $b $counter, rina-switchd $s"
done
lab_done "BMv2 lab test ok"
