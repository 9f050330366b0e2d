// AVX2 + F16C kernels. The library is built for baseline x86-64, so only the
// functions between the target pragmas use these instructions, and
// avx2Kernels() hands them out only after asking the CPU. Tails (count not a
// multiple of the vector width) use the element ops of scalar_ops.h. Any
// byte address works (kernels.h): vectors are loaded unaligned, tail
// elements through loadElement / storeElement.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "reduce/kernels.h"
#include "reduce/scalar_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rina::reduce::detail {

#if defined(__x86_64__)
namespace {

// Every header is included above this line on purpose: an inline function
// from a header compiled under the pragma could become the one copy the linker
// keeps, and fault on a CPU without AVX2.
#pragma GCC push_options
#pragma GCC target("avx2,f16c")

// ---- integers ----

#define RINA_VEC_OP(Name, expr)                                   \
  struct Name {                                                   \
    static __m256i apply(__m256i a, __m256i b) { return (expr); } \
  }

RINA_VEC_OP(AddI8, _mm256_add_epi8(a, b));
RINA_VEC_OP(AddI32, _mm256_add_epi32(a, b));
RINA_VEC_OP(AddI64, _mm256_add_epi64(a, b));
RINA_VEC_OP(MulI32, _mm256_mullo_epi32(a, b));
RINA_VEC_OP(MinS8, _mm256_min_epi8(a, b));
RINA_VEC_OP(MaxS8, _mm256_max_epi8(a, b));
RINA_VEC_OP(MinU8, _mm256_min_epu8(a, b));
RINA_VEC_OP(MaxU8, _mm256_max_epu8(a, b));
RINA_VEC_OP(MinS32, _mm256_min_epi32(a, b));
RINA_VEC_OP(MaxS32, _mm256_max_epi32(a, b));
RINA_VEC_OP(MinU32, _mm256_min_epu32(a, b));
RINA_VEC_OP(MaxU32, _mm256_max_epu32(a, b));

#undef RINA_VEC_OP

// No 8-bit multiply: multiply 16-bit lanes twice, for the even bytes and for
// the odd bytes shifted down, and keep the low byte of each product.
struct MulI8 {
  static __m256i apply(__m256i a, __m256i b) {
    const __m256i even = _mm256_mullo_epi16(a, b);
    const __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
    return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)),
                           _mm256_slli_epi16(odd, 8));
  }
};

// No 64-bit multiply: lo*lo + ((hi*lo + lo*hi) << 32), mod 2^64.
struct MulI64 {
  static __m256i apply(__m256i a, __m256i b) {
    const __m256i low = _mm256_mul_epu32(a, b);
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                           _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
  }
};

// No 64-bit min/max: compare (signed; unsigned after flipping the sign bit)
// and blend.
template <bool kSigned>
__m256i greater64(__m256i a, __m256i b) {
  if constexpr (kSigned) {
    return _mm256_cmpgt_epi64(a, b);
  } else {
    const __m256i flip = _mm256_set1_epi64x(static_cast<int64_t>(0x8000000000000000ull));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
  }
}

template <bool kSigned>
struct Min64 {
  static __m256i apply(__m256i a, __m256i b) {
    return _mm256_blendv_epi8(a, b, greater64<kSigned>(a, b));
  }
};

template <bool kSigned>
struct Max64 {
  static __m256i apply(__m256i a, __m256i b) {
    return _mm256_blendv_epi8(b, a, greater64<kSigned>(a, b));
  }
};

template <class T, class VecOp, class ScalarOp>
void integerKernel(void* dst, const void* a, const void* b, size_t count) {
  constexpr size_t kLanes = sizeof(__m256i) / sizeof(T);
  T* out = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    const __m256i vx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i vy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), VecOp::apply(vx, vy));
  }
  for (; i < count; ++i)
    storeElement<T>(dst, i, ScalarOp::apply(loadElement<T>(a, i), loadElement<T>(b, i)));
}

// ---- floating point: the same ops on __m256 (8 floats) and __m256d ----

