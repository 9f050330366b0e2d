// Per-spine measured rates in the planner (comm/link_stats.h,
// addMeasuredRates; plan/network.h, hopRatesBySpine; plan/paths.h, the
// incumbent): each expectation below is worked out by hand from the rule in
// the header, so a change of rule shows up as a number that no longer fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "comm/link_stats.h"
#include "plan/paths.h"
#include "plan/plan.h"
#include "plan/replan.h"

namespace rina::algo {
namespace {

using comm::addMeasuredRates;
using comm::addMeasuredUplinkRates;
using comm::holdMeasuredRates;
using comm::LinkRate;

// Racks of two hosts (ranks 2r, 2r+1), every host link `host` Mbit/s,
// every rack's uplink to each of `spines` spines `uplink` Mbit/s.
plan::Network racksOfTwo(int racks, int spines, double host, double uplink) {
  plan::Network net;
  net.spineMbit.assign(spines, 0);
  for (int r = 0; r < racks; ++r) {
    plan::Network::Rack rack;
    rack.name = std::string(1, static_cast<char>('a' + r));
    rack.uplinkMbit.assign(spines, uplink);
    for (int k = 0; k < 2; ++k) {
      rack.hosts.push_back(static_cast<int>(net.hosts.size()));
      net.hosts.push_back({rack.name + std::to_string(k), r, host});
    }
    net.racks.push_back(rack);
  }
  return net;
}

// The hop peer -> rank over `spine`, measured at `mbit`.
LinkRate hop(int peer, int rank, int spine, double mbit) {
  LinkRate l;
  l.rank = rank;
  l.peer = peer;
  l.spine = spine;
  l.bytesRecv = 1 << 20;
  l.recvRate = mbit * 1e6 / 8;
  std::strncpy(l.kind, "socket", sizeof(l.kind) - 1);
  return l;
}

const plan::Network::Probe* probeOf(const plan::Network& net, int from, int to, int spine) {
  for (const plan::Network::Probe& p : net.probes) {
    if (p.from == from && p.to == to && p.spine == spine) return &p;
  }
  return nullptr;
}

// The lab's mid-run case: racks a (0, 1) and b (2, 3), host links 400, both
// spines' uplinks 200; a's uplink to spine 0 dropped to 50, so the four
// flows between the racks (two each way, all on spine 0) run at 25.
// Leaving a on spine 0: U = 25 + 25 = 50 < 0.8 x min(400 + 400, 400 + 400)
// = 640, so spine-limited, and likewise entering a, leaving and entering b.
// Uplinks to spine 0 of both racks become max(50, 50) = 50 (< 0.8 x 200;
// both ends count: two racks cannot tell which end is slow); spine 1 keeps
// 200; spine-limited flows make no probes, and the hosts keep 400.
TEST(MeasuredRates, SlowSpineLowersItsUplinksOnly) {
  plan::Network net = racksOfTwo(2, 2, 400, 200);
  const std::vector<LinkRate> table = {hop(0, 2, 0, 25), hop(1, 3, 0, 25), hop(2, 0, 0, 25),
                                       hop(3, 1, 0, 25)};
  addMeasuredRates(table, &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{50, 200}));
  EXPECT_EQ(net.racks[1].uplinkMbit, (std::vector<double>{50, 200}));
  for (const plan::Network::Host& h : net.hosts) EXPECT_EQ(h.linkMbit, 400) << h.name;
  EXPECT_TRUE(net.probes.empty());
  // The plan: hier's members are the four hosts; the two cross-rack hops
  // get 200 over spine 1 (host 400, uplinks 200) and 50 over spine 0: both
  // hops on spine 1.
  plan::Plan p;
  ASSERT_TRUE(plan::makePlan(net, plan::PlanOptions{}, &p).ok());
  for (size_t k = 0; k < p.ring.size(); ++k) {
    const int a = p.ring[k], b = p.ring[(k + 1) % p.ring.size()];
    EXPECT_EQ(p.hopSpine[k], a / 2 == b / 2 ? -1 : 1) << a << " -> " << b;
  }
  EXPECT_DOUBLE_EQ(p.bottleneckMbit, 200);
}

// Before the change, the same four flows at 100 (two share each 200
// uplink; measured 90-110 in the lab): U = 200, spine-limited (the uplink
// is the limit, as configured), but not below 0.8 x 200 = 160, so the
// uplinks keep 200 and spine 0 does not look slower than the unmeasured
// spine 1; at 150 (< 160) it would.
TEST(MeasuredRates, AMeasureNearTheConfiguredRateIsThatRate) {
  plan::Network net = racksOfTwo(2, 2, 400, 200);
  addMeasuredRates({hop(0, 2, 0, 100), hop(1, 3, 0, 100), hop(2, 0, 0, 100), hop(3, 1, 0, 100)},
                   &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{200, 200}));
  EXPECT_TRUE(net.probes.empty());
  addMeasuredRates({hop(0, 2, 0, 75), hop(1, 3, 0, 75)}, &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{150, 200}));
}

