// AVX2 versions of quantize.cc's per-element loops, bit for bit the same
// results (the scalar loops stay the reference: tests/ina/quantize_test.cc
// compares them). The library is built for baseline x86-64: only the
// functions marked RINA_AVX2 use AVX2, and quantize.cc calls them only after
// asking the CPU.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ina/quantize_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rina::ina::detail {

#if defined(__x86_64__)

bool cpuHasAvx2() { return __builtin_cpu_supports("avx2"); }

// Each function below carries the target attribute itself (not a pragma
// around them: clang, which builds the fuzzers, knows no GCC target pragma).
#define RINA_AVX2 __attribute__((target("avx2")))

RINA_AVX2 bool maxMagnitudeBitsAvx2(const float* x, size_t n, uint32_t* maxBits) {
  // |x| as bits: for non-negative floats the integer order is the float
  // order, and NaN / Inf / >= 2^126 are the bit patterns from 2^126's up.
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  const __m256i limit = _mm256_set1_epi32(0x7e800000 - 1);  // 2^126, less one
  __m256i m = _mm256_setzero_si256();
  __m256i over = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), magnitude);
    m = _mm256_max_epi32(m, v);
    over = _mm256_or_si256(over, _mm256_cmpgt_epi32(v, limit));
  }
  if (!_mm256_testz_si256(over, over)) return false;
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), m);
  uint32_t best = 0;
  for (uint32_t l : lanes) best = l > best ? l : best;
  for (; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, 4);
    b &= 0x7fffffff;
    if (b >= 0x7e800000) return false;
    best = b > best ? b : best;
  }
  *maxBits = best;
  return true;
}

RINA_AVX2 void quantizeAvx2(const float* x, size_t n, double scale, int32_t* q) {
  const __m256d s = _mm256_set1_pd(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    // Exact in double; the conversion rounds to nearest even (MXCSR's default).
    const __m128i lo =
        _mm256_cvtpd_epi32(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), s));
    const __m128i hi =
        _mm256_cvtpd_epi32(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), s));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i + 4), hi);
  }
  constexpr double kRound = 0x1.8p52;
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]) * scale;
    q[i] = static_cast<int32_t>((v + kRound) - kRound);
  }
}

RINA_AVX2 void dequantizeAvx2(const int32_t* sum, size_t n, double scale, float* y) {
  const __m256d s = _mm256_set1_pd(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sum + i));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sum + i + 4));
    _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtepi32_pd(lo), s)));
    _mm_storeu_ps(y + i + 4, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtepi32_pd(hi), s)));
  }
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(sum[i]) * scale);
}

#undef RINA_AVX2

#else

bool cpuHasAvx2() { return false; }
bool maxMagnitudeBitsAvx2(const float*, size_t, uint32_t*) { return false; }
void quantizeAvx2(const float*, size_t, double, int32_t*) {}
void dequantizeAvx2(const int32_t*, size_t, double, float*) {}

#endif

}  // namespace rina::ina::detail
