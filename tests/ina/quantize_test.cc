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

TEST(Quantize, HalfAndBfloat16ConversionsRoundToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // rounds up to Inf
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3C00);  // tie: to even
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite positive half
    ASSERT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-8f), 0x3F80);  // tie: to even
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(NAN))));
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

}  // namespace
}  // namespace rina::ina
