// The step schedules of lib/algo, summed per link: one allreduce becomes one
// coupled flow whose weight on each link is the bytes the schedule puts
// there per byte of the buffer (docs/sim.md, "Collectives in aggregate").
#ifndef RINA_TOOLS_SIM_SCHEDULE_H_
#define RINA_TOOLS_SIM_SCHEDULE_H_

#include <string>
#include <string_view>
#include <vector>

#include "algo/engine/algorithm.h"
#include "sim/flow_engine.h"
#include "sim/planner.h"
#include "sim/topology.h"

namespace rina::sim {

// The library's allreduce algorithms and their names (lib/algo/engine/algorithm.h:
// one table); the simulator models four of them.
using algo::Algorithm;
using algo::algorithmName;
inline constexpr Algorithm kSimulatedAlgorithms[] = {Algorithm::kRing, Algorithm::kHier,
                                                     Algorithm::kInaMemberRing, Algorithm::kPsIna};
// name: the table's name of a simulated algorithm; false for any other.
bool parseSimulatedAlgorithm(std::string_view name, Algorithm* out);
// The simulated algorithms' names in the table's order, joined by ", ".
std::string simulatedAlgorithmNames();

// What a job may use in each rack's switch: the engine link that models its
// slot throughput there (SwitchParams::slotThroughput of its grant), or -1
// when the job has no slots in that switch (or the ToR cannot aggregate):
// those workers then take part as hosts.
struct InaAccess {
  std::vector<int> slotPipe;  // per rack
  // rina's port markers (RINA_INA_PORT_MARKERS): a port does not upload
  // its own share to the reduce-scatter.
  bool portMarkers = true;
  bool usable(int rack) const { return slotPipe[rack] >= 0; }
};

struct Collective {
  std::vector<Usage> usages;  // link, bytes per byte of the buffer
  int steps = 0;              // dependent steps: the latency term is steps x step latency
  int members = 0;            // ring members (ring, hier, rina) or aggregation groups (ps-ina)
};

// One allreduce of `bytes` over `hosts` (worker indices, ascending); the
// size only matters to the planner's choice of rack modes.
Collective planAllreduce(Algorithm algo, const SimTopology& topo, const std::vector<int>& hosts,
                         const InaAccess& ina, Planner& planner, double bytes = 64 << 20);

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_SCHEDULE_H_