__m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
__m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
__m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
__m256d mul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
__m256 divide(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
__m256d divide(__m256d a, __m256d b) { return _mm256_div_pd(a, b); }
// x86 min/max return the second operand on NaN or equality.
__m256 x86Min(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
__m256d x86Min(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
__m256 x86Max(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
__m256d x86Max(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
__m256 bitOr(__m256 a, __m256 b) { return _mm256_or_ps(a, b); }
__m256d bitOr(__m256d a, __m256d b) { return _mm256_or_pd(a, b); }
__m256 bitAnd(__m256 a, __m256 b) { return _mm256_and_ps(a, b); }
__m256d bitAnd(__m256d a, __m256d b) { return _mm256_and_pd(a, b); }
__m256 unordered(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
__m256d unordered(__m256d a, __m256d b) { return _mm256_cmp_pd(a, b, _CMP_UNORD_Q); }
__m256 pick(__m256 mask, __m256 yes, __m256 no) { return _mm256_blendv_ps(no, yes, mask); }
__m256d pick(__m256d mask, __m256d yes, __m256d no) { return _mm256_blendv_pd(no, yes, mask); }
__m256 broadcast(float value) { return _mm256_set1_ps(value); }
__m256d broadcast(double value) { return _mm256_set1_pd(value); }

// Overloads, not a template on V: __m256 as a template argument drops its
// attributes (-Wignored-attributes).
__m256 canonicalNanLike(__m256) { return broadcast(canonicalNan<float>()); }
__m256d canonicalNanLike(__m256d) { return broadcast(canonicalNan<double>()); }

template <class V>
V canonicalizeNans(V value) {
  return pick(unordered(value, value), canonicalNanLike(value), value);
}

struct VecSum {
  template <class V>
  static V apply(V a, V b) {
    return canonicalizeNans(add(a, b));
  }
};

struct VecProd {
  template <class V>
  static V apply(V a, V b) {
    return canonicalizeNans(mul(a, b));
  }
};

// min(a,b) | min(b,a): the two agree unless a and b are equal (then OR picks
// -0 from {-0,+0}) or one is NaN (then the mask overrides). Commutative by
// construction, as is VecMax with AND.
struct VecMin {
  template <class V>
  static V apply(V a, V b) {
    const V r = bitOr(x86Min(a, b), x86Min(b, a));
    return pick(unordered(a, b), canonicalNanLike(a), r);
  }
};

struct VecMax {
  template <class V>
  static V apply(V a, V b) {
    const V r = bitAnd(x86Max(a, b), x86Max(b, a));
    return pick(unordered(a, b), canonicalNanLike(a), r);
  }
};

// Lanes: how a storage type becomes a vector of float or double and back.
struct F32Lanes {
  using Storage = float;
  using Scalar = float;
  static constexpr size_t kCount = 8;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static float widen(float v) { return v; }
  static float narrow(float v) { return v; }
};

struct F64Lanes {
  using Storage = double;
  using Scalar = double;
  static constexpr size_t kCount = 4;
  static __m256d load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
  static double widen(double v) { return v; }
  static double narrow(double v) { return v; }
};

struct F16Lanes : HalfCodec {
  using Storage = uint16_t;
  using Scalar = float;
  static constexpr size_t kCount = 8;
  static __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store(uint16_t* p, __m256 v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

// bfloat16 is the top half of a float: widen by shifting, narrow by rounding
// to nearest even on the low 16 bits, as floatToBf16Bits does. store() is
// only given canonical NaNs (every op and the average canonicalize first), and
// 0x7fc00000 rounds to 0x7fc0, so it needs no NaN case of its own.
struct Bf16Lanes : Bf16Codec {
  using Storage = uint16_t;
  using Scalar = float;
  static constexpr size_t kCount = 8;
  static __m256 load(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static void store(uint16_t* p, __m256 v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    const __m256i top = _mm256_srli_epi32(rounded, 16);
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(top), _mm256_extracti128_si256(top, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
};

template <class Lanes, class VecOp, class ScalarOp>
void floatKernel(void* dst, const void* a, const void* b, size_t count) {
  using T = typename Lanes::Storage;
  T* out = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  size_t i = 0;
  for (; i + Lanes::kCount <= count; i += Lanes::kCount) {
    Lanes::store(out + i, VecOp::apply(Lanes::load(x + i), Lanes::load(y + i)));
  }
  for (; i < count; ++i)
    storeElement<T>(dst, i, ScalarOp::apply(loadElement<T>(a, i), loadElement<T>(b, i)));
}

// The reduce kernels take bfloat16 sixteen at a time as pairs: a 32-bit lane
// holds element 2k in its low half and 2k+1 in its high half, and each half
// is a float once it sits in the top 16 bits. No widening shuffle on the way
// in, no pack on the way out: 1.25-1.45x the speed of Bf16Lanes in L2.
struct Bf16Pairs {
  static __m256i topHalves() { return _mm256_set1_epi32(static_cast<int>(0xffff0000u)); }
  static __m256 odd(__m256i lanes) {
    return _mm256_castsi256_ps(_mm256_and_si256(lanes, topHalves()));
  }
  static __m256 even(__m256i lanes) { return _mm256_castsi256_ps(_mm256_slli_epi32(lanes, 16)); }
  // Rounds to nearest even at bit 16, leaving the bfloat16 in the top half
  // (NaNs are canonical here; see Bf16Lanes).
  static __m256i roundToTop(__m256 v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  }
  static __m256i join(__m256 oddResult, __m256 evenResult) {
    return _mm256_or_si256(_mm256_and_si256(roundToTop(oddResult), topHalves()),
                           _mm256_srli_epi32(roundToTop(evenResult), 16));
  }
};

template <class VecOp, class ScalarOp>
void bf16Kernel(void* dst, const void* a, const void* b, size_t count) {
  constexpr size_t kLanes = sizeof(__m256i) / sizeof(uint16_t);
  uint16_t* out = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    const __m256i vx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i vy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i));
    const __m256 odd = VecOp::apply(Bf16Pairs::odd(vx), Bf16Pairs::odd(vy));
    const __m256 even = VecOp::apply(Bf16Pairs::even(vx), Bf16Pairs::even(vy));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), Bf16Pairs::join(odd, even));
  }
  for (; i < count; ++i) {
    storeElement<uint16_t>(
        dst, i, ScalarOp::apply(loadElement<uint16_t>(a, i), loadElement<uint16_t>(b, i)));
  }
}

template <class Lanes>
void floatAverage(void* data, size_t count, int nranks) {
  using T = typename Lanes::Storage;
  using Scalar = typename Lanes::Scalar;
  T* values = static_cast<T*>(data);
  const Scalar divisor = static_cast<Scalar>(nranks);
  const auto divisors = broadcast(divisor);
  size_t i = 0;
  for (; i + Lanes::kCount <= count; i += Lanes::kCount) {
    Lanes::store(values + i, canonicalizeNans(divide(Lanes::load(values + i), divisors)));
  }
  for (; i < count; ++i) {
    storeElement<T>(data, i,
                    Lanes::narrow(averageFloat(Lanes::widen(loadElement<T>(data, i)), divisor)));
  }
}

// Vector loads from anywhere, stores to an aligned destination (after a
// head copied with memcpy): the C library's memcpy takes a slow path
// between buffers at different offsets in a cache line on some CPUs.
// kStream: the stores bypass the cache (streamBytes), fenced at the end.
template <bool kStream>
inline void storeVector(char* at, __m256i v) {
  if constexpr (kStream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(at), v);
  } else {
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), v);
  }
}

template <bool kStream>
void copyVectors(void* dstv, const void* srcv, size_t bytes) {
  auto* dst = static_cast<char*>(dstv);
  const auto* src = static_cast<const char*>(srcv);
  size_t head = (32 - (reinterpret_cast<uintptr_t>(dst) & 31)) & 31;
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    storeVector<kStream>(dst + i, a);
    storeVector<kStream>(dst + i + 32, b);
    storeVector<kStream>(dst + i + 64, c);
    storeVector<kStream>(dst + i + 96, d);
  }
  for (; i + 32 <= bytes; i += 32) {
    storeVector<kStream>(dst + i, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
  }
  std::memcpy(dst + i, src + i, bytes - i);
  if constexpr (kStream) _mm_sfence();
}

#pragma GCC pop_options

// Table building runs on any CPU; it only takes addresses.

template <rinaDataType_t kType, class Sum, class Prod, class Min, class Max>
void fillIntegerRow(KernelTable& table) {
  using Ops = OpsFor<kType>;
  using T = typename Ops::Storage;
  table.reduce[kType][kKernelSum] = &integerKernel<T, Sum, typename Ops::Sum>;
  table.reduce[kType][kKernelProd] = &integerKernel<T, Prod, typename Ops::Prod>;
  table.reduce[kType][kKernelMin] = &integerKernel<T, Min, typename Ops::Min>;
  table.reduce[kType][kKernelMax] = &integerKernel<T, Max, typename Ops::Max>;
}

template <rinaDataType_t kType, class Lanes>
void fillFloatRow(KernelTable& table) {
  using Ops = OpsFor<kType>;
  table.reduce[kType][kKernelSum] = &floatKernel<Lanes, VecSum, typename Ops::Sum>;
  table.reduce[kType][kKernelProd] = &floatKernel<Lanes, VecProd, typename Ops::Prod>;
  table.reduce[kType][kKernelMin] = &floatKernel<Lanes, VecMin, typename Ops::Min>;
  table.reduce[kType][kKernelMax] = &floatKernel<Lanes, VecMax, typename Ops::Max>;
  table.average[kType] = &floatAverage<Lanes>;
}

void fillBf16Row(KernelTable& table) {
  using Ops = OpsFor<rinaBfloat16>;
  table.reduce[rinaBfloat16][kKernelSum] = &bf16Kernel<VecSum, typename Ops::Sum>;
  table.reduce[rinaBfloat16][kKernelProd] = &bf16Kernel<VecProd, typename Ops::Prod>;
  table.reduce[rinaBfloat16][kKernelMin] = &bf16Kernel<VecMin, typename Ops::Min>;
  table.reduce[rinaBfloat16][kKernelMax] = &bf16Kernel<VecMax, typename Ops::Max>;
  table.average[rinaBfloat16] = &floatAverage<Bf16Lanes>;
}

KernelTable makeAvx2Table() {
  KernelTable table = scalarKernels();  // integer averages stay scalar
  table.isa = "avx2";
  table.copy = &copyVectors<false>;
  table.stream = &copyVectors<true>;
  fillIntegerRow<rinaInt8, AddI8, MulI8, MinS8, MaxS8>(table);
  fillIntegerRow<rinaUint8, AddI8, MulI8, MinU8, MaxU8>(table);
  fillIntegerRow<rinaInt32, AddI32, MulI32, MinS32, MaxS32>(table);
  fillIntegerRow<rinaUint32, AddI32, MulI32, MinU32, MaxU32>(table);
  fillIntegerRow<rinaInt64, AddI64, MulI64, Min64<true>, Max64<true>>(table);
  fillIntegerRow<rinaUint64, AddI64, MulI64, Min64<false>, Max64<false>>(table);
  fillFloatRow<rinaFloat16, F16Lanes>(table);
  fillBf16Row(table);
  fillFloatRow<rinaFloat32, F32Lanes>(table);
  fillFloatRow<rinaFloat64, F64Lanes>(table);
  return table;
}

bool cpuHasAvx2() {
  __builtin_cpu_init();  // in case we run before the constructors that set it up
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

}  // namespace

const KernelTable* avx2Kernels() {
  static const KernelTable* const table = []() -> const KernelTable* {
    if (!cpuHasAvx2()) return nullptr;
    static const KernelTable avx2 = makeAvx2Table();
    return &avx2;
  }();
  return table;
}

#else  // not x86-64

const KernelTable* avx2Kernels() { return nullptr; }

#endif

}  // namespace rina::reduce::detail