// Flows that reach their hosts' rate are host-limited: one flow each way at
// 390 of 400 is >= 0.8 x 400 = 320 (the uplinks, 2000, were not the limit).
// Nothing is said of the spine: the uplinks stay, the probes cap the hop on
// every spine (-1), and the hosts drop to 390.
TEST(MeasuredRates, HostLimitedFlowsSayNothingOfTheSpine) {
  plan::Network net = racksOfTwo(2, 2, 400, 2000);
  addMeasuredRates({hop(0, 2, 0, 390), hop(2, 0, 0, 390)}, &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{2000, 2000}));
  EXPECT_EQ(net.racks[1].uplinkMbit, (std::vector<double>{2000, 2000}));
  ASSERT_EQ(net.probes.size(), 2u);
  EXPECT_NE(probeOf(net, 0, 2, -1), nullptr);
  EXPECT_NE(probeOf(net, 2, 0, -1), nullptr);
  EXPECT_EQ(net.hosts[0].linkMbit, 390);  // in 390 (from 2), out 390 (to 2)
  EXPECT_EQ(net.hosts[2].linkMbit, 390);
  EXPECT_EQ(net.hosts[1].linkMbit, 400);  // nothing measured
}

// Three racks in a ring a -> b -> c -> a, all on spine 0, b's uplink slow:
// a -> b and b -> c at 30, c -> a at 190 (its uplinks, 200, are the limit).
// Every side is spine-limited (30 and 190 are both below 0.8 x 400), and
// each uplink's carry is the larger of its directions: a max(30 out, 190
// in) = 190, b max(30, 30) = 30, c max(190 out, 30 in) = 190; only b's is
// below 0.8 x 200 = 160. So the fast direction clears a and c, and the slow
// spine is pinned on b alone.
TEST(MeasuredRates, ThreeRacksPinTheSlowEnd) {
  plan::Network net = racksOfTwo(3, 2, 400, 200);
  addMeasuredRates({hop(0, 2, 0, 30), hop(2, 4, 0, 30), hop(4, 0, 0, 190)}, &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{200, 200}));
  EXPECT_EQ(net.racks[1].uplinkMbit, (std::vector<double>{30, 200}));
  EXPECT_EQ(net.racks[2].uplinkMbit, (std::vector<double>{200, 200}));
}

// Rows the rule leaves out: no spine (one path), inside a rack, shared
// memory, nothing received, a spine the network does not have. (Each at
// 10 of 400 would lower an uplink if it counted.)
TEST(MeasuredRates, RowsWithoutASpineAreNotSpineEvidence) {
  plan::Network net = racksOfTwo(2, 2, 400, 200);
  std::vector<LinkRate> table = {hop(0, 2, -1, 10), hop(0, 1, 0, 10), hop(1, 3, 5, 10),
                                 hop(3, 1, 1, 10)};
  std::strncpy(table[3].kind, "shm", sizeof(table[3].kind));
  LinkRate idle = hop(2, 0, 1, 10);
  idle.bytesRecv = 0;
  table.push_back(idle);
  addMeasuredUplinkRates(table, &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{200, 200}));
  EXPECT_EQ(net.racks[1].uplinkMbit, (std::vector<double>{200, 200}));
}

// A network without configured rates: unknown hosts are unlimited, so any
// measured spine flow is spine-limited and an unknown uplink becomes its
// sum (here 40 + 60 = 100 leaving a on spine 1).
TEST(MeasuredRates, UnknownRatesBecomeTheMeasure) {
  plan::Network net = racksOfTwo(2, 2, 0, 0);
  addMeasuredRates({hop(0, 2, 1, 40), hop(1, 3, 1, 60)}, &net);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{0, 100}));
  EXPECT_EQ(net.racks[1].uplinkMbit, (std::vector<double>{0, 100}));
  EXPECT_EQ(net.hosts[0].linkMbit, 0);  // spine-limited rows say nothing of hosts
}

