// The ring Rina runs over a rack map, before any planning: one member per
// INA rack (the switch sums its workers) and one per worker of a rack
// without INA (an autonomous member), in rack order. Each INA rack has a
// port worker per chunk, rotating over its workers so no one host carries
// all inter-rack traffic, and an agent (its lowest rank) for the control
// role. rina-topo prints this; the planner (lib/plan) may reorder it.
#ifndef RINA_LIB_TOPO_RING_MEMBERS_H_
#define RINA_LIB_TOPO_RING_MEMBERS_H_

#include <string>
#include <vector>

#include "topo/rack_map.h"

namespace rina::topo {

struct RingMember {
  int rack = 0;            // index into RackMap::racks
  bool ina = false;        // an INA rack (abstracted member) or one worker
  std::vector<int> ranks;  // the rack's ranks (INA) or the one worker
};

std::vector<RingMember> ringMembers(const RackMap& map);

// The rank that is rack `rack`'s port for chunk `chunk`: its workers in
// rank order, taken round-robin by chunk.
int portOf(const RackMap& map, int rack, int chunk);

}  // namespace rina::topo

#endif  // RINA_LIB_TOPO_RING_MEMBERS_H_
