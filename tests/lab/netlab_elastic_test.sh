#!/usr/bin/env bash
# netlab_elastic_test.sh NETLAB SWITCHD SWITCHCTL RANK TOPOLOGY ROUNDS LOOP_ELEMS SIZES
# Elastic communicators in the emulated lab (two INA racks of 3 hosts, two
# autonomous hosts; one rank per host, each started on its own with
# `rina-netlab exec`, not under mpirun, so one can die and one can join).
# ROUNDS rounds alternate:
#  - a worker round: an INA rack's worker is killed (SIGKILL) in the middle
#    of a loop of allreduces of LOOP_ELEMS float32; every survivor's error
#    names its rank; they revoke and shrink; the next 100 allreduces (int32
#    and float32, of the SIZES element counts) are exact, and the rack sums
#    on its switch, whose STATS show the rack's new job (fan-in 2) and the
#    old one's slots back; a new process joins in its place with a grow and
#    the next allreduce includes it (the switch then shows fan-in 3 again);
#  - a switch round: a rack's rina-switchd is killed in the middle of a
#    loop, the calls stay exact (the rack falls back), it is started again,
#    and the rack returns to it at a later plan check (counted once on each
#    of its ranks; its STATS show the rack's job).
# At the end no rank process has a descriptor, thread or /dev/shm name left
# of the communicators, no process killed left a /dev/shm name, and the
# switches hold no slot. Exits 77 without root or network namespaces.
# CI runs 20 rounds of 1 MiB loops; perf/lab/elastic_lab.sh runs it with
# 64 MiB (the issue's size).
set -u
netlab=$1 switchd=$2 switchctl=$3 rank=$4 topology=$5 rounds=$6 loop_elems=$7 sizes=$8
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lab_common.sh"
lab_init te

hosts=(a0 a1 a2 b0 b1 b2 c0 d0)
rack_a=(0 1 2)
rack_b=(3 4 5)
victims=(1 4 2 5 0 3)  # INA workers, the racks' agents (0, 3) among them
d=$work/elastic
mkdir -p "$d"

lab_before_cleanup() {
  local f
  for f in "$d"/pid.*; do
    [ -e "$f" ] && kill -9 "$(cat "$f")" 2> /dev/null
  done
  wait 2> /dev/null
}

# Waits (bounded) until every named file exists; fails at once on a rank's
# failure note.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2)) f missing
  shift 2
  while :; do
    for f in "$d"/failed.*; do
      [ -e "$f" ] && fail "$(basename "$f"): $(cat "$f"); logs: $(tail -n 5 "$d"/log.* 2> /dev/null)"
    done
    missing=
    for f in "$@"; do [ -e "$d/$f" ] || missing="$missing $f"; done
    [ -z "$missing" ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && fail "$what: still missing:$missing; logs: $(tail -n 5 "$d"/log.*)"
    sleep 0.05
  done
}

all() {  # all <prefix>: the file of every host for that prefix
  local h
  for h in "${!hosts[@]}"; do echo "$1.$h"; done
}

switch_stats() {  # switch_stats RACK
  local ctrl
  ctrl=$(python3 -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["racks"] if r["name"] == sys.argv[2]][0]["switch"])' "$state/topology.json" "$1")
  lab exec "${1}0" -- "$switchctl" "$ctrl" STATS 2> /dev/null
}
fanins() { grep -o '"fanin":[0-9]*' | cut -d: -f2 | sort | tr '\n' ' '; }
field() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }

lab up "$topology" --switchd "$switchd" || fail "up failed"

# The plan every rank follows.
{
  for ((r = 1; r <= rounds; r++)); do
    if ((r % 2 == 1)); then
      echo "worker ${victims[$(((r / 2) % ${#victims[@]}))]}"
    else
      echo "switch $( (((r / 2) % 2 == 1)) && echo a || echo b)"
    fi
  done
  echo "hosts ${#hosts[@]}"
  echo "loop_elems $loop_elems"
  echo "sizes $sizes"
  echo "calls 100"
  echo "rack a:0,1,2"
  echo "rack b:3,4,5"
} > "$d/plan"