// holdMeasuredRates: host rates and probes at or above an eighth of what
// is configured, uplinks at or above half, give way to the
// configured rate; lower ones stand. Without a configured host rate, a
// host's reference is the fastest host of its rack; a probe between
// unconfigured hosts stands.
TEST(MeasuredRates, HoldKeepsConfiguredRatesAboveAFraction) {
  const plan::Network configured = racksOfTwo(2, 1, 1000, 800);
  plan::Network net = configured;
  net.hosts[0].linkMbit = 250;      // 0.25 (a flow's share of a shared link): held at 1000
  net.hosts[1].linkMbit = 100;      // 0.1: a real drop
  net.racks[0].uplinkMbit = {500};  // 0.625 of 800: held
  net.racks[1].uplinkMbit = {300};  // 0.375: stands
  net.probes = {{0, 2, 200, -1}, {1, 3, 100, 0}};  // 0.2 and 0.1 of min(1000, 1000)
  holdMeasuredRates(configured, &net);
  EXPECT_EQ(net.hosts[0].linkMbit, 1000);
  EXPECT_EQ(net.hosts[1].linkMbit, 100);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{800}));
  EXPECT_EQ(net.racks[1].uplinkMbit, (std::vector<double>{300}));
  ASSERT_EQ(net.probes.size(), 1u);
  EXPECT_EQ(net.probes[0].from, 1);
  EXPECT_EQ(net.probes[0].mbit, 100);

  const plan::Network unknown = racksOfTwo(2, 1, 0, 0);
  net = unknown;
  net.hosts[0].linkMbit = 900;
  net.hosts[1].linkMbit = 300;  // a third of its rack's fastest: held at 900
  net.hosts[2].linkMbit = 900;
  net.hosts[3].linkMbit = 100;     // a ninth (under an eighth): stands
  net.racks[0].uplinkMbit = {50};  // nothing configured: stands
  net.probes = {{0, 2, 500, -1}};
  holdMeasuredRates(unknown, &net);
  EXPECT_EQ(net.hosts[1].linkMbit, 900);
  EXPECT_EQ(net.hosts[3].linkMbit, 100);
  EXPECT_EQ(net.racks[0].uplinkMbit, (std::vector<double>{50}));
  EXPECT_EQ(net.probes.size(), 1u);
}

// hopRatesBySpine: a probe of spine 1 caps the hop over spine 1 only; a
// probe of any path caps it on both; hopRates is the better spine.
TEST(PlanSpines, SpineProbesCapTheirSpineOnly) {
  plan::Network net = racksOfTwo(2, 2, 1000, 500);
  net.racks[1].ina = true;  // members: host 0, host 1, rack b
  net.probes = {{0, 2, 100, 1}, {1, 3, 300, -1}};
  const std::vector<plan::Member> m = plan::ringMembers(net);
  ASSERT_EQ(m.size(), 3u);
  const std::vector<plan::RateMatrix> s = plan::hopRatesBySpine(net, m, 2);
  ASSERT_EQ(s.size(), 2u);
  // host 0 -> rack b: min(1000, port rate of b for 2 chunks = 2000, uplinks 500).
  EXPECT_DOUBLE_EQ(s[0][0][2], 500);
  EXPECT_DOUBLE_EQ(s[1][0][2], 100);
  EXPECT_DOUBLE_EQ(s[0][1][2], 300);
  EXPECT_DOUBLE_EQ(s[1][1][2], 300);
  EXPECT_DOUBLE_EQ(s[0][0][1], 1000);  // same rack: no spine, no cap
  const plan::RateMatrix best = plan::hopRates(net, m, 2);
  EXPECT_DOUBLE_EQ(best[0][2], 500);
  EXPECT_DOUBLE_EQ(best[1][2], 300);
}

