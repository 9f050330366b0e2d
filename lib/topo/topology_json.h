// The topology file (RINA_TOPO_FILE): a TopologySpec as JSON. The schema is
// in docs/topology.md; every key is checked, unknown keys and bad
// values are rinaInvalidArgument naming the rack, the host and the key.
#ifndef RINA_LIB_TOPO_TOPOLOGY_JSON_H_
#define RINA_LIB_TOPO_TOPOLOGY_JSON_H_

#include <string>
#include <string_view>

#include "core/status.h"
#include "topo/rack_map.h"

namespace rina::topo {

Status parseTopologyJson(std::string_view text, TopologySpec* out);
// Reads and parses a file; errors start with the path.
Status loadTopologyFile(const std::string& path, TopologySpec* out);
// The spec as JSON in the same schema (parseTopologyJson reads it back to an
// equal spec). Keys left at their defaults are omitted.
std::string topologyToJson(const TopologySpec& spec, int indent = 2);

}  // namespace rina::topo

#endif  // RINA_LIB_TOPO_TOPOLOGY_JSON_H_
