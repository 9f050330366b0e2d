// Which racks aggregate (plan/rack_modes.h): closed forms worked by hand
// per host link, and a seeded family of random topologies where the
// choice is checked against the flat ring, rina with every INA rack on its
// switch, and an exhaustive search over the per-rack modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "plan/plan.h"
#include "plan/rack_modes.h"

namespace rina::plan {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes/s per Mbit/s

struct RackSpec {
  bool ina;
  std::vector<double> hostMbit;
  double uplinkMbit = 0;
  double switchMbit = 0;
};

Network networkOf(const std::vector<RackSpec>& racks) {
  Network net;
  net.spineMbit = {0};
  for (size_t r = 0; r < racks.size(); ++r) {
    Network::Rack rack;
    rack.name = std::string("r").append(std::to_string(r));
    rack.ina = racks[r].ina;
    rack.uplinkMbit = {racks[r].uplinkMbit};
    rack.switchMbit = racks[r].switchMbit;
    for (double rate : racks[r].hostMbit) {
      rack.hosts.push_back(static_cast<int>(net.hosts.size()));
      net.hosts.push_back(
          {std::string("h").append(std::to_string(net.hosts.size())), static_cast<int>(r), rate});
    }
    net.racks.push_back(rack);
  }
  return net;
}

RackChoice choose(const Network& net, double bytes = 64 << 20) {
  ChoiceOptions o;
  o.bytes = bytes;
  RackChoice c;
  EXPECT_TRUE(chooseRackModes(net, o, &c).ok());
  return c;
}

// Bytes per byte of S on the busiest link at `mbit`.
double perLink(const Cost& c, double mbit) { return c.perByte * mbit * kMbit; }

TEST(RackModes, InaRackOfTwoBesideAutonomousHosts) {
  // An INA rack of 2 and two single hosts, all at 500 Mbit/s. On its switch:
  // R = 3, h = 4/3, its hosts carry 1 + h/2 = 5/3 S; summed on its hosts
  // the same (1 + (k - 2 + h)/2); autonomous: R = 4, h = 1.5 S everywhere,
  // which is the flat ring's 2 * 3/4.
  const Network net = networkOf({{true, {500, 500}}, {false, {500}}, {false, {500}}});
  const RackChoice c = choose(net);
  EXPECT_EQ(c.modes[0], RackMode::kAutonomous);
  EXPECT_EQ(c.members, 4);
  EXPECT_NEAR(perLink(c.rina, 500), 1.5, 1e-12);
  EXPECT_NEAR(perLink(c.forcedIna, 500), 5.0 / 3.0, 1e-12);
  EXPECT_NEAR(perLink(c.ring, 500), 1.5, 1e-12);
  EXPECT_EQ(c.rina.steps, 6);
  EXPECT_EQ(c.forcedIna.steps, 4);
  // Beside six hosts: on its switch 1 + (12/7)/2 = 13/7 S against 12/7 for
  // the others; autonomous 1.75 S.
  const Network six = networkOf({{true, {500, 500}}, {false, {500, 500, 500, 500, 500, 500}}});
  const RackChoice c6 = choose(six);
  EXPECT_EQ(c6.modes[0], RackMode::kAutonomous);
  EXPECT_NEAR(perLink(c6.forcedIna, 500), 13.0 / 7.0, 1e-12);
  EXPECT_NEAR(perLink(c6.rina, 500), 1.75, 1e-12);
  // Alone, the rack of 2 is one switch call (S each way, 1 step) against a
  // ring of 2 (S each way, 2 steps): the switch.
  const RackChoice alone = choose(networkOf({{true, {500, 500}}}));
  EXPECT_EQ(alone.modes[0], RackMode::kSwitch);
  EXPECT_EQ(alone.rina.steps, 1);
}

TEST(RackModes, RacksOfFour) {
  // Two INA racks of 4: both on their switches R = 2, h = 1: 1 + 1/4 =
  // 1.25 S. One autonomous: R = 5, h = 1.6: 1 + 1.6/4 = 1.4 on the other,
  // 1.6 on its hosts. Both: the ring of 8, 1.75.
  RackChoice c = choose(networkOf({{true, {500, 500, 500, 500}}, {true, {500, 500, 500, 500}}}));
  EXPECT_EQ(c.modes, (std::vector<RackMode>{RackMode::kSwitch, RackMode::kSwitch}));
  EXPECT_NEAR(perLink(c.rina, 500), 1.25, 1e-12);
  EXPECT_NEAR(perLink(c.ring, 500), 1.75, 1e-12);
  // hier: two members summed on their hosts, 1 + (4 - 2 + 1)/4 = 1.75.
  EXPECT_NEAR(perLink(c.hier, 500), 1.75, 1e-12);
  // An INA rack of 4 and four hosts of a rack without INA: R = 5, h = 1.6:
  // 1.4 S on the switch's hosts, 1.6 S on the others; autonomous: 1.75.
  c = choose(networkOf({{true, {500, 500, 500, 500}}, {false, {500, 500, 500, 500}}}));
  EXPECT_EQ(c.modes[0], RackMode::kSwitch);
  EXPECT_NEAR(perLink(c.rina, 500), 1.6, 1e-12);
}

TEST(RackModes, SlowSwitchIsLeft) {
  // The same rack of 4 beside four hosts, its switch taking 40 Mbit/s of
  // datagrams: (4 + 1) S at 40 Mbit/s is 62.5 S at the host rate. Summed
  // on its hosts: 1 + (4 - 2 + 1.6)/4 = 1.9 S; autonomous: 1.75 S.
  RackChoice c =
      choose(networkOf({{true, {500, 500, 500, 500}, 0, 40}, {false, {500, 500, 500, 500}}}));
  EXPECT_EQ(c.modes[0], RackMode::kAutonomous);
  EXPECT_NEAR(perLink(c.forcedIna, 500), 5 * 500.0 / 40, 1e-9);
  EXPECT_NEAR(perLink(c.rina, 500), 1.75, 1e-12);
  // Behind uplinks of 200 Mbit/s with hosts at 1000: autonomous, R = 8 and
  // 1.75 S through each uplink; on its hosts, R = 5 and 1.6 S (the hosts
  // carry 1.9 S at 5x the rate).
  c = choose(networkOf(
      {{true, {1000, 1000, 1000, 1000}, 200, 40}, {false, {1000, 1000, 1000, 1000}, 200}}));
  EXPECT_EQ(c.modes[0], RackMode::kHosts);
  EXPECT_NEAR(perLink(c.rina, 200), 1.6, 1e-12);
}

TEST(RackModes, PortSharesAreWaterFilled) {
  // An INA rack of a 1000 and a 250 Mbit/s host beside two 1000 hosts
  // (R = 3, h = 4/3): each host ends at (1 + h f)/B. The 250 host takes
  // 1/250 with no share at all; the 1000 host porting everything takes
  // (7/3)/1000 < 1/250. Autonomous: 1.5/250.
  const RackChoice c = choose(networkOf({{true, {1000, 250}}, {false, {1000, 1000}}}));
  EXPECT_EQ(c.modes[0], RackMode::kSwitch);
  ASSERT_EQ(c.shares[0].size(), 2u);
  EXPECT_NEAR(c.shares[0][0], 1.0, 1e-12);
  EXPECT_NEAR(c.shares[0][1], 0.0, 1e-12);
  EXPECT_NEAR(perLink(c.rina, 250), 1.0, 1e-12);
  // Hosts of 1000 and 500 (R = 3): both end at T = (h + 2)/1500 = 1/450,
  // f = (B T - 1)/h: 11/12 and 1/12 (by rate it would be 2/3 and 1/3).
  const RackChoice d = choose(networkOf({{true, {1000, 500}}, {false, {1000, 1000}}}));
  ASSERT_EQ(d.modes[0], RackMode::kSwitch);
  EXPECT_NEAR(d.shares[0][0], 11.0 / 12.0, 1e-12);
  EXPECT_NEAR(d.shares[0][1], 1.0 / 12.0, 1e-12);
  EXPECT_NEAR(d.rina.perByte * kMbit, 1.0 / 450, 1e-15);
}

TEST(RackModes, KeepsThePreviousChoiceWithinTheMargin) {
  // Two INA racks of 4 and four hosts: both on their switches R = 6,
  // h = 5/3, the switches' hosts 1 + 5/12 = 1.417, autonomous 1.667; one
  // autonomous R = 9, h = 16/9 = 1.778. The choice: both on the switch.
  const Network net = networkOf(
      {{true, {500, 500, 500, 500}}, {true, {500, 500, 500, 500}}, {false, {500, 500, 500, 500}}});
  ChoiceOptions o;
  o.previous = {RackMode::kSwitch, RackMode::kAutonomous, RackMode::kAutonomous};
  RackChoice c;
  ASSERT_TRUE(chooseRackModes(net, o, &c).ok());
  EXPECT_EQ(c.modes[1], RackMode::kSwitch);  // 1.778 / 1.667 - 1 = 6.7% > 0
  o.keepMargin = 0.1;
  ASSERT_TRUE(chooseRackModes(net, o, &c).ok());
  EXPECT_EQ(c.modes[1], RackMode::kAutonomous);  // within 10%: kept
  o.forceIna = true;                             // forcing wins over keeping
  ASSERT_TRUE(chooseRackModes(net, o, &c).ok());
  EXPECT_EQ(c.modes[1], RackMode::kSwitch);
}

// The seeded family: 1-8 racks of 1-6 hosts, INA on a random subset,
// host and uplink rates (and now and then a slow switch) from small sets.
Network randomNetwork(std::mt19937& rng) {
  const double hostRates[] = {250, 500, 1000, 10000};
  const double uplinks[] = {0, 400, 2000, 20000};
  const double switches[] = {0, 0, 0, 50, 2000};
  std::vector<RackSpec> racks(1 + rng() % 8);
  const bool uniformHosts = rng() % 2 == 0;
  const double common = hostRates[rng() % 4];
  for (RackSpec& r : racks) {
    r.ina = rng() % 2 == 0;
    r.hostMbit.resize(1 + rng() % 6);
    for (double& h : r.hostMbit) h = uniformHosts ? common : hostRates[rng() % 4];
    r.uplinkMbit = uplinks[rng() % 4];
    r.switchMbit = switches[rng() % 5];
  }
  return networkOf(racks);
}

// Every allowed mode per rack (INA racks of two or more: three, others
// autonomous), each at its best shares: the least predicted time.
double exhaustiveBest(const Network& net, double bytes, const ModelOptions& m) {
  std::vector<int> choosable;
  for (size_t r = 0; r < net.racks.size(); ++r) {
    if (net.racks[r].ina && net.racks[r].hosts.size() >= 2) choosable.push_back(r);
  }
  std::vector<RackMode> modes(net.racks.size(), RackMode::kAutonomous);
  size_t combos = 1;
  for (size_t i = 0; i < choosable.size(); ++i) combos *= kRackModes;
  double best = 1e300;
  for (size_t code = 0; code < combos; ++code) {
    size_t x = code;
    for (int r : choosable) {
      modes[r] = static_cast<RackMode>(x % kRackModes);
      x /= kRackModes;
    }
    std::vector<std::vector<double>> shares;
    best = std::min(best, bestShares(net, modes, m, &shares).seconds(bytes, m.stepLatencySec));
  }
  return best;
}

TEST(RackModes, RandomFamilyNeverSlowerThanRingOrForcedInaAndExact) {
  std::mt19937 rng(43);
  const double sizes[] = {64 << 10, 1 << 20, 16 << 20, 256 << 20};
  int exhaustive = 0, changed = 0, total = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Network net = randomNetwork(rng);
    for (double bytes : sizes) {
      ChoiceOptions o;
      o.bytes = bytes;
      o.model.portMarkers = rng() % 4 != 0;
      RackChoice c;
      ASSERT_TRUE(chooseRackModes(net, o, &c).ok());
      const double L = o.model.stepLatencySec;
      const double rina = c.rina.seconds(bytes, L);
      ++total;
      EXPECT_LE(rina, c.ring.seconds(bytes, L) * (1 + 1e-12)) << "trial " << trial;
      EXPECT_LE(rina, c.forcedIna.seconds(bytes, L) * (1 + 1e-12)) << "trial " << trial;
      changed += rina < c.forcedIna.seconds(bytes, L) * (1 - 1e-9);
      // The choice's own cost is the model's for its modes and shares.
      EXPECT_EQ(rinaCost(net, c.modes, c.shares, o.model), c.rina);
      size_t choosable = 0;
      for (const Network::Rack& r : net.racks) choosable += r.ina && r.hosts.size() >= 2;
      if (choosable > 6) continue;
      ++exhaustive;
      const double best = exhaustiveBest(net, bytes, o.model);
      EXPECT_NEAR(rina, best, best * 1e-9) << "trial " << trial << " bytes " << bytes;
    }
  }
  std::printf("%d choices, %d checked against the exhaustive search, %d faster than INA forced\n",
              total, exhaustive, changed);
  EXPECT_GT(exhaustive, total / 2);
  EXPECT_GT(changed, total / 10);  // the family exercises the choice
}

