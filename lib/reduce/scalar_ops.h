// Element operations, one struct per (storage, op) with a static apply(a, b).
// They define the semantics: the scalar kernels are loops over them, and the
// vector kernels use them for their tails, so both paths agree bit for bit.
#ifndef RINA_LIB_REDUCE_SCALAR_OPS_H_
#define RINA_LIB_REDUCE_SCALAR_OPS_H_

#include <bit>
#include <cstdint>
#include <type_traits>

#include "reduce/half.h"
#include "rina/rina.h"

namespace rina::reduce::detail {

// ---- integers: two's complement wrap, computed unsigned (no UB) ----

template <class T>
using UnsignedOf = std::make_unsigned_t<T>;

template <class T>
struct IntSum {
  RINA_HOST_DEVICE static T apply(T a, T b) {
    // 0u + x promotes to at least unsigned int, so narrow types cannot
    // overflow a signed int on the way.
    return static_cast<T>(0u + static_cast<UnsignedOf<T>>(a) + static_cast<UnsignedOf<T>>(b));
  }
};

template <class T>
struct IntProd {
  RINA_HOST_DEVICE static T apply(T a, T b) {
    return static_cast<T>((0u + static_cast<UnsignedOf<T>>(a)) * static_cast<UnsignedOf<T>>(b));
  }
};

template <class T>
struct IntMin {
  RINA_HOST_DEVICE static T apply(T a, T b) { return b < a ? b : a; }
};

template <class T>
struct IntMax {
  RINA_HOST_DEVICE static T apply(T a, T b) { return a < b ? b : a; }
};

// ---- float / double: NaN results are canonical (see reduce.h) ----

template <class F>
struct FloatBits;
template <>
struct FloatBits<float> {
  using Bits = uint32_t;
  static constexpr Bits kCanonicalNan = 0x7fc00000u;
};
template <>
struct FloatBits<double> {
  using Bits = uint64_t;
  static constexpr Bits kCanonicalNan = 0x7ff8000000000000ull;
};

template <class F>
RINA_HOST_DEVICE inline F canonicalNan() {
  return std::bit_cast<F>(FloatBits<F>::kCanonicalNan);
}

template <class F>
RINA_HOST_DEVICE inline F canonicalizeNan(F value) {
  return value != value ? canonicalNan<F>() : value;
}

template <class F>
struct FloatSum {
  RINA_HOST_DEVICE static F apply(F a, F b) { return canonicalizeNan(a + b); }
};

template <class F>
struct FloatProd {
  RINA_HOST_DEVICE static F apply(F a, F b) { return canonicalizeNan(a * b); }
};

// IEEE 754-2019 minimum: NaN if either is NaN, and -0 < +0. Equal operands
// are OR-ed bitwise, which picks -0 out of {-0, +0} in either order.
template <class F>
struct FloatMin {
  RINA_HOST_DEVICE static F apply(F a, F b) {
    using Bits = typename FloatBits<F>::Bits;
    if (a != a || b != b) return canonicalNan<F>();
    if (a < b) return a;
    if (b < a) return b;
    return std::bit_cast<F>(static_cast<Bits>(std::bit_cast<Bits>(a) | std::bit_cast<Bits>(b)));
  }
};

// maximum: as FloatMin, with AND picking +0.
template <class F>
struct FloatMax {
  RINA_HOST_DEVICE static F apply(F a, F b) {
    using Bits = typename FloatBits<F>::Bits;
    if (a != a || b != b) return canonicalNan<F>();
    if (a < b) return b;
    if (b < a) return a;
    return std::bit_cast<F>(static_cast<Bits>(std::bit_cast<Bits>(a) & std::bit_cast<Bits>(b)));
  }
};

// ---- float16 / bfloat16: widen, combine in float, round once ----

struct HalfCodec {
  RINA_HOST_DEVICE static float widen(uint16_t bits) { return halfBitsToFloat(bits); }
  RINA_HOST_DEVICE static uint16_t narrow(float value) { return floatToHalfBits(value); }
};

struct Bf16Codec {
  RINA_HOST_DEVICE static float widen(uint16_t bits) { return bf16BitsToFloat(bits); }
  RINA_HOST_DEVICE static uint16_t narrow(float value) { return floatToBf16Bits(value); }
};

template <class Codec, class FloatOp>
struct Narrowed {
  RINA_HOST_DEVICE static uint16_t apply(uint16_t a, uint16_t b) {
    return Codec::narrow(FloatOp::apply(Codec::widen(a), Codec::widen(b)));
  }
};

// ---- the four kernel ops of each datatype ----

template <class T>
struct IntegerOps {
  using Storage = T;
  using Sum = IntSum<T>;
  using Prod = IntProd<T>;
  using Min = IntMin<T>;
  using Max = IntMax<T>;
};

template <class F>
struct FloatOps {
  using Storage = F;
  using Sum = FloatSum<F>;
  using Prod = FloatProd<F>;
  using Min = FloatMin<F>;
  using Max = FloatMax<F>;
};

template <class Codec>
struct NarrowOps {
  using Storage = uint16_t;
  using Sum = Narrowed<Codec, FloatSum<float>>;
  using Prod = Narrowed<Codec, FloatProd<float>>;
  using Min = Narrowed<Codec, FloatMin<float>>;
  using Max = Narrowed<Codec, FloatMax<float>>;
};

template <rinaDataType_t kType>
struct OpsFor;
template <>
struct OpsFor<rinaInt8> : IntegerOps<int8_t> {};
template <>
struct OpsFor<rinaUint8> : IntegerOps<uint8_t> {};
template <>
struct OpsFor<rinaInt32> : IntegerOps<int32_t> {};
template <>
struct OpsFor<rinaUint32> : IntegerOps<uint32_t> {};
template <>
struct OpsFor<rinaInt64> : IntegerOps<int64_t> {};
template <>
struct OpsFor<rinaUint64> : IntegerOps<uint64_t> {};
template <>
struct OpsFor<rinaFloat16> : NarrowOps<HalfCodec> {};
template <>
struct OpsFor<rinaBfloat16> : NarrowOps<Bf16Codec> {};
template <>
struct OpsFor<rinaFloat32> : FloatOps<float> {};
template <>
struct OpsFor<rinaFloat64> : FloatOps<double> {};

// ---- finishAverage, one element ----

template <class T>
RINA_HOST_DEVICE inline T averageInteger(T value, int nranks) {
  // Both signed and unsigned go through a type that holds every T and every
  // positive int, so the division truncates toward zero as C does.
  if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(static_cast<int64_t>(value) / nranks);
  } else {
    return static_cast<T>(static_cast<uint64_t>(value) / static_cast<uint64_t>(nranks));
  }
}

template <class F>
RINA_HOST_DEVICE inline F averageFloat(F value, F divisor) {
  return canonicalizeNan(value / divisor);
}

}  // namespace rina::reduce::detail

#endif  // RINA_LIB_REDUCE_SCALAR_OPS_H_
