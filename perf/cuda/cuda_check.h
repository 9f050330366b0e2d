// The perf/cuda benchmarks' check of a CUDA runtime call: on an error, the
// call and the runtime's text to stderr, and exit 1.
#ifndef RINA_PERF_CUDA_CUDA_CHECK_H_
#define RINA_PERF_CUDA_CUDA_CHECK_H_

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                               \
  do {                                                                 \
    cudaError_t e_ = (call);                                           \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

#endif  // RINA_PERF_CUDA_CUDA_CHECK_H_
