// RINA_ALGO=auto's link model against hand-computed bytes per host link.
#include "algo/dispatch/auto_select.h"

#include <gtest/gtest.h>

#include "rack_maps.h"
#include "topo/rack_map.h"

namespace rina::algo {
namespace {

using testing::rackMapOf;

TEST(AutoSelect, LinkModelMatchesHandCounts) {
  // One INA rack of 4: S up per worker against the ring's 2 * 3/4 S.
  LinkModel m = linkModel(rackMapOf("4:ina"));
  EXPECT_DOUBLE_EQ(m.inaMemberRing, 1.0);
  EXPECT_DOUBLE_EQ(m.ring, 1.5);
  // Two INA racks of 3 and two single hosts (R = 4): an INA worker sends
  // 2/3 (reduce-scatter with port markers) + 1/3 (multicast) + 2*3/(4*3)
  // = 1.5 S, without markers 1 + 1/3 + 1/2 = 11/6 S; an autonomous one
  // 2*3/4 = 1.5 S; the ring over 8 sends 2*7/8 = 1.75 S.
  m = linkModel(rackMapOf("3:ina,3:ina,1,1"));
  EXPECT_NEAR(m.inaMemberRing, 1.5, 1e-12);
  EXPECT_DOUBLE_EQ(m.ring, 1.75);
  EXPECT_NEAR(linkModel(rackMapOf("3:ina,3:ina,1,1"), false).inaMemberRing, 11.0 / 6.0, 1e-12);
  // Two INA racks of 16: 15/16 + 1/16 + 2*1/(2*16) = 1.0625 against
  // 2*31/32 (without markers 1.125).
  m = linkModel(rackMapOf("16:ina,16:ina"));
  EXPECT_DOUBLE_EQ(m.inaMemberRing, 1.0625);
  EXPECT_DOUBLE_EQ(m.ring, 62.0 / 32.0);
  EXPECT_DOUBLE_EQ(linkModel(rackMapOf("16:ina,16:ina"), false).inaMemberRing, 1.125);
  // An INA rack of one is an autonomous member.
  m = linkModel(rackMapOf("1:ina,1"));
  EXPECT_DOUBLE_EQ(m.inaMemberRing, 1.0);
  EXPECT_DOUBLE_EQ(m.ring, 1.0);
}

TEST(AutoSelect, SlowerRackLinksWeighIn) {
  topo::RackMap map = rackMapOf("4:ina,2");
  map.racks[0].hostLinkMbit = 1000;
  map.racks[1].hostLinkMbit = 250;  // 4x slower: its hosts' bytes count 4x
  const LinkModel m = linkModel(map);
  // Ring over 6: 2*5/6 S on every host, the slow ones count 4x: 40/6.
  EXPECT_NEAR(m.ring, 40.0 / 6.0, 1e-12);
  // rina, R = 3 (the INA rack and two autonomous hosts): autonomous
  // 2*2/3 S x 4 = 16/3; INA workers 3/4 + 1/4 + 4/12.
  EXPECT_NEAR(m.inaMemberRing, 16.0 / 3.0, 1e-12);
}

TEST(AutoSelect, ChoosesByModelAndSize) {
  std::string why;
  EXPECT_EQ(resolveAuto(rackMapOf("4:ina"), 16 << 20, 128 << 10, &why), Algorithm::kInaMemberRing);
  EXPECT_NE(why.find("rina 1.00 S, ring 1.50 S"), std::string::npos) << why;
  EXPECT_EQ(resolveAuto(rackMapOf("3:ina,3:ina,1,1"), 16 << 20, 128 << 10, &why),
            Algorithm::kInaMemberRing);
  EXPECT_NE(why.find("rina 1.50 S, ring 1.75 S"), std::string::npos) << why;
  EXPECT_EQ(resolveAuto(rackMapOf("3:ina,3:ina,1,1"), 16 << 20, 128 << 10, &why, false),
            Algorithm::kRing);
  EXPECT_EQ(resolveAuto(rackMapOf("16:ina,16:ina"), 16 << 20, 128 << 10, &why),
            Algorithm::kInaMemberRing);
  EXPECT_EQ(resolveAuto(rackMapOf("4,4"), 16 << 20, 128 << 10, &why), Algorithm::kRing);
  EXPECT_EQ(why, "no INA rack: ring");
  EXPECT_EQ(resolveAuto(rackMapOf("4:ina"), 4096, 128 << 10, &why), Algorithm::kRecursiveDoubling);
  EXPECT_NE(why.find("4096 bytes"), std::string::npos) << why;
  EXPECT_EQ(resolveAuto(rackMapOf("4:ina"), 4096, 0, &why), Algorithm::kInaMemberRing);
  // Without a reason asked for (every call), the same choices.
  EXPECT_EQ(resolveAuto(rackMapOf("4:ina"), 16 << 20, 128 << 10, nullptr),
            Algorithm::kInaMemberRing);
  EXPECT_EQ(resolveAuto(rackMapOf("3:ina,3:ina,1,1"), 16 << 20, 128 << 10, nullptr, false),
            Algorithm::kRing);
  EXPECT_EQ(resolveAuto(rackMapOf("4,4"), 16 << 20, 128 << 10, nullptr), Algorithm::kRing);
  EXPECT_EQ(resolveAuto(rackMapOf("4:ina"), 4096, 128 << 10, nullptr),
            Algorithm::kRecursiveDoubling);
}

}  // namespace
}  // namespace rina::algo
