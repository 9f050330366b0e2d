// Reduction kernels against the serial reference of reduce_reference.h,
// written separately from them. Every kernel table this CPU can run (scalar,
// avx2) is checked, on lengths that leave vector tails, in place on either
// operand and out of place, at addresses that are not vector-aligned and at
// addresses that are not even element-aligned; and the byte copy every
// table carries, at every pair of offsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "reduce/kernels.h"
#include "reduce/reduce.h"
#include "reduce_reference.h"

namespace rina::reduce {
namespace {

using detail::KernelOp;
using detail::KernelTable;
using detail::kKernelMax;
using detail::kKernelMin;
using detail::kKernelProd;
using detail::kKernelSum;
using reference::kNanBf16;
using reference::kNanF16;
using reference::kNanF32;
using reference::kNanF64;
using reference::refFloatToBf16;
using reference::refFloatToHalf;
using reference::RefFor;
using reference::refHalfToFloat;

constexpr size_t kLengths[] = {0, 1, 7, 31, 33, 1000, 4099};

// ---------------------------------------------------------------------------
// Harness.

std::vector<const KernelTable*> availableTables() {
  std::vector<const KernelTable*> tables = {&detail::scalarKernels()};
  if (detail::avx2Kernels() != nullptr) tables.push_back(detail::avx2Kernels());
  return tables;
}

const KernelTable* tableNamed(const std::string& isa) {
  for (const KernelTable* table : availableTables()) {
    if (isa == table->isa) return table;
  }
  return nullptr;
}

enum class Placement { kOutOfPlace, kIntoA, kIntoB };
const char* placementName(Placement p) {
  return p == Placement::kOutOfPlace ? "out-of-place"
         : p == Placement::kIntoA    ? "dst==a"
                                     : "dst==b";
}

template <class T>
bool sameRepresentation(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;  // NaN == NaN, -0 != +0
}

// Elements after the output that a kernel must not touch.
constexpr size_t kGuard = 9;

// Runs fn on a and b and returns dst. Each operand sits one element plus
// `shift` bytes past an aligned allocation: shift 0 is element-aligned but
// not vector-aligned; shift > 0 is not even element-aligned (the verbs ring
// reduces out of a slot at any byte offset, and the C API takes void*).
// Checks the guard and the inputs.
template <class T>
std::vector<T> runKernel(ReduceFn fn, const std::vector<T>& a, const std::vector<T>& b,
                         Placement placement, size_t shift = 0) {
  const size_t n = a.size(), bytes = n * sizeof(T);
  const size_t off = sizeof(T) + shift;
  // Bytes, not T: the operands are copied in and out with memcpy.
  std::vector<unsigned char> bufA(off + bytes), bufB(off + bytes + 1),
      bufDst(off + 2 + bytes + kGuard * sizeof(T), 0xa5);
  if (bytes) {
    std::memcpy(bufA.data() + off, a.data(), bytes);
    std::memcpy(bufB.data() + off + 1, b.data(), bytes);  // b one byte further on
  }
  unsigned char* pa = bufA.data() + off;
  unsigned char* pb = bufB.data() + off + 1;
  unsigned char* dst = bufDst.data() + off + 2;  // and dst two
  if (shift == 0) {  // element-aligned: every operand at the same offset
    pb = bufB.data() + off;
    dst = bufDst.data() + off;
    if (bytes) std::memcpy(pb, b.data(), bytes);
  }
  const std::vector<unsigned char> guard(dst + bytes, dst + bytes + kGuard * sizeof(T));
  switch (placement) {
    case Placement::kOutOfPlace:
      fn(dst, pa, pb, n);
      EXPECT_TRUE(bytes == 0 || std::memcmp(pa, a.data(), bytes) == 0) << "a was modified";
      EXPECT_TRUE(bytes == 0 || std::memcmp(pb, b.data(), bytes) == 0) << "b was modified";
      break;
    case Placement::kIntoA:
      if (bytes) std::memcpy(dst, a.data(), bytes);
      fn(dst, dst, pb, n);
      break;
    case Placement::kIntoB:
      if (bytes) std::memcpy(dst, b.data(), bytes);
      fn(dst, pa, dst, n);
      break;
  }
  EXPECT_EQ(0, std::memcmp(dst + bytes, guard.data(), guard.size())) << "wrote past count";
  std::vector<T> out(n);
  if (bytes) std::memcpy(out.data(), dst, bytes);
  return out;
}

template <class Ref>
::testing::AssertionResult sameBits(const std::vector<typename Ref::Storage>& expected,
                                    const std::vector<typename Ref::Storage>& actual,
                                    const std::vector<typename Ref::Storage>& a,
                                    const std::vector<typename Ref::Storage>& b) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (Ref::bits(expected[i]) != Ref::bits(actual[i])) {
      char message[200];
      std::snprintf(message, sizeof(message),
                    "element %zu of %zu: a=0x%" PRIx64 " b=0x%" PRIx64 " expected 0x%" PRIx64
                    " got 0x%" PRIx64,
                    i, expected.size(), Ref::bits(a[i]), Ref::bits(b[i]), Ref::bits(expected[i]),
                    Ref::bits(actual[i]));
      return ::testing::AssertionFailure() << message;
    }
  }
  return ::testing::AssertionSuccess();
}

