#include "comm/spine_addresses.h"

#include <arpa/inet.h>

#include <algorithm>

#include "bootstrap/bootstrap.h"
#include "topo/topology_json.h"

namespace rina::comm {

Status spineAddresses(const std::string& list, const std::string& file, const std::string& hostname,
                      std::vector<std::string>* out, std::string* source) {
  out->clear();
  if (!list.empty()) {
    *source = "RINA_SPINE_ADDRS";
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = std::min(list.find(',', start), list.size());
      const std::string addr = list.substr(start, comma - start);
      in_addr parsed{};
      if (inet_pton(AF_INET, addr.c_str(), &parsed) != 1) {
        return errorf(rinaInvalidArgument,
                      "RINA_SPINE_ADDRS=%s: '%s' is not an IPv4 address (expected one per "
                      "spine, comma-separated)",
                      list.c_str(), addr.c_str());
      }
      out->push_back(addr);
      start = comma + 1;
    }
    if (out->size() > static_cast<size_t>(bootstrap::kMaxSpineAddrs)) {
      return errorf(rinaInvalidArgument, "RINA_SPINE_ADDRS=%s: at most 8 addresses", list.c_str());
    }
    return {};
  }
  if (file.empty()) return {};
  topo::TopologySpec spec;
  RINA_TRY(topo::loadTopologyFile(file, &spec).prepend("RINA_TOPO_FILE=" + file + ": "));
  for (const topo::RackSpec& rack : spec.racks) {
    for (const topo::HostSpec& host : rack.hosts) {
      if (host.name != hostname || host.spineAddrs.empty()) continue;
      if (host.spineAddrs.size() > static_cast<size_t>(bootstrap::kMaxSpineAddrs)) {
        return errorf(rinaInvalidArgument,
                      "RINA_TOPO_FILE=%s: host '%s' has %zu spine addresses; rina uses at most 8",
                      file.c_str(), hostname.c_str(), host.spineAddrs.size());
      }
      *out = host.spineAddrs;
      *source = "RINA_TOPO_FILE host '" + hostname + "'";
    }
  }
  return {};
}

}  // namespace rina::comm
