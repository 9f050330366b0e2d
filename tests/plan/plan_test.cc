// makePlan on small networks against brute force over orders and spines;
// the plan's wire form (round trip and every malformed input); describe();
// the network checks; the re-plan policy.
#include "plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/config.h"
#include "plan/paths.h"
#include "plan/replan.h"

namespace rina::plan {
namespace {

// racks[i] = {ina, host rates...}; 2 spines.
Network makeNetwork(const std::vector<std::pair<bool, std::vector<double>>>& racks,
                    std::vector<double> spines, std::vector<std::vector<double>> uplinks) {
  Network net;
  net.spineMbit = std::move(spines);
  for (size_t r = 0; r < racks.size(); ++r) {
    Network::Rack rack;
    rack.name = 'r' + std::to_string(r);
    rack.ina = racks[r].first;
    rack.uplinkMbit = uplinks[r];
    for (double rate : racks[r].second) {
      rack.hosts.push_back(static_cast<int>(net.hosts.size()));
      net.hosts.push_back({'h' + std::to_string(net.hosts.size()), static_cast<int>(r), rate});
    }
    net.racks.push_back(rack);
  }
  return net;
}

// Brute force: every ring order and every spine per inter-rack hop, rated by
// the member rates, the single-path limits and the sharing rule.
double bruteForcePlan(const Network& net, int chunks) {
  std::vector<Member> members = ringMembers(net);
  RateMatrix rate = hopRates(net, members, chunks);
  const int n = static_cast<int>(members.size());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  double best = 0;
  do {
    if (order[0] != 0) continue;
    std::vector<SpineHop> hops;
    double own = 1e300;
    for (int k = 0; k < n; ++k) {
      int a = order[k], b = order[(k + 1) % n];
      own = std::min(own, rate[a][b]);
      if (members[a].rack != members[b].rack)
        hops.push_back({members[a].rack, members[b].rack, rate[a][b]});
    }
    std::vector<int> s(hops.size(), 0);
    while (true) {
      best = std::max(best, std::min(own, spineAssignmentRate(net, hops, s)));
      size_t i = 0;
      for (; i < s.size(); ++i) {
        if (++s[i] < net.spines()) break;
        s[i] = 0;
      }
      if (i == s.size()) break;
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(Plan, SmallNetworksMatchBruteForce) {
  std::mt19937 rng(4);
  const double rates[] = {10000, 25000, 40000, 100000};
  int matched = 0, trials = 40;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<std::pair<bool, std::vector<double>>> racks;
    std::vector<std::vector<double>> uplinks;
    int nracks = 2 + trial % 3;
    for (int r = 0; r < nracks; ++r) {
      std::vector<double> hosts(1 + rng() % 2);
      for (double& h : hosts) h = rates[rng() % 4];
      racks.push_back({rng() % 2 == 0, hosts});
      uplinks.push_back({rates[rng() % 4], rates[rng() % 4]});
    }
    Network net = makeNetwork(racks, {rates[rng() % 4], rates[rng() % 4]}, uplinks);
    if (ringMembers(net).size() > 7) continue;
    Plan p;
    // The members of ringMembers(net): every INA rack on its switch.
    PlanOptions o{4, 1, "test"};
    o.forceIna = true;
    ASSERT_TRUE(makePlan(net, o, &p).ok());
    double best = bruteForcePlan(net, 4);
    // Order first, then spines: never above the joint optimum.
    EXPECT_LE(p.bottleneckMbit, best * (1 + 1e-12));
    matched += p.bottleneckMbit >= best * (1 - 1e-12);
    EXPECT_EQ(p.ring.size(), ringMembers(net).size());
    EXPECT_EQ(p.hopSpine.size(), p.ring.size());
  }
  std::printf("makePlan equals the joint brute force in %d of %d small networks\n", matched,
              trials);
  EXPECT_GE(matched, trials * 3 / 4);
}

TEST(Plan, PortsFollowTheLinkModel) {
  // One INA rack of a 25G and a 100G host beside a 40G host: two members,
  // h = 1. Every host sends S to the switch, so the 25G host takes S/25G
  // whatever it ports; porting a share f costs (1 + f)/B. The 100G host
  // porting all: 2/100G < 1/25G; the split 2 and 8 (by rate) would give the
  // 25G host 1.2/25G. So all 10 chunks go to the 100G host, and the rack
  // stays on its switch (autonomous: h = 4/3 on the 25G host, 1.33/25G).
  Network net =
      makeNetwork({{true, {25000, 100000}}, {false, {40000}}}, {400000}, {{400000}, {400000}});
  Plan p;
  ASSERT_TRUE(makePlan(net, PlanOptions{10, 0, "initial"}, &p).ok());
  ASSERT_EQ(p.ports.size(), 1u);
  EXPECT_EQ(p.ports[0].agent, 0);
  EXPECT_EQ(p.ports[0].mode, RackMode::kSwitch);
  EXPECT_EQ(std::count(p.ports[0].portRanks.begin(), p.ports[0].portRanks.end(), 0), 0);
  EXPECT_EQ(std::count(p.ports[0].portRanks.begin(), p.ports[0].portRanks.end(), 1), 10);
  // Two members: hop rate min(rack port rate 125G, host 40G) = 40G.
  EXPECT_EQ(p.bottleneckMbit, 40000);
  EXPECT_EQ(p.ring, (std::vector<int>{0, 2}));
}

TEST(Plan, FromTopologySpec) {
  topo::TopologySpec spec;
  ASSERT_TRUE(topo::parseRacksShortForm("2:ina,1,1", &spec).ok());
  spec.spines = 2;
  spec.spineLinkMbit = 1000;
  for (auto& r : spec.racks) r.hostLinkMbit = 500, r.uplinkMbit = 800;
  topo::RackMap map;
  ASSERT_TRUE(topo::resolveRackMap(spec, std::vector<std::string>(4, "h"), &map).ok());
  Network net;
  ASSERT_TRUE(networkFromTopology(spec, map, &net).ok());
  EXPECT_EQ(ringMembers(net).size(), 3u);
  Plan p;
  // An INA rack of 2 beside two hosts: on its switch a host carries
  // 1 + h/2 = 5/3 S (3 members, h = 4/3), autonomous 1.5 S (4 members).
  ASSERT_TRUE(makePlan(net, PlanOptions{}, &p).ok());
  EXPECT_EQ(p.ring.size(), 4u);
  ASSERT_EQ(p.ports.size(), 1u);
  EXPECT_EQ(p.ports[0].mode, RackMode::kAutonomous);
  EXPECT_TRUE(p.ports[0].portRanks.empty());
  EXPECT_EQ(p.bottleneckMbit, 500);
  PlanOptions forced;
  forced.forceIna = true;
  ASSERT_TRUE(makePlan(net, forced, &p).ok());
  EXPECT_EQ(p.ring.size(), 3u);
  EXPECT_EQ(p.ports[0].mode, RackMode::kSwitch);
  spec.spines = 0;
  EXPECT_EQ(networkFromTopology(spec, map, &net).code(), rinaInvalidArgument);
}

TEST(Plan, ValidateNetworkRejectsBadInput) {
  Network good = makeNetwork({{false, {1000}}, {false, {1000}}}, {1000}, {{1000}, {1000}});
  ASSERT_TRUE(validateNetwork(good).ok());
  Plan p;
  auto expectBad = [&](Network n, const char* what) {
    Status s = validateNetwork(n);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << what;
    EXPECT_EQ(makePlan(n, PlanOptions{}, &p).code(), rinaInvalidArgument) << what;
  };
  Network n = good;
  n.hosts[0].linkMbit = -1;
  expectBad(n, "negative host rate");
  n = good;
  n.spineMbit[0] = NAN;
  expectBad(n, "NaN spine");
  n = good;
  n.racks[0].uplinkMbit = {};
  expectBad(n, "uplinks != spines");
  n = good;
  n.racks[0].hosts = {5};
  expectBad(n, "host out of range");
  n = good;
  n.racks[1].hosts = {0};
  expectBad(n, "host in two racks");
  n = good;
  n.racks[1].hosts = {};
  expectBad(n, "empty rack");
  n = good;
  n.probes = {{0, 0, 10}};
  expectBad(n, "probe to itself");
  n = good;
  n.probes = {{0, 1, -5}};
  expectBad(n, "negative probe");
  EXPECT_EQ(makePlan(good, PlanOptions{-1, 0, ""}, &p).code(), rinaInvalidArgument);
}

TEST(Plan, ProbeCapsTheHop) {
  // Three autonomous hosts at 1000; the probe 0 -> 1 measured 100. The best
  // ring avoids 0 -> 1 (0 -> 2 -> 1 -> 0), so the bottleneck stays 1000.
  Network net = makeNetwork({{false, {1000, 1000, 1000}}}, {}, {{}});
  net.probes = {{0, 1, 100}};
  Plan p;
  ASSERT_TRUE(makePlan(net, PlanOptions{}, &p).ok());
  EXPECT_EQ(p.bottleneckMbit, 1000);
  EXPECT_EQ(p.ring, (std::vector<int>{0, 2, 1}));
  net.probes.push_back({1, 0, 50});  // now both directions are slow; 0->1 at 100 wins
  ASSERT_TRUE(makePlan(net, PlanOptions{}, &p).ok());
  EXPECT_EQ(p.bottleneckMbit, 100);
}

Plan samplePlan() {
  Plan p;
  p.epoch = 300;
  p.ring = {0, 4, 5, 9};
  p.hopSpine = {1, -1, 0, 3};
  p.ports = {{0, {0, 1, 2, 0}}, {9, {9, 10, 9, 11}}};
  p.bottleneckMbit = 9400.5;
  p.exactOrder = true;
  p.reason = "link 3 moved 10000 -> 5000 Mbit/s";
  p.predicted = {{1e-8, 6}, {2e-8, 4}, {0.5e-8, 6}, 1e-4};
  return p;
}

TEST(Plan, SerializeRoundTrip) {
  Plan p = samplePlan();
  std::vector<uint8_t> bytes = p.serialize();
  Plan q;
  ASSERT_TRUE(Plan::deserialize(bytes.data(), bytes.size(), &q).ok());
  EXPECT_EQ(p, q);
  EXPECT_LT(bytes.size(), 140u);  // compact: varints
  Plan empty;
  bytes = empty.serialize();
  ASSERT_TRUE(Plan::deserialize(bytes.data(), bytes.size(), &q).ok());
  EXPECT_EQ(empty, q);
}

TEST(Plan, DeserializeRejectsMalformed) {
  std::vector<uint8_t> good = samplePlan().serialize();
  Plan q;
  // Every truncation.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(Plan::deserialize(good.data(), n, &q).code(), rinaInvalidUsage) << n;
  }
  auto mutated = [&](size_t at, uint8_t v) {
    std::vector<uint8_t> b = good;
    b[at] = v;
    return Plan::deserialize(b.data(), b.size(), &q);
  };
  EXPECT_EQ(mutated(0, 'X').code(), rinaInvalidUsage);  // magic
  EXPECT_EQ(mutated(4, 99).code(), rinaInvalidUsage);   // version
  // A plan of version 1 (no rack modes) is refused, not misread.
  Status v1 = mutated(4, 1);
  EXPECT_EQ(v1.code(), rinaInvalidUsage);
  EXPECT_NE(v1.message().find("version 1, this build reads only 2"), std::string::npos)
      << v1.message();
  EXPECT_EQ(mutated(5, 0x80).code(), rinaInvalidUsage);  // flags
  std::vector<uint8_t> b = good;
  b.push_back(0);
  EXPECT_EQ(Plan::deserialize(b.data(), b.size(), &q).code(), rinaInvalidUsage);  // trailing
  // A NaN bottleneck.
  b = good;
  const uint8_t nanBits[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
  size_t epochEnd = 6 + 2;  // epoch 300 takes two varint bytes
  std::copy(nanBits, nanBits + 8, b.begin() + epochEnd);
  EXPECT_EQ(Plan::deserialize(b.data(), b.size(), &q).code(), rinaInvalidUsage);
  // A ring count far beyond the bytes there are.
  b = good;
  b[epochEnd + 8] = 0x7f;
  EXPECT_EQ(Plan::deserialize(b.data(), b.size(), &q).code(), rinaInvalidUsage);
  // A rack mode this build does not know: the first ports entry is agent 0,
  // then its mode.
  {
    Plan one;
    one.ports = {{3, {3, 4}, RackMode::kHosts}};
    b = one.serialize();
    const std::vector<uint8_t> agentThenMode = {3, 1, 2, 3, 4};
    auto at = std::search(b.begin(), b.end(), agentThenMode.begin(), agentThenMode.end());
    ASSERT_NE(at, b.end());
    at[1] = 3;
    EXPECT_EQ(Plan::deserialize(b.data(), b.size(), &q).code(), rinaInvalidUsage);
    at[1] = 2;  // autonomous: known
    EXPECT_TRUE(Plan::deserialize(b.data(), b.size(), &q).ok());
  }
  // A varint that never ends.
  b.assign(good.begin(), good.begin() + 6);
  for (int i = 0; i < 12; ++i) b.push_back(0xff);
  EXPECT_EQ(Plan::deserialize(b.data(), b.size(), &q).code(), rinaInvalidUsage);
  EXPECT_EQ(Plan::deserialize(nullptr, 5, &q).code(), rinaInvalidUsage);
}

TEST(Plan, DescribeNamesOrderSpinesPortsAndReason) {
  std::string d = samplePlan().describe();
  EXPECT_NE(d.find("plan #300 (link 3 moved 10000 -> 5000 Mbit/s)"), std::string::npos) << d;
  EXPECT_NE(d.find("ring 0[ina] -s1-> 4 -> 5 -s0-> 9[ina] -s3-> 0"), std::string::npos) << d;
  EXPECT_NE(d.find("bottleneck 9400 Mbit/s (optimal order, heuristic spines)"), std::string::npos)
      << d;
  EXPECT_NE(d.find("ports of 9: 9,10,9,11"), std::string::npos) << d;
  Plan p = samplePlan();
  p.ports[0].mode = RackMode::kHosts;
  p.ports[1] = {9, {}, RackMode::kAutonomous};
  d = p.describe();
  EXPECT_NE(d.find("ring 0[hosts] -s1-> 4 -> 5 -s0-> 9 -s3-> 0"), std::string::npos) << d;
  EXPECT_NE(d.find("rack of 9: autonomous"), std::string::npos) << d;
}

TEST(Replan, ParseIntervalsAndThresholds) {
  ReplanPolicy p;
  ASSERT_TRUE(ReplanPolicy::parse("100", "0.2", &p).ok());
  EXPECT_EQ(p.everyCollectives(), 100u);
  EXPECT_EQ(p.everySeconds(), 0);
  EXPECT_DOUBLE_EQ(p.threshold(), 0.2);
  ASSERT_TRUE(ReplanPolicy::parse("2.5s", "0", &p).ok());
  EXPECT_EQ(p.everyCollectives(), 0u);
  EXPECT_DOUBLE_EQ(p.everySeconds(), 2.5);
  for (const char* bad : {"", "s", "-5", "1.5", "5m", "abc", "5ss", "inf", "nan"}) {
    EXPECT_EQ(ReplanPolicy::parse(bad, "0.2", &p).code(), rinaInvalidArgument) << bad;
  }
  for (const char* bad : {"", "-0.1", "x", "0.2x", "nan"}) {
    EXPECT_EQ(ReplanPolicy::parse("100", bad, &p).code(), rinaInvalidArgument) << bad;
  }
}

// The policy a communicator gets from its options (the knob table's parse).
TEST(Replan, FromOptionsUsesKnobs) {
  config::Options o;
  ReplanPolicy p = ReplanPolicy::fromOptions(o);
  EXPECT_EQ(p.everyCollectives(), 100u);
  EXPECT_DOUBLE_EQ(p.everySeconds(), 0);
  EXPECT_DOUBLE_EQ(p.threshold(), 0.2);
  ASSERT_TRUE(config::set(&o, "RINA_PLAN_INTERVAL", "5s").ok());
  ASSERT_TRUE(config::set(&o, "RINA_PLAN_THRESHOLD", "0.5").ok());
  p = ReplanPolicy::fromOptions(o);
  EXPECT_DOUBLE_EQ(p.everySeconds(), 5);
  EXPECT_EQ(p.everyCollectives(), 0u);
  EXPECT_DOUBLE_EQ(p.threshold(), 0.5);
  EXPECT_EQ(config::set(&o, "RINA_PLAN_INTERVAL", "often").code(), rinaInvalidArgument);
}

TEST(Replan, Decisions) {
  ReplanPolicy byCount, byTime, never;
  ASSERT_TRUE(ReplanPolicy::parse("100", "0.2", &byCount).ok());
  ASSERT_TRUE(ReplanPolicy::parse("5s", "0.2", &byTime).ok());
  ASSERT_TRUE(ReplanPolicy::parse("0", "0", &never).ok());
  std::vector<double> then{1000, 2000}, small{1100, 1700}, big{1000, 1500};
  EXPECT_FALSE(byCount.decide(99, 1e9, then, small).replan);
  EXPECT_TRUE(byCount.decide(100, 0, then, then).replan);
  EXPECT_FALSE(byTime.decide(1000000, 4.9, then, small).replan);
  EXPECT_TRUE(byTime.decide(0, 5.0, then, then).replan);
  // 1500 vs 2000 is a 25% move > 20%: the reason names link 1.
  auto d = byCount.decide(1, 0, then, big);
  EXPECT_TRUE(d.replan);
  EXPECT_NE(d.reason.find("link 1 moved 2000 -> 1500"), std::string::npos) << d.reason;
  const std::vector<std::string> names{"4->0", "3->5"};
  d = byCount.decide(1, 0, then, big, &names);
  EXPECT_NE(d.reason.find("link 3->5 moved 2000 -> 1500 Mbit/s (-25%, threshold 20%)"),
            std::string::npos)
      << d.reason;
  EXPECT_FALSE(never.decide(1000000, 1e9, then, big).replan);
  EXPECT_TRUE(never.decide(0, 0, then, {1000}).replan);  // the set of links changed
  EXPECT_TRUE(byCount.decide(0, 0, {0}, {10}).replan);   // unknown -> measured
  // Only drops: three times faster waits for the interval.
  EXPECT_FALSE(byCount.decide(1, 0, then, {3000, 6000}).replan);
  EXPECT_TRUE(byCount.decide(1, 0, then, {3000, 1000}).replan);
}

}  // namespace
}  // namespace rina::plan