template <rinaDataType_t kType>
void checkKernelAgainstReference(const KernelTable& table, KernelOp op) {
  using Ref = RefFor<kType>;
  using T = typename Ref::Storage;
  ReduceFn fn = table.reduce[kType][op];
  ASSERT_NE(fn, nullptr);
  std::mt19937_64 rng(1234 + 97 * kType + op);
  for (size_t n : kLengths) {
    std::vector<T> a(n), b(n), expected(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = Ref::random(rng);
      b[i] = Ref::partner(rng, a[i]);
      expected[i] = Ref::apply(op, a[i], b[i]);
    }
    for (Placement placement : {Placement::kOutOfPlace, Placement::kIntoA, Placement::kIntoB}) {
      for (size_t shift : {size_t{0}, size_t{1}, size_t{3}}) {
        if (shift >= sizeof(T)) continue;  // bytes: every address is aligned
        SCOPED_TRACE(::testing::Message()
                     << "n=" << n << " " << placementName(placement) << " byte shift " << shift);
        EXPECT_TRUE(sameBits<Ref>(expected, runKernel(fn, a, b, placement, shift), a, b));
      }
    }
    // Commutative bit for bit, NaNs included.
    SCOPED_TRACE(::testing::Message() << "n=" << n << " swapped operands");
    EXPECT_TRUE(sameBits<Ref>(runKernel(fn, a, b, Placement::kOutOfPlace),
                              runKernel(fn, b, a, Placement::kOutOfPlace), a, b));
  }
}

template <rinaDataType_t kType>
void checkAverageAgainstReference(const KernelTable& table) {
  using Ref = RefFor<kType>;
  using T = typename Ref::Storage;
  ASSERT_NE(table.average[kType], nullptr);
  std::mt19937_64 rng(77 + kType);
  for (int nranks : {1, 2, 3, 7, 64}) {
    for (size_t n : kLengths) {
      SCOPED_TRACE(::testing::Message() << "nranks=" << nranks << " n=" << n);
      std::vector<T> data(n + 1 + kGuard), expected(n);
      for (T& v : data) v = Ref::random(rng);
      const std::vector<T> original = data;
      for (size_t i = 0; i < n; ++i) expected[i] = Ref::average(data[i + 1], nranks);
      table.average[kType](data.data() + 1, n, nranks);
      const std::vector<T> actual(data.begin() + 1, data.begin() + 1 + static_cast<ptrdiff_t>(n));
      const std::vector<T> input(original.begin() + 1,
                                 original.begin() + 1 + static_cast<ptrdiff_t>(n));
      EXPECT_TRUE(sameBits<Ref>(expected, actual, input, input));
      EXPECT_EQ(0, std::memcmp(&data[n + 1], &original[n + 1], kGuard * sizeof(T)));
      EXPECT_EQ(0, std::memcmp(&data[0], &original[0], sizeof(T)));
      if (sizeof(T) == 1) continue;
      // The same values one byte off element alignment (a void* from the C API).
      std::vector<unsigned char> bytes((n + 2) * sizeof(T));
      if (n) std::memcpy(bytes.data() + 1, input.data(), n * sizeof(T));
      table.average[kType](bytes.data() + 1, n, nranks);
      std::vector<T> shifted(n);
      if (n) std::memcpy(shifted.data(), bytes.data() + 1, n * sizeof(T));
      EXPECT_TRUE(sameBits<Ref>(expected, shifted, input, input)) << "at a byte shift of 1";
    }
  }
}

// Runtime type -> template instantiation.
template <template <rinaDataType_t> class Check, class... Args>
void forType(rinaDataType_t type, Args&&... args) {
  switch (type) {
    case rinaInt8:
      return Check<rinaInt8>::run(args...);
    case rinaUint8:
      return Check<rinaUint8>::run(args...);
    case rinaInt32:
      return Check<rinaInt32>::run(args...);
    case rinaUint32:
      return Check<rinaUint32>::run(args...);
    case rinaInt64:
      return Check<rinaInt64>::run(args...);
    case rinaUint64:
      return Check<rinaUint64>::run(args...);
    case rinaFloat16:
      return Check<rinaFloat16>::run(args...);
    case rinaBfloat16:
      return Check<rinaBfloat16>::run(args...);
    case rinaFloat32:
      return Check<rinaFloat32>::run(args...);
    case rinaFloat64:
      return Check<rinaFloat64>::run(args...);
    default:
      FAIL() << "no such type " << type;
  }
}

template <rinaDataType_t kType>
struct KernelCheck {
  static void run(const KernelTable& table, KernelOp op) {
    checkKernelAgainstReference<kType>(table, op);
  }
};

