// The kernel tables behind reduceFunction() and finishAverage(): one per
// instruction set, picked once at first use. Tests and benchmarks reach every
// table that this CPU can run, to hold each path to the same semantics.
#ifndef RINA_LIB_REDUCE_KERNELS_H_
#define RINA_LIB_REDUCE_KERNELS_H_

#include <cstddef>
#include <cstring>

#include "reduce/reduce.h"
#include "rina/rina.h"

namespace rina::reduce::detail {

// Ops with a kernel of their own; avg uses kKernelSum.
enum KernelOp : int { kKernelSum = 0, kKernelProd, kKernelMin, kKernelMax, kNumKernelOps };

using AverageFn = void (*)(void* data, size_t count, int nranks);   // nranks >= 1
using CopyFn = void (*)(void* dst, const void* src, size_t bytes);  // no overlap

struct KernelTable {
  const char* isa;  // "scalar", "avx2"
  ReduceFn reduce[rinaNumTypes][kNumKernelOps];
  AverageFn average[rinaNumTypes];
  CopyFn copy;    // copyBytes between buffers at different offsets in a cache line
  CopyFn stream;  // streamBytes
};

// Kernels take any byte address: the C API hands out void* buffers, and the
// verbs ring reduces straight out of a slot at whatever byte offset the
// previous write ended (ring_reader.cc). So no kernel dereferences a T*;
// elements go through these (a memcpy of sizeof(T) compiles to one plain
// load or store on x86 and most other targets). Vector bodies use
// unaligned loads and stores already.
template <class T>
inline T loadElement(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
inline void storeElement(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

// Portable loops; always available.
const KernelTable& scalarKernels();

// AVX2 + F16C; nullptr unless built for x86-64 and this CPU has both.
const KernelTable* avx2Kernels();

// The table in use: the best one this CPU runs.
const KernelTable& activeKernels();

}  // namespace rina::reduce::detail

#endif  // RINA_LIB_REDUCE_KERNELS_H_
