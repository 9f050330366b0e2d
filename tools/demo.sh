#!/usr/bin/env bash
# The main job: installs packages, builds rina, and shows what it is for.
# 1. On this host (4 ranks forked locally, shared memory between them):
#    small and large allreduces, auto against the ring and recursive
#    doubling, every result checked; under mpirun also against the MPI
#    library's own MPI_Allreduce.
# 2. The claim: in the emulated lab of one INA rack of 4 hosts with 500
#    Mbit/s host links (tools/rina-netlab: network namespaces, shaped veth
#    links, rina-switchd as the rack's switch), ring, hier and rina with the
#    theoretical time beside each; text and a PNG plot in build/demo/. The
#    lab is torn down at the end, also on Ctrl-C. Without root or network
#    namespaces the demo says so and runs the two-rack comparison on
#    loopback instead.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINA_BUILD_TESTS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-80;90}"
cmake --build build -j"$(nproc)" --target rina-allreduce-perf rina-switchd
PERF=build/tools/rina-allreduce-perf
OUT=build/demo
mkdir -p "$OUT"
NRANKS=${RINA_DEMO_RANKS:-4}
export RINA_DEBUG=${RINA_DEBUG:-WARN}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== rina-allreduce-perf --local-ranks $NRANKS (auto vs ring vs recursive doubling, 8 B - 16 MiB)"
echo "   auto: one-shot through shared memory below RINA_SMALL_MSG_BYTES, the pipelined ring above"
"$PERF" --local-ranks "$NRANKS" -b 8 -e 16M -f 8 -n 20 -w 5 -a auto,ring,rd
if command -v mpirun >/dev/null; then
  echo "== mpirun -np $NRANKS rina-allreduce-perf (rina auto vs Open MPI's MPI_Allreduce)"
  out=$(mpirun -np "$NRANKS" --oversubscribe --mca mpi_yield_when_idle 1 "$PERF" -b 8 -e 16M -f 8 \
    -n 10 -w 3 -a auto,mpi 2>&1) || true
  echo "$out"
  # mpirun exits 0 even when it refuses to start: check what it printed.
  grep -q "Out of bounds values : 0 OK" <<<"$out" || { echo "demo: mpirun run failed"; exit 1; }
fi

# Why the lab cannot run here, or nothing.
lab_unavailable() {
  [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces need root)"; return; }
  command -v mpirun >/dev/null || { echo "no mpirun (the lab starts one rank per host with it)"; return; }
  command -v tc >/dev/null || { echo "no tc (iproute2) to shape the links"; return; }
  # The binary's own dynamic section, read whole (a pipeline into grep -q
  # can fail under pipefail when grep stops reading first).
  local dynamic
  dynamic=$(readelf -d "$PERF" 2>/dev/null) || { echo "cannot read $PERF (readelf -d failed)"; return; }
  [[ "$dynamic" == *"Shared library: [libmpi"* ]] || { echo "rina-allreduce-perf was built without MPI"; return; }
  local probe="rnl-demo-probe-$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "cannot create network namespaces here (ip netns add failed)"
    return
  fi
  ip netns del "$probe"
}

why=$(lab_unavailable)
if [ -n "$why" ]; then
  echo "== no emulated lab: $why"
  echo "== RINA_RACKS=2:ina,2:ina rina-allreduce-perf --local-ranks 4 (ring vs rina vs hier vs ps-ina)"
  echo "   what this measures: that the algorithms run and agree on one host, not their speed:"
  echo "   rina's 'switch' is a UDP process on loopback while the ring uses shared memory,"
  echo "   so rina is slower here; its gain needs host links that limit the ring (the lab)."
  RINA_RACKS=2:ina,2:ina "$PERF" --local-ranks 4 -b 64K -e 16M -f 4 -n 10 -w 3 \
    -a ring,rina,hier,ps-ina
  exit 0
fi

LAB=demo
NETLAB=(tools/rina-netlab --name "$LAB")
down() { "${NETLAB[@]}" down >/dev/null 2>&1 || true; }
trap down EXIT
trap 'echo "demo: interrupted, taking the lab down"; exit 130' INT TERM
down  # a lab left by an earlier run
echo "== emulated lab: one INA rack of 4 hosts, 500 Mbit/s host links (perf/lab/lab-a-one-rack.json)"
"${NETLAB[@]}" up perf/lab/lab-a-one-rack.json --mtu 9000 --switchd build/p4_agent/rina-switchd
echo "== rina-netlab run -- rina-allreduce-perf -a ring,hier,rina (1 MiB - 16 MiB, one rank per host)"
"${NETLAB[@]}" run --timeout 150 -- "$PWD/$PERF" -b 1M -e 16M -f 4 -n 3 -w 1 -c 1 \
  -a ring,hier,rina -J "$PWD/$OUT/lab-one-rack.json" | tee "$OUT/lab-one-rack.log"
grep -q "Out of bounds values : 0 OK" "$OUT/lab-one-rack.log" || { echo "demo: lab run failed"; exit 1; }
down
echo "== lab results (also $OUT/lab-one-rack.txt, plot $OUT/lab-one-rack.png)"
/usr/bin/python3 tools/demo_report.py "$OUT/lab-one-rack.json" 4 500 "$OUT/lab-one-rack.txt" \
  "$OUT/lab-one-rack.png"
# rina-switchd is a user-space process standing in for the ToR: on a host
# busy with other work it drops datagrams, the workers resend them, and
# rina falls behind its theoretical time; these say how much that happened.
grep "^# rina INA" "$OUT/lab-one-rack.log" || true
echo "load average (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
