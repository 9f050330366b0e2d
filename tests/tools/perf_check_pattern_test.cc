// The check values of rina-allreduce-perf: the closed-form expected value
// against a brute-force reduction over simulated ranks, done in the data
// type itself (rounding after every step) in several orders, so "exact in
// every type and every order" is tested, not assumed.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "perf/check_pattern.h"
#include "perf/dtype.h"

namespace rina::perf {
namespace {

constexpr rinaDataType_t kAllTypes[] = {rinaInt8,    rinaUint8,  rinaInt32,   rinaUint32,
                                        rinaInt64,   rinaUint64, rinaFloat16, rinaBfloat16,
                                        rinaFloat32, rinaFloat64};
constexpr rinaRedOp_t kAllOps[] = {rinaSum, rinaProd, rinaMin, rinaMax, rinaAvg};

// x rounded to the type as the type's own arithmetic would store it; for
// integer types, whether x is in range instead (wrapping would hide a bug).
bool storable(rinaDataType_t type, long double x, long double* stored) {
  switch (type) {
    case rinaInt8:
      *stored = x;
      return x >= -128 && x <= 127;
    case rinaUint8:
      *stored = x;
      return x >= 0 && x <= 255;
    case rinaInt32:
      *stored = x;
      return x >= INT32_MIN && x <= INT32_MAX;
    case rinaUint32:
      *stored = x;
      return x >= 0 && x <= UINT32_MAX;
    case rinaInt64:
      *stored = x;
      return std::fabs(x) < 9.2e18L;
    case rinaUint64:
      *stored = x;
      return x >= 0 && x < 1.8e19L;
    case rinaFloat16:
#ifdef __FLT16_MAX__
      // The compiler's own conversion: independent of floatToHalfBits.
      *stored = static_cast<long double>(static_cast<_Float16>(static_cast<float>(x)));
#else
      *stored = halfBitsToFloat(floatToHalfBits(static_cast<float>(x)));
#endif
      return true;
    case rinaBfloat16:
      *stored = bfloat16BitsToFloat(floatToBfloat16Bits(static_cast<float>(x)));
      return true;
    case rinaFloat32:
      *stored = static_cast<float>(x);
      return true;
    default:
      *stored = static_cast<double>(x);
      return true;
  }
}

long double combine(rinaRedOp_t op, long double a, long double b) {
  switch (op) {
    case rinaProd:
      return a * b;
    case rinaMin:
      return std::fmin(a, b);
    case rinaMax:
      return std::fmax(a, b);
    default:
      return a + b;  // sum, avg
  }
}

// Reduces the ranks' inputs for element i in the given rank order, storing
// every partial result in the type; fails the test if one is not exact.
long double reduceInOrder(const CheckPattern& pattern, size_t i, const std::vector<int>& order) {
  long double acc = pattern.input(order[0], i);
  long double stored = 0;
  EXPECT_TRUE(storable(pattern.type(), acc, &stored) && stored == acc);
  for (size_t k = 1; k < order.size(); ++k) {
    acc = combine(pattern.op(), acc, pattern.input(order[k], i));
    const bool fits = storable(pattern.type(), acc, &stored);
    EXPECT_TRUE(fits && stored == acc)
        << typeName(pattern.type()) << " " << opName(pattern.op()) << " n=" << order.size()
        << " i=" << i << ": partial " << static_cast<double>(acc) << " is not exact";
  }
  if (pattern.op() == rinaAvg) {
    const long double n = static_cast<long double>(order.size());
    acc = isFloatType(pattern.type()) ? acc / n : std::trunc(acc / n);
  }
  return acc;
}

// Pairwise (tree) order, the shape of recursive doubling.
long double reduceAsTree(const CheckPattern& pattern, size_t i, int low, int high) {
  if (high - low == 1) {
    return pattern.input(low, i);
  }
  const int mid = (low + high) / 2;
  const long double acc = combine(pattern.op(), reduceAsTree(pattern, i, low, mid),
                                  reduceAsTree(pattern, i, mid, high));
  long double stored = 0;
  EXPECT_TRUE(storable(pattern.type(), acc, &stored) && stored == acc);
  return acc;
}

class PerfCheckPattern : public ::testing::TestWithParam<int> {};

TEST_P(PerfCheckPattern, ExpectedEqualsBruteForceInEveryTypeAndOrder) {
  const int nranks = GetParam();
  std::vector<int> forward(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    forward[static_cast<size_t>(r)] = r;
  }
  const std::vector<int> backward(forward.rbegin(), forward.rend());
  std::vector<int> rotated = forward;  // starts at the middle rank, as a ring step does
  std::rotate(rotated.begin(), rotated.begin() + nranks / 2, rotated.end());
  for (const rinaDataType_t type : kAllTypes) {
    for (const rinaRedOp_t op : kAllOps) {
      const CheckPattern pattern(type, op, nranks);
      SCOPED_TRACE(std::string(typeName(type)) + " " + opName(op));
      for (size_t i = 0; i < 2000; ++i) {
        const long double expected = pattern.expected(i);
        long double stored = 0;
        ASSERT_TRUE(storable(type, expected, &stored) && stored == expected) << i;
        ASSERT_EQ(reduceInOrder(pattern, i, forward), expected) << "i=" << i;
        ASSERT_EQ(reduceInOrder(pattern, i, backward), expected) << "i=" << i;
        ASSERT_EQ(reduceInOrder(pattern, i, rotated), expected) << "i=" << i;
        if (op != rinaAvg) {
          ASSERT_EQ(reduceAsTree(pattern, i, 0, nranks), expected) << "i=" << i;
        }
      }
    }
  }
}

TEST_P(PerfCheckPattern, ValuesVaryAcrossElementsAndRanks) {
  const int nranks = GetParam();
  for (const rinaRedOp_t op : kAllOps) {
    const CheckPattern pattern(rinaFloat32, op, nranks);
    std::set<int64_t> expectedValues;
    for (size_t i = 0; i < 1000; ++i) {
      expectedValues.insert(pattern.expected(i));
    }
    // A block of results written to the wrong place must show.
    EXPECT_GE(expectedValues.size(), 2u) << opName(op);
    if (nranks > 1 && op != rinaProd) {
      std::set<int64_t> inputs;
      for (int r = 0; r < nranks; ++r) {
        inputs.insert(pattern.input(r, 0));
      }
      EXPECT_GE(inputs.size(), 2u) << opName(op) << ": ranks must not all send the same";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, PerfCheckPattern,
                         ::testing::Values(1, 2, 3, 4, 5, 7, 8, 16, 33, 64));

TEST(PerfCheckPattern, FillThenCountAgreesForEveryType) {
  const size_t count = 1000;
  for (const rinaDataType_t type : kAllTypes) {
    for (const rinaRedOp_t op : kAllOps) {
      const CheckPattern pattern(type, op, 4);
      std::vector<std::byte> buf(count * typeSize(type));
      fillInput(pattern, 2, buf.data(), count);
      EXPECT_EQ(countChangedInputs(pattern, 2, buf.data(), count), 0u) << typeName(type);
      EXPECT_GT(countChangedInputs(pattern, 1, buf.data(), count), 0u) << typeName(type);
      // The poison the tool writes before a run is (nearly always) wrong.
      std::memset(buf.data(), 0xA5, buf.size());
      EXPECT_GE(countWrongResults(pattern, buf.data(), count), count * 9 / 10) << typeName(type);
    }
  }
}

TEST(PerfCheckPattern, OneRankExpectsItsOwnInput) {
  for (const rinaDataType_t type : kAllTypes) {
    for (const rinaRedOp_t op : kAllOps) {
      const CheckPattern pattern(type, op, 1);
      std::vector<std::byte> buf(500 * typeSize(type));
      fillInput(pattern, 0, buf.data(), 500);
      EXPECT_EQ(countWrongResults(pattern, buf.data(), 500), 0u)
          << typeName(type) << " " << opName(op);
    }
  }
}

TEST(PerfDtype, HalfRoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float value = halfBitsToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(value))));
      continue;
    }
    EXPECT_EQ(floatToHalfBits(value), bits) << std::hex << bits;
#ifdef __FLT16_MAX__
    EXPECT_EQ(value, static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(bits))));
