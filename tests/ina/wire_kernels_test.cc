// The payload kernels (lib/inanet/wire_kernels.h) against a reference
// written here: bytes assembled most significant first, sums in 64 bits
// clamped to int32. Both the scalar and the AVX2 versions, on every length
// from 0 to 70 (the vector tails), at unaligned offsets, and on sums that
// saturate up and down.
#include "inanet/wire_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <vector>

namespace rina::ina {
namespace {

int32_t fromBytes(const uint8_t* p) {
  return static_cast<int32_t>(uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
                              p[3]);
}

struct Versions {
  void (*load)(const uint8_t*, size_t, int32_t*);
  void (*store)(const int32_t*, size_t, uint8_t*);
  bool (*add)(int32_t*, const uint8_t*, size_t);
  const char* name;
};

std::vector<Versions> versions() {
  std::vector<Versions> v = {
      {detail::loadWireScalar, detail::storeWireScalar, detail::addWireSaturatingScalar, "scalar"},
      {loadWire, storeWire, addWireSaturating, "dispatched"}};
  if (detail::wireAvx2Supported()) {
    v.push_back(
        {detail::loadWireAvx2, detail::storeWireAvx2, detail::addWireSaturatingAvx2, "avx2"});
  }
  return v;
}

TEST(WireKernels, MatchTheReferenceOnEveryLengthAndOffset) {
  std::mt19937 rng(3);
  for (const Versions& k : versions()) {
    for (size_t n = 0; n <= 70; ++n) {
      for (size_t offset = 0; offset < 4; ++offset) {
        // Wire bytes at an odd offset; values near the limits so sums saturate.
        std::vector<uint8_t> wire(offset + 4 * n);
        for (uint8_t& b : wire) b = static_cast<uint8_t>(rng());
        const uint8_t* at = wire.data() + offset;
        std::vector<int32_t> loaded(n);
        k.load(at, n, loaded.data());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(loaded[i], fromBytes(at + 4 * i)) << k.name << " n " << n << " i " << i;
        }
        std::vector<uint8_t> stored(offset + 4 * n, 0xEE);
        k.store(loaded.data(), n, stored.data() + offset);
        ASSERT_TRUE(std::equal(stored.begin() + offset, stored.end(), at)) << k.name << " n " << n;
        std::vector<int32_t> acc(n);
        bool wantOverflow = false;
        std::vector<int32_t> want(n);
        for (size_t i = 0; i < n; ++i) {
          acc[i] = static_cast<int32_t>(rng());
          const int64_t sum = int64_t{acc[i]} + fromBytes(at + 4 * i);
          want[i] = static_cast<int32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
          wantOverflow |= sum != want[i];
        }
        const bool overflow = k.add(acc.data(), at, n);
        ASSERT_EQ(acc, want) << k.name << " n " << n << " offset " << offset;
        ASSERT_EQ(overflow, wantOverflow) << k.name << " n " << n << " offset " << offset;
      }
    }
  }
}

TEST(WireKernels, SumsThatStayInRangeAreExactAndUnflagged) {
  for (const Versions& k : versions()) {
    const size_t n = 1024;
    std::vector<int32_t> values(n), acc(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = static_cast<int32_t>(i * 2654435761u) / 4;  // |v| < 2^29
      acc[i] = -static_cast<int32_t>(i * 40503u) / 4;
    }
    std::vector<uint8_t> wire(4 * n);
    detail::storeWireScalar(values.data(), n, wire.data());
    std::vector<int32_t> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = acc[i] + values[i];
    EXPECT_FALSE(k.add(acc.data(), wire.data(), n)) << k.name;
    EXPECT_EQ(acc, want) << k.name;
  }
}

}  // namespace
}  // namespace rina::ina