# RINA_PLAN_INA=on: a rack shrunk to 2 hosts stays on its switch (the plan
# would take it off: planning.md), which is what this test watches.
export RINA_ALGO=rina RINA_TIMEOUT_MS=60000 RINA_INA_TIMEOUT_MS=3000 RINA_DEBUG=WARN RINA_PLAN_INA=on
start_rank() {  # start_rank HOST_INDEX [--join ROUND]
  local log=$d/log.$1${3:+.$3}
  lab exec "${hosts[$1]}" -- "$rank" "$d" "$@" > "$log" 2>&1 &
}
for h in "${!hosts[@]}"; do start_rank "$h"; done
pids_seen=()

for ((r = 1; r <= rounds; r++)); do
  read -r kind what < <(sed -n "${r}p" "$d/plan")
  wait_for "round $r: the loop" 300 $(all "loop.$r")
  if [ "$kind" = worker ]; then
    rack=a
    [[ " ${rack_b[*]} " == *" $what "* ]] && rack=b
    before=$(switch_stats "$rack")
    pid=$(cat "$d/pid.$what")
    pids_seen+=("$pid")
    kill -9 "$pid"
    echo "$what" > "$d/killed.$r"
    start_rank "$what" --join "$r"
    survivors=()
    for h in "${!hosts[@]}"; do [ "$h" != "$what" ] && survivors+=("shrunk.$r.$h"); done
    wait_for "round $r: shrink and 100 allreduces" 300 "${survivors[@]}"
    for f in "${survivors[@]}"; do
      h=${f##*.}
      read -r _ ms _ calls _ fallbacks < "$d/$f"
      if [[ " ${rack_a[*]} ${rack_b[*]} " == *" $h "* ]]; then
        [ "$calls" -gt 0 ] && [ "$fallbacks" -eq 0 ] ||
          fail "round $r: host $h did not sum on its switch after the shrink: $(cat "$d/$f")"
      fi
      echo "round $r: host $h: shrink took $ms ms"
    done
    now=$(switch_stats "$rack")
    [ "$(fanins <<< "$now")" = "2 " ] || fail "round $r: rack $rack's switch: $now"
    [ "$(field registrations <<< "$now")" -gt "$(field registrations <<< "$before")" ] ||
      fail "round $r: rack $rack registered no new job: $now"
    [ "$(field slots_used <<< "$now")" -eq "$(field slots_used <<< "$before")" ] ||
      fail "round $r: rack $rack's old job still holds slots: $now (before: $before)"
    echo > "$d/go.$r"
    wait_for "round $r: grow" 300 $(all "grown.$r")
    now=$(switch_stats "$rack")
    [ "$(fanins <<< "$now")" = "3 " ] || fail "round $r: rack $rack's switch after the grow: $now"
    echo "round $r: host $what killed, shrunk, joined: ok"
  else
    lab switch "$what" --kill || fail "round $r: kill the switch"
    hosts_of=()
    for h in $(eval echo "\${rack_$what[@]}"); do hosts_of+=("fell.$r.$h"); done
    wait_for "round $r: the fallback" 300 "${hosts_of[@]}"
    lab switch "$what" --start || fail "round $r: start the switch"
    wait_for "round $r: the return" 300 $(all "returned.$r")
    for h in $(eval echo "\${rack_$what[@]}"); do
      grep -q "^fallbacks 1 returns 1$" "$d/returned.$r.$h" ||
        fail "round $r: host $h: $(cat "$d/returned.$r.$h")"
    done
    now=$(switch_stats "$what")
    [ "$(fanins <<< "$now")" = "3 " ] || fail "round $r: rack $what's new switch: $now"
    echo > "$d/go.$r"
    echo "round $r: rack $what's switch killed and started again: ok"
  fi
done

wait_for "the end" 120 $(all final)
for rack in a b; do
  now=$(switch_stats "$rack")
  [ "$(field slots_used <<< "$now")" -eq 0 ] && [ -z "$(fanins <<< "$now")" ] ||
    fail "rack $rack's switch holds slots after the end: $now"
done
for pid in "${pids_seen[@]}" $(cat "$d"/pid.*); do
  left=$(ls /dev/shm | grep -c "^rina-$pid-")
  [ "$left" -eq 0 ] || fail "process $pid left $left /dev/shm name(s)"
done
wait
lab_done "netlab elastic test ok: $rounds rounds"
