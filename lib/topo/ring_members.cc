#include "topo/ring_members.h"

namespace rina::topo {

std::vector<RingMember> ringMembers(const RackMap& map) {
  std::vector<RingMember> members;
  for (size_t i = 0; i < map.racks.size(); ++i) {
    const Rack& rack = map.racks[i];
    if (rack.ina) {
      members.push_back(RingMember{static_cast<int>(i), true, rack.ranks});
      continue;
    }
    for (int r : rack.ranks) members.push_back(RingMember{static_cast<int>(i), false, {r}});
  }
  return members;
}

int portOf(const RackMap& map, int rack, int chunk) {
  const std::vector<int>& ranks = map.racks[rack].ranks;
  return ranks[static_cast<size_t>(chunk) % ranks.size()];
}

}  // namespace rina::topo
