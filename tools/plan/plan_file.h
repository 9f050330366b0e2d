// rina-plan's input: a topology (the RINA_TOPO_FILE schema: name, spines,
// spine_link_mbit, racks with name, ina, hosts or ranks, host_link_mbit,
// uplink_mbit), the rates measured since, and planning options:
//
//   {"topology": {...},
//    "measured": {"host_link_mbit": {"h0": 8000},
//                 "uplink_mbit": {"r1": [3000, 9000]},      (per spine)
//                 "spine_mbit": [90000, 100000],
//                 "probes": [{"from": "h0", "to": "h3", "mbit": 5000}]},
//    "chunks": 8,
//    "grid": {"ps": "h0", "rack_agg_mbit": {"r0": 400000}, "spine_agg_mbit": 0}}
//
// Only "topology" is required. Unknown keys are errors naming the key.
#ifndef RINA_TOOLS_PLAN_PLAN_FILE_H_
#define RINA_TOOLS_PLAN_PLAN_FILE_H_

#include <string>

#include "core/status.h"
#include "plan/grid_topology.h"
#include "plan/network.h"

namespace rina::tools {

struct PlanFile {
  plan::Network net;
  int chunks = 0;
  bool hasGrid = false;
  plan::LeafSpineGridSpec grid;
};

Status parsePlanFile(const std::string& text, PlanFile* out);

}  // namespace rina::tools

#endif  // RINA_TOOLS_PLAN_PLAN_FILE_H_
