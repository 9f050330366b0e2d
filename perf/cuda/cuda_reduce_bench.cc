// cuda_reduce_bench: GB/s of the device reduction kernels (lib/cuda) against
// the device's copy bandwidth measured in the same run. The target:
// float32 sum >= 80% of the copy bandwidth.
//
//   cuda_reduce_bench [-n MiB per buffer (256)] [-i iterations (20)] [-a: every type and op]
//
// Bytes moved: a kernel reads two buffers and writes one (3 x size); a
// device-to-device cudaMemcpy reads one and writes one (2 x size).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_support.h"
#include "cuda_check.h"
#include "reduce/reduce.h"

namespace {

template <class Fn>
double bestMs(int iters, Fn&& fn) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  fn();  // warm up
  CUDA_CHECK(cudaDeviceSynchronize());
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    fn();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (ms < best) best = ms;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int iters = 20;
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
      mib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "-i") && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "-a")) {
      all = true;
    } else {
      std::fprintf(stderr, "usage: cuda_reduce_bench [-n MiB] [-i iterations] [-a]\n");
      return 2;
    }
  }
  std::string why;
  if (!rina::cuda::usable(&why)) {
    std::fprintf(stderr, "cuda_reduce_bench: no usable GPU (%s)\n", why.c_str());
    return 2;
  }
  cudaDeviceProp prop;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  const size_t bytes = mib << 20;
  void *a, *b, *d;
  CUDA_CHECK(cudaMalloc(&a, bytes));
  CUDA_CHECK(cudaMalloc(&b, bytes));
  CUDA_CHECK(cudaMalloc(&d, bytes));
  CUDA_CHECK(cudaMemset(a, 0, bytes));
  CUDA_CHECK(cudaMemset(b, 0, bytes));
  const double copyMs =
      bestMs(iters, [&] { CUDA_CHECK(cudaMemcpy(d, a, bytes, cudaMemcpyDeviceToDevice)); });
  const double copyGBs = 2.0 * bytes / (copyMs * 1e6);
  std::printf("device %s, %zu MiB per buffer, best of %d\n", prop.name, mib, iters);
  std::printf("%-10s %-5s %10s %10s %8s\n", "type", "op", "time(ms)", "GB/s", "of copy");
  std::printf("%-10s %-5s %10.3f %10.1f %7.1f%%\n", "memcpy", "d2d", copyMs, copyGBs, 100.0);
  double f32sum = 0;
  for (int t = 0; t < rinaNumTypes; ++t) {
    for (int o = 0; o < rinaNumOps - 1; ++o) {  // avg = sum
      auto type = static_cast<rinaDataType_t>(t);
      auto op = static_cast<rinaRedOp_t>(o);
      bool f32 = type == rinaFloat32 && op == rinaSum;
      if (!all && !f32) continue;
      const size_t count = bytes / rina::reduce::dataTypeSize(type);
      double ms = bestMs(iters, [&] {
        rina::Status s = rina::cuda::reduceOnDevice(d, a, b, count, type, op, nullptr);
        if (!s.ok()) {
          std::fprintf(stderr, "%s\n", s.message().c_str());
          std::exit(1);
        }
      });
      double gbs = 3.0 * bytes / (ms * 1e6);
      if (f32) f32sum = gbs;
      std::printf("%-10s %-5s %10.3f %10.1f %7.1f%%\n", rina::reduce::dataTypeName(type),
                  rina::reduce::opName(op), ms, gbs, 100.0 * gbs / copyGBs);
    }
  }
  const bool pass = f32sum >= 0.8 * copyGBs;
  std::printf("float32 sum: %.1f GB/s = %.1f%% of copy bandwidth (target 80%%): %s\n", f32sum,
              100.0 * f32sum / copyGBs, pass ? "PASS" : "FAIL");
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return pass ? 0 : 1;
}
