// From a plan to the rack algorithms' members (lib/algo/rack/plan_members.h): ring
// order, ports and hop spines; the peers a plan needs (symmetric, only ring
// neighbours); plans that do not fit the rack map; measured host rates.
#include "algo/rack/plan_members.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "algo/dispatch/dispatch.h"
#include "algo/rack/member.h"
#include "algo/rack/member_ring.h"
#include "algo/rack/rack.h"
#include "comm/link_stats.h"
#include "plan/network.h"
#include "rack_maps.h"
#include "topo/ring_members.h"

namespace rina::algo {
namespace {

using comm::addMeasuredHostRates;
using comm::LinkRate;
using testing::rackMapOf;

// Racks 2:ina {0,1}, {2}, 3:ina {3,4,5}: members agents 0, 2, 3; six
// chunks (lcm of 2, 1, 3).
plan::Plan samplePlan() {
  plan::Plan p;
  p.epoch = 4;
  p.ring = {0, 3, 2};
  p.hopSpine = {1, 0, 1};
  p.ports = {{0, {1, 1, 0, 1, 1, 0}}, {3, {5, 4, 3, 5, 4, 3}}};
  return p;
}

TEST(PlanMembers, RinaMembersFollowOrderPortsAndSpines) {
  const topo::RackMap map = rackMapOf("2:ina,1,3:ina");
  const plan::Plan p = samplePlan();
  ASSERT_TRUE(checkPlanFits(p, map).ok());
  const std::vector<Member> m = inaMembers(map, &p);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(m[1].ranks, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(m[2].ranks, (std::vector<int>{2}));
  EXPECT_EQ(m[0].spineToNext, 1);
  EXPECT_EQ(m[1].spineToNext, 0);
  EXPECT_EQ(m[0].portFor(2), 0);
  EXPECT_EQ(m[0].portFor(7), 1);  // wraps over the plan's six chunks
  EXPECT_EQ(m[1].portFor(0), 5);
  EXPECT_EQ(m[2].portFor(3), 2);
  EXPECT_TRUE(m[0].inaRack);
  EXPECT_FALSE(m[2].inaRack);
  // Without a plan: rank order and rotation.
  const std::vector<Member> plain = inaMembers(map, nullptr);
  EXPECT_EQ(plain[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(plain[2].portFor(1), 4);
  EXPECT_EQ(plain[2].spineToNext, -1);
}

TEST(PlanMembers, HierMembersTakeTheRackOrderOfThePlan) {
  const topo::RackMap map = rackMapOf("2,2,2:ina,2");
  plan::Plan p;
  // Hosts of racks r0 {0,1}, r1 {2,3}, r3 {6,7}; rack r2 {4,5} is one member.
  p.ring = {0, 6, 4, 1, 2, 7, 3};
  p.hopSpine = {2, 3, 4, 5, 6, 7, 8};
  p.ports = {{4, {5, 5}}};
  ASSERT_TRUE(checkPlanFits(p, map).ok());
  const std::vector<Member> m = hierMembers(map, &p);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(m[1].ranks, (std::vector<int>{6, 7}));
  EXPECT_EQ(m[2].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(m[3].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(m[0].spineToNext, 2);   // hop 0 -> 6
  EXPECT_EQ(m[1].spineToNext, 3);   // hop 6 -> 4
  EXPECT_EQ(m[2].spineToNext, -1);  // no hop of the plan goes from r2 to r1
  EXPECT_EQ(m[3].spineToNext, 8);   // hop 3 -> 0, closing the ring
  EXPECT_EQ(m[2].portFor(0), 5);    // the INA rack's plan ports
  EXPECT_EQ(m[0].portFor(1), 1);    // the others rotate
}

TEST(PlanMembers, PeersAreTheRingNeighboursAndSymmetric) {
  const topo::RackMap map = rackMapOf("2,2,2,2,2");
  plan::Plan p;
  p.ring = {0, 1, 4, 5, 8, 9, 2, 3, 6, 7};  // racks r0 r2 r4 r1 r3
  p.hopSpine.assign(10, 0);
  EXPECT_EQ(planPeerRanks(5, map, p), (std::set<int>{0, 1, 4, 8, 9}));
  // Random rings over INA and other racks: a needs b iff b needs a, and no
  // rank needs more than its two ring members and two plan racks give.
  std::mt19937 rng(5);
  for (const char* racks : {"2,2,2,2,2", "3:ina,1,2,2:ina,1", "1,1,1,1,1,1,1"}) {
    const topo::RackMap m = rackMapOf(racks);
    const int n = static_cast<int>(m.rackOf.size());
    std::vector<int> agents;
    for (const topo::RingMember& rm : topo::ringMembers(m)) agents.push_back(rm.ranks.front());
    for (int trial = 0; trial < 20; ++trial) {
      std::shuffle(agents.begin(), agents.end(), rng);
      plan::Plan q;
      q.ring = agents;
      q.hopSpine.assign(agents.size(), -1);
      for (int a = 0; a < n; ++a) {
        const std::set<int> pa = planPeerRanks(a, m, q);
        EXPECT_EQ(pa.count(a), 0u);
        EXPECT_LE(pa.size(), 4u * 3u) << racks;
        for (int b : pa)
          EXPECT_EQ(planPeerRanks(b, m, q).count(a), 1u) << racks << " " << a << " " << b;
      }
    }
  }
}

TEST(PlanMembers, PlansThatDoNotFitAreRefused) {
  const topo::RackMap map = rackMapOf("2:ina,1,3:ina");
  auto refused = [&](const plan::Plan& p, const char* what) {
    Status s = checkPlanFits(p, map);
    EXPECT_EQ(s.code(), rinaInternalError) << what;
    return s.message();
  };
  plan::Plan p = samplePlan();
  p.ring = {0, 3};
  p.hopSpine = {0, 0};
  EXPECT_NE(refused(p, "a member missing").find("ring members"), std::string::npos);
  p = samplePlan();
  p.ring = {0, 3, 3};
  refused(p, "a member twice");
  p = samplePlan();
  p.ring = {0, 3, 1};  // rank 1 is not an agent
  refused(p, "a non-agent");
  p = samplePlan();
  p.hopSpine = {0, 0};
  EXPECT_NE(refused(p, "spines").find("2 hop spines for 3 hops"), std::string::npos);
  p = samplePlan();
  p.ports[1].portRanks[2] = 2;
  EXPECT_NE(refused(p, "port outside").find("port rank 2 is not in rack 'r2'"), std::string::npos);
  p = samplePlan();
  p.ports[0].portRanks.pop_back();
  EXPECT_NE(refused(p, "port count").find("has 5 ports, expected 6"), std::string::npos);
  p = samplePlan();
  p.ports.pop_back();
  refused(p, "ports missing");
  p = samplePlan();
  p.hopSpine[1] = -2;
  refused(p, "bad spine");
  // The rack of 2 autonomous: its ranks are members of their own, and it
  // names no ports.
  p = samplePlan();
  p.ports[0] = {0, {}, plan::RackMode::kAutonomous};
  EXPECT_NE(refused(p, "an autonomous rack's agent alone").find("ring members"), std::string::npos);
  p.ring = {0, 3, 2, 1};
  p.hopSpine = {0, 0, 0, 0};
  // Members of 1, 1, 1 and 3 ranks: three sub-rings, not six.
  EXPECT_NE(refused(p, "six ports for three sub-rings").find("has 6 ports, expected 3"),
            std::string::npos);
  p.ports[1].portRanks = {5, 4, 3};
  EXPECT_TRUE(checkPlanFits(p, map).ok());
  p.ports[0].portRanks = {0, 1, 0};
  EXPECT_NE(refused(p, "ports of an autonomous rack").find("has 3 ports, expected 0"),
            std::string::npos);
}

TEST(PlanMembers, RackModesMakeTheMembers) {
  // Rack r0 (2, INA) autonomous, r2 (3, INA) summed on its hosts.
  const topo::RackMap map = rackMapOf("2:ina,1,3:ina");
  plan::Plan p;
  p.ring = {1, 3, 2, 0};
  p.hopSpine = {-1, 0, 0, 0};
  p.ports = {{0, {}, plan::RackMode::kAutonomous}, {3, {3, 4, 5}, plan::RackMode::kHosts}};
  ASSERT_TRUE(checkPlanFits(p, map).ok());
  const std::vector<Member> m = inaMembers(map, &p);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(m[1].ranks, (std::vector<int>{3, 4, 5}));
  EXPECT_FALSE(m[1].inaRack);  // its hosts sum, as after a lost switch
  EXPECT_EQ(m[1].portFor(1), 4);
  EXPECT_EQ(m[3].ranks, (std::vector<int>{0}));
  EXPECT_FALSE(m[3].inaRack);
  EXPECT_EQ(subRingCount(m), 3);
  // Rank 0's ring neighbours, rank 2 and rank 1, among its peers.
  const std::set<int> peers = planPeerRanks(0, map, p);
  EXPECT_EQ(peers.count(1) + peers.count(2), 2u);
  // hier keeps every rack one member; the autonomous rack rotates its ports.
  const std::vector<Member> h = hierMembers(map, &p);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(h[0].ports.empty());
  // A plan that names no mode for an INA rack is refused.
  p.ports.pop_back();
  EXPECT_EQ(checkPlanFits(p, map).code(), rinaInternalError);
}

LinkRate row(int rank, int peer, double mbit, const char* kind = "socket") {
  LinkRate l;
  l.rank = rank;
  l.peer = peer;
  l.bytesRecv = 1000;
  l.recvRate = mbit * 1e6 / 8;
  std::strncpy(l.kind, kind, sizeof(l.kind) - 1);
  return l;
}

TEST(PlanMembers, MeasuredHostRates) {
  plan::Network net;
  for (int h = 0; h < 4; ++h)
    net.hosts.push_back(plan::Network::Host{'h' + std::to_string(h), h < 2 ? 0 : 1, 0});
  net.hosts[1].linkMbit = 500;  // configured
  std::vector<LinkRate> table = {
      row(0, 2, 900),       row(2, 0, 300),  // host 0: in 900, out 300
      row(1, 3, 800),       row(3, 1, 700),  // host 1: min(800, 700) capped at 500
      row(2, 3, 50),                         // same rack: not a host link measure
      row(3, 0, 10, "shm"),                  // shared memory: left out
  };
  table.push_back(row(3, 2, 0));
  table.back().bytesRecv = 0;  // nothing arrived: no rate
  addMeasuredHostRates(table, &net);
  EXPECT_DOUBLE_EQ(net.hosts[0].linkMbit, 300);
  EXPECT_DOUBLE_EQ(net.hosts[1].linkMbit, 500);
  EXPECT_DOUBLE_EQ(net.hosts[2].linkMbit, 300);  // in 300 (from 0), out 900 (to 0)
  EXPECT_DOUBLE_EQ(net.hosts[3].linkMbit, 700);  // in 700 (from 1), out 800 (to 1)
}

TEST(PlanMembers, BasePeersKeepRingRdRackAndStar) {
  const topo::RackMap map = rackMapOf("2,2,2,2,2");
  EXPECT_EQ(basePeerRanks(5, map), (std::set<int>{3, 4, 6, 9}));
  EXPECT_EQ(basePeerRanks(4, map), (std::set<int>{0, 1, 3, 5, 8}));  // an agent: + rank 0
  const std::set<int> zero = basePeerRanks(0, map);
  for (int agent : {2, 4, 6, 8}) EXPECT_EQ(zero.count(agent), 1u);
}

// The member ring's slice (member_ring.h), by hand: chunk / (32 x steps),
// rounded to whole 2048-element datagrams, within [16 KiB, RINA_SLICE_BYTES].
TEST(MemberSlice, FollowsTheChunkWithinBounds) {
  // Lab (b), 64 MiB float32: K = 3 sub-rings, R = 4 members, chunk 1398102
  // elements, 6 steps: 1398102 / 192 = 7281 -> 4 x 2048 = 8192 (32 KiB).
  EXPECT_EQ(memberSliceElems(1398102, 6, 4, 128 * 1024), 8192u);
  // 256 MiB: 5592406 / 192 = 29127 -> 14 x 2048 = 28672.
  EXPECT_EQ(memberSliceElems(5592406, 6, 4, 128 * 1024), 28672u);
  // 1 GiB: 22369622 / 192 = 116508 -> 116736, capped by RINA_SLICE_BYTES
  // (128 KiB = 32768 floats).
  EXPECT_EQ(memberSliceElems(22369622, 6, 4, 128 * 1024), 32768u);
  // 16 MiB: 349526 / 192 = 1820 -> 2048, raised to 16 KiB = 4096 floats.
  EXPECT_EQ(memberSliceElems(349526, 6, 4, 128 * 1024), 4096u);
  // fp16: 16 KiB is 8192 elements.
  EXPECT_EQ(memberSliceElems(87382, 6, 2, 128 * 1024), 8192u);
  // A RINA_SLICE_BYTES under the floor wins (and need not be whole datagrams).
  EXPECT_EQ(memberSliceElems(349526, 6, 4, 4000), 1000u);
  // Two members (2 steps): 1398102 / 64 = 21845 -> 11 x 2048 = 22528.
  EXPECT_EQ(memberSliceElems(1398102, 2, 4, 128 * 1024), 22528u);
  // Degenerate inputs stay at least one element.
  EXPECT_EQ(memberSliceElems(0, 0, 8, 1), 1u);
}

}  // namespace
}  // namespace rina::algo
