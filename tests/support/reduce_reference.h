// Serial reference for the reduction kernels, written separately from them:
// wider integers (__int128) for wrap-around, double arithmetic for floats,
// _Float16 (the compiler's own conversions) for float16, and a nearest-value
// search over every bfloat16 for bfloat16 rounding. Included by
// reduce_test.cc only.
#ifndef RINA_TESTS_SUPPORT_REDUCE_REFERENCE_H_
#define RINA_TESTS_SUPPORT_REDUCE_REFERENCE_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>

#include "reduce/kernels.h"
#include "rina/rina.h"

namespace rina::reduce::reference {

using detail::KernelOp;
using detail::kKernelMax;
using detail::kKernelMin;
using detail::kKernelProd;
using detail::kKernelSum;

constexpr uint32_t kNanF32 = 0x7fc00000u;
constexpr uint64_t kNanF64 = 0x7ff8000000000000ull;
constexpr uint16_t kNanF16 = 0x7e00u;
constexpr uint16_t kNanBf16 = 0x7fc0u;

// ---------------------------------------------------------------------------
// Reference conversions.

#if defined(__FLT16_MANT_DIG__)
inline float refHalfToFloat(uint16_t bits) {
  return static_cast<float>(std::bit_cast<_Float16>(bits));
}
#else
inline float refHalfToFloat(uint16_t bits) {  // from the binary16 layout, by hand
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == 0x1f) {
    return mantissa != 0 ? std::numeric_limits<float>::quiet_NaN()
                         : static_cast<float>(sign * HUGE_VAL);
  }
  if (exponent == 0) return static_cast<float>(sign * std::ldexp(mantissa, -24));
  return static_cast<float>(sign * std::ldexp(1024 + mantissa, exponent - 25));
}
#endif

inline float refBf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Round a finite or infinite value to the 16-bit format whose non-negative
// finite values, in increasing order, are the bit patterns [0, maxFinite]:
// pick the nearest, ties to the even pattern, and infinity from the halfway
// point above maxFinite on (maxFinite has an odd mantissa, so that tie goes
// up). Written as a search so it shares nothing with the kernels' bit tricks.
inline uint16_t roundToNearestBySearch(double value, uint16_t maxFinite, uint16_t infinity,
                                       float (*toFloat)(uint16_t)) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(value);
  const double top = toFloat(maxFinite);
  const double topUlp = top - static_cast<double>(toFloat(static_cast<uint16_t>(maxFinite - 1)));
  if (magnitude >= top + topUlp / 2) return static_cast<uint16_t>(sign | infinity);
  uint32_t lo = 0;
  uint32_t hi = maxFinite;  // invariant: toFloat(lo) <= magnitude <= toFloat(hi)
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (static_cast<double>(toFloat(static_cast<uint16_t>(mid))) <= magnitude) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (magnitude >= toFloat(static_cast<uint16_t>(hi))) return static_cast<uint16_t>(sign | hi);
  const double below = magnitude - toFloat(static_cast<uint16_t>(lo));
  const double above = static_cast<double>(toFloat(static_cast<uint16_t>(hi))) - magnitude;
  uint32_t chosen = below < above ? lo : hi;
  if (below == above) chosen = (lo % 2 == 0) ? lo : hi;
  return static_cast<uint16_t>(sign | chosen);
}

inline uint16_t refFloatToHalf(float value) {
  if (std::isnan(value)) return kNanF16;
#if defined(__FLT16_MANT_DIG__)
  return std::bit_cast<uint16_t>(static_cast<_Float16>(value));
#else
  return roundToNearestBySearch(value, 0x7bff, 0x7c00, refHalfToFloat);
#endif
}

inline uint16_t refFloatToBf16(float value) {
  if (std::isnan(value)) return kNanBf16;
  return roundToNearestBySearch(value, 0x7f7f, 0x7f80, refBf16ToFloat);
}

// ---------------------------------------------------------------------------
// Reference element ops.