// assignSpines with per-spine own rates: hop 0 is 100 on spine 0 and 400
// on spine 1, hop 1 the other way round (uplinks 1000: no sharing limit
// below 400 with one hop per link). Best: hop 0 on 1, hop 1 on 0, 400.
TEST(PlanSpines, PerSpineOwnRates) {
  plan::Network net = racksOfTwo(2, 2, 0, 1000);
  std::vector<plan::SpineHop> hops = {{0, 1, 400, {100, 400}}, {1, 0, 400, {400, 100}}};
  plan::SpineAssignment a = plan::assignSpines(net, hops);
  EXPECT_EQ(a.spine, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(a.bottleneck, 400);
  EXPECT_DOUBLE_EQ(plan::spineAssignmentRate(net, hops, {0, 1}), 100);
}

// The incumbent: with both spines equal, the search alone picks spine 0 for
// both hops (the first of equals); the plan in use (spine 1) stays, and an
// incumbent strictly worse (spine 0 when 0 is slower) does not.
TEST(PlanSpines, IncumbentStaysOnTies) {
  plan::Network net = racksOfTwo(2, 2, 0, 1000);
  std::vector<plan::SpineHop> hops = {{0, 1, 0}, {1, 0, 0}};
  EXPECT_EQ(plan::assignSpines(net, hops).spine, (std::vector<int>{0, 0}));
  EXPECT_EQ(plan::assignSpines(net, hops, {1, 1}).spine, (std::vector<int>{1, 1}));
  net.racks[0].uplinkMbit = {500, 1000};
  EXPECT_EQ(plan::assignSpines(net, hops, {0, 0}).spine, (std::vector<int>{1, 1}));
  // Through makePlan: the previous plan's spines for the same hops stay.
  plan::Network same = racksOfTwo(2, 2, 1000, 1000);
  plan::Plan first, second;
  ASSERT_TRUE(plan::makePlan(same, plan::PlanOptions{}, &first).ok());
  for (int& s : first.hopSpine) s = s >= 0 ? 1 : s;
  plan::PlanOptions again;
  again.previous = &first;
  ASSERT_TRUE(plan::makePlan(same, again, &second).ok());
  EXPECT_EQ(second.ring, first.ring);
  EXPECT_EQ(second.hopSpine, first.hopSpine);
  // Another ring order as good as the best (host 0 -> 1 -> 3 -> 2: two
  // cross-rack hops at 1000, like the planner's own): it stays too, and so
  // do its spines (by pair of racks).
  plan::Plan other = first;
  other.ring = {0, 1, 3, 2};
  other.hopSpine = {-1, 1, -1, 1};
  plan::PlanOptions keep;
  keep.previous = &other;
  ASSERT_TRUE(plan::makePlan(same, keep, &second).ok());
  EXPECT_EQ(second.ring, other.ring);
  EXPECT_EQ(second.hopSpine, other.hopSpine);
  // A ring with a worse bottleneck does not stay: with one spine, 0 -> 2 ->
  // 1 -> 3 crosses four times, so two hops share each uplink (1000 / 2),
  // where the best ring crosses twice (1000).
  plan::Network one = racksOfTwo(2, 1, 1000, 1000);
  other.ring = {0, 2, 1, 3};
  other.hopSpine = {0, 0, 0, 0};
  ASSERT_TRUE(plan::makePlan(one, keep, &second).ok());
  EXPECT_NE(second.ring, other.ring);
  EXPECT_DOUBLE_EQ(second.bottleneckMbit, 1000);
}

// keepMargin: the ring in use stays while the best order is no more than
// that fraction better, and so does an INA rack's port split. Ring: racks
// of two, one spine, hosts 1000, uplinks 1900; 0 -> 2 -> 1 -> 3 crosses
// four times (two hops per uplink: 950) where the best crosses twice
// (1000), 5% better. Ports: rack a is INA, hosts 1000 and 1100, 12 chunks;
// the best split is 6/6 (rate 12 / max(6/1000, 6/1100) = 2000), 5/7 gives
// 12 / (7/1100) = 1886, 6% less.
TEST(PlanSpines, KeepMarginHoldsRingAndPortsAgainstSmallMoves) {
  plan::Network one = racksOfTwo(2, 1, 1000, 1900);
  plan::Plan prev, next;
  ASSERT_TRUE(plan::makePlan(one, plan::PlanOptions{}, &prev).ok());
  prev.ring = {0, 2, 1, 3};
  prev.hopSpine = {0, 0, 0, 0};
  plan::PlanOptions o;
  o.previous = &prev;
  ASSERT_TRUE(plan::makePlan(one, o, &next).ok());
  EXPECT_NE(next.ring, prev.ring);  // no margin: the better ring
  EXPECT_DOUBLE_EQ(next.bottleneckMbit, 1000);
  o.keepMargin = 0.1;
  ASSERT_TRUE(plan::makePlan(one, o, &next).ok());
  EXPECT_EQ(next.ring, prev.ring);
  EXPECT_DOUBLE_EQ(next.bottleneckMbit, 950);
  one.racks[0].uplinkMbit = {1000};  // now 500 against 1000: it goes
  one.racks[1].uplinkMbit = {1000};
  ASSERT_TRUE(plan::makePlan(one, o, &next).ok());
  EXPECT_NE(next.ring, prev.ring);
  EXPECT_DOUBLE_EQ(next.bottleneckMbit, 1000);

  // An INA rack of hosts at 1000 and 1100 beside two hosts, on its switch
  // (R = 3, h = 4/3). Each host ends at (1 + h f)/B: the best split of 12
  // chunks is 5 and 7 (f = 0.44 and 0.56 continuous); 6 and 6 ends the 1000
  // host at 5/3 ms per Mbit against 5/7's 1.616, 3.1% slower.
  plan::Network ina = racksOfTwo(2, 1, 1000, 100000);
  ina.racks[0].ina = true;
  ina.hosts[1].linkMbit = 1100;
  plan::PlanOptions p;
  p.chunks = 12;
  p.forceIna = true;
  ASSERT_TRUE(plan::makePlan(ina, p, &prev).ok());
  ASSERT_FALSE(prev.ports.empty());
  auto count = [](const plan::Plan& pl, int rank) {
    return std::count(pl.ports[0].portRanks.begin(), pl.ports[0].portRanks.end(), rank);
  };
  EXPECT_EQ(count(prev, 0), 5);
  EXPECT_EQ(count(prev, 1), 7);
  prev.ports[0].portRanks = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};  // 6/6
  p.previous = &prev;
  ASSERT_TRUE(plan::makePlan(ina, p, &next).ok());
  EXPECT_EQ(count(next, 0), 5);  // no margin: the better split
  p.keepMargin = 0.1;
  ASSERT_TRUE(plan::makePlan(ina, p, &next).ok());
  EXPECT_EQ(next.ports[0].portRanks, prev.ports[0].portRanks);
  p.keepMargin = 0.02;
  ASSERT_TRUE(plan::makePlan(ina, p, &next).ok());
  EXPECT_EQ(count(next, 0), 5);
}

