#!/usr/bin/env bash
# The main job: installs packages, builds rina, and runs an allreduce
# benchmark on this host (4 ranks forked locally, shared memory between
# them): rina's ring against the latency algorithm, every result checked;
# then ring against rina with two emulated INA racks (each rack's agent
# starts a local rina-switchd); then, under mpirun, rina against the MPI
# library's own MPI_Allreduce.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINA_BUILD_TESTS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-80;90}"
cmake --build build -j"$(nproc)" --target rina-allreduce-perf rina-switchd
PERF=build/tools/rina-allreduce-perf
NRANKS=${RINA_DEMO_RANKS:-4}
echo "== rina-allreduce-perf --local-ranks $NRANKS (ring vs recursive doubling vs auto)"
RINA_DEBUG=${RINA_DEBUG:-WARN} "$PERF" --local-ranks "$NRANKS" -b 4K -e 16M -f 4 -n 20 -w 5 -a auto,ring,rd
echo "== RINA_RACKS=2:ina,2:ina rina-allreduce-perf --local-ranks 4 (ring vs rina vs hier vs ps-ina)"
echo "   two racks of 2 whose ToR aggregates: rina-switchd on loopback, started by each rack's agent"
RINA_RACKS=2:ina,2:ina RINA_DEBUG=${RINA_DEBUG:-WARN} "$PERF" --local-ranks 4 -b 64K -e 16M -f 4 -n 10 -w 3 \
  -a ring,rina,hier,ps-ina
if command -v mpirun >/dev/null; then
  echo "== mpirun -np $NRANKS rina-allreduce-perf (rina ring vs Open MPI's MPI_Allreduce)"
  out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np "$NRANKS" --oversubscribe \
    --mca mpi_yield_when_idle 1 "$PERF" -b 64K -e 16M -f 4 -n 10 -w 3 -a ring,mpi 2>&1) || true
  echo "$out"
  # mpirun exits 0 even when it refuses to start: check what it printed.
  echo "$out" | grep -q "Out of bounds values : 0 OK" || { echo "demo: mpirun run failed"; exit 1; }
fi
