// What RINA_ALGO=auto runs for an allreduce: recursive doubling below
// RINA_SMALL_MSG_BYTES, else whichever of rina and the flat ring moves the
// buffer over its busiest host link in less time, by a link model of both
// (bytes per host link over the rack's host link rate):
//   ring: every host sends and receives 2 (N-1)/N S;
//   rina: a worker of an INA rack of n sends its contributions to the
//     reduce-scatter, (n-1)/n S with port markers (RINA_INA_PORT_MARKERS=1,
//     it adds its own share on receive) else S, its port share of the
//     member ring, 2 (R-1)/(R n) S, and of the all-gather multicast, S/n;
//     an autonomous member sends 2 (R-1)/R S (R members).
// So one INA rack of n (R = 1) costs S against the ring's 2 (n-1)/n S, and
// rina wins whenever racks are large against the number of members. The
// model reads only the rack map, so every rank decides alike; a rack whose
// switch has been lost still counts as INA (its fallback is rare and local).
#ifndef RINA_LIB_ALGO_DISPATCH_AUTO_SELECT_H_
#define RINA_LIB_ALGO_DISPATCH_AUTO_SELECT_H_

#include <cstddef>
#include <string>

#include "algo/engine/algorithm.h"
#include "topo/rack_map.h"

namespace rina::algo {

// Time on the busiest host link per byte of the buffer, as the bytes a
// host at the fastest known rate would move (equal rates: bytes per host,
// 1.75 for a flat ring of 8).
struct LinkModel {
  double ring = 0;
  double inaMemberRing = 0;
};
LinkModel linkModel(const topo::RackMap& map, bool portMarkers = true);

// The algorithm auto runs for `bytes`; *why, unless null, says so in one
// line (put in words only when asked: auto resolves at every call).
Algorithm resolveAuto(const topo::RackMap& map, size_t bytes, size_t smallMsgBytes,
                      std::string* why, bool portMarkers = true);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_DISPATCH_AUTO_SELECT_H_
