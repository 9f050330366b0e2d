// The payload kernels (lib/wire/wire_kernels.h) against a reference
// written here: bytes assembled most significant first, sums in 64 bits
// clamped to int32, network order written byte by byte. Both the scalar and
// the AVX2 versions, on every length from 0 to 70 (the vector tails), at
// unaligned offsets, and on sums that saturate up and down.
#include "wire/wire_kernels.h"

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
  bool (*addToWire)(int32_t*, const uint8_t*, size_t, uint8_t*);
  const char* name;
};

std::vector<Versions> versions() {
  std::vector<Versions> v = {
      {detail::loadWireScalar, detail::storeWireScalar, detail::addWireSaturatingScalar,
       detail::addWireSaturatingToWireScalar, "scalar"},
      {loadWire, storeWire, addWireSaturating, addWireSaturatingToWire, "dispatched"}};
  if (detail::wireAvx2Supported()) {
    v.push_back({detail::loadWireAvx2, detail::storeWireAvx2, detail::addWireSaturatingAvx2,
                 detail::addWireSaturatingToWireAvx2, "avx2"});
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

void toBytes(int32_t v, uint8_t* p) {
  const auto u = static_cast<uint32_t>(v);
  p[0] = static_cast<uint8_t>(u >> 24);
  p[1] = static_cast<uint8_t>(u >> 16);
  p[2] = static_cast<uint8_t>(u >> 8);
  p[3] = static_cast<uint8_t>(u);
}

// Values that put sums on and over the int32 limits, and random ones.
int32_t edgeOrRandom(std::mt19937& rng) {
  static constexpr int32_t kEdges[] = {INT32_MAX, INT32_MAX - 1, INT32_MIN, INT32_MIN + 1, 0, 1,
                                       -1,        1 << 30,       -(1 << 30)};
  const uint32_t r = rng();
  if (r % 3 == 0) return kEdges[(r >> 8) % (sizeof kEdges / sizeof kEdges[0])];
  return static_cast<int32_t>(rng());
}

// The completing contribution's kernel: the saturated sums both in acc and,
// in network order, at out (wire, out at every offset mod 4; bytes around
// out untouched), with the overflow flag of exactly the lanes that clamped.
TEST(WireKernels, AddToWireKeepsAndWritesTheSaturatedSum) {
  std::mt19937 rng(11);
  for (const Versions& k : versions()) {
    for (size_t n = 0; n <= 70; ++n) {
      for (size_t offset = 0; offset < 4; ++offset) {
        const size_t outOffset = (offset + 1) % 4;
        std::vector<uint8_t> wire(offset + 4 * n);
        std::vector<int32_t> acc(n), want(n);
        bool wantOverflow = false;
        for (size_t i = 0; i < n; ++i) {
          acc[i] = edgeOrRandom(rng);
          const int32_t x = edgeOrRandom(rng);
          toBytes(x, wire.data() + offset + 4 * i);
          const int64_t sum = int64_t{acc[i]} + x;
          want[i] = static_cast<int32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
          wantOverflow |= sum != want[i];
        }
        constexpr uint8_t kGuard = 0xA5;
        std::vector<uint8_t> out(outOffset + 4 * n + 8, kGuard);
        const bool overflow =
            k.addToWire(acc.data(), wire.data() + offset, n, out.data() + outOffset);
        ASSERT_EQ(acc, want) << k.name << " n " << n << " offset " << offset;
        ASSERT_EQ(overflow, wantOverflow) << k.name << " n " << n << " offset " << offset;
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(fromBytes(out.data() + outOffset + 4 * i), want[i])
              << k.name << " n " << n << " i " << i;
        }
        for (size_t b = 0; b < outOffset; ++b) ASSERT_EQ(out[b], kGuard) << k.name << " n " << n;
        for (size_t b = outOffset + 4 * n; b < out.size(); ++b) {
          ASSERT_EQ(out[b], kGuard) << k.name << " n " << n;
        }
      }
    }
  }
}

// One saturating lane anywhere in the vector body or the tail flags the
// whole call; the other lanes stay exact.
TEST(WireKernels, AddToWireFlagsASingleSaturatedLaneAnywhere) {
  const size_t n = 37;  // four vectors and a tail of five
  for (const Versions& k : versions()) {
    for (size_t at = 0; at < n; ++at) {
      for (const int32_t x : {INT32_MAX, INT32_MIN}) {
        std::vector<int32_t> acc(n, 7);
        acc[at] = x == INT32_MAX ? 1 : -1;
        std::vector<uint8_t> wire(4 * n), out(4 * n);
        for (size_t i = 0; i < n; ++i) toBytes(i == at ? x : -3, wire.data() + 4 * i);
        EXPECT_TRUE(k.addToWire(acc.data(), wire.data(), n, out.data())) << k.name << " at " << at;
        for (size_t i = 0; i < n; ++i) {
          const int32_t want = i == at ? x : 4;
          ASSERT_EQ(acc[i], want) << k.name << " at " << at << " i " << i;
          ASSERT_EQ(fromBytes(out.data() + 4 * i), want) << k.name << " at " << at << " i " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace rina::ina