// Check points: the next count after `since` at which a check is due.
TEST(PlanSpines, NextCheck) {
  plan::ReplanPolicy p;
  // The default: about every half second.
  ASSERT_TRUE(plan::ReplanPolicy::parse("100", "0.2", &p).ok());
  EXPECT_EQ(p.checkEvery(), 0u);
  EXPECT_DOUBLE_EQ(p.checkEverySeconds(), 0.5);
  EXPECT_EQ(p.nextCheck(0, 0.2), 3u);
  EXPECT_EQ(plan::ReplanPolicy().checkEverySeconds(), 0.5);
  ASSERT_TRUE(plan::ReplanPolicy::parse("100", "0.2", "16", &p).ok());
  EXPECT_EQ(p.checkEvery(), 16u);
  EXPECT_EQ(p.nextCheck(0), 16u);
  EXPECT_EQ(p.nextCheck(90), 96u);
  EXPECT_EQ(p.nextCheck(96), 100u);  // the interval's count comes first
  ASSERT_TRUE(plan::ReplanPolicy::parse("100", "0.2", "1", &p).ok());
  EXPECT_EQ(p.nextCheck(0), 1u);
  EXPECT_EQ(p.nextCheck(41), 42u);
  ASSERT_TRUE(plan::ReplanPolicy::parse("10", "0", "3", &p).ok());
  EXPECT_EQ(p.nextCheck(0), 10u);  // no threshold, no seconds: only the count
  ASSERT_TRUE(plan::ReplanPolicy::parse("2s", "0", "5", &p).ok());
  EXPECT_EQ(p.nextCheck(7), 10u);
  ASSERT_TRUE(plan::ReplanPolicy::parse("0", "0", "5", &p).ok());
  EXPECT_EQ(p.nextCheck(7), 0u);  // never
  // In seconds: 0.5 s of collectives of 0.2 s each: 3 (ceil 2.5); nothing
  // known yet: the next one; at 1 us each: capped at kMaxCheckEvery.
  ASSERT_TRUE(plan::ReplanPolicy::parse("0", "0.2", "0.5s", &p).ok());
  EXPECT_EQ(p.checkEvery(), 0u);
  EXPECT_DOUBLE_EQ(p.checkEverySeconds(), 0.5);
  EXPECT_EQ(p.nextCheck(10, 0.2), 13u);
  EXPECT_EQ(p.nextCheck(10, 0), 11u);
  EXPECT_EQ(p.nextCheck(10, 2.0), 11u);
  EXPECT_EQ(p.nextCheck(0, 1e-9), plan::ReplanPolicy::kMaxCheckEvery);
  ASSERT_TRUE(plan::ReplanPolicy::parse("100", "0.2", "0.5s", &p).ok());
  EXPECT_EQ(p.nextCheck(98, 0.01), 100u);  // the interval's count first
  for (const char* bad : {"0", "-1", "1.5", "x", "", "0s", "s", "-2s", "2x"}) {
    Status st = plan::ReplanPolicy::parse("100", "0.2", bad, &p);
    EXPECT_EQ(st.code(), rinaInvalidArgument) << bad;
    EXPECT_NE(st.message().find("RINA_PLAN_CHECK_EVERY="), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace rina::algo