#endif
  }
}

TEST(PerfDtype, HalfRoundsToNearestEven) {
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(2049.0f)), 2048.0f);  // tie -> even
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(2051.0f)), 2052.0f);  // tie -> even
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(halfBitsToFloat(floatToHalfBits(65520.0f))));
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(65519.0f)), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(std::ldexp(1.0f, -26))), 0.0f);
#ifdef __FLT16_MAX__
  for (uint32_t i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(0x30000000u + i * 0x1F3Bu);  // spans 2^-31 .. 2^17
    EXPECT_EQ(floatToHalfBits(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
#endif
}

TEST(PerfDtype, Bfloat16) {
  EXPECT_EQ(bfloat16BitsToFloat(floatToBfloat16Bits(256.0f)), 256.0f);
  EXPECT_EQ(bfloat16BitsToFloat(floatToBfloat16Bits(257.0f)), 256.0f);  // tie -> even
  EXPECT_EQ(bfloat16BitsToFloat(floatToBfloat16Bits(259.0f)), 260.0f);  // tie -> even
  EXPECT_EQ(bfloat16BitsToFloat(floatToBfloat16Bits(-3.0f)), -3.0f);
  EXPECT_TRUE(std::isnan(bfloat16BitsToFloat(floatToBfloat16Bits(std::nanf("")))));
}

TEST(PerfDtype, NamesRoundTrip) {
  for (const rinaDataType_t type : kAllTypes) {
    rinaDataType_t parsed = rinaNumTypes;
    ASSERT_TRUE(parseType(typeName(type), &parsed));
    EXPECT_EQ(parsed, type);
  }
  for (const rinaRedOp_t op : kAllOps) {
    rinaRedOp_t parsed = rinaNumOps;
    ASSERT_TRUE(parseOp(opName(op), &parsed));
    EXPECT_EQ(parsed, op);
  }
  EXPECT_EQ(typeSize(rinaBfloat16), 2u);
  EXPECT_EQ(typeSize(rinaUint64), 8u);
}

}  // namespace
}  // namespace rina::perf
