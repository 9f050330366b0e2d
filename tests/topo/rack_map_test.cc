// The rack map seam: RINA_RACKS short form, assigning ranks to racks, and
// the ring of members with its ports. Expected racks are written by hand.
#include "topo/rack_map.h"

#include <gtest/gtest.h>

#include "topo/ring_members.h"
#include "topo/topology_json.h"

namespace rina::topo {
namespace {

std::vector<std::vector<int>> ranksOf(const RackMap& map) {
  std::vector<std::vector<int>> out;
  for (const Rack& r : map.racks) out.push_back(r.ranks);
  return out;
}

TEST(RacksShortForm, ReadsCountsAndIna) {
  TopologySpec spec;
  Status s = parseRacksShortForm("3:ina,3:ina,1,1", &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(spec.racks.size(), 4u);
  EXPECT_EQ(spec.racks[0].name, "r0");
  EXPECT_TRUE(spec.racks[0].ina);
  EXPECT_EQ(spec.racks[0].rankCount, 3);
  EXPECT_TRUE(spec.racks[1].ina);
  EXPECT_FALSE(spec.racks[2].ina);
  EXPECT_EQ(spec.racks[3].rankCount, 1);
  EXPECT_EQ(spec.racks[3].name, "r3");
}

TEST(RacksShortForm, RejectsBadItems) {
  const char* bad[] = {"", "3:inb", "0", "3,,1", "-1", "x", "3:ina,", "2:", "1.5", "3 ,1"};
  for (const char* text : bad) {
    TopologySpec spec;
    Status s = parseRacksShortForm(text, &spec);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << "'" << text << "'";
    EXPECT_NE(s.message().find("RINA_RACKS: rack "), std::string::npos) << s.message();
  }
}

TEST(ResolveRackMap, CountsTakeRanksInOrder) {
  TopologySpec spec;
  ASSERT_TRUE(parseRacksShortForm("3:ina,3:ina,1,1", &spec).ok());
  RackMap map;
  Status s = resolveRackMap(spec, std::vector<std::string>(8, "same-host"), &map);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ranksOf(map), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6}, {7}}));
  EXPECT_EQ(map.rackOf, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 3}));
  EXPECT_EQ(map.agentOf(1), 3);
  EXPECT_TRUE(map.anyIna());
  EXPECT_EQ(map.describe(), "r0[ina:0,1,2] r1[ina:3,4,5] r2[6] r3[7]");
}

TEST(ResolveRackMap, HostsJoinByHostnameAndEmptyRacksDrop) {
  TopologySpec spec;
  Status s = parseTopologyJson(R"({"racks": [
      {"name": "a", "ina": true, "hosts": ["h0", "h1"], "switch": "10.77.1.254:9300"},
      {"name": "b", "hosts": ["h2"]},
      {"name": "idle", "hosts": ["h9"]},
      {"name": "c", "ina": true, "hosts": ["h3", "h4"]}]})",
                               &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  RackMap map;
  // Two ranks on h1; ranks interleave across racks.
  s = resolveRackMap(spec, {"h3", "h0", "h2", "h1", "h4", "h1"}, &map);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(map.racks.size(), 3u);
  EXPECT_EQ(map.racks[0].name, "a");
  EXPECT_EQ(map.racks[0].switchCtrl, "10.77.1.254:9300");
  EXPECT_EQ(map.racks[1].name, "b");
  EXPECT_EQ(map.racks[2].name, "c");
  EXPECT_EQ(ranksOf(map), (std::vector<std::vector<int>>{{1, 3, 5}, {2}, {0, 4}}));
  EXPECT_EQ(map.rackOf, (std::vector<int>{2, 0, 1, 0, 2, 0}));
  EXPECT_EQ(map.agentOf(2), 0);
  EXPECT_EQ(map.describe(), "a[ina:1,3,5] b[2] c[ina:0,4]");
}

