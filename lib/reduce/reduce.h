// Typed element-wise reduction kernels on the host CPU.
//
// One kernel shape serves every step of every algorithm:
//   dst[i] = a[i] OP b[i]   for i in [0, count)
// dst may equal a or b (in place); otherwise the ranges must not overlap.
// Kernels are vectorized (runtime dispatch, the library is built for a
// generic x86-64 and picks AVX2/F16C paths when the CPU has them).
//
// Semantics every caller relies on:
// - OP is commutative bit for bit: kernel(a, b) == kernel(b, a), so two ranks
//   that combine the same two partials in either order agree exactly.
// - float16 / bfloat16: each element is widened to float, combined in float,
//   rounded back once (round to nearest even) per call.
// - min / max on floats: NaN propagates (IEEE 754-2019 minimum/maximum), and
//   -0.0 < +0.0.
// - integers wrap on overflow (two's complement), as C unsigned arithmetic and
//   MPI do; prod likewise.
// - avg: the kernel sums; finishAverage() divides once at the end.
#ifndef RINA_LIB_REDUCE_REDUCE_H_
#define RINA_LIB_REDUCE_REDUCE_H_

#include <cstddef>

#include "rina/rina.h"

namespace rina::reduce {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);

// Bytes per element; 0 for an out-of-range value.
size_t dataTypeSize(rinaDataType_t type);
const char* dataTypeName(rinaDataType_t type);  // "float32", ...
const char* opName(rinaRedOp_t op);             // "sum", ...

// The kernel for (type, op); never null for valid enums (avg -> sum kernel).
ReduceFn reduceFunction(rinaDataType_t type, rinaRedOp_t op);

// data[i] /= nranks for count elements (integers: truncating division;
// float16/bfloat16: in float, rounded once).
void finishAverage(void* data, size_t count, rinaDataType_t type, int nranks);

}  // namespace rina::reduce

#endif  // RINA_LIB_REDUCE_REDUCE_H_
