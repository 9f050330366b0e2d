#!/bin/bash
# The GPU path on a machine with an NVIDIA GPU, in one go: the cuda tests
# (ctest -L cuda), the device kernels' throughput against the device's copy
# bandwidth (cuda_reduce_bench) and rinaAllReduce on device buffers against
# host buffers, 2 and 4 ranks sharing the GPU (cuda_allreduce_bench, every
# size checked). Everything it prints also goes to OUT/.
#
#   perf/cuda/run_gpu_checks.sh BUILD OUT
#
# BUILD: a build configured with CUDA for the device's architecture, e.g.
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINA_WITH_CUDA=ON \
#     -DCMAKE_CUDA_ARCHITECTURES=90 -DRINA_WITH_MPI=OFF -DRINA_WITH_HWLOC=OFF \
#     -DRINA_WITH_VERBS=OFF -DRINA_WITH_GLPK=OFF -DRINA_WITH_TORCH=OFF
#   ninja -C build-gpu rina cuda_gpu_test cuda_absent_test cuda_reduce_bench cuda_allreduce_bench
# (H100 / H200: 90). The build may be made on another x86-64 machine and
# carried over; its ctest files name the build's absolute path, so the
# build must sit at that path on the GPU machine too (a link will do).
set -u
build=${1:?usage: run_gpu_checks.sh BUILD OUT}
out=${2:?usage: run_gpu_checks.sh BUILD OUT}
mkdir -p "$out"
status=0
step() {  # step NAME COMMAND...: runs it, its output to OUT/NAME.txt and here
  local name=$1
  shift
  echo "== $name: $*" | tee "$out/$name.txt"
  "$@" 2>&1 | tee -a "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc" | tee -a "$out/$name.txt"
  [ "$rc" = 0 ] || status=1
}
step device nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
step ctest-cuda ctest --test-dir "$build" -L cuda --output-on-failure --timeout 300
step kernels "$build/perf/cuda/cuda_reduce_bench" -n 256 -i 20 -a
step allreduce-2 "$build/perf/cuda/cuda_allreduce_bench" -r 2 -b 4K -e 256M -i 5
step allreduce-4 "$build/perf/cuda/cuda_allreduce_bench" -r 4 -b 4K -e 256M -i 5
exit $status