TEST(ResolveRackMap, CountRacksComeFirstThenHosts) {
  TopologySpec spec;
  ASSERT_TRUE(parseTopologyJson(R"({"racks": [{"name": "h", "hosts": ["x"]},
                                               {"name": "n", "ranks": 2, "ina": true}]})",
                                &spec)
                  .ok());
  RackMap map;
  Status s = resolveRackMap(spec, {"?", "?", "x", "x"}, &map);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ranksOf(map), (std::vector<std::vector<int>>{{2, 3}, {0, 1}}));
}

TEST(ResolveRackMap, RejectsWhatDoesNotAddUp) {
  TopologySpec counts;
  ASSERT_TRUE(parseRacksShortForm("2,2", &counts).ok());
  RackMap map;
  Status s = resolveRackMap(counts, std::vector<std::string>(3, "h"), &map);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("more ranks than the 3 there are"), std::string::npos) << s.message();

  s = resolveRackMap(counts, std::vector<std::string>(5, "h"), &map);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("rank 4 (host 'h') is in no rack"), std::string::npos) << s.message();

  TopologySpec hosts;
  ASSERT_TRUE(parseTopologyJson(R"({"racks": [{"hosts": ["h0"]}]})", &hosts).ok());
  s = resolveRackMap(hosts, {"h0", "h7"}, &map);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("rank 1 (host 'h7') is in no rack"), std::string::npos) << s.message();

  // Specs built in code can break what the parser enforces.
  TopologySpec both = hosts;
  both.racks[0].rankCount = 1;
  s = resolveRackMap(both, {"h0"}, &map);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("rack 'r0' gives both hosts and a rank count"), std::string::npos)
      << s.message();

  TopologySpec twice = hosts;
  twice.racks.push_back(hosts.racks[0]);
  twice.racks[1].name = "r1";
  s = resolveRackMap(twice, {"h0"}, &map);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("host 'h0' is listed in two racks"), std::string::npos) << s.message();
}

TEST(RackPerHost, GroupsRanksByHostInOrderOfLowestRank) {
  RackMap map = rackPerHost({"b", "a", "b", "c", "a"});
  EXPECT_EQ(ranksOf(map), (std::vector<std::vector<int>>{{0, 2}, {1, 4}, {3}}));
  EXPECT_EQ(map.rackOf, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_FALSE(map.anyIna());
}

TEST(RingMembers, InaRacksAreOneMemberAndPortsRotate) {
  TopologySpec spec;
  ASSERT_TRUE(parseRacksShortForm("2:ina,1,3:ina,1", &spec).ok());
  RackMap map;
  ASSERT_TRUE(resolveRackMap(spec, std::vector<std::string>(7, "h"), &map).ok());
  std::vector<RingMember> ring = ringMembers(map);
  ASSERT_EQ(ring.size(), 4u);
  EXPECT_TRUE(ring[0].ina);
  EXPECT_EQ(ring[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_FALSE(ring[1].ina);
  EXPECT_EQ(ring[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(ring[2].rack, 2);
  EXPECT_EQ(ring[2].ranks, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(ring[3].ranks, (std::vector<int>{6}));
  // Four members, four chunks: rack r2's ports are 3, 4, 5, then 3 again.
  EXPECT_EQ(portOf(map, 2, 0), 3);
  EXPECT_EQ(portOf(map, 2, 1), 4);
  EXPECT_EQ(portOf(map, 2, 2), 5);
  EXPECT_EQ(portOf(map, 2, 3), 3);
  EXPECT_EQ(portOf(map, 0, 3), 1);
}

TEST(RingMembers, RacksWithoutInaSplitIntoWorkers) {
  TopologySpec spec;
  ASSERT_TRUE(parseRacksShortForm("3", &spec).ok());
  RackMap map;
  ASSERT_TRUE(resolveRackMap(spec, std::vector<std::string>(3, "h"), &map).ok());
  std::vector<RingMember> ring = ringMembers(map);
  ASSERT_EQ(ring.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(ring[i].ina);
    EXPECT_EQ(ring[i].rack, 0);
    EXPECT_EQ(ring[i].ranks, std::vector<int>{i});
  }
}

}  // namespace
}  // namespace rina::topo
