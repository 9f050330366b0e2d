#include "ina/quantize.h"

#include <cmath>
#include <cstring>

#include "ina/quantize_kernels.h"
#include "reduce/half.h"
#include "rina/ina_wire.h"

namespace rina::ina {

int headroomBits(int fanIn) {
  int h = 0;
  while ((1 << h) < fanIn) ++h;
  return h;
}

namespace detail {

bool maxMagnitudeBitsScalar(const float* x, size_t n, uint32_t* maxBits) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float a = std::fabs(x[i]);
    if (!(a < 0x1p126f)) return false;  // NaN, Inf or too large
    m = a > m ? a : m;
  }
  std::memcpy(maxBits, &m, 4);
  return true;
}

void quantizeScalar(const float* x, size_t n, double scale, int32_t* q) {
  // |x * scale| <= 2^30: adding and removing 1.5 * 2^52 rounds to nearest
  // even (the default FP mode) without a libm call.
  constexpr double kRound = 0x1.8p52;
  for (size_t i = 0; i < n; ++i) {
    double v = static_cast<double>(x[i]) * scale;
    q[i] = static_cast<int32_t>((v + kRound) - kRound);
  }
}

void dequantizeScalar(const int32_t* sum, size_t n, double scale, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(sum[i]) * scale);
}

namespace {

struct Kernels {
  bool (*maxMagnitudeBits)(const float*, size_t, uint32_t*);
  void (*quantize)(const float*, size_t, double, int32_t*);
  void (*dequantize)(const int32_t*, size_t, double, float*);
  const char* isa;
};

const Kernels& kernels() {
  static const Kernels k =
      cpuHasAvx2() ? Kernels{maxMagnitudeBitsAvx2, quantizeAvx2, dequantizeAvx2, "avx2"}
                   : Kernels{maxMagnitudeBitsScalar, quantizeScalar, dequantizeScalar, "scalar"};
  return k;
}

}  // namespace

const char* quantizeIsaName() { return kernels().isa; }

}  // namespace detail

int8_t sliceExponent(const float* x, size_t n) {
  uint32_t bits = 0;
  if (!detail::kernels().maxMagnitudeBits(x, n, &bits)) return kExponentHost;
  if (bits == 0) return kExponentZero;
  float m;
  std::memcpy(&m, &bits, 4);
  int e = std::ilogb(m) + 1;  // m < 2^e
  return static_cast<int8_t>(e < -126 ? -126 : e);
}

void quantize(const float* x, size_t n, int8_t exponent, int fanIn, int32_t* q) {
  detail::kernels().quantize(x, n, std::ldexp(1.0, fractionBits(fanIn) - exponent), q);
}

void dequantize(const int32_t* sum, size_t n, int8_t exponent, int fanIn, float* y) {
  detail::kernels().dequantize(sum, n, std::ldexp(1.0, exponent - fractionBits(fanIn)), y);
}

double quantizationErrorBound(int8_t exponent, int fanIn) {
  return fanIn * std::ldexp(1.0, exponent + headroomBits(fanIn) - 31);
}

void loadAsFloat(const void* buffer, rinaDataType_t type, size_t first, size_t n, float* out) {
  if (type == rinaFloat32) {
    std::memcpy(out, static_cast<const float*>(buffer) + first, n * sizeof(float));
    return;
  }
  const uint16_t* p = static_cast<const uint16_t*>(buffer) + first;
  for (size_t i = 0; i < n; ++i)
    out[i] = type == rinaFloat16 ? reduce::detail::halfBitsToFloat(p[i])
                                 : reduce::detail::bf16BitsToFloat(p[i]);
}

void storeFromFloat(const float* in, size_t n, rinaDataType_t type, size_t first, void* buffer) {
  if (type == rinaFloat32) {
    std::memcpy(static_cast<float*>(buffer) + first, in, n * sizeof(float));
    return;
  }
  uint16_t* p = static_cast<uint16_t*>(buffer) + first;
  for (size_t i = 0; i < n; ++i)
    p[i] = type == rinaFloat16 ? reduce::detail::floatToHalfBits(in[i])
                               : reduce::detail::floatToBf16Bits(in[i]);
}

}  // namespace rina::ina
