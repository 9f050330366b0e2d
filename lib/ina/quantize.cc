#include "ina/quantize.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "rina/ina_wire.h"

namespace rina::ina {

int headroomBits(int fanIn) {
  int h = 0;
  while ((1 << h) < fanIn) ++h;
  return h;
}

int8_t sliceExponent(const float* x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float a = std::fabs(x[i]);
    if (!(a < 0x1p126f)) return kExponentHost;  // NaN, Inf or too large
    m = a > m ? a : m;
  }
  if (m == 0.0f) return kExponentZero;
  int e = std::ilogb(m) + 1;  // m < 2^e
  return static_cast<int8_t>(e < -126 ? -126 : e);
}

void quantize(const float* x, size_t n, int8_t exponent, int fanIn, int32_t* q) {
  const double scale = std::ldexp(1.0, fractionBits(fanIn) - exponent);
  for (size_t i = 0; i < n; ++i) {
    q[i] = static_cast<int32_t>(std::nearbyint(static_cast<double>(x[i]) * scale));
  }
}

void dequantize(const int32_t* sum, size_t n, int8_t exponent, int fanIn, float* y) {
  const double scale = std::ldexp(1.0, exponent - fractionBits(fanIn));
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(sum[i]) * scale);
}

double quantizationErrorBound(int8_t exponent, int fanIn) {
  return fanIn * std::ldexp(1.0, exponent + headroomBits(fanIn) - 31);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  float a = std::fabs(f);
  if (std::isnan(a)) return static_cast<uint16_t>(sign | 0x7E00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to Inf
  if (a < 0x1p-14f) {
    // Subnormal: units of 2^-24, rounded to nearest even.
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24f)));
  }
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: mantissa units of 2^(e - 11).
  uint32_t sig = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));
  if (sig == 2048) {
    sig = 1024;
    ++e;
  }
  int biased = e - 1 + 15;
  if (biased >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  return static_cast<uint16_t>(sign | (biased << 10) | (sig & 0x3FF));
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

void loadAsFloat(const void* buffer, rinaDataType_t type, size_t first, size_t n, float* out) {
  if (type == rinaFloat32) {
    std::memcpy(out, static_cast<const float*>(buffer) + first, n * sizeof(float));
    return;
  }
  const uint16_t* p = static_cast<const uint16_t*>(buffer) + first;
  for (size_t i = 0; i < n; ++i) out[i] = type == rinaFloat16 ? halfToFloat(p[i]) : bfloat16ToFloat(p[i]);
}

void storeFromFloat(const float* in, size_t n, rinaDataType_t type, size_t first, void* buffer) {
  if (type == rinaFloat32) {
    std::memcpy(static_cast<float*>(buffer) + first, in, n * sizeof(float));
    return;
  }
  uint16_t* p = static_cast<uint16_t*>(buffer) + first;
  for (size_t i = 0; i < n; ++i) p[i] = type == rinaFloat16 ? floatToHalf(in[i]) : floatToBfloat16(in[i]);
}

}  // namespace rina::ina
