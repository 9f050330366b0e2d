// The kernel tables behind reduceFunction() and finishAverage(): one per
// instruction set, picked once at first use. Tests and benchmarks reach every
// table that this CPU can run, to hold each path to the same semantics.
#ifndef RINA_LIB_REDUCE_KERNELS_H_
#define RINA_LIB_REDUCE_KERNELS_H_

#include <cstddef>

#include "reduce/reduce.h"
#include "rina/rina.h"

namespace rina::reduce::detail {

// Ops with a kernel of their own; avg uses kKernelSum.
enum KernelOp : int { kKernelSum = 0, kKernelProd, kKernelMin, kKernelMax, kNumKernelOps };

using AverageFn = void (*)(void* data, size_t count, int nranks);  // nranks >= 1

struct KernelTable {
  const char* isa;  // "scalar", "avx2"
  ReduceFn reduce[rinaNumTypes][kNumKernelOps];
  AverageFn average[rinaNumTypes];
};

// Portable loops; always available.
const KernelTable& scalarKernels();

// AVX2 + F16C; nullptr unless built for x86-64 and this CPU has both.
const KernelTable* avx2Kernels();

// The table in use: the best one this CPU runs.
const KernelTable& activeKernels();

}  // namespace rina::reduce::detail

#endif  // RINA_LIB_REDUCE_KERNELS_H_