inline double refMin(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  if (x == y) return std::signbit(x) ? x : y;  // -0 below +0
  return std::fmin(x, y);
}

inline double refMax(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  if (x == y) return std::signbit(x) ? y : x;
  return std::fmax(x, y);
}

template <class T>
struct IntegerRef {
  using Storage = T;
  using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;

  static T apply(KernelOp op, T a, T b) {
    switch (op) {
      case kKernelSum:
        return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
      case kKernelProd:
        return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
      case kKernelMin:
        return std::min(a, b);
      default:
        return std::max(a, b);
    }
  }

  static T average(T value, int nranks) {
    // Truncation toward zero, spelled out: divide the magnitude, restore sign.
    const __int128 wide = value;
    const __int128 magnitude = wide < 0 ? -wide : wide;
    const __int128 quotient = magnitude / nranks;
    return static_cast<T>(wide < 0 ? -quotient : quotient);
  }

  static T random(std::mt19937_64& rng) { return static_cast<T>(rng()); }
  static T partner(std::mt19937_64& rng, T a) {
    switch (rng() % 8) {
      case 0:
        return a;
      case 1:
        return std::numeric_limits<T>::max();
      case 2:
        return std::numeric_limits<T>::min();
      default:
        return random(rng);
    }
  }
  static uint64_t bits(T v) {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  }
};

// float32 and the 16-bit formats: combined in float (computed here in double
// and rounded to float once, which for + and * of floats equals the float
// operation), then narrowed.
template <class Format>
struct NarrowFloatRef {
  using Storage = typename Format::Storage;

  static Storage apply(KernelOp op, Storage a, Storage b) {
    const double x = Format::widen(a);
    const double y = Format::widen(b);
    double r = 0;
    switch (op) {
      case kKernelSum:
        r = x + y;
        break;
      case kKernelProd:
        r = x * y;
        break;
      case kKernelMin:
        r = refMin(x, y);
        break;
      default:
        r = refMax(x, y);
        break;
    }
    return Format::narrow(static_cast<float>(r));
  }

  static Storage average(Storage value, int nranks) {
    return Format::narrow(static_cast<float>(static_cast<double>(Format::widen(value)) / nranks));
  }

  static Storage random(std::mt19937_64& rng) { return Format::random(rng); }
  static Storage partner(std::mt19937_64& rng, Storage a) {
    switch (rng() % 10) {
      case 0:
        return a;
      case 1:
        return Format::negate(a);
      default:
        return Format::random(rng);
    }
  }
  static uint64_t bits(Storage v) { return Format::bits(v); }
};

struct Float32Format {
  using Storage = float;
  static float widen(float v) { return v; }
  static float narrow(float v) { return std::isnan(v) ? std::bit_cast<float>(kNanF32) : v; }
  static float negate(float v) {
    return std::bit_cast<float>(std::bit_cast<uint32_t>(v) ^ 0x80000000u);
  }
  static uint64_t bits(float v) { return std::bit_cast<uint32_t>(v); }
  static float random(std::mt19937_64& rng) {
    const uint64_t r = rng();
    switch (r % 16) {
      case 0:  // any bit pattern: NaNs, infinities, subnormals, huge
        return std::bit_cast<float>(static_cast<uint32_t>(r >> 32));
      case 1: {
        constexpr float kSpecial[] = {0.0f,
                                      -0.0f,
                                      INFINITY,
                                      -INFINITY,
                                      NAN,
                                      -NAN,
                                      std::numeric_limits<float>::max(),
                                      std::numeric_limits<float>::denorm_min()};
        return kSpecial[(r >> 8) % std::size(kSpecial)];
      }
      default: {  // ordinary values over a few decades, so sums round
        const double unit = static_cast<double>(r >> 11) * 0x1p-53;
        return static_cast<float>((unit * 2 - 1) *
                                  std::ldexp(1.0, static_cast<int>((r >> 4) % 40) - 20));
      }
    }
  }
};

