// Test helpers: float inputs whose magnitude changes from slice to slice,
// and the check of an INA float sum against the documented quantization
// bound (p4_agent/README.md), computed here from the inputs alone.
#ifndef RINA_TESTS_SUPPORT_FLOAT_REFERENCE_H_
#define RINA_TESTS_SUPPORT_FLOAT_REFERENCE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace rina::ina::testing {

// Float inputs whose magnitude changes from slice to slice (exponents matter).
inline std::vector<std::vector<float>> floatInputs(int k, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<std::vector<float>> in(k, std::vector<float>(count));
  for (auto& v : in) {
    for (size_t i = 0; i < count; ++i)
      v[i] = dist(rng) * std::ldexp(1.0f, static_cast<int>(i / 64 % 24) - 12);
  }
  return in;
}

// The documented bound, computed independently: E from frexp of the slice's
// largest magnitude over all workers, h = ceil(log2 k).
inline void expectFloatSumWithinBound(const std::vector<std::vector<float>>& in,
                                      const std::vector<std::vector<float>>& out, size_t P,
                                      double outputUlp) {
  const int k = static_cast<int>(in.size());
  int h = 0;
  while ((1 << h) < k) ++h;
  for (size_t first = 0; first < in[0].size(); first += P) {
    size_t n = std::min(P, in[0].size() - first);
    float m = 0;
    for (const auto& v : in) {
      for (size_t i = first; i < first + n; ++i) m = std::max(m, std::fabs(v[i]));
    }
    int E;
    std::frexp(m, &E);
    double quantBound = k * std::ldexp(1.0, E + h - 31);
    for (size_t i = first; i < first + n; ++i) {
      double exact = 0;
      for (const auto& v : in) exact += v[i];
      double bound = quantBound + std::fabs(exact) * outputUlp + outputUlp * 1e-30;
      for (size_t w = 0; w < out.size(); ++w) {
        ASSERT_LE(std::fabs(out[w][i] - exact), bound) << "worker " << w << " elem " << i;
        ASSERT_EQ(std::memcmp(&out[w][i], &out[0][i], 4), 0) << "workers differ at " << i;
      }
    }
  }
}

inline std::vector<std::vector<uint8_t>> asBytes(const std::vector<std::vector<float>>& in) {
  std::vector<std::vector<uint8_t>> b;
  for (const auto& v : in) {
    b.emplace_back(v.size() * 4);
    std::memcpy(b.back().data(), v.data(), v.size() * 4);
  }
  return b;
}

inline std::vector<std::vector<float>> asFloats(const std::vector<std::vector<uint8_t>>& b) {
  std::vector<std::vector<float>> v;
  for (const auto& x : b) {
    v.emplace_back(x.size() / 4);
    std::memcpy(v.back().data(), x.data(), x.size());
  }
  return v;
}

}  // namespace rina::ina::testing

#endif  // RINA_TESTS_SUPPORT_FLOAT_REFERENCE_H_
