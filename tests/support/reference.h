// Independent references for collective results: values chosen so that every
// reduction is exact in every datatype, and a serial computation of the
// expected element written without the library's kernels.
#ifndef RINA_TESTS_SUPPORT_REFERENCE_H_
#define RINA_TESTS_SUPPORT_REFERENCE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rina/rina.h"

namespace rina::testing {

inline size_t sizeOf(rinaDataType_t t) {
  switch (t) {
    case rinaInt8:
    case rinaUint8:
      return 1;
    case rinaFloat16:
    case rinaBfloat16:
      return 2;
    case rinaInt32:
    case rinaUint32:
    case rinaFloat32:
      return 4;
    default:
      return 8;
  }
}

inline bool isSigned(rinaDataType_t t) {
  return t == rinaInt8 || t == rinaInt32 || t == rinaInt64 || t >= rinaFloat16;
}
inline bool isFloat(rinaDataType_t t) { return t >= rinaFloat16; }

// The input of rank r at index i: a small integer, so that sums over up to 8
// ranks stay exact in float16 and bfloat16; {1, 2} (or -1 for signed) for
// prod so products are powers of two.
inline int64_t inputValue(rinaDataType_t t, rinaRedOp_t op, int r, size_t i) {
  uint64_t h = (static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull) ^ (i * 0xBF58476D1CE4E5B9ull);
  h ^= h >> 29;
  if (op == rinaProd) {
    int64_t v = 1 + static_cast<int64_t>(h % 2);
    if (isSigned(t) && (h >> 8) % 5 == 0) v = -v;
    return v;
  }
  if (isSigned(t)) return static_cast<int64_t>(h % 15) - 7;
  return static_cast<int64_t>(h % 16);
}

// float -> float16 bits through the compiler's _Float16 (independent of rina).
inline uint16_t toHalf(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
inline float fromHalf(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}
// float -> bfloat16 bits, round to nearest even (values here are never NaN).
inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float fromBf16(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Stores an integer-valued v into element i of a buffer of type t (integers
// wrap to the type's width, as two's complement).
inline void store(rinaDataType_t t, void* buf, size_t i, int64_t v) {
  char* p = static_cast<char*>(buf) + i * sizeOf(t);
  switch (t) {
    case rinaInt8:
    case rinaUint8: {
      uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(p, &x, 1);
      break;
    }
    case rinaInt32:
    case rinaUint32: {
      uint32_t x = static_cast<uint32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case rinaInt64:
    case rinaUint64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case rinaFloat16: {
      uint16_t x = toHalf(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case rinaBfloat16: {
      uint16_t x = toBf16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case rinaFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case rinaFloat64: {
      double x = static_cast<double>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    default:
      break;
  }
}

// The expected bytes of element i of op over ranks 0..n-1.
inline void expectedElement(rinaDataType_t t, rinaRedOp_t op, int n, size_t i, void* out) {
  // Integers: fold in the type's width (wrapping) using a 64-bit carrier.
  auto wrapTo = [t](int64_t v) -> int64_t {
    switch (t) {
      case rinaInt8:
        return static_cast<int8_t>(v);
      case rinaUint8:
        return static_cast<uint8_t>(v);
      case rinaInt32:
        return static_cast<int32_t>(v);
      case rinaUint32:
        return static_cast<uint32_t>(v);
      default:
        return v;
    }
  };
  int64_t acc = inputValue(t, op, 0, i);
  for (int r = 1; r < n; ++r) {
    int64_t v = inputValue(t, op, r, i);
    switch (op) {
      case rinaSum:
      case rinaAvg:
        acc = wrapTo(static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v)));
        break;
      case rinaProd:
        acc = wrapTo(static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v)));
        break;
      case rinaMin:
        acc = std::min(acc, v);
        break;
      case rinaMax:
        acc = std::max(acc, v);
        break;
      default:
        break;
    }
  }
  if (op != rinaAvg) {
    store(t, out, 0, acc);
    return;
  }
  char* p = static_cast<char*>(out);
  switch (t) {
    case rinaFloat16: {
      uint16_t x = toHalf(static_cast<float>(acc) / static_cast<float>(n));
      std::memcpy(p, &x, 2);
      break;
    }
    case rinaBfloat16: {
      uint16_t x = toBf16(static_cast<float>(acc) / static_cast<float>(n));
      std::memcpy(p, &x, 2);
      break;
    }
    case rinaFloat32: {
      float x = static_cast<float>(acc) / static_cast<float>(n);
      std::memcpy(p, &x, 4);
      break;
    }
    case rinaFloat64: {
      double x = static_cast<double>(acc) / n;
      std::memcpy(p, &x, 8);
      break;
    }
    case rinaUint8:
      store(t, out, 0, static_cast<int64_t>(static_cast<uint8_t>(acc) / n));
      break;
    case rinaUint32:
      store(t, out, 0, static_cast<int64_t>(static_cast<uint32_t>(acc) / static_cast<uint32_t>(n)));
      break;
    case rinaUint64:
      store(t, out, 0, static_cast<int64_t>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(n)));
      break;
    default:
      store(t, out, 0, acc / n);
      break;  // signed: C truncation
  }
}

// Index of the first element of got that differs from the reference, or -1.
inline int64_t firstMismatch(rinaDataType_t t, rinaRedOp_t op, int n, const void* got, size_t count,
                             size_t offset = 0) {
  size_t es = sizeOf(t);
  char want[8];
  for (size_t i = 0; i < count; ++i) {
    expectedElement(t, op, n, offset + i, want);
    if (std::memcmp(static_cast<const char*>(got) + i * es, want, es) != 0)
      return static_cast<int64_t>(i);
  }
  return -1;
}

inline void fillInput(rinaDataType_t t, rinaRedOp_t op, int r, void* buf, size_t count,
                      size_t offset = 0) {
  for (size_t i = 0; i < count; ++i) store(t, buf, i, inputValue(t, op, r, offset + i));
}

}  // namespace rina::testing

#endif  // RINA_TESTS_SUPPORT_REFERENCE_H_
