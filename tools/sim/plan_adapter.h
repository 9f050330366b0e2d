// lib/plan behind rina-sim's Planner seam (--planner plan): how each rack
// takes part in rina and its port shares (plan::chooseRackModes, the code
// rank 0 runs), the ring order (plan::bestRingOrder on plan::hopRates), and
// the spine of each inter-rack hop (plan::assignSpines over the hops of the
// ring just ordered: every connection of a hop takes the hop's spine), all
// from the simulated link capacities. Racks it was not asked modes for
// (hier) share their ports by the hosts' rates (plan::apportion). ps-ina
// keeps the nearest switch and round-robin spines (the GRID routing is
// rina-plan --grid's, not wired here).
#ifndef RINA_TOOLS_SIM_PLAN_ADAPTER_H_
#define RINA_TOOLS_SIM_PLAN_ADAPTER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan/network.h"
#include "sim/planner.h"

namespace rina::sim {

// The planner's view of a simulated cluster: rates in Mbit/s, uplinks per
// spine from the ToR-spine link capacities, spines themselves non-blocking.
plan::Network planNetworkOf(const SimTopology& topo);

class LibPlanner : public Planner {
 public:
  // The link model's step latency and port markers (rina-sim's own);
  // forceIna: every INA rack on its switch (--plan-ina on).
  explicit LibPlanner(plan::ModelOptions model = {}, bool forceIna = false)
      : model_(model), forceIna_(forceIna) {}
  // The job's hosts as a network of their own: a rack's switch usable as
  // JobRack says, its rate the ToR's aggregation capacity or the job's
  // slot throughput with the switch's default window of slots, whichever is
  // lower.
  std::vector<plan::RackMode> rackModes(const SimTopology& topo, const std::vector<JobRack>& racks,
                                        double bytes) override;
  std::vector<int> ringOrder(const SimTopology& topo,
                             const std::vector<RingMember>& members) override;
  std::vector<double> portShares(const SimTopology& topo, const RingMember& member) override;
  // The spine the last ringOrder() gave the hop from rack `from` to `to`;
  // pairs it did not order (ps-ina) go round robin.
  int spineFor(const SimTopology& topo, int from, int to, int connection) override;
  // Nearest switch; also forgets the last ring's spines (ps-ina asks this
  // for every worker before it routes).
  int aggregationRack(const SimTopology& topo, int host) override;

  double lastBottleneckMbit() const { return bottleneckMbit_; }
  // The last rackModes(): plan::describeChoice of it ("" before any).
  const std::string& lastChoice() const { return lastChoice_; }

 private:
  plan::ModelOptions model_;
  bool forceIna_ = false;
  std::map<int, std::vector<double>> shares_;  // rack -> port share per job host there
  std::string lastChoice_;
  DefaultPlanner fallback_;
  std::map<std::pair<int, int>, int> hopSpine_;  // (from rack, to rack) -> spine
  double bottleneckMbit_ = 0;
};

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_PLAN_ADAPTER_H_