template <rinaDataType_t kType>
struct AverageCheck {
  static void run(const KernelTable& table) { checkAverageAgainstReference<kType>(table); }
};

constexpr rinaDataType_t kAllTypes[] = {rinaInt8,    rinaUint8,  rinaInt32,   rinaUint32,
                                        rinaInt64,   rinaUint64, rinaFloat16, rinaBfloat16,
                                        rinaFloat32, rinaFloat64};
constexpr KernelOp kAllKernelOps[] = {kKernelSum, kKernelProd, kKernelMin, kKernelMax};
const char* const kKernelOpNames[] = {"sum", "prod", "min", "max"};

// ---------------------------------------------------------------------------
// Every (isa, type, op) against the reference.

using KernelParam = std::tuple<std::string, rinaDataType_t, KernelOp>;
class KernelMatchesReference : public ::testing::TestWithParam<KernelParam> {};

TEST_P(KernelMatchesReference, RandomData) {
  const auto& [isa, type, op] = GetParam();
  const KernelTable* table = tableNamed(isa);
  if (table == nullptr) GTEST_SKIP() << isa << " kernels do not run on this CPU";
  forType<KernelCheck>(type, *table, op);
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KernelMatchesReference,
                         ::testing::Combine(::testing::Values("scalar", "avx2"),
                                            ::testing::ValuesIn(kAllTypes),
                                            ::testing::ValuesIn(kAllKernelOps)),
                         [](const ::testing::TestParamInfo<KernelParam>& param) {
                           return std::get<0>(param.param) + "_" +
                                  dataTypeName(std::get<1>(param.param)) + "_" +
                                  kKernelOpNames[std::get<2>(param.param)];
                         });

using AverageParam = std::tuple<std::string, rinaDataType_t>;
class AverageMatchesReference : public ::testing::TestWithParam<AverageParam> {};

TEST_P(AverageMatchesReference, RandomData) {
  const auto& [isa, type] = GetParam();
  const KernelTable* table = tableNamed(isa);
  if (table == nullptr) GTEST_SKIP() << isa << " kernels do not run on this CPU";
  forType<AverageCheck>(type, *table);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, AverageMatchesReference,
                         ::testing::Combine(::testing::Values("scalar", "avx2"),
                                            ::testing::ValuesIn(kAllTypes)),
                         [](const ::testing::TestParamInfo<AverageParam>& param) {
                           return std::get<0>(param.param) + "_" +
                                  dataTypeName(std::get<1>(param.param));
                         });

// ---------------------------------------------------------------------------
// Named cases, run on every available table. Values repeat to 37 elements so
// each case lands both in the vector body and in the scalar tail.

template <class T>
std::vector<T> applyOnEveryTable(rinaDataType_t type, KernelOp op, std::vector<T> a,
                                 std::vector<T> b) {
  const size_t pattern = a.size();
  for (size_t i = pattern; i < 37; ++i) {
    a.push_back(a[i % pattern]);
    b.push_back(b[i % pattern]);
  }
  std::vector<T> result;
  for (const KernelTable* table : availableTables()) {
    SCOPED_TRACE(table->isa);
    std::vector<T> out(a.size());
    table->reduce[type][op](out.data(), a.data(), b.data(), a.size());
    std::vector<T> swapped(a.size());
    table->reduce[type][op](swapped.data(), b.data(), a.data(), a.size());
    EXPECT_EQ(0, std::memcmp(out.data(), swapped.data(), out.size() * sizeof(T)))
        << "not commutative bit for bit";
    if (result.empty()) {
      result = out;
    } else {
      EXPECT_EQ(0, std::memcmp(out.data(), result.data(), out.size() * sizeof(T)))
          << "tables disagree";
    }
  }
  result.resize(pattern);
  return result;
}

std::vector<uint32_t> bitsOf(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
  return out;
}

std::vector<uint64_t> bitsOf(const std::vector<double>& v) {
  std::vector<uint64_t> out;
  for (double d : v) out.push_back(std::bit_cast<uint64_t>(d));
  return out;
}

TEST(ReduceSpecialValues, Float32MinMaxNanAndInfinity) {
  const float nan1 = std::bit_cast<float>(0x7fc00001u);
  const float nan2 = std::bit_cast<float>(0xffc12345u);  // negative, other payload
  const float snan = std::bit_cast<float>(0x7f800001u);
  const float inf = INFINITY;
  const std::vector<float> a = {nan1, 1.0f, nan1, -inf, inf, snan, -inf, 3.0f};
  const std::vector<float> b = {1.0f, nan2, nan2, nan1, -inf, 2.0f, inf, -inf};
  const uint32_t kInf = 0x7f800000u, kNegInf = 0xff800000u;
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat32, kKernelMin, a, b)),
            (std::vector<uint32_t>{kNanF32, kNanF32, kNanF32, kNanF32, kNegInf, kNanF32, kNegInf,
                                   kNegInf}));
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat32, kKernelMax, a, b)),
            (std::vector<uint32_t>{kNanF32, kNanF32, kNanF32, kNanF32, kInf, kNanF32, kInf,
                                   0x40400000u}));
  // sum and prod: NaN results are canonical too, also inf - inf and 0 * inf.
  EXPECT_EQ(bitsOf(applyOnEveryTable<float>(rinaFloat32, kKernelSum, {nan1, inf, inf},
                                            {nan2, -inf, 1.0f})),
            (std::vector<uint32_t>{kNanF32, kNanF32, kInf}));
  EXPECT_EQ(bitsOf(applyOnEveryTable<float>(rinaFloat32, kKernelProd, {nan1, 0.0f, -inf},
                                            {nan2, inf, 2.0f})),
            (std::vector<uint32_t>{kNanF32, kNanF32, kNegInf}));
}

