// Ring order: the exact DP against brute force over all cycles, a closed form
// for racks, and the heuristic's gap to the exact answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "plan/ring_order.h"

namespace rina::plan {
namespace {

RateMatrix randomRates(int n, std::mt19937& rng, int levels) {
  std::uniform_int_distribution<int> d(1, levels);
  RateMatrix r(n, std::vector<double>(n, 0));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) r[i][j] = 100.0 * d(rng);
    }
  }
  return r;
}

// Every cycle through member 0: the best bottleneck, and the best sum among
// cycles with that bottleneck.
std::pair<double, double> bruteForce(const RateMatrix& r) {
  const int n = static_cast<int>(r.size());
  std::vector<int> rest(n - 1);
  std::iota(rest.begin(), rest.end(), 1);
  double bestB = -1, bestS = -1;
  do {
    double b = 1e300, s = 0;
    int prev = 0;
    for (int v : rest) b = std::min(b, r[prev][v]), s += r[prev][v], prev = v;
    b = std::min(b, r[prev][0]), s += r[prev][0];
    if (b > bestB || (b == bestB && s > bestS)) bestB = b, bestS = s;
  } while (std::next_permutation(rest.begin(), rest.end()));
  return {bestB, bestS};
}

bool isPermutation(std::vector<int> order, int n) {
  std::sort(order.begin(), order.end());
  for (int i = 0; i < n; ++i) {
    if (static_cast<int>(order.size()) != n || order[i] != i) return false;
  }
  return true;
}

TEST(PlanRing, ExactMatchesBruteForce) {
  std::mt19937 rng(7);
  for (int n = 2; n <= 8; ++n) {
    for (int trial = 0; trial < 25; ++trial) {
      // Few distinct levels: many ties, which the sum pass must break right.
      RateMatrix r = randomRates(n, rng, trial % 2 ? 4 : 1000);
      RingOrder o = exactRingOrder(r);
      auto [b, s] = bruteForce(r);
      ASSERT_TRUE(isPermutation(o.order, n));
      EXPECT_EQ(o.order.front(), 0);
      EXPECT_TRUE(o.exact);
      EXPECT_EQ(o.bottleneck, b) << "n " << n << " trial " << trial;
      EXPECT_DOUBLE_EQ(o.sum, s) << "n " << n << " trial " << trial;
      EXPECT_EQ(cycleBottleneck(r, o.order), o.bottleneck);
      EXPECT_GE(ringUpperBound(r), b);
    }
  }
}

// Members in racks: hops inside a rack at H, across racks at L < H. Any ring
// over R >= 2 racks crosses at least R times, so B* = L and the best sum is
// (n - R) H + R L: each rack's members consecutive.
TEST(PlanRing, RacksClosedForm) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    int racks = 2 + trial % 3;
    std::vector<int> rackOf;
    for (int r = 0; r < racks; ++r) {
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) rackOf.push_back(r);
    }
    std::shuffle(rackOf.begin(), rackOf.end(), rng);
    const int n = static_cast<int>(rackOf.size());
    if (n > kExactRingMembers) continue;
    RateMatrix r(n, std::vector<double>(n, 0));
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) r[i][j] = rackOf[i] == rackOf[j] ? 1000 : 300;
    }
    RingOrder o = bestRingOrder(r);
    EXPECT_EQ(o.bottleneck, 300);
    EXPECT_DOUBLE_EQ(o.sum, (n - racks) * 1000.0 + racks * 300.0);
    int crossings = 0;
    for (int k = 0; k < n; ++k) crossings += rackOf[o.order[k]] != rackOf[o.order[(k + 1) % n]];
    EXPECT_EQ(crossings, racks);
  }
}

TEST(PlanRing, TrivialRings) {
  EXPECT_EQ(bestRingOrder({}).order.size(), 0u);
  RingOrder one = bestRingOrder({{0}});
  ASSERT_EQ(one.order, std::vector<int>{0});
  EXPECT_TRUE(std::isinf(one.bottleneck));
  RingOrder two = bestRingOrder({{0, 5}, {7, 0}});
  EXPECT_EQ(two.bottleneck, 5);
}

// The heuristic never claims more than the optimum; its gap on random
// instances (printed, and bounded here) is the number docs/planning.md states.
TEST(PlanRing, HeuristicGapToExact) {
  std::mt19937 rng(11);
  int instances = 0, optimal = 0;
  double worst = 1, meanRatio = 0;
  for (int n = 4; n <= 10; ++n) {
    for (int trial = 0; trial < 30; ++trial) {
      RateMatrix r = randomRates(n, rng, trial % 3 ? 1000 : 5);
      RingOrder e = exactRingOrder(r);
      RingOrder h = heuristicRingOrder(r);
      ASSERT_TRUE(isPermutation(h.order, n));
      EXPECT_FALSE(h.exact);
      EXPECT_EQ(h.bottleneck, cycleBottleneck(r, h.order));
      ASSERT_LE(h.bottleneck, e.bottleneck);
      double ratio = h.bottleneck / e.bottleneck;
      worst = std::min(worst, ratio);
      meanRatio += ratio;
      optimal += h.bottleneck == e.bottleneck;
      ++instances;
    }
  }
  meanRatio /= instances;
  std::printf(
      "heuristic vs exact on %d random instances (n = 4..10): optimal in %d, mean ratio %.4f, "
      "worst %.4f\n",
      instances, optimal, meanRatio, worst);
  EXPECT_GE(meanRatio, 0.95);
  EXPECT_GE(static_cast<double>(optimal) / instances, 0.8);
}

// Beyond the exact size: the heuristic stays under the upper bound and finds
// a planted optimal cycle (every hop on it at 1000, all others random < 1000).
TEST(PlanRing, HeuristicFindsPlantedCycle) {
  std::mt19937 rng(5);
  const int n = 128;
  RateMatrix r = randomRates(n, rng, 9);  // 100..900
  std::vector<int> cycle(n);
  std::iota(cycle.begin(), cycle.end(), 0);
  std::shuffle(cycle.begin(), cycle.end(), rng);
  for (int k = 0; k < n; ++k) r[cycle[k]][cycle[(k + 1) % n]] = 1000;
  RingOrder o = bestRingOrder(r);
  EXPECT_FALSE(o.exact);
  EXPECT_LE(o.bottleneck, ringUpperBound(r));
  EXPECT_EQ(o.bottleneck, 1000);
}

}  // namespace
}  // namespace rina::plan
