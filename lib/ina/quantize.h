// Block floating point for INA: floats become int32 with one exponent shared
// by every worker for a slice, so the switch can add them exactly.
//
// For a slice, each worker computes its local exponent e_w (the smallest e
// with max|x| < 2^e); the switch takes E = max_w e_w. With k contributors and
// h = ceil(log2 k) headroom bits, F = 30 - h fraction bits:
//   q = round_to_nearest_even(x * 2^(F - E)),  |q| <= 2^F,  |sum q| <= 2^30
// so the int32 sum cannot overflow, and the result is y = (sum q) * 2^(E - F),
// computed exactly in double and rounded once to the output type.
//
// Error bound (per element): each q carries at most 1/2 of 2^(E-F), so
//   |y_double - sum x| <= k * 2^(E - F - 1) = k * 2^(E + h - 31)
// and the output adds half an ulp of the output type at |y|:
//   |y - sum x| <= k * 2^(E + h - 31) + ulp_out(|y|) / 2.
// Relative to the slice's largest input (which is >= 2^(E-1)) the first term
// is at most k * 2^(h - 30) <= 2^(2h - 30): 2^-24 for k <= 8, 2^-20 for k = 32.
// Sentinels: E = kExponentZero (every input zero: the sum is 0) and
// E = kExponentHost (a NaN/Inf or |x| >= 2^126 somewhere: the slice must be
// aggregated on the host).
#ifndef RINA_LIB_INA_QUANTIZE_H_
#define RINA_LIB_INA_QUANTIZE_H_

#include <cstddef>
#include <cstdint>

#include "rina/rina.h"

namespace rina::ina {

// ceil(log2(fanIn)); fanIn >= 1.
int headroomBits(int fanIn);
inline int fractionBits(int fanIn) { return 30 - headroomBits(fanIn); }

// The local exponent of x[0, n).
int8_t sliceExponent(const float* x, size_t n);
// q = round(x * 2^(F - E)); E must not be a sentinel and >= every local exponent.
void quantize(const float* x, size_t n, int8_t exponent, int fanIn, int32_t* q);
// y = sum * 2^(E - F), rounded once to float.
void dequantize(const int32_t* sum, size_t n, int8_t exponent, int fanIn, float* y);
// The first term of the bound above (without the output rounding).
double quantizationErrorBound(int8_t exponent, int fanIn);

// Elements [first, first + n) of a float32/float16/bfloat16 buffer as float,
// and back (rounding to nearest even, reduce/half.h). Other types: not
// supported (callers check first).
void loadAsFloat(const void* buffer, rinaDataType_t type, size_t first, size_t n, float* out);
void storeFromFloat(const float* in, size_t n, rinaDataType_t type, size_t first, void* buffer);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_QUANTIZE_H_
