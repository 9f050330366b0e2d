#include "sim/planner.h"

#include <numeric>

namespace rina::sim {

std::vector<plan::RackMode> Planner::rackModes(const SimTopology&,
                                               const std::vector<JobRack>& racks, double) {
  std::vector<plan::RackMode> modes;
  for (const JobRack& r : racks) {
    modes.push_back(r.switchUsable && r.hosts.size() >= 2 ? plan::RackMode::kSwitch
                                                          : plan::RackMode::kAutonomous);
  }
  return modes;
}

std::vector<int> DefaultPlanner::ringOrder(const SimTopology&,
                                           const std::vector<RingMember>& members) {
  std::vector<int> order(members.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<double> DefaultPlanner::portShares(const SimTopology&, const RingMember& member) {
  return std::vector<double>(member.hosts.size(), 1.0 / member.hosts.size());
}

int DefaultPlanner::spineFor(const SimTopology& topo, int, int, int connection) {
  return connection % topo.spines;
}

int DefaultPlanner::aggregationRack(const SimTopology& topo, int host) {
  const int rack = topo.hosts[host].rack;
  return topo.racks[rack].ina ? rack : -1;
}

}  // namespace rina::sim
