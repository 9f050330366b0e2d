// Jobs on the simulated cluster: each alternates compute and one allreduce,
// INA racks grant aggregator slots per job (p4_agent's SlotAllocator), with
// or without ESA preemption, and the flow engine shares the links.
#ifndef RINA_TOOLS_SIM_CLUSTER_H_
#define RINA_TOOLS_SIM_CLUSTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/planner.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace rina::sim {

struct JobSpec {
  std::string name;
  std::vector<int> hosts;  // worker indices, ascending
  Algorithm algo = Algorithm::kInaMemberRing;
  double bytes = 0;       // allreduce size
  int iterations = 1;     // compute + allreduce, this many times
  double computeSec = 0;  // before each allreduce
  double arrivalSec = 0;
  int priority = 0;          // higher wins (ESA)
  uint32_t slotsWanted = 0;  // per INA switch; 0: the switch's window
};

// kStatic: a job keeps what it was granted until it ends and never takes
// another's slots (it asks again, for free slots only, before each
// allreduce while short). kEsa: before each allreduce a job asks again and
// may take slots of jobs idle for idleSec, or of busy jobs with a lower
// priority, at rina-switchd's costs.
enum class SlotPolicy { kStatic, kEsa };

struct ClusterOptions {
  SlotPolicy policy = SlotPolicy::kEsa;
  double idleSec = 0;
  double stepLatencySec = 5e-6;  // per dependent step of a collective
  bool portMarkers = true;       // InaAccess::portMarkers
};

struct JobOutcome {
  std::string name;
  double start = 0;  // arrival
  double end = 0;
  double commSec = 0;  // time spent in allreduces
  double lastAllreduceSec = 0;
  int allreduces = 0;
  int preempted = 0;   // times it lost slots to another job
  int withoutIna = 0;  // allreduces started with some INA rack lacking slots
  Collective lastPlan;
};

struct LinkLoad {
  std::string name;
  double bytes = 0;
  double utilisation = 0;  // bytes / (capacity x makespan)
};

struct ClusterResult {
  std::vector<JobOutcome> jobs;
  double makespan = 0;
  double averageJct = 0;
  std::vector<LinkLoad> links;  // busiest first
  int rateRecomputations = 0;
};

bool simulateCluster(const SimTopology& topo, const std::vector<JobSpec>& jobs,
                     const ClusterOptions& opt, Planner& planner, ClusterResult* out,
                     std::string* error);

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_CLUSTER_H_
