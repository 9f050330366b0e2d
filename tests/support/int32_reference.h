// Test helpers: random int32 inputs per worker and the serial reference sum
// every worker's output is compared with.
#ifndef RINA_TESTS_SUPPORT_INT32_REFERENCE_H_
#define RINA_TESTS_SUPPORT_INT32_REFERENCE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace rina::ina::testing {

// k buffers of count int32 in [-2^24, 2^24] (sums of up to 64 never overflow).
inline std::vector<std::vector<uint8_t>> int32Inputs(int k, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(-(1 << 24), 1 << 24);
  std::vector<std::vector<uint8_t>> in(k, std::vector<uint8_t>(count * 4));
  for (auto& b : in) {
    for (size_t i = 0; i < count; ++i) {
      int32_t v = dist(rng);
      std::memcpy(b.data() + 4 * i, &v, 4);
    }
  }
  return in;
}

inline int32_t int32At(const std::vector<uint8_t>& b, size_t i) {
  int32_t v;
  std::memcpy(&v, b.data() + 4 * i, 4);
  return v;
}

// Element i summed serially over the inputs (wrapping, as the host kernels do).
inline int32_t int32Sum(const std::vector<std::vector<uint8_t>>& in, size_t i) {
  uint32_t sum = 0;
  for (const auto& b : in) sum += static_cast<uint32_t>(int32At(b, i));
  return static_cast<int32_t>(sum);
}

// Every output buffer holds exactly the serial sum.
inline void expectInt32Sum(const std::vector<std::vector<uint8_t>>& in,
                           const std::vector<std::vector<uint8_t>>& out, size_t count,
                           const char* what = "") {
  for (size_t i = 0; i < count; ++i) {
    int32_t sum = int32Sum(in, i);
    for (size_t w = 0; w < out.size(); ++w) {
      ASSERT_EQ(int32At(out[w], i), sum) << what << " worker " << w << " elem " << i;
    }
  }
}

}  // namespace rina::ina::testing

#endif  // RINA_TESTS_SUPPORT_INT32_REFERENCE_H_
