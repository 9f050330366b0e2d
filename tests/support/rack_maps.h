// A rack map from the RINA_RACKS short form ("3:ina,3:ina,1,1"), every rank
// on host "h", for tests of what reads rack maps.
#ifndef RINA_TESTS_SUPPORT_RACK_MAPS_H_
#define RINA_TESTS_SUPPORT_RACK_MAPS_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topo/rack_map.h"

namespace rina::testing {

inline topo::RackMap rackMapOf(const char* racks) {
  topo::TopologySpec spec;
  EXPECT_TRUE(topo::parseRacksShortForm(racks, &spec).ok()) << racks;
  int n = 0;
  for (const topo::RackSpec& r : spec.racks) n += r.rankCount;
  topo::RackMap map;
  EXPECT_TRUE(topo::resolveRackMap(spec, std::vector<std::string>(n, "h"), &map).ok()) << racks;
  return map;
}

}  // namespace rina::testing

#endif  // RINA_TESTS_SUPPORT_RACK_MAPS_H_
