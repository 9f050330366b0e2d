// cuda_allreduce_bench: rinaAllReduce on device buffers against the same
// call on host buffers, N ranks as threads of one process sharing the one
// GPU (shared memory between them), float32 sum, out of place. Every size's
// device result is checked against the serial sum once (small integers:
// exact). The target: device buffers >= 0.8x the host buffers' throughput
// from 16 MiB up (the staging copies overlap the transport).
//
//   cuda_allreduce_bench [-r ranks (2)] [-b smallest bytes (4K)] [-e largest (256M)] [-i iters (5)]
//
// Prints one line per size: bytes, device ms, host ms (each the mean of
// iters calls after one warm-up, the slowest rank's), device / host
// throughput. Exit 1 on a wrong result or a failed call.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"
#include "rina/rina.h"

namespace {

float inputOf(int rank, size_t i) { return static_cast<float>((rank * 131 + i * 7) % 97); }

size_t parseBytes(const char* s) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  const size_t unit = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
  return static_cast<size_t>(v * static_cast<double>(unit));
}

struct Times {
  double deviceMs = 0, hostMs = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, iters = 5;
  size_t smallest = 4 << 10, largest = size_t{256} << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "-r") {
      ranks = std::atoi(argv[i + 1]);
    } else if (f == "-b") {
      smallest = parseBytes(argv[i + 1]);
    } else if (f == "-e") {
      largest = parseBytes(argv[i + 1]);
    } else if (f == "-i") {
      iters = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "cuda_allreduce_bench: unknown flag %s\n", f.c_str());
      return 2;
    }
  }
  if (ranks < 1 || iters < 1 || smallest < 4 || largest < smallest) {
    std::fprintf(stderr, "cuda_allreduce_bench: bad -r, -i, -b or -e\n");
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device %s, %d ranks as threads, float32 sum, out of place, %d iterations\n",
              prop.name, ranks, iters);
  std::printf("# %12s %12s %12s %10s %s\n", "bytes", "device ms", "host ms", "dev/host", "check");
  rinaUniqueId id{};
  if (rinaGetUniqueId(&id) != rinaSuccess) return 1;
  std::barrier sync(ranks);
  std::atomic<int> failures{0};
  std::vector<std::vector<Times>> times(ranks);
  std::vector<size_t> sizes;
  for (size_t b = smallest; b <= largest; b *= 4) sizes.push_back(b);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      CUDA_CHECK(cudaSetDevice(0));
      rinaComm_t comm = nullptr;
      if (rinaCommInitRank(&comm, ranks, id, r) != rinaSuccess) {
        std::fprintf(stderr, "rank %d: rinaCommInitRank failed\n", r);
        std::exit(1);
      }
      for (size_t bytes : sizes) {
        const size_t n = bytes / sizeof(float);
        std::vector<float> host(n), hostOut(n);
        for (size_t i = 0; i < n; ++i) host[i] = inputOf(r, i);
        float *dev = nullptr, *devOut = nullptr;
        CUDA_CHECK(cudaMalloc(&dev, bytes));
        CUDA_CHECK(cudaMalloc(&devOut, bytes));
        CUDA_CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
        auto timed = [&](const float* in, float* out) {
          double total = 0;
          for (int k = 0; k <= iters; ++k) {
            sync.arrive_and_wait();
            const auto t0 = std::chrono::steady_clock::now();
            if (rinaAllReduce(in, out, n, rinaFloat32, rinaSum, comm) != rinaSuccess) {
              std::fprintf(stderr, "rank %d: rinaAllReduce failed: %s\n", r,
                           rinaCommGetLastError(comm));
              std::exit(1);
            }
            const std::chrono::duration<double, std::milli> took =
                std::chrono::steady_clock::now() - t0;
            if (k > 0) total += took.count();  // the first is the warm-up
          }
          return total / iters;
        };
        Times t;
        t.deviceMs = timed(dev, devOut);
        t.hostMs = timed(host.data(), hostOut.data());
        std::vector<float> got(n);
        CUDA_CHECK(cudaMemcpy(got.data(), devOut, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
          float want = 0;
          for (int q = 0; q < ranks; ++q) want += inputOf(q, i);
          if (got[i] != want || hostOut[i] != want) {
            std::fprintf(stderr, "rank %d, %zu bytes, element %zu: device %g, host %g, want %g\n",
                         r, bytes, i, got[i], hostOut[i], want);
            failures++;
            break;
          }
        }
        times[r].push_back(t);
        CUDA_CHECK(cudaFree(dev));
        CUDA_CHECK(cudaFree(devOut));
      }
      rinaCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t s = 0; s < sizes.size(); ++s) {
    Times worst;
    for (int r = 0; r < ranks; ++r) {
      worst.deviceMs = std::max(worst.deviceMs, times[r][s].deviceMs);
      worst.hostMs = std::max(worst.hostMs, times[r][s].hostMs);
    }
    std::printf("  %12zu %12.3f %12.3f %10.2f %s\n", sizes[s], worst.deviceMs, worst.hostMs,
                worst.hostMs / worst.deviceMs, failures.load() ? "FAILED" : "ok");
  }
  return failures.load() ? 1 : 0;
}
