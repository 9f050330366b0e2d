// Scalar float16 / bfloat16 <-> float conversions, inline for the kernels'
// scalar paths and vector tails. Integer-only, so the result never depends on
// the FPU's rounding mode or denormal flags. NaN handling matches F16C
// (VCVTPH2PS / VCVTPS2PH), so scalar and vector paths agree bit for bit.
#ifndef RINA_LIB_REDUCE_HALF_H_
#define RINA_LIB_REDUCE_HALF_H_

#include <bit>
#include <cstdint>

// The same conversions serve the CUDA kernels (lib/cuda), so host and
// device agree bit for bit by construction.
#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define RINA_HOST_DEVICE __host__ __device__
#else
#define RINA_HOST_DEVICE
#endif

namespace rina::reduce::detail {

RINA_HOST_DEVICE inline float halfBitsToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
  // On the GPU the hardware conversion (exact for every number and
  // infinity, as below); a NaN takes the integer path, for its payload.
  if ((h & 0x7fffu) <= 0x7c00u) return __half2float(__ushort_as_half(h));
#endif
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) {  // inf, or NaN made quiet
    const uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return std::bit_cast<float>(sign | 0x7f800000u | quiet | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

RINA_HOST_DEVICE inline uint16_t floatToHalfBits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
#if defined(__CUDA_ARCH__)
  // On the GPU the hardware's round-to-nearest-even conversion: the same
  // bits as below for every number (overflow to infinity, subnormals).
  return __half_as_ushort(__float2half_rn(value));
#else
  // 65520 (0x477ff000) is the tie between 65504 (odd mantissa) and 2^16: to inf.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) {  // a normal half: rebias, round on 13 bits
    const uint32_t odd = (magnitude >> 13) & 1u;
    const uint32_t rounded = magnitude - (112u << 23) + 0xfffu + odd;
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Below 2^-14: a subnormal half, in units of 2^-24. shift = 126 - exponent
  // turns the float's full significand into those units.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t shift = 126u - exponent;
  if (shift > 24) return sign;  // under half of 2^-24 (float subnormals too)
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t units = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (units & 1u) != 0)) ++units;
  return static_cast<uint16_t>(sign | units);  // 0x400 (2^-14) encodes itself
#endif
}

RINA_HOST_DEVICE inline float bf16BitsToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  if ((bits & 0x7fffffffu) > 0x7f800000u) bits |= 0x00400000u;  // quiet a NaN
  return std::bit_cast<float>(bits);
}

RINA_HOST_DEVICE inline uint16_t floatToBf16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  // A NaN must not go through the rounding below: a payload only in the low
  // half would truncate to Inf, and 0x7fffffff would carry into the sign.
  // Keep the top bits and force the quiet bit.
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t odd = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + odd) >> 16);
}

}  // namespace rina::reduce::detail

#endif  // RINA_LIB_REDUCE_HALF_H_
