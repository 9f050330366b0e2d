// The seam where lib/plan plugs in: given the topology (with its link
// rates), choose the ring order, the port workers of each INA rack, the
// spine of each inter-rack hop and, for ps-ina, each worker's aggregation
// switch. The simulator asks only these four questions; DefaultPlanner
// answers them without looking at rates.
#ifndef RINA_TOOLS_SIM_PLANNER_H_
#define RINA_TOOLS_SIM_PLANNER_H_

#include <vector>

#include "plan/link_model.h"
#include "sim/topology.h"

namespace rina::sim {

// A ring member: an INA rack (the job's hosts there, summed by the ToR), a
// rack summed on its hosts (hostSum: reduce to the ports and back over
// the host links, as lib/algo's RackTask without a switch), or one
// autonomous worker.
struct RingMember {
  int rack = 0;
  bool ina = false;
  std::vector<int> hosts;  // one host unless ina or hostSum
  bool hostSum = false;
};

// One rack of a job, for the choice of how it takes part in rina.
struct JobRack {
  int rack = 0;
  std::vector<int> hosts;     // the job's hosts there
  bool switchUsable = false;  // an INA ToR with slots for the job
};

class Planner {
 public:
  virtual ~Planner() = default;
  // A permutation of 0..members.size()-1: the ring visits members in this order.
  virtual std::vector<int> ringOrder(const SimTopology& topo,
                                     const std::vector<RingMember>& members) = 0;
  // Share of the member's chunks each of its hosts ports (sums to 1).
  virtual std::vector<double> portShares(const SimTopology& topo, const RingMember& member) = 0;
  // Spine of one connection from rack `from` to rack `to`; `connection`
  // numbers the connections of one collective (ring hops x ports, hosts).
  virtual int spineFor(const SimTopology& topo, int from, int to, int connection) = 0;
  // ps-ina: the rack whose ToR aggregates `host`'s gradient, -1 = the PS itself.
  virtual int aggregationRack(const SimTopology& topo, int host) = 0;
  // rina: how each of the job's racks takes part, for an allreduce of
  // `bytes`. Here: on its switch where it may (and has two or more hosts),
  // else autonomous (RINA_PLAN_INA=on).
  virtual std::vector<plan::RackMode> rackModes(const SimTopology& topo,
                                                const std::vector<JobRack>& racks, double bytes);
};

// Identity order, equal port shares, connections spread over spines round robin,
// every worker aggregates at its own ToR when that ToR can (nearest switch).
class DefaultPlanner : public Planner {
 public:
  std::vector<int> ringOrder(const SimTopology& topo,
                             const std::vector<RingMember>& members) override;
  std::vector<double> portShares(const SimTopology& topo, const RingMember& member) override;
  int spineFor(const SimTopology& topo, int from, int to, int connection) override;
  int aggregationRack(const SimTopology& topo, int host) override;
};

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_PLANNER_H_
