// RINA_ALGO=auto chooses by the plan's link model (plan/link_model.h):
// cases worked by hand in bytes per host link, the size's latency term,
// and the plan's per-rack choice feeding it.
#include "algo/dispatch/auto_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "plan/network.h"
#include "plan/plan.h"
#include "rack_maps.h"
#include "topo/rack_map.h"

namespace rina::algo {
namespace {

// The rack map of a RINA_RACKS short form, every host link at hostMbit and
// every uplink at uplinkMbit (0: unknown), and the plan PlanSync would make
// from it.
struct Planned {
  topo::RackMap map;
  plan::Plan plan;
};
Planned planned(const char* racks, double hostMbit, double uplinkMbit = 0, bool markers = true,
                bool forceIna = false) {
  topo::TopologySpec spec;
  EXPECT_TRUE(topo::parseRacksShortForm(racks, &spec).ok()) << racks;
  spec.spines = 1;
  int n = 0;
  for (topo::RackSpec& r : spec.racks) {
    r.hostLinkMbit = hostMbit;
    r.uplinkMbit = uplinkMbit;
    n += r.rankCount;
  }
  Planned p;
  EXPECT_TRUE(topo::resolveRackMap(spec, std::vector<std::string>(n, "h"), &p.map).ok());
  plan::Network net;
  EXPECT_TRUE(plan::networkFromTopology(spec, p.map, &net).ok());
  plan::PlanOptions o;
  o.model.portMarkers = markers;
  o.forceIna = forceIna;
  EXPECT_TRUE(plan::makePlan(net, o, &p.plan).ok());
  return p;
}

Algorithm autoFor(const Planned& p, size_t bytes, std::string* why = nullptr,
                  size_t small = 128 << 10) {
  return resolveAuto(p.map, &p.plan, bytes, small, why);
}

constexpr double kMbit = 1e6 / 8;  // bytes/s per Mbit/s

TEST(AutoSelect, PredictionsMatchHandCounts) {
  // One INA rack of 4 at 500 Mbit/s: S per host link against the ring's
  // 2 * 3/4 S.
  Planned p = planned("4:ina", 500);
  EXPECT_DOUBLE_EQ(p.plan.predicted.rina.perByte, 1.0 / (500 * kMbit));
  EXPECT_DOUBLE_EQ(p.plan.predicted.ring.perByte, 1.5 / (500 * kMbit));
  EXPECT_EQ(p.plan.predicted.rina.steps, 1);
  EXPECT_EQ(p.plan.predicted.ring.steps, 6);
  // Two INA racks of 3 and two single hosts (R = 4, h = 1.5): an INA worker
  // 1 + h/3 = 1.5 S with port markers; an autonomous one 1.5 S; the ring
  // over 8: 1.75 S.
  p = planned("3:ina,3:ina,1,1", 500);
  EXPECT_NEAR(p.plan.predicted.rina.perByte * 500 * kMbit, 1.5, 1e-12);
  EXPECT_DOUBLE_EQ(p.plan.predicted.ring.perByte * 500 * kMbit, 1.75);
  // Without markers a worker also uploads its share: 1 + 2.5/3 = 11/6 S on
  // the switch; autonomous racks make the ring of 8 (1.75 S), and so the
  // plan makes both racks autonomous.
  p = planned("3:ina,3:ina,1,1", 500, 0, false);
  EXPECT_NEAR(p.plan.predicted.rina.perByte * 500 * kMbit, 1.75, 1e-12);
  EXPECT_EQ(p.plan.modeOf(0), plan::RackMode::kAutonomous);
  p = planned("3:ina,3:ina,1,1", 500, 0, false, true);
  EXPECT_NEAR(p.plan.predicted.rina.perByte * 500 * kMbit, 11.0 / 6.0, 1e-12);
  // Two INA racks of 16: 1 + h/16 with h = 1: 17/16 against 2 * 31/32.
  p = planned("16:ina,16:ina", 500);
  EXPECT_DOUBLE_EQ(p.plan.predicted.rina.perByte * 500 * kMbit, 17.0 / 16.0);
  EXPECT_DOUBLE_EQ(p.plan.predicted.ring.perByte * 500 * kMbit, 62.0 / 32.0);
}

TEST(AutoSelect, ChoosesByModelAndSize) {
  std::string why;
  const Planned one = planned("4:ina", 500);
  EXPECT_EQ(autoFor(one, 16 << 20, &why), Algorithm::kInaMemberRing);
  EXPECT_NE(why.find("link model of plan #0 at 16777216 bytes: rina"), std::string::npos) << why;
  EXPECT_EQ(autoFor(planned("3:ina,3:ina,1,1", 500), 16 << 20), Algorithm::kInaMemberRing);
  // The plan makes both racks autonomous: the ring's bytes, and no faster.
  EXPECT_EQ(autoFor(planned("3:ina,3:ina,1,1", 500, 0, false), 16 << 20), Algorithm::kRing);
  EXPECT_EQ(autoFor(planned("16:ina,16:ina", 500), 16 << 20), Algorithm::kInaMemberRing);
  EXPECT_EQ(autoFor(planned("4,4", 500), 16 << 20, &why), Algorithm::kRing);
  EXPECT_EQ(why, "no INA rack: ring");
  EXPECT_EQ(resolveAuto(one.map, nullptr, 16 << 20, 128 << 10, &why), Algorithm::kRing);
  EXPECT_EQ(why, "no plan: ring");
  EXPECT_EQ(autoFor(one, 4096, &why), Algorithm::kRecursiveDoubling);
  EXPECT_NE(why.find("4096 bytes"), std::string::npos) << why;
  // Below the small-message size nothing else; at 4 KiB the switch's one
  // step beats the ring's six.
  EXPECT_EQ(autoFor(one, 4096, &why, 0), Algorithm::kInaMemberRing);
  // Without a reason asked for (every call), the same choices.
  EXPECT_EQ(autoFor(one, 16 << 20), Algorithm::kInaMemberRing);
  EXPECT_EQ(autoFor(one, 4096), Algorithm::kRecursiveDoubling);
}

TEST(AutoSelect, FollowsThePlansChoiceOfRacks) {
  // Racks of 3 (INA), 2 (INA) and 3 hosts at 500 Mbit/s, n = 8. Every INA
  // rack on its switch: R = 5, h = 1.6, the rack of 2's hosts carry
  // 1 + 1.6/2 = 1.8 S, more than the ring's 1.75 S: auto would run the
  // ring. The plan makes the rack of 2 autonomous (R = 6, h = 5/3: the rack
  // of 3's hosts 1 + (5/3)/3 = 14/9 S, autonomous hosts 5/3 S), and rina
  // beats the ring.
  const Planned forced = planned("3:ina,2:ina,3", 500, 0, true, true);
  EXPECT_NEAR(forced.plan.predicted.rina.perByte * 500 * kMbit, 1.8, 1e-12);
  EXPECT_EQ(autoFor(forced, 16 << 20), Algorithm::kRing);
  const Planned chosen = planned("3:ina,2:ina,3", 500);
  EXPECT_EQ(chosen.plan.modeOf(0), plan::RackMode::kSwitch);
  EXPECT_EQ(chosen.plan.modeOf(3), plan::RackMode::kAutonomous);
  EXPECT_NEAR(chosen.plan.predicted.rina.perByte * 500 * kMbit, 5.0 / 3.0, 1e-12);
  EXPECT_EQ(autoFor(chosen, 16 << 20), Algorithm::kInaMemberRing);
}

TEST(AutoSelect, SlowUplinksMakeHier) {
  // Racks of 4 hosts (no INA) and 4 (INA) at 1000 Mbit/s, uplinks at 100.
  // The ring crosses each uplink once: 1.75 S at 100. rina: the INA rack on
  // its switch and 4 autonomous hosts, R = 5, 1.6 S over the uplinks. hier:
  // two members, h = 1: S over the uplinks.
  const Planned p = planned("4,4:ina", 1000, 100);
  EXPECT_NEAR(p.plan.predicted.ring.perByte * 100 * kMbit, 1.75, 1e-12);
  EXPECT_NEAR(p.plan.predicted.rina.perByte * 100 * kMbit, 1.6, 1e-12);
  EXPECT_NEAR(p.plan.predicted.hier.perByte * 100 * kMbit, 1.0, 1e-12);
  EXPECT_EQ(autoFor(p, 64 << 20), Algorithm::kHier);
}

// The seeded family of the plan's tests (1-8 racks of 1-6 hosts, INA on a
// random subset, host and uplink rates from small sets): at every size,
// what auto runs is never predicted slower than the ring, and with an INA
// rack it is the fastest of ring, hier and rina, rina with the plan's modes.
TEST(AutoSelect, NeverSlowerThanTheRingOnARandomFamily) {
  std::mt19937 rng(7);
  const double hostRates[] = {250, 500, 1000, 10000};
  const double uplinks[] = {0, 400, 2000, 20000};
  int rinaPicks = 0, hierPicks = 0, total = 0;
  for (int trial = 0; trial < 200; ++trial) {
    topo::TopologySpec spec;
    spec.spines = 1;
    int n = 0;
    const int racks = 1 + static_cast<int>(rng() % 8);
    for (int r = 0; r < racks; ++r) {
      topo::RackSpec rack;
      rack.name = "r" + std::to_string(r);
      rack.ina = rng() % 2 == 0;
      rack.rankCount = 1 + static_cast<int>(rng() % 6);
      rack.hostLinkMbit = hostRates[rng() % 4];
      rack.uplinkMbit = uplinks[rng() % 4];
      n += rack.rankCount;
      spec.racks.push_back(rack);
    }
    Planned p;
    ASSERT_TRUE(topo::resolveRackMap(spec, std::vector<std::string>(n, "h"), &p.map).ok());
    plan::Network net;
    ASSERT_TRUE(plan::networkFromTopology(spec, p.map, &net).ok());
    ASSERT_TRUE(plan::makePlan(net, plan::PlanOptions{}, &p.plan).ok());
    const plan::Plan::Predicted& c = p.plan.predicted;
    for (size_t bytes : {size_t{1} << 20, size_t{16} << 20, size_t{256} << 20}) {
      const double S = static_cast<double>(bytes), L = c.stepLatencySec;
      const Algorithm a = autoFor(p, bytes);
      const double ring = c.ring.seconds(S, L), hier = c.hier.seconds(S, L),
                   rina = c.rina.seconds(S, L);
      const double picked = a == Algorithm::kInaMemberRing ? rina
                            : a == Algorithm::kHier        ? hier
                                                           : ring;
      ++total;
      EXPECT_LE(picked, ring) << "trial " << trial << " bytes " << bytes;
      // Without an INA rack auto runs the ring and plans nothing.
      const double best = p.map.anyIna() ? std::min({ring, hier, rina}) : ring;
      EXPECT_LE(picked, best * (1 + 1e-12))
          << "trial " << trial << " " << algorithmName(a) << " ring " << ring << " hier " << hier
          << " rina " << rina;
      rinaPicks += a == Algorithm::kInaMemberRing;
      hierPicks += a == Algorithm::kHier;
    }
  }
  std::printf("auto on %d cases: rina %d, hier %d, ring %d\n", total, rinaPicks, hierPicks,
              total - rinaPicks - hierPicks);
  EXPECT_GT(rinaPicks, 0);
  EXPECT_GT(hierPicks, 0);
}

}  // namespace
}  // namespace rina::algo
