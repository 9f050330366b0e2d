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
// - a NaN result of a floating-point kernel is always the canonical quiet NaN
//   (float32 0x7fc00000, float64 0x7ff8000000000000, float16 0x7e00, bfloat16
//   0x7fc0): hardware keeps the payload of whichever operand came first, which
//   would break commutativity and make CPUs disagree.
#ifndef RINA_LIB_REDUCE_REDUCE_H_
#define RINA_LIB_REDUCE_REDUCE_H_

#include <cstddef>
#include <cstdint>

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
// float16/bfloat16: in float, rounded once). nranks < 1 or an out-of-range
// type leaves data unchanged.
void finishAverage(void* data, size_t count, rinaDataType_t type, int nranks);

// Copies bytes from src to dst (not overlapping) like memcpy, at the same
// speed whatever the two addresses' offsets within a cache line: on some
// CPUs (AMD EPYC under a hypervisor, measured) the C library's memcpy
// copies 10-15x slower between buffers whose offsets differ, from a few
// KiB to a few hundred (a user buffer from malloc, 16 bytes past a page,
// into or out of a page-aligned FIFO or slot). Every copy between a user
// buffer and shared memory goes through this.
void copyBytes(void* dst, const void* src, size_t bytes);
// copyBytes with stores that go past the cache (non-temporal, fenced before
// it returns; the C library's memcpy where the CPU has no AVX2): for a
// destination written in bulk and not read again soon, which then neither
// reads its lines in first nor pushes out what the cache holds.
void streamBytes(void* dst, const void* src, size_t bytes);

// Which kernels reduceFunction() hands out on this CPU: "avx2" or "scalar".
// Chosen once, at first use; for RINA_DEBUG=INFO lines.
const char* kernelIsaName();

// Scalar conversions between float and the 16-bit formats, for code outside
// the kernels (tests, tools, the switch agent). Widening is exact (a
// signaling NaN comes back quiet); narrowing rounds to nearest even, overflows
// to infinity, and keeps a NaN a quiet NaN with its sign and top payload bits.
float halfToFloat(uint16_t bits);  // IEEE 754 binary16
uint16_t floatToHalf(float value);
float bf16ToFloat(uint16_t bits);  // bfloat16: the top half of a float
uint16_t floatToBf16(float value);

}  // namespace rina::reduce

#endif  // RINA_LIB_REDUCE_REDUCE_H_
