// rinaAllReduceWeighted over threads-as-ranks against a serial double
// reference, and its error paths (on every rank alike).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "rank_harness.h"
#include "reduce/half.h"

namespace rina::testing {
namespace {

double toDouble(rinaDataType_t t, const char* p, size_t i) {
  switch (t) {
    case rinaFloat64:
      return reinterpret_cast<const double*>(p)[i];
    case rinaFloat32:
      return reinterpret_cast<const float*>(p)[i];
    case rinaFloat16:
      return reduce::detail::halfBitsToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    default:
      return reduce::detail::bf16BitsToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
  }
}

void fromDouble(rinaDataType_t t, char* p, size_t i, double v) {
  switch (t) {
    case rinaFloat64:
      reinterpret_cast<double*>(p)[i] = v;
      break;
    case rinaFloat32:
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case rinaFloat16:
      reinterpret_cast<uint16_t*>(p)[i] = reduce::detail::floatToHalfBits(static_cast<float>(v));
      break;
    default:
      reinterpret_cast<uint16_t*>(p)[i] = reduce::detail::floatToBf16Bits(static_cast<float>(v));
      break;
  }
}

size_t sizeOf(rinaDataType_t t) { return t == rinaFloat64 ? 8 : t == rinaFloat32 ? 4 : 2; }

class Weighted : public ::testing::TestWithParam<int> {};

TEST_P(Weighted, MatchesSerialWeightedMean) {
  const int n = GetParam();
  const size_t count = 5003;
  // Weights like batch sizes, one rank with weight 0.
  std::vector<double> weight(n);
  for (int r = 0; r < n; ++r) weight[r] = r == 1 ? 0 : 16.0 * (r + 1);
  double W = 0;
  for (double w : weight) W += w;
  for (rinaDataType_t t : {rinaFloat64, rinaFloat32, rinaFloat16, rinaBfloat16}) {
    const size_t es = sizeOf(t);
    std::vector<std::vector<char>> in(n, std::vector<char>(count * es)),
        out(n, std::vector<char>(count * es));
    std::vector<double> expect(count, 0);
    for (int r = 0; r < n; ++r) {
      std::mt19937 rng(100 + r);
      std::uniform_real_distribution<double> d(-4, 4);
      for (size_t i = 0; i < count; ++i) {
        fromDouble(t, in[r].data(), i, d(rng));
        expect[i] += weight[r] * toDouble(t, in[r].data(), i) / W;
      }
    }
    runThreads(n, [&](int rank, rinaComm_t comm) {
      ASSERT_EQ(
          rinaAllReduceWeighted(in[rank].data(), out[rank].data(), count, t, weight[rank], comm),
          rinaSuccess)
          << rinaCommGetLastError(comm);
    });
    // Error: n rounding steps of the type's precision, relative to |x| <= 4.
    const double eps = t == rinaFloat64   ? 1e-15
                       : t == rinaFloat32 ? 1e-6
                       : t == rinaFloat16 ? 1e-3
                                          : 8e-3;
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        ASSERT_NEAR(toDouble(t, out[r].data(), i), expect[i], 4 * (n + 2) * eps)
            << "type " << t << " rank " << r;
      }
      EXPECT_EQ(out[r], out[0]) << "ranks differ, type " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Weighted, ::testing::Values(1, 2, 3, 4));

TEST(WeightedErrors, EveryRankGetsTheSameError) {
  const int n = 3;
  std::vector<float> in(64, 1.0f);
  // A negative weight on rank 2 only: every rank returns rinaInvalidArgument.
  runThreads(n, [&](int rank, rinaComm_t comm) {
    std::vector<float> out(64);
    EXPECT_EQ(
        rinaAllReduceWeighted(in.data(), out.data(), 64, rinaFloat32, rank == 2 ? -1.0 : 1.0, comm),
        rinaInvalidArgument);
    EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("negative or non-finite"),
              std::string::npos);
    // Invalid argument does not break the communicator: the next call works.
    EXPECT_EQ(rinaAllReduceWeighted(in.data(), out.data(), 64, rinaFloat32, NAN, comm),
              rinaInvalidArgument);
    EXPECT_EQ(rinaAllReduceWeighted(in.data(), out.data(), 64, rinaFloat32, 0.0, comm),
              rinaInvalidArgument);
    EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("sum to 0"), std::string::npos);
    std::vector<int32_t> ints(4);
    EXPECT_EQ(rinaAllReduceWeighted(ints.data(), ints.data(), 4, rinaInt32, 1.0, comm),
              rinaInvalidArgument);
    EXPECT_EQ(rinaAllReduceWeighted(nullptr, out.data(), 64, rinaFloat32, 1.0, comm),
              rinaInvalidArgument);
    EXPECT_EQ(rinaAllReduceWeighted(in.data(), out.data(), 64, rinaFloat32, 2.0, comm),
              rinaSuccess);
    EXPECT_FLOAT_EQ(out[0], 1.0f);
  });
  EXPECT_EQ(rinaAllReduceWeighted(in.data(), in.data(), 1, rinaFloat32, 1.0, nullptr),
            rinaInvalidArgument);
}

}  // namespace
}  // namespace rina::testing
