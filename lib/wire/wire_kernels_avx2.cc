// AVX2 versions of wire_kernels.cc's loops (byte swaps by a shuffle, the
// saturating add branch-free as the scalar one). The library is built for
// baseline x86-64: only the functions marked RINA_AVX2 use AVX2,
// and wire_kernels.cc calls them only after asking the CPU.
#include <climits>
#include <cstddef>
#include <cstdint>

#include "wire/wire_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rina::ina::detail {

#if defined(__x86_64__)

bool wireAvx2Supported() { return __builtin_cpu_supports("avx2"); }

// Each function below carries the target attribute itself (not a pragma
// around them: clang, which builds the fuzzers, knows no GCC target pragma).
#define RINA_AVX2 __attribute__((target("avx2")))

namespace {

RINA_AVX2 __m256i byteSwap32(__m256i v) {
  const __m256i order = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 3, 2,
                                         1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
  return _mm256_shuffle_epi8(v, order);
}

RINA_AVX2 __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
RINA_AVX2 void store(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

}  // namespace

RINA_AVX2 void loadWireAvx2(const uint8_t* wire, size_t n, int32_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store(out + i, byteSwap32(load(wire + 4 * i)));
  loadWireScalar(wire + 4 * i, n - i, out + i);
}

RINA_AVX2 void storeWireAvx2(const int32_t* in, size_t n, uint8_t* wire) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store(wire + 4 * i, byteSwap32(load(in + i)));
  storeWireScalar(in + i, n - i, wire + 4 * i);
}

namespace {

// a + x per lane, saturating toward a's sign; overflow |= -1 in the lanes
// that saturated.
RINA_AVX2 __m256i addSaturating(__m256i a, __m256i x, __m256i* overflow) {
  const __m256i sum = _mm256_add_epi32(a, x);
  const __m256i o =
      _mm256_srai_epi32(_mm256_and_si256(_mm256_xor_si256(a, sum), _mm256_xor_si256(x, sum)), 31);
  const __m256i saturated =
      _mm256_xor_si256(_mm256_srai_epi32(a, 31), _mm256_set1_epi32(INT32_MAX));
  *overflow = _mm256_or_si256(*overflow, o);
  return _mm256_blendv_epi8(sum, saturated, o);
}

}  // namespace

RINA_AVX2 bool addWireSaturatingAvx2(int32_t* acc, const uint8_t* wire, size_t n) {
  __m256i overflow = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    store(acc + i, addSaturating(load(acc + i), byteSwap32(load(wire + 4 * i)), &overflow));
  }
  const bool tail = addWireSaturatingScalar(acc + i, wire + 4 * i, n - i);
  return tail || !_mm256_testz_si256(overflow, overflow);
}

RINA_AVX2 bool addWireSaturatingToWireAvx2(int32_t* acc, const uint8_t* wire, size_t n,
                                           uint8_t* out) {
  __m256i overflow = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i sum = addSaturating(load(acc + i), byteSwap32(load(wire + 4 * i)), &overflow);
    store(acc + i, sum);
    store(out + 4 * i, byteSwap32(sum));
  }
  const bool tail = addWireSaturatingToWireScalar(acc + i, wire + 4 * i, n - i, out + 4 * i);
  return tail || !_mm256_testz_si256(overflow, overflow);
}

#undef RINA_AVX2

#else

bool wireAvx2Supported() { return false; }
void loadWireAvx2(const uint8_t*, size_t, int32_t*) {}
void storeWireAvx2(const int32_t*, size_t, uint8_t*) {}
bool addWireSaturatingAvx2(int32_t*, const uint8_t*, size_t) { return false; }
bool addWireSaturatingToWireAvx2(int32_t*, const uint8_t*, size_t, uint8_t*) { return false; }

#endif

}  // namespace rina::ina::detail