TEST(ReduceSpecialValues, Float64MinMaxNanAndInfinity) {
  const double nan1 = std::bit_cast<double>(0x7ff8000000000001ull);
  const double nan2 = std::bit_cast<double>(0xfff8000000abcdefull);
  const double inf = HUGE_VAL;
  const std::vector<double> a = {nan1, 1.0, nan1, -inf, inf};
  const std::vector<double> b = {1.0, nan2, nan2, nan1, -inf};
  const uint64_t kInf = 0x7ff0000000000000ull, kNegInf = 0xfff0000000000000ull;
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat64, kKernelMin, a, b)),
            (std::vector<uint64_t>{kNanF64, kNanF64, kNanF64, kNanF64, kNegInf}));
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat64, kKernelMax, a, b)),
            (std::vector<uint64_t>{kNanF64, kNanF64, kNanF64, kNanF64, kInf}));
  EXPECT_EQ(bitsOf(applyOnEveryTable<double>(rinaFloat64, kKernelSum, {nan1, inf}, {nan2, -inf})),
            (std::vector<uint64_t>{kNanF64, kNanF64}));
}

TEST(ReduceSpecialValues, SignedZero) {
  const std::vector<float> a = {-0.0f, 0.0f, -0.0f, 0.0f};
  const std::vector<float> b = {0.0f, -0.0f, -0.0f, 0.0f};
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat32, kKernelMin, a, b)),
            (std::vector<uint32_t>{0x80000000u, 0x80000000u, 0x80000000u, 0u}));
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat32, kKernelMax, a, b)),
            (std::vector<uint32_t>{0u, 0u, 0x80000000u, 0u}));
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat32, kKernelSum, a, b)),
            (std::vector<uint32_t>{0u, 0u, 0x80000000u, 0u}));
  const std::vector<double> da = {-0.0, 0.0};
  const std::vector<double> db = {0.0, -0.0};
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat64, kKernelMin, da, db)),
            (std::vector<uint64_t>{0x8000000000000000ull, 0x8000000000000000ull}));
  EXPECT_EQ(bitsOf(applyOnEveryTable(rinaFloat64, kKernelMax, da, db)),
            (std::vector<uint64_t>{0u, 0u}));
  // The same through float16 and bfloat16.
  const std::vector<uint16_t> ha = {0x8000, 0x0000};
  const std::vector<uint16_t> hb = {0x0000, 0x8000};
  for (rinaDataType_t type : {rinaFloat16, rinaBfloat16}) {
    SCOPED_TRACE(dataTypeName(type));
    EXPECT_EQ(applyOnEveryTable(type, kKernelMin, ha, hb), (std::vector<uint16_t>{0x8000, 0x8000}));
    EXPECT_EQ(applyOnEveryTable(type, kKernelMax, ha, hb), (std::vector<uint16_t>{0, 0}));
  }
}

TEST(ReduceSpecialValues, NarrowMinMaxNan) {
  // float16: 0x7c01 is a signaling NaN, 0xfe00 a negative quiet one.
  EXPECT_EQ(applyOnEveryTable<uint16_t>(rinaFloat16, kKernelMin, {0x7c01, 0x3c00, 0xfe00, 0xfc00},
                                        {0x3c00, 0xfe00, 0x7c01, 0x7e00}),
            (std::vector<uint16_t>{kNanF16, kNanF16, kNanF16, kNanF16}));
  EXPECT_EQ(
      applyOnEveryTable<uint16_t>(rinaFloat16, kKernelMax, {0x7c00, 0xfc00}, {0xfc00, 0x3c00}),
      (std::vector<uint16_t>{0x7c00, 0x3c00}));
  EXPECT_EQ(applyOnEveryTable<uint16_t>(rinaBfloat16, kKernelMax, {0x7f81, 0x3f80, 0xffc0},
                                        {0x3f80, 0xff81, 0x7fc1}),
            (std::vector<uint16_t>{kNanBf16, kNanBf16, kNanBf16}));
}

