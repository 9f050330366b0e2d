// Block floating point and 16-bit float conversions, against references
// computed here in double.
#include "ina/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "rina/ina_wire.h"

namespace rina::ina {
namespace {

TEST(Quantize, ExponentBoundsTheSliceAndFlagsSpecialValues) {
  std::vector<float> x{0.5f, -3.0f, 1.0f};
  EXPECT_EQ(sliceExponent(x.data(), x.size()), 2);  // 3 < 2^2
  x = {4.0f};
  EXPECT_EQ(sliceExponent(x.data(), 1), 3);  // 4 < 2^3
  x = {0.0f, -0.0f};
  EXPECT_EQ(sliceExponent(x.data(), 2), kExponentZero);
  x = {1.0f, NAN};
  EXPECT_EQ(sliceExponent(x.data(), 2), kExponentHost);
  x = {INFINITY};
  EXPECT_EQ(sliceExponent(x.data(), 1), kExponentHost);
  x = {1e-45f};  // subnormal: clamped, still an upper bound
  EXPECT_EQ(sliceExponent(x.data(), 1), -126);
  EXPECT_EQ(headroomBits(1), 0);
  EXPECT_EQ(headroomBits(2), 1);
  EXPECT_EQ(headroomBits(5), 3);
  EXPECT_EQ(headroomBits(32), 5);
}

TEST(Quantize, SumOfQuantizedSlicesIsWithinTheDocumentedBound) {
  std::mt19937 rng(7);
  for (int k : {1, 2, 3, 8, 32}) {
    const size_t n = 256;
    std::vector<std::vector<float>> in(k, std::vector<float>(n));
    std::normal_distribution<float> dist(0.0f, 1.0f);
    int8_t E = kExponentZero;
    for (auto& v : in) {
      for (float& f : v) f = dist(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
      E = std::max(E, sliceExponent(v.data(), n));
    }
    std::vector<int64_t> sum(n, 0);
    std::vector<int32_t> q(n);
    for (auto& v : in) {
      quantize(v.data(), n, E, k, q.data());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_LE(std::llabs(q[i]), int64_t{1} << fractionBits(k));
        sum[i] += q[i];
      }
    }
    std::vector<int32_t> s32(n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LE(std::llabs(sum[i]), int64_t{1} << 30);  // headroom: no int32 overflow
      s32[i] = static_cast<int32_t>(sum[i]);
    }
    std::vector<float> y(n);
    dequantize(s32.data(), n, E, k, y.data());
    double bound = quantizationErrorBound(E, k);
    for (size_t i = 0; i < n; ++i) {
      double exact = 0;
      for (auto& v : in) exact += v[i];
      double allowed = bound + std::fabs(exact) * 0x1p-24 + 1e-300;
      EXPECT_LE(std::fabs(y[i] - exact), allowed) << "k=" << k << " i=" << i;
    }
  }
}

TEST(Quantize, LoadAndStoreSixteenBitFloats) {
  std::vector<float> in{1.0f, -2.5f, 65504.0f, 1.0f + 0x1p-11f, 0x1p-24f};
  std::vector<uint16_t> half(in.size()), bf(in.size());
  storeFromFloat(in.data(), in.size(), rinaFloat16, 0, half.data());
  storeFromFloat(in.data(), in.size(), rinaBfloat16, 0, bf.data());
  EXPECT_EQ(half, (std::vector<uint16_t>{0x3C00, 0xC100, 0x7BFF, 0x3C00, 0x0001}));
  EXPECT_EQ(bf[0], 0x3F80);
  EXPECT_EQ(bf[1], 0xC020);
  std::vector<float> back(in.size());
  loadAsFloat(half.data(), rinaFloat16, 1, 2, back.data());  // an offset range
  EXPECT_EQ(back[0], -2.5f);
  EXPECT_EQ(back[1], 65504.0f);
  loadAsFloat(in.data(), rinaFloat32, 0, in.size(), back.data());
  EXPECT_EQ(back, in);
}

}  // namespace
}  // namespace rina::ina
