// Block floating point and 16-bit float conversions, against references
// computed here in double.
#include "ina/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "ina/quantize_kernels.h"
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

// The AVX2 loops give the scalar loops' bits (the scalar ones are the
// reference: plain per-element code), on every length from 0 to 70 (the
// vector tails) and on special values anywhere in the slice.
TEST(Quantize, VectorKernelsGiveTheScalarBits) {
  if (!detail::cpuHasAvx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  EXPECT_STREQ(detail::quantizeIsaName(), "avx2");
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float specials[] = {0.0f,     -0.0f,     0x1p-149f, -0x1p-140f, 0x1p125f, 0x1.fffffep125f,
                            0x1p126f, -0x1p127f, INFINITY,  NAN};
  for (size_t n = 0; n <= 70; ++n) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> x(n);
      const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 60) - 30);
      for (float& v : x) v = unit(rng) * scale;
      if (n > 0 && trial % 2 == 1) x[rng() % n] = specials[rng() % std::size(specials)];
      uint32_t a = 0, b = 0;
      const bool okScalar = detail::maxMagnitudeBitsScalar(x.data(), n, &a);
      const bool okVector = detail::maxMagnitudeBitsAvx2(x.data(), n, &b);
      ASSERT_EQ(okScalar, okVector) << "n " << n << " trial " << trial;
      if (!okScalar) continue;
      ASSERT_EQ(a, b) << "n " << n << " trial " << trial;
      const int8_t E = sliceExponent(x.data(), n);
      if (E == kExponentZero) continue;
      const double s = std::ldexp(1.0, fractionBits(3) - E);
      std::vector<int32_t> qs(n), qv(n);
      detail::quantizeScalar(x.data(), n, s, qs.data());
      detail::quantizeAvx2(x.data(), n, s, qv.data());
      ASSERT_EQ(qs, qv) << "n " << n << " trial " << trial;
      std::vector<float> ys(n), yv(n);
      detail::dequantizeScalar(qs.data(), n, 1 / s, ys.data());
      detail::dequantizeAvx2(qs.data(), n, 1 / s, yv.data());
      ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), 4 * n)) << "n " << n << " trial " << trial;
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