TEST(ReduceIntegers, SumWraps) {
  EXPECT_EQ(applyOnEveryTable<int32_t>(rinaInt32, kKernelSum, {INT32_MAX, INT32_MIN, -1},
                                       {1, -1, INT32_MIN}),
            (std::vector<int32_t>{INT32_MIN, INT32_MAX, INT32_MAX}));
  EXPECT_EQ(applyOnEveryTable<uint32_t>(rinaUint32, kKernelSum, {UINT32_MAX, 0}, {1, UINT32_MAX}),
            (std::vector<uint32_t>{0, UINT32_MAX}));
  EXPECT_EQ(applyOnEveryTable<int8_t>(rinaInt8, kKernelSum, {127, -128}, {1, -1}),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(applyOnEveryTable<uint8_t>(rinaUint8, kKernelSum, {255, 200}, {1, 100}),
            (std::vector<uint8_t>{0, 44}));
  EXPECT_EQ(applyOnEveryTable<int64_t>(rinaInt64, kKernelSum, {INT64_MAX, INT64_MIN}, {1, -1}),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(applyOnEveryTable<uint64_t>(rinaUint64, kKernelSum, {UINT64_MAX}, {2}),
            (std::vector<uint64_t>{1}));
}

TEST(ReduceIntegers, ProdWraps) {
  EXPECT_EQ(applyOnEveryTable<int32_t>(rinaInt32, kKernelProd, {INT32_MAX, INT32_MIN, 65536},
                                       {2, -1, 65536}),
            (std::vector<int32_t>{-2, INT32_MIN, 0}));
  EXPECT_EQ(applyOnEveryTable<int8_t>(rinaInt8, kKernelProd, {-128, 16, -3, 127}, {-1, 16, 5, 127}),
            (std::vector<int8_t>{-128, 0, -15, 1}));
  EXPECT_EQ(applyOnEveryTable<uint8_t>(rinaUint8, kKernelProd, {255, 16}, {255, 17}),
            (std::vector<uint8_t>{1, 16}));
  EXPECT_EQ(applyOnEveryTable<int64_t>(rinaInt64, kKernelProd,
                                       {int64_t{1} << 62, INT64_MIN, -3, 0x100000001},
                                       {4, -1, INT64_MAX, 0x100000001}),
            (std::vector<int64_t>{0, INT64_MIN, INT64_MIN + 3, 0x200000001}));
  EXPECT_EQ(applyOnEveryTable<uint64_t>(rinaUint64, kKernelProd, {UINT64_MAX, 0xffffffffull},
                                        {UINT64_MAX, 0x100000001ull}),
            (std::vector<uint64_t>{1, 0xffffffffffffffffull}));
}

TEST(ReduceIntegers, MinMaxSignedness) {
  EXPECT_EQ(applyOnEveryTable<int64_t>(rinaInt64, kKernelMin, {-1, INT64_MIN}, {1, INT64_MAX}),
            (std::vector<int64_t>{-1, INT64_MIN}));
  EXPECT_EQ(applyOnEveryTable<uint64_t>(rinaUint64, kKernelMax, {UINT64_MAX, 1}, {1, 1ull << 63}),
            (std::vector<uint64_t>{UINT64_MAX, 1ull << 63}));
  EXPECT_EQ(applyOnEveryTable<uint64_t>(rinaUint64, kKernelMin, {UINT64_MAX, 1}, {1, 1ull << 63}),
            (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(applyOnEveryTable<uint8_t>(rinaUint8, kKernelMax, {200, 3}, {100, 250}),
            (std::vector<uint8_t>{200, 250}));
  EXPECT_EQ(applyOnEveryTable<int8_t>(rinaInt8, kKernelMax, {-56, 3}, {100, -6}),
            (std::vector<int8_t>{100, 3}));
  EXPECT_EQ(applyOnEveryTable<uint32_t>(rinaUint32, kKernelMin, {0x80000000u}, {1}),
            (std::vector<uint32_t>{1}));
}

TEST(ReduceNarrow, Float16SumRoundsOnceToNearestEven) {
  // 2^-11 is half an ulp at 1.0: ties go to the even mantissa.
  const std::vector<uint16_t> a = {0x3c00, 0x3c01, 0x7bff, 0x7bff, 0x0001, 0xbc00};
  const std::vector<uint16_t> b = {0x1000, 0x1000, 0x5000 /*32*/, 0x4c00 /*16*/, 0x0001, 0x3c00};
  EXPECT_EQ(applyOnEveryTable(rinaFloat16, kKernelSum, a, b),
            (std::vector<uint16_t>{0x3c00, 0x3c02, 0x7c00, 0x7c00, 0x0002, 0x0000}));
  // 65504 + 8 is below the tie and stays finite.
  EXPECT_EQ(applyOnEveryTable<uint16_t>(rinaFloat16, kKernelSum, {0x7bff}, {0x4800 /*8*/}),
            (std::vector<uint16_t>{0x7bff}));
  // Against the reference on 8192 pairs: around 1.0, and among subnormals.
  std::vector<uint16_t> x, y;
  for (uint32_t i = 0; i < 4096; ++i) {
    x.push_back(static_cast<uint16_t>(0x3800 + i));
    y.push_back(static_cast<uint16_t>(0x1000 + (i * 7) % 0x2c00));
    x.push_back(static_cast<uint16_t>(i % 0x400));
    y.push_back(static_cast<uint16_t>(0x8000 | ((i * 13) % 0x800)));
  }
  for (const KernelTable* table : availableTables()) {
    std::vector<uint16_t> out(x.size());
    table->reduce[rinaFloat16][kKernelSum](out.data(), x.data(), y.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(out[i], refFloatToHalf(refHalfToFloat(x[i]) + refHalfToFloat(y[i])))
          << table->isa << " " << std::hex << x[i] << " + " << y[i];
    }
  }
}

TEST(ReduceNarrow, Bf16SumRoundsAndNanStaysNan) {
  // 2^-8 is half an ulp at 1.0 in bfloat16.
  const std::vector<uint16_t> a = {0x3f80, 0x3f81, 0x7f7f, 0x7f81, 0xff81, 0x7fff, 0x7f80};
  const std::vector<uint16_t> b = {0x3b80, 0x3b80, 0x7f7f, 0x3f80, 0x3f80, 0x0000, 0xff80};
  EXPECT_EQ(
      applyOnEveryTable(rinaBfloat16, kKernelSum, a, b),
      (std::vector<uint16_t>{0x3f80, 0x3f82, 0x7f80, kNanBf16, kNanBf16, kNanBf16, kNanBf16}));
  // NaN through prod, max and finishAverage: never Inf.
  EXPECT_EQ(applyOnEveryTable<uint16_t>(rinaBfloat16, kKernelProd, {0x7f81}, {0x4000}),
            (std::vector<uint16_t>{kNanBf16}));
  for (const KernelTable* table : availableTables()) {
    std::vector<uint16_t> data(19, 0x7f81);
    table->average[rinaBfloat16](data.data(), data.size(), 2);
    for (uint16_t v : data) EXPECT_EQ(v, kNanBf16) << table->isa;
  }
}

// ---------------------------------------------------------------------------
// Conversion helpers.

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void hardwareHalfToFloat(const uint16_t* in, float* out) {
  _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
}
__attribute__((target("avx,f16c"))) void hardwareFloatToHalf(const float* in, uint16_t* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT));
}
bool cpuHasF16c() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}
#endif

TEST(ReduceConversions, HalfToFloatEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float got = halfToFloat(bits);
    const float want = refHalfToFloat(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
      ASSERT_NE(std::bit_cast<uint32_t>(got) & 0x00400000u, 0u) << "not quiet " << std::hex << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << h;
      ASSERT_EQ(floatToHalf(got), bits) << "round trip " << std::hex << h;
    }
  }
#if defined(__x86_64__)
  if (!cpuHasF16c()) GTEST_SKIP() << "no F16C to compare with";
  for (uint32_t base = 0; base <= 0xffff; base += 8) {
    uint16_t in[8];
    float hw[8];
    for (uint32_t k = 0; k < 8; ++k) in[k] = static_cast<uint16_t>(base + k);
    hardwareHalfToFloat(in, hw);
    for (uint32_t k = 0; k < 8; ++k) {
      ASSERT_EQ(std::bit_cast<uint32_t>(halfToFloat(in[k])), std::bit_cast<uint32_t>(hw[k]))
          << std::hex << in[k];
    }
  }
#endif
}

