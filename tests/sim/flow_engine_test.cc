// The flow engine against max-min rates worked out by hand.
#include "sim/flow_engine.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rina::sim {
namespace {

TEST(MaxMin, ThreeFlowsTwoLinks) {
  // A (cap 1) carries f0 and f1; B (cap 2) carries f1 and f2. A fills first
  // at 1/2 each; f2 then takes what f1 leaves on B: 2 - 1/2.
  const auto r = maxMinRates({1, 2}, {{{0, 1}}, {{0, 1}, {1, 1}}, {{1, 1}}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0], 0.5);
  EXPECT_DOUBLE_EQ(r[1], 0.5);
  EXPECT_DOUBLE_EQ(r[2], 1.5);
}

TEST(MaxMin, BottleneckOnTheSecondLink) {
  // L0 (10): f0, f1; L1 (4): f1, f2. L1 fills at 2; f0 gets 10 - 2.
  const auto r = maxMinRates({10, 4}, {{{0, 1}}, {{0, 1}, {1, 1}}, {{1, 1}}});
  EXPECT_DOUBLE_EQ(r[0], 8);
  EXPECT_DOUBLE_EQ(r[1], 2);
  EXPECT_DOUBLE_EQ(r[2], 2);
}

TEST(MaxMin, WeightTakesThatManyShares) {
  // 2x + x = 3 on one link.
  const auto r = maxMinRates({3}, {{{0, 2}}, {{0, 1}}});
  EXPECT_DOUBLE_EQ(r[0], 1);
  EXPECT_DOUBLE_EQ(r[1], 1);
}

TEST(MaxMin, ParkingLot) {
  // Three links of capacity 1 in a row: one long flow over all, one short
  // flow per link: every flow gets 1/2.
  const auto r = maxMinRates({1, 1, 1}, {{{0, 1}, {1, 1}, {2, 1}}, {{0, 1}}, {{1, 1}}, {{2, 1}}});
  for (double x : r) EXPECT_DOUBLE_EQ(x, 0.5);
}

TEST(MaxMin, FlowWithoutLinksIsUnbounded) {
  const auto r = maxMinRates({1}, {{}, {{0, 1}}});
  EXPECT_TRUE(std::isinf(r[0]));
  EXPECT_DOUBLE_EQ(r[1], 1);
}

TEST(FlowEngine, RatesAreRecomputedWhenAFlowEnds) {
  // Two flows share a link of 1 byte/s: 1 and 3 bytes. Both run at 1/2
  // until t = 2; the second then has 2 bytes left at rate 1: done at 4.
  FlowEngine e;
  const int link = e.addLink("l", 1);
  double t0 = -1, t1 = -1;
  e.startFlow({{link, 1}}, 1, [&] { t0 = e.now(); });
  e.startFlow({{link, 1}}, 3, [&] { t1 = e.now(); });
  std::string error;
  ASSERT_TRUE(e.run(&error)) << error;
  EXPECT_NEAR(t0, 2, 1e-12);
  EXPECT_NEAR(t1, 4, 1e-12);
  EXPECT_NEAR(e.carried()[link], 4, 1e-9);
}

TEST(FlowEngine, TimersStartFlowsLater) {
  // f0 (4 bytes) alone at rate 2 until t = 1, then shares with f1 (1 byte):
  // f1 done at 2, f0 has 4 - 2 - 1 = 1 left at rate 2: done at 2.5.
  FlowEngine e;
  const int link = e.addLink("l", 2);
  double t0 = -1, t1 = -1;
  e.startFlow({{link, 1}}, 4, [&] { t0 = e.now(); });
  e.at(1, [&] { e.startFlow({{link, 1}}, 1, [&] { t1 = e.now(); }); });
  std::string error;
  ASSERT_TRUE(e.run(&error)) << error;
  EXPECT_NEAR(t1, 2, 1e-12);
  EXPECT_NEAR(t0, 2.5, 1e-12);
}

TEST(FlowEngine, CancelReturnsWhatIsLeft) {
  FlowEngine e;
  const int link = e.addLink("l", 1);
  bool called = false;
  const int id = e.startFlow({{link, 1}}, 10, [&] { called = true; });
  double left = -1;
  e.at(4, [&] { left = e.cancelFlow(id); });
  std::string error;
  ASSERT_TRUE(e.run(&error)) << error;
  EXPECT_NEAR(left, 6, 1e-12);
  EXPECT_FALSE(called);
}

TEST(FlowEngine, ZeroCapacityLinkIsReported) {
  FlowEngine e;
  const int ok = e.addLink("fine", 1);
  const int dead = e.addLink("dead", 0);
  e.startFlow({{ok, 1}, {dead, 1}}, 1, nullptr);
  std::string error;
  EXPECT_FALSE(e.run(&error));
  EXPECT_NE(error.find("dead"), std::string::npos) << error;
}

}  // namespace
}  // namespace rina::sim
