#include "algo/dispatch/auto_select.h"

#include <algorithm>
#include <cstdio>

#include "topo/ring_members.h"

namespace rina::algo {
namespace {

// A rack's host link rate; racks without one count as the fastest known
// (all equal when none is known).
double rateOf(const topo::Rack& rack, double fallback) {
  return rack.hostLinkMbit > 0 ? rack.hostLinkMbit : fallback;
}

}  // namespace

LinkModel linkModel(const topo::RackMap& map, bool portMarkers) {
  double fastest = 1;
  for (const topo::Rack& r : map.racks) fastest = std::max(fastest, r.hostLinkMbit);
  size_t n = 0;
  for (const topo::Rack& r : map.racks) n += r.ranks.size();
  LinkModel m;
  if (n < 2) return m;
  const double N = static_cast<double>(n);
  for (const topo::Rack& r : map.racks) {
    m.ring = std::max(m.ring, 2 * (N - 1) / N * fastest / rateOf(r, fastest));
  }
  const std::vector<topo::RingMember> members = topo::ringMembers(map);
  const double R = static_cast<double>(members.size());
  for (const topo::RingMember& mem : members) {
    const double rate = rateOf(map.racks[mem.rack], fastest);
    const double k = static_cast<double>(mem.ranks.size());
    double bytes = 2 * (R - 1) / R;  // an autonomous member
    if (mem.ina && mem.ranks.size() >= 2) {
      // An INA rack alone is summed in one switch call: S up, S down. In a
      // ring, the uplink is the busier side (lib/algo/rack/member_ring.cc): the
      // downlink carries S (1 + 2 (R-1)/(R k)), never more.
      const double reduce = portMarkers ? (k - 1) / k : 1;
      bytes = members.size() == 1 ? 1 : reduce + 1 / k + 2 * (R - 1) / (R * k);
    }
    m.inaMemberRing = std::max(m.inaMemberRing, bytes * fastest / rate);
  }
  return m;
}

Algorithm resolveAuto(const topo::RackMap& map, size_t bytes, size_t smallMsgBytes,
                      std::string* why, bool portMarkers) {
  char buf[160];
  if (bytes < smallMsgBytes) {
    if (why) {
      std::snprintf(buf, sizeof buf, "%zu bytes < RINA_SMALL_MSG_BYTES (%zu): rd", bytes,
                    smallMsgBytes);
      *why = buf;
    }
    return Algorithm::kRecursiveDoubling;
  }
  if (!map.anyIna()) {
    if (why) *why = "no INA rack: ring";
    return Algorithm::kRing;
  }
  const LinkModel m = linkModel(map, portMarkers);
  const Algorithm faster = m.inaMemberRing < m.ring ? Algorithm::kInaMemberRing : Algorithm::kRing;
  if (why) {
    std::snprintf(buf, sizeof buf, "link model, busiest host link: rina %.2f S, ring %.2f S: %s",
                  m.inaMemberRing, m.ring, algorithmName(faster));
    *why = buf;
  }
  return faster;
}

}  // namespace rina::algo