TEST(ReduceConversions, FloatToHalfRoundsToNearestEven) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               65504.0f,
                               65519.99f,
                               65520.0f,
                               -65520.0f,
                               0x1p-24f,
                               0x1p-25f,
                               0x1.8p-25f,
                               0x1.000002p-25f,
                               0x1p-26f,
                               0x1.ffcp-15f,
                               0x1.ffep-15f,
                               0x1p-14f,
                               1.0f + 0x1p-11f,
                               1.0f + 0x1.000002p-11f,
                               INFINITY,
                               -INFINITY,
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min()};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t r = rng();
    // Random patterns, and patterns near the float16 range where rounding matters.
    const uint32_t bits =
        (i % 2 == 0)
            ? static_cast<uint32_t>(r)
            : static_cast<uint32_t>((r & 0x80000000u) | (0x32000000u + (r >> 40) % 0x16000000u));
    values.push_back(std::bit_cast<float>(bits));
  }
  for (float v : values) {
    if (std::isnan(v)) {
      const uint16_t h = floatToHalf(v);
      ASSERT_EQ(h & 0x7e00u, 0x7e00u)
          << "NaN must stay a quiet NaN " << std::hex << std::bit_cast<uint32_t>(v);
      continue;
    }
    ASSERT_EQ(floatToHalf(v), refFloatToHalf(v)) << std::hexfloat << v;
  }
#if defined(__x86_64__)
  if (!cpuHasF16c()) GTEST_SKIP() << "no F16C to compare with";
  values.push_back(std::bit_cast<float>(0x7f800001u));
  values.push_back(std::bit_cast<float>(0xffa00000u));
  values.push_back(std::bit_cast<float>(0x7fffffffu));
  for (size_t i = 0; i + 8 <= values.size(); i += 8) {
    uint16_t hw[8];
    hardwareFloatToHalf(&values[i], hw);
    for (size_t k = 0; k < 8; ++k) {
      ASSERT_EQ(floatToHalf(values[i + k]), hw[k])
          << "vs F16C " << std::hex << std::bit_cast<uint32_t>(values[i + k]);
    }
  }
