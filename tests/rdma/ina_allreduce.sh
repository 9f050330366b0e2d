#!/bin/sh
# Inside the RDMA VM (tools/rina-rdma-vm): rina's INA path end to end over
# RoCEv2. rina-switchd runs in the namespace rina-sw with --roce-raw; three
# ranks forked here form one INA rack (RINA_RACKS=3:ina) and send their
# slices as RDMA UC writes from rxe0 (RINA_INA_TRANSPORT=rdma), and the
# switch writes every answer back into their queue pairs' rings; the host
# connections of the rack are RC verbs (RINA_SHM_DISABLE=1).
#
# Asserts: int32 and float32 sums from 0 to 256 KiB, in place and out of
# place, against rina-allreduce-perf's closed-form values (small integers:
# exact through block floating point too); the switch took part (switch
# calls, no fallback, no slice left to the hosts); every worker attached its
# ring, every answer went into a ring, no frame had a bad ICRC; the INFO
# lines say INA went over RDMA UC.
#
# usage: ina_allreduce.sh PERF SWITCHD SWITCHCTL
set -u
perf=$1
switchd=$2
switchctl=$3
fail() {
  echo "FAIL: $*"
  exit 1
}
work=$(mktemp -d)
sw_pid=""
cleanup() {
  [ -n "$sw_pid" ] && kill "$sw_pid" 2>/dev/null && wait "$sw_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

sw=$RDMA_VM_SWITCH_ADDR
ip netns exec "$RDMA_VM_SWITCH_NS" "$switchd" --listen "$sw:9100" --control "$sw:9101" \
  --payload 1000 --threads 1 --roce-port 4791 --roce-raw >"$work/switchd.out" 2>"$work/switchd.err" &
sw_pid=$!
# The ready line (a process started over 9p may take a while to serve).
i=0
until grep -q "^rina-switchd ready" "$work/switchd.out"; do
  i=$((i + 1))
  [ $i -le 300 ] || { cat "$work/switchd.err"; fail "rina-switchd not ready after 30 s"; }
  kill -0 "$sw_pid" 2>/dev/null || { cat "$work/switchd.err"; fail "rina-switchd exited"; }
  sleep 0.1
done
cat "$work/switchd.out"

export RINA_SWITCH="$sw:9101" RINA_RACKS=3:ina RINA_INA_TRANSPORT=rdma RINA_SHM_DISABLE=1
export RINA_IB_GID_INDEX="$RDMA_VM_GID_INDEX" RINA_DEBUG=INFO RINA_INA_TIMEOUT_MS=20000
log=$work/perf.log
"$perf" --local-ranks 3 --timeout 150 -a rina -d int32,float32 -o sum -b 0 -e 256K -f 64 -n 0 -w 0 \
  >"$log" 2>&1
rc=$?
grep -E "^ +[0-9]|^# rina" "$log"
[ $rc -eq 0 ] || { tail -40 "$log"; fail "rina-allreduce-perf exit status $rc"; }
grep -q "^# Out of bounds values : 0 OK" "$log" || fail "wrong results"
rows=$(awk '/^ +[0-9]/ && $5 == "rina" && $NF == 0' "$log" | wc -l)
[ "$rows" -eq 8 ] || fail "$rows checked rows of rina, expected 8 (0, 64 B, 4 KiB, 256 KiB; two types)"
line=$(grep "^# rina INA, all ranks:" "$log") || fail "no INA line"
echo "$line" | awk '{ exit !($8 > 0 && $13 == 0 && $15 == 0) }' ||
  fail "the switch did not carry the sums: $line"
n=$(grep -c "INA over RDMA UC: rxe0 port 1, QPN [0-9]* -> switch QP" "$log")
[ "$n" -ge 3 ] || fail "$n ranks say INA went over RDMA UC on rxe0, expected 3"
stats=$("$switchctl" "$sw:9101" STATS) || fail "rina-switchctl STATS failed"
field() { echo "$stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
echo "switch: attached $(field roce_attached), answers $(field sent), into rings" \
  "$(field roce_nic_sent), received $(field roce_received), bad ICRC $(field roce_bad_icrc)"
[ "$(field roce_attached)" -ge 3 ] || fail "not every worker attached its ring"
[ "$(field roce_attach_refused)" -eq 0 ] || fail "the switch refused an attachment"
[ "$(field roce_bad_icrc)" -eq 0 ] || fail "frames with a bad ICRC"
[ "$(field sent)" -gt 0 ] || fail "the switch sent nothing"
[ "$(field roce_nic_sent)" -eq $(($(field sent) + $(field roce_attached))) ] ||
  fail "answers left by UDP: $(field sent) sent, $(field roce_nic_sent) into rings"
echo "PASS: INA over RoCEv2 UC, answers written into the rings by rina-switchd"
