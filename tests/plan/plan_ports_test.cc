// Port shares: apportionment against its quota property and closed forms,
// the chunk order, and every bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "plan/ports.h"

namespace rina::plan {
namespace {

TEST(PlanPorts, ApportionQuotaProperty) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> w(0.0, 100.0);
  for (int trial = 0; trial < 500; ++trial) {
    int n = 1 + trial % 9;
    int64_t total = static_cast<int64_t>(rng() % 200);
    std::vector<double> weights(n);
    double sum = 0;
    for (double& x : weights) sum += (x = trial % 5 == 0 ? std::floor(w(rng) / 20) : w(rng));
    if (sum == 0) weights[0] = sum = 1;
    std::vector<int64_t> counts;
    ASSERT_TRUE(apportion(weights, total, &counts).ok());
    int64_t given = 0;
    for (int i = 0; i < n; ++i) {
      double quota = total * weights[i] / sum;
      EXPECT_GE(counts[i], std::floor(quota - 1e-9)) << trial;
      EXPECT_LE(counts[i], std::ceil(quota + 1e-9)) << trial;
      given += counts[i];
    }
    EXPECT_EQ(given, total);
  }
}

TEST(PlanPorts, ApportionClosedForms) {
  std::vector<int64_t> c;
  ASSERT_TRUE(apportion({1, 2, 3}, 12, &c).ok());
  EXPECT_EQ(c, (std::vector<int64_t>{2, 4, 6}));
  // Quotas 10/3 each: one unit left, the lowest index gets it.
  ASSERT_TRUE(apportion({1, 1, 1}, 10, &c).ok());
  EXPECT_EQ(c, (std::vector<int64_t>{4, 3, 3}));
  // 25G and 100G hosts: quotas 1.6 and 6.4.
  ASSERT_TRUE(apportion({25000, 100000}, 8, &c).ok());
  EXPECT_EQ(c, (std::vector<int64_t>{2, 6}));
  ASSERT_TRUE(apportion({0, 5}, 3, &c).ok());
  EXPECT_EQ(c, (std::vector<int64_t>{0, 3}));
}

TEST(PlanPorts, ApportionRejectsBadInput) {
  std::vector<int64_t> c;
  EXPECT_EQ(apportion({}, 3, &c).code(), rinaInvalidArgument);
  EXPECT_EQ(apportion({1, -1}, 3, &c).code(), rinaInvalidArgument);
  EXPECT_EQ(apportion({1, NAN}, 3, &c).code(), rinaInvalidArgument);
  EXPECT_EQ(apportion({1, INFINITY}, 3, &c).code(), rinaInvalidArgument);
  EXPECT_EQ(apportion({0, 0}, 3, &c).code(), rinaInvalidArgument);
  EXPECT_EQ(apportion({1}, -1, &c).code(), rinaInvalidArgument);
  std::vector<int> p;
  EXPECT_EQ(portsPerChunk({1, 1}, -2, &p).code(), rinaInvalidArgument);
}

TEST(PlanPorts, ChunksFollowCountsAndInterleave) {
  std::vector<int> ports;
  ASSERT_TRUE(portsPerChunk({1, 1, 1, 1}, 8, &ports).ok());
  EXPECT_EQ(ports, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  ASSERT_TRUE(portsPerChunk({1, 3}, 8, &ports).ok());
  std::vector<int64_t> counts;
  ASSERT_TRUE(apportion({1, 3}, 8, &counts).ok());
  EXPECT_EQ(std::count(ports.begin(), ports.end(), 0), counts[0]);
  EXPECT_EQ(std::count(ports.begin(), ports.end(), 1), counts[1]);
  // Worker 0's two chunks are not adjacent.
  for (size_t c = 0; c + 1 < ports.size(); ++c) EXPECT_FALSE(ports[c] == 0 && ports[c + 1] == 0);
}

TEST(PlanPorts, PortRateClosedForm) {
  // Shares proportional to rates: every port busy the same time, rate = sum.
  EXPECT_DOUBLE_EQ(portRate({10, 30}, {1, 0, 1, 1}), 40.0);
  // All chunks on the slow host: its rate.
  EXPECT_DOUBLE_EQ(portRate({10, 30}, {0, 0}), 10.0);
  // 3 chunks on equal hosts: 2 on one -> 3 / (2 / 10).
  EXPECT_DOUBLE_EQ(portRate({10, 10}, {0, 1, 0}), 15.0);
}

}  // namespace
}  // namespace rina::plan