#endif
}

TEST(ReduceConversions, Bf16) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);                     // tie, even
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);           // tie, even
  EXPECT_EQ(floatToBf16(1.0f + 0x1.0002p-8f), 0x3f81);                // one float ulp past the tie
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // overflows
  EXPECT_EQ(floatToBf16(-INFINITY), 0xff80);
  // NaNs whose payload sits below bit 16 must not truncate or round to Inf,
  // nor carry into the sign.
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0xff80ffffu)), 0xffc0);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x7fffffffu)), 0x7fff);
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16ToFloat(0x3f81)), 0x3f810000u);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7f81)));
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const float v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(v)) {
      ASSERT_TRUE(std::isnan(bf16ToFloat(floatToBf16(v))));
      continue;
    }
    ASSERT_EQ(floatToBf16(v), refFloatToBf16(v)) << std::hexfloat << v;
  }
}

// ---------------------------------------------------------------------------
// finishAverage through the public entry point.

TEST(ReduceAverage, IntegersTruncateTowardZero) {
  std::vector<int8_t> i8 = {-7, 7, -128, 127, -1};
  finishAverage(i8.data(), i8.size(), rinaInt8, 2);
  EXPECT_EQ(i8, (std::vector<int8_t>{-3, 3, -64, 63, 0}));
  std::vector<int32_t> i32 = {-7, 7, INT32_MIN, INT32_MAX, -2};
  finishAverage(i32.data(), i32.size(), rinaInt32, 3);
  EXPECT_EQ(i32, (std::vector<int32_t>{-2, 2, -715827882, 715827882, 0}));
  std::vector<int64_t> i64 = {INT64_MIN, -5};
  finishAverage(i64.data(), i64.size(), rinaInt64, 4);
  EXPECT_EQ(i64, (std::vector<int64_t>{INT64_MIN / 4, -1}));
  std::vector<uint64_t> u64 = {UINT64_MAX, 5};
  finishAverage(u64.data(), u64.size(), rinaUint64, 2);
  EXPECT_EQ(u64, (std::vector<uint64_t>{UINT64_MAX / 2, 2}));
  std::vector<uint8_t> u8 = {255, 1};
  finishAverage(u8.data(), u8.size(), rinaUint8, 2);
  EXPECT_EQ(u8, (std::vector<uint8_t>{127, 0}));
}

TEST(ReduceAverage, FloatsDivideOnce) {
  std::vector<float> f = {3.0f, 1.0f, -0.0f, INFINITY};
  for (int i = 0; i < 40; ++i) f.push_back(static_cast<float>(i) + 0.5f);
  std::vector<float> want;
  for (float v : f) want.push_back(v / 3.0f);
  finishAverage(f.data(), f.size(), rinaFloat32, 3);
  EXPECT_EQ(bitsOf(f), bitsOf(want));
  std::vector<double> d = {1.0, -7.0};
  finishAverage(d.data(), d.size(), rinaFloat64, 3);
  EXPECT_EQ(d, (std::vector<double>{1.0 / 3.0, -7.0 / 3.0}));
  // float16 in float: 1/3 rounds once to 0x3555; 65504/2 = 32752 exactly.
  std::vector<uint16_t> h(20, 0x3c00);
  h[1] = 0x7bff;
  finishAverage(h.data(), h.size(), rinaFloat16, 3);
  EXPECT_EQ(h[0], 0x3555);
  EXPECT_EQ(h[19], 0x3555);
  std::vector<uint16_t> h2 = {0x7bff};
  finishAverage(h2.data(), h2.size(), rinaFloat16, 2);
  EXPECT_EQ(h2[0], 0x77ff);
  std::vector<uint16_t> bf(17, 0x3f80);  // 1/3 in bfloat16 = 0x3eab
  finishAverage(bf.data(), bf.size(), rinaBfloat16, 3);
  for (uint16_t v : bf) EXPECT_EQ(v, 0x3eab);
}

TEST(ReduceAverage, OneRankAndBadArgumentsLeaveDataAlone) {
  std::vector<int32_t> data = {-7, 9};
  finishAverage(data.data(), data.size(), rinaInt32, 1);
  finishAverage(data.data(), data.size(), rinaInt32, 0);
  finishAverage(data.data(), data.size(), rinaInt32, -2);
  finishAverage(data.data(), data.size(), static_cast<rinaDataType_t>(99), 2);
  finishAverage(nullptr, 0, rinaFloat32, 2);
  EXPECT_EQ(data, (std::vector<int32_t>{-7, 9}));
}

// ---------------------------------------------------------------------------
// Names, sizes, dispatch.

