#!/bin/sh
# Inside the RDMA VM (tools/rina-rdma-vm): rina-allreduce-perf over RC verbs
# on rxe0, NRANKS ranks forked on this host (RINA_SHM_DISABLE=1, so local
# pairs take the verbs path instead of shared memory).
#
# TYPES with OPS (default: every type with every op), from 0 bytes to 64
# KiB (sizes growing FACTOR times), checked in place and out of place
# against the tool's closed-form values (-n 0: the check only, nothing
# timed); then BIG bytes of float32 sum (none when BIG is 0).
# RINA_SMALL_MSG_BYTES=4K puts the 4 KiB and 64 KiB rows on the ring (the
# pipelined large-message path), the smaller ones on recursive doubling.
#
# Asserts: no wrong element and every combination ran; the stats line shows
# the bytes went over verbs and none over sockets or shared memory; the
# INFO lines name rxe0 and the QPNs of every pair, each pair's two lines
# naming the same two QPs the other way round.
#
# usage: allreduce.sh NRANKS FACTOR BIG PERF [local|mpirun] [TYPES OPS]
set -u
n=$1
factor=$2
big=$3
perf=$4
mode=${5:-local}
types=${6:-all}
ops=${7:-all}
fail() {
  echo "FAIL: $*"
  exit 1
}
log=$(mktemp)
export RINA_SHM_DISABLE=1 RINA_DEBUG=INFO RINA_SMALL_MSG_BYTES=4K
export RINA_IB_GID_INDEX="$RDMA_VM_GID_INDEX"

run() {
  if [ "$mode" = mpirun ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun -np "$n" --oversubscribe --mca mpi_yield_when_idle 1 \
      -x RINA_SHM_DISABLE -x RINA_DEBUG -x RINA_SMALL_MSG_BYTES -x RINA_IB_GID_INDEX \
      "$perf" "$@"
  else
    "$perf" --local-ranks "$n" --timeout 240 "$@"
  fi
}

# $1: what ran; checks the output in $log.
check_output() {
  what=$1
  grep -q "^# Out of bounds values : 0 OK" "$log" || fail "$what: wrong results"
  line=$(grep "^# rina bytes sent, all ranks:" "$log") || fail "$what: no transport line"
  echo "$what: $line"
  echo "$line" | awk '{ exit !($8 > 0 && $10 == 0 && $12 == 0) }' ||
    fail "$what: bytes did not all go over verbs: $line"
  pairs=$(grep -c "connected to rank [0-9]* over RDMA (rxe0, QPN [0-9]* -> [0-9]*)" "$log")
  [ "$pairs" -eq $((n * (n - 1))) ] ||
    fail "$what: $pairs RDMA connection lines naming rxe0, expected $((n * (n - 1)))"
  # rank I: connected to rank J over RDMA (rxe0, QPN A -> B): J's line for I
  # must read QPN B -> A.
  sed -n 's/.*rank \([0-9]*\): connected to rank \([0-9]*\) over RDMA (rxe0, QPN \([0-9]*\) -> \([0-9]*\)).*/\1 \2 \3 \4/p' \
    "$log" | awk '{ q[$1 " " $2] = $3 " " $4 }
      END { for (k in q) { split(k, r, " "); split(q[k], p, " ");
              if (q[r[2] " " r[1]] != p[2] " " p[1]) { print "QPN mismatch for ranks " k; bad = 1 } }
            exit bad }' || fail "$what: the two ends of a pair disagree on the QPNs"
  grep -m1 "connected to rank 1 over RDMA" "$log"
}

[ "$types" = all ] && types=int8,uint8,int32,uint32,int64,uint64,float16,bfloat16,float32,float64
[ "$ops" = all ] && ops=sum,prod,min,max,avg
run -d "$types" -o "$ops" -b 0 -e 64K -f "$factor" -n 0 -w 0 >"$log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -30 "$log"; fail "$types x $ops, $n ranks: exit status $rc"; }
# Sizes 0, 1, FACTOR, ... 64K; the 1-byte row only for the 1-byte types.
sizes=$(awk -v f="$factor" 'BEGIN { n = 2; for (s = f; s <= 65536; s *= f) n++; print n }')
expected=0
for t in $(echo "$types" | tr , ' '); do
  for o in $(echo "$ops" | tr , ' '); do
    case $t in int8 | uint8) k=$sizes ;; *) k=$((sizes - 1)) ;; esac
    expected=$((expected + k))
    awk -v t="$t" -v o="$o" '$1 == 65536 && $3 == t && $4 == o && $NF == 0 { found = 1 }
      END { exit !found }' "$log" || fail "no checked 64 KiB row of $t $o"
  done
done
rows=$(awk '/^ +[0-9]/ && $NF == 0' "$log" | wc -l)
[ "$rows" -eq "$expected" ] || fail "$rows checked rows, expected $expected"
check_output "$types x $ops, 0 to 64 KiB, $n ranks"

if [ "$big" != 0 ]; then
  run -d float32 -o sum -b "$big" -e "$big" -n 0 -w 0 >"$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { tail -30 "$log"; fail "float32 sum $big, $n ranks: exit status $rc"; }
  grep -E "^ +[0-9]+ .* float32 " "$log"
  check_output "float32 sum $big, $n ranks"
fi
rm -f "$log"
echo "PASS: $n ranks over RC verbs on rxe0 ($mode)"
