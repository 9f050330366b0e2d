// rina-sim's command line.
#ifndef RINA_TOOLS_SIM_OPTIONS_H_
#define RINA_TOOLS_SIM_OPTIONS_H_

#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace rina::sim {

struct SimOptions {
  enum class Shape { kNone, kFile, kLeafSpine, kFatTree };
  Shape shape = Shape::kNone;
  std::string topoFile;
  int racks = 0, hostsPerRack = 0, spines = 0, fatTreeK = 0;
  TopologyOptions topo;
  std::vector<Algorithm> algorithms{Algorithm::kInaMemberRing};
  double bytes = 1 << 30;
  double stepLatencySec = 5e-6;
  int jobs = 1;
  int iterations = 1;
  double computeSec = 0;
  double arrivalGapSec = 0;
  std::vector<int> priorities;
  uint32_t slotsWanted = 0;
  std::vector<SlotPolicy> policies{SlotPolicy::kEsa};
  double idleSec = 0;
  bool stepModel = false;   // --model steps
  bool portMarkers = true;  // --port-markers
  // --planner: DefaultPlanner ("default") and/or lib/plan ("plan"), one run each.
  std::vector<std::string> planners{"default"};
  bool forceIna = false;  // --plan-ina on
  int top = 5;
  std::string jsonFile;
  bool help = false;
};

// False with a message naming the flag on bad input.
bool parseSimOptions(int argc, const char* const* argv, SimOptions* out, std::string* error);
const char* simUsage();

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_OPTIONS_H_
