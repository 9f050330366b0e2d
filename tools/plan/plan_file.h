// rina-plan's input: a topology (a RINA_TOPO_FILE, read by
// lib/topo/topology_json.h), the rates measured since, and planning options:
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
// Per-spine uplink rates (the topology file has one per rack) go in
// measured.uplink_mbit.
#ifndef RINA_TOOLS_PLAN_PLAN_FILE_H_
#define RINA_TOOLS_PLAN_PLAN_FILE_H_

#include <string>

#include "core/status.h"
#include "plan/network.h"
#include "plan/ps_routes_topology.h"

namespace rina::tools {

struct PlanFile {
  plan::Network net;
  int chunks = 0;
  bool hasGrid = false;
  plan::LeafSpineRoutingSpec grid;
};

Status parsePlanFile(const std::string& text, PlanFile* out);

}  // namespace rina::tools

#endif  // RINA_TOOLS_PLAN_PLAN_FILE_H_