struct Float16Format {
  using Storage = uint16_t;
  static float widen(uint16_t v) { return refHalfToFloat(v); }
  static uint16_t narrow(float v) { return refFloatToHalf(v); }
  static uint16_t negate(uint16_t v) { return static_cast<uint16_t>(v ^ 0x8000u); }
  static uint64_t bits(uint16_t v) { return v; }
  // Every bit pattern is fair game: all exponents, subnormals, inf, NaN.
  static uint16_t random(std::mt19937_64& rng) { return static_cast<uint16_t>(rng()); }
};

struct Bf16Format {
  using Storage = uint16_t;
  static float widen(uint16_t v) { return refBf16ToFloat(v); }
  static uint16_t narrow(float v) { return refFloatToBf16(v); }
  static uint16_t negate(uint16_t v) { return static_cast<uint16_t>(v ^ 0x8000u); }
  static uint64_t bits(uint16_t v) { return v; }
  static uint16_t random(std::mt19937_64& rng) {
    // Half the time any pattern; else a narrow exponent range so that sums
    // of comparable magnitude exercise the rounding.
    const uint64_t r = rng();
    if (r % 2 == 0) return static_cast<uint16_t>(r >> 8);
    return static_cast<uint16_t>(((r >> 8) & 0x8000u) | (0x3f00u + ((r >> 24) & 0x1ffu)));
  }
};

struct Float64Ref {
  using Storage = double;
  static double canonical(double v) { return std::isnan(v) ? std::bit_cast<double>(kNanF64) : v; }
  static double apply(KernelOp op, double a, double b) {
    switch (op) {
      case kKernelSum:
        return canonical(a + b);
      case kKernelProd:
        return canonical(a * b);
      case kKernelMin:
        return canonical(refMin(a, b));
      default:
        return canonical(refMax(a, b));
    }
  }
  static double average(double value, int nranks) { return canonical(value / nranks); }
  static double random(std::mt19937_64& rng) {
    const uint64_t r = rng();
    switch (r % 16) {
      case 0:
        return std::bit_cast<double>(rng());
      case 1: {
        constexpr double kSpecial[] = {0.0,
                                       -0.0,
                                       HUGE_VAL,
                                       -HUGE_VAL,
                                       NAN,
                                       -NAN,
                                       std::numeric_limits<double>::max(),
                                       std::numeric_limits<double>::denorm_min()};
        return kSpecial[(r >> 8) % std::size(kSpecial)];
      }
      default: {
        const double unit = static_cast<double>(r >> 11) * 0x1p-53;
        return (unit * 2 - 1) * std::ldexp(1.0, static_cast<int>((r >> 4) % 80) - 40);
      }
    }
  }
  static double partner(std::mt19937_64& rng, double a) {
    switch (rng() % 10) {
      case 0:
        return a;
      case 1:
        return -a;
      default:
        return random(rng);
    }
  }
  static uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }
};

template <rinaDataType_t kType>
struct RefFor;
template <>
struct RefFor<rinaInt8> : IntegerRef<int8_t> {};
template <>
struct RefFor<rinaUint8> : IntegerRef<uint8_t> {};
template <>
struct RefFor<rinaInt32> : IntegerRef<int32_t> {};
template <>
struct RefFor<rinaUint32> : IntegerRef<uint32_t> {};
template <>
struct RefFor<rinaInt64> : IntegerRef<int64_t> {};
template <>
struct RefFor<rinaUint64> : IntegerRef<uint64_t> {};
template <>
struct RefFor<rinaFloat16> : NarrowFloatRef<Float16Format> {};
template <>
struct RefFor<rinaBfloat16> : NarrowFloatRef<Bf16Format> {};
template <>
struct RefFor<rinaFloat32> : NarrowFloatRef<Float32Format> {};
template <>
struct RefFor<rinaFloat64> : Float64Ref {};

}  // namespace rina::reduce::reference

#endif  // RINA_TESTS_SUPPORT_REDUCE_REFERENCE_H_