TEST(ReduceDispatch, SizesAndNames) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  const char* names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                         "uint64", "float16", "bfloat16", "float32", "float64"};
  for (rinaDataType_t type : kAllTypes) {
    EXPECT_EQ(dataTypeSize(type), sizes[type]);
    EXPECT_STREQ(dataTypeName(type), names[type]);
  }
  EXPECT_STREQ(opName(rinaSum), "sum");
  EXPECT_STREQ(opName(rinaProd), "prod");
  EXPECT_STREQ(opName(rinaMin), "min");
  EXPECT_STREQ(opName(rinaMax), "max");
  EXPECT_STREQ(opName(rinaAvg), "avg");
}

TEST(ReduceDispatch, UnknownEnums) {
  for (int bad : {-1, static_cast<int>(rinaNumTypes), 99}) {
    const auto type = static_cast<rinaDataType_t>(bad);
    EXPECT_EQ(dataTypeSize(type), 0u) << bad;
    EXPECT_STREQ(dataTypeName(type), "unknown");
    EXPECT_EQ(reduceFunction(type, rinaSum), nullptr);
  }
  for (int bad : {-1, static_cast<int>(rinaNumOps), 42}) {
    const auto op = static_cast<rinaRedOp_t>(bad);
    EXPECT_STREQ(opName(op), "unknown");
    EXPECT_EQ(reduceFunction(rinaFloat32, op), nullptr);
  }
}

TEST(ReduceDispatch, EveryValidPairHasAKernelAndAvgSums) {
  const KernelTable& active = detail::activeKernels();
  for (rinaDataType_t type : kAllTypes) {
    EXPECT_EQ(reduceFunction(type, rinaSum), active.reduce[type][kKernelSum]);
    EXPECT_EQ(reduceFunction(type, rinaProd), active.reduce[type][kKernelProd]);
    EXPECT_EQ(reduceFunction(type, rinaMin), active.reduce[type][kKernelMin]);
    EXPECT_EQ(reduceFunction(type, rinaMax), active.reduce[type][kKernelMax]);
    EXPECT_EQ(reduceFunction(type, rinaAvg), reduceFunction(type, rinaSum));
    for (int op = 0; op < rinaNumOps; ++op) {
      EXPECT_NE(reduceFunction(type, static_cast<rinaRedOp_t>(op)), nullptr);
    }
  }
  // The public entry point works on real data (float32 sum, 5 elements).
  std::vector<float> a = {1, 2, 3, 4, 5}, b = {10, 20, 30, 40, 50}, out(5);
  reduceFunction(rinaFloat32, rinaAvg)(out.data(), a.data(), b.data(), out.size());
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44, 55}));
}

// copyBytes, streamBytes and every table's copy and stream kernels against
// the bytes themselves:
// every pair of offsets within a cache line, lengths around the size where
// copyBytes leaves memcpy and around the kernel's 32- and 128-byte steps;
// nothing outside the destination is written.
TEST(CopyBytes, EveryOffsetPairAndLength) {
  std::vector<const KernelTable*> tables{&detail::scalarKernels()};
  if (detail::avx2Kernels()) tables.push_back(detail::avx2Kernels());
  const size_t lengths[] = {0, 1, 31, 33, 127, 129, 1023, 1024, 1025, 4099, 70001};
  std::vector<uint8_t> src(70001 + 64), dst(70001 + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 8));
  std::vector<detail::CopyFn> copies;
  for (const KernelTable* t : tables) {
    copies.push_back(t->copy);
    copies.push_back(t->stream);
  }
  copies.push_back(&copyBytes);  // the dispatching entries
  copies.push_back(&streamBytes);
  for (size_t via = 0; via < copies.size(); ++via) {
    for (size_t len : lengths) {
      for (size_t so = 0; so < 64; so += (len > 200 ? 7 : 1)) {
        for (size_t d = 0; d < 64; d += (len > 200 ? 5 : 1)) {
          std::fill(dst.begin(), dst.end(), 0xEE);
          copies[via](dst.data() + d, src.data() + so, len);
          ASSERT_EQ(0, std::memcmp(dst.data() + d, src.data() + so, len))
              << "copy " << via << ", " << len << " bytes, offsets " << so << " -> " << d;
          ASSERT_TRUE(
              std::all_of(dst.begin(), dst.begin() + d, [](uint8_t b) { return b == 0xEE; }));
          ASSERT_TRUE(
              std::all_of(dst.begin() + d + len, dst.end(), [](uint8_t b) { return b == 0xEE; }))
              << "bytes after the copy written, " << len << " bytes";
        }
      }
    }
  }
}

TEST(ReduceDispatch, UsesAvx2WhenTheCpuHasIt) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool hasAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  EXPECT_STREQ(kernelIsaName(), hasAvx2 ? "avx2" : "scalar");
  EXPECT_EQ(detail::avx2Kernels() != nullptr, hasAvx2);
#else
  EXPECT_STREQ(kernelIsaName(), "scalar");
#endif
}

}  // namespace
}  // namespace rina::reduce