TEST(RackModes, PlanCarriesTheChoice) {
  // The plan of the topology: racks of 3 (INA), 2 (INA) and 3.
  const Network net =
      networkOf({{true, {500, 500, 500}}, {true, {500, 500}}, {false, {500, 500, 500}}});
  Plan p;
  RackChoice c;
  ASSERT_TRUE(makePlan(net, PlanOptions{}, &p, &c).ok());
  ASSERT_EQ(p.ports.size(), 2u);
  EXPECT_EQ(p.ports[0].mode, RackMode::kSwitch);
  EXPECT_EQ(p.ports[1].mode, RackMode::kAutonomous);
  EXPECT_TRUE(p.ports[1].portRanks.empty());
  // Members 3, 1, 1, 1, 1, 1: three sub-rings, each of rack r0's hosts one.
  EXPECT_EQ(p.ports[0].portRanks.size(), 3u);
  EXPECT_EQ(p.ring.size(), 6u);
  EXPECT_EQ(p.predicted.rina, c.rina);
  EXPECT_EQ(p.predicted.ring, c.ring);
  const std::string d = describeChoice(net, c, 64 << 20, ModelOptions{});
  EXPECT_NE(d.find("rack r1 (INA, 2 hosts): switch"), std::string::npos) << d;
  EXPECT_NE(d.find("-> autonomous"), std::string::npos) << d;
  EXPECT_NE(d.find("at 64 MiB: rina"), std::string::npos) << d;
  // Forced, every INA rack on its switch.
  PlanOptions forced;
  forced.forceIna = true;
  ASSERT_TRUE(makePlan(net, forced, &p).ok());
  EXPECT_EQ(p.ports[1].mode, RackMode::kSwitch);
  EXPECT_EQ(p.ring.size(), 5u);
}

}  // namespace
}  // namespace rina::plan
