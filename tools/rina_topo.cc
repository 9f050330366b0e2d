// rina-topo: what rina sees. This node (cores, NUMA nodes, interfaces and the
// CPUs near each), and for a topology (--file / RINA_TOPO_FILE, --racks /
// RINA_RACKS) the racks the ranks resolve to, the ring of members, the port
// worker of each chunk in every INA rack, and the rack agents.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "topo/node_info.h"
#include "topo/rack_map.h"
#include "topo/ring_members.h"
#include "topo/topology_json.h"

namespace rina::topo {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 2;

const char* kUsage =
    "usage: rina-topo [--file FILE | --racks SPEC] [--nranks N] [--hostnames H0,H1,...]\n"
    "                 [--json] [--no-node]\n"
    "Prints this node's hardware (hwloc, else /sys) and, for a topology, the racks\n"
    "the ranks resolve to, the ring of members (an INA rack is one member, a worker\n"
    "of a rack without INA is one), the port rank of each chunk in every INA rack\n"
    "(rotating over the rack's workers) and each rack's agent (its lowest rank).\n"
    "  --file FILE       topology file (JSON, docs/topology.md); default $RINA_TOPO_FILE\n"
    "  --racks SPEC      short form, e.g. 3:ina,3:ina,1,1; default $RINA_RACKS\n"
    "  --nranks N        number of ranks; default: the racks' counts plus one rank\n"
    "                    per host the file lists\n"
    "  --hostnames LIST  hostname of rank 0, 1, ... (racks that list hosts)\n"
    "  --json            one JSON object instead of text\n"
    "  --no-node         leave out this node's hardware\n"
    "  -h, --help        this text\n";

struct Options {
  std::string file;
  std::string racks;
  int nranks = -1;
  std::vector<std::string> hostnames;
  bool json = false;
  bool node = true;
};

std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    items.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

int usageError(const std::string& message) {
  std::fprintf(stderr, "rina-topo: %s\n%s", message.c_str(), kUsage);
  return kExitError;
}

std::string mbit(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g Mbit/s", v);
  return buf;
}

std::string joinInts(const std::vector<int>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

// The ranks' hostnames when --hostnames is not given: count racks take the
// first ranks (no hostname needed), then one rank per listed host in order.
std::vector<std::string> defaultHostnames(const TopologySpec& spec) {
  std::vector<std::string> names;
  for (const RackSpec& r : spec.racks) names.insert(names.end(), r.rankCount, "-");
  for (const RackSpec& r : spec.racks) {
    for (const HostSpec& h : r.hosts) names.push_back(h.name);
  }
  return names;
}

nlohmann::ordered_json nodeJson(const NodeInfo& node) {
  nlohmann::ordered_json j = {{"source", node.source}, {"cores", node.cores}, {"cpus", node.cpus}};
  j["numa"] = nlohmann::ordered_json::array();
  for (const NumaNode& n : node.numa) {
    j["numa"].push_back({{"id", n.id}, {"cpus", n.cpus}, {"mem_bytes", n.memBytes}});
  }
  j["nics"] = nlohmann::ordered_json::array();
  for (const NicInfo& n : node.nics) {
    j["nics"].push_back({{"name", n.name},
                         {"up", n.up},
                         {"ipv4", n.ipv4},
                         {"numa", n.numaNode},
                         {"pci", n.busId},
                         {"near_cpus", n.near}});
  }
  return j;
}

struct Resolved {
  std::string source;
  TopologySpec spec;
  RackMap map;
  std::vector<std::string> hostnames;
  std::vector<RingMember> ring;
};

std::string memberLabel(const RackMap& map, const RingMember& m) {
  if (m.ina) return map.racks[m.rack].name + "(" + joinInts(m.ranks, ",") + ")";
  return "rank" + std::to_string(m.ranks.front());
}

// A rack's uplink rate per spine when the file gives per-spine lists (the
// rack's own or spine_link_mbit's); empty otherwise.
std::vector<double> uplinksBySpine(const TopologySpec& spec, const std::string& rack) {
  std::vector<double> out;
  for (const RackSpec& rs : spec.racks) {
    if (rs.name != rack) continue;
    if (rs.uplinkMbitBySpine.empty() && spec.spineLinkMbitBySpine.empty()) return out;
    for (int s = 0; s < spec.spines; ++s) out.push_back(uplinkMbitOn(spec, rs, s));
  }
  return out;
}

void printText(const Resolved& t) {
  const int nranks = static_cast<int>(t.hostnames.size());
  std::printf("topology %s (%s): %d ranks, %zu racks, %d spine%s",
              t.spec.name.empty() ? "-" : t.spec.name.c_str(), t.source.c_str(), nranks,
              t.map.racks.size(), t.spec.spines, t.spec.spines == 1 ? "" : "s");
  if (t.spec.spineLinkMbit > 0) std::printf(" at %s", mbit(t.spec.spineLinkMbit).c_str());
  std::printf("\n");
  for (const Rack& r : t.map.racks) {
    std::string line = "  rack " + r.name + ": " + (r.ina ? "ina" : "no ina");
    if (!r.switchCtrl.empty()) line += ", switch " + r.switchCtrl;
    line += ", ranks " + joinInts(r.ranks, ",");
    std::string hosts;
    for (int rank : r.ranks) {
      if (t.hostnames[rank] != "-") hosts += (hosts.empty() ? "" : ",") + t.hostnames[rank];
    }
    if (!hosts.empty()) line += " on " + hosts;
    if (r.hostLinkMbit > 0) line += ", host link " + mbit(r.hostLinkMbit);
    if (r.uplinkMbit > 0) line += ", uplink " + mbit(r.uplinkMbit);
    const std::vector<double> perSpine = uplinksBySpine(t.spec, r.name);
    if (!perSpine.empty()) {
      line += ", uplinks";
      for (size_t s = 0; s < perSpine.size(); ++s) {
        line += (s ? " / " : " ") + (perSpine[s] > 0 ? mbit(perSpine[s]) : std::string("?"));
      }
    }
    std::printf("%s\n", line.c_str());
  }
  // Hosts whose link differs from the rack's default.
  for (const RackSpec& rs : t.spec.racks) {
    for (const HostSpec& h : rs.hosts) {
      if (h.linkMbit > 0)
        std::printf("  host %s: link %s\n", h.name.c_str(), mbit(h.linkMbit).c_str());
    }
  }
  std::printf("ring: %zu members:", t.ring.size());
  for (const RingMember& m : t.ring) std::printf(" %s", memberLabel(t.map, m).c_str());
  std::printf("\n");
  const int chunks = static_cast<int>(t.ring.size());
  bool anyIna = false;
  for (size_t i = 0; i < t.map.racks.size(); ++i) {
    if (!t.map.racks[i].ina) continue;
    if (!anyIna) std::printf("ports (rank per chunk 0..%d):\n", chunks - 1);
    anyIna = true;
    std::vector<int> ports;
    for (int c = 0; c < chunks; ++c) ports.push_back(portOf(t.map, static_cast<int>(i), c));
    std::printf("  %s: %s\n", t.map.racks[i].name.c_str(), joinInts(ports, " ").c_str());
  }
  if (!anyIna) std::printf("ports: none (no INA rack)\n");
  std::printf("agents:");
  for (size_t i = 0; i < t.map.racks.size(); ++i) {
    std::printf("%s %s=%d", i ? "," : "", t.map.racks[i].name.c_str(),
                t.map.agentOf(static_cast<int>(i)));
  }
  std::printf("\n");
}

nlohmann::ordered_json topologyJson(const Resolved& t) {
  using ojson = nlohmann::ordered_json;
  ojson j = {{"name", t.spec.name},
             {"source", t.source},
             {"nranks", static_cast<int>(t.hostnames.size())}};
  j["racks"] = ojson::array();
  for (size_t i = 0; i < t.map.racks.size(); ++i) {
    const Rack& r = t.map.racks[i];
    ojson rack = {{"name", r.name},
                  {"ina", r.ina},
                  {"ranks", r.ranks},
                  {"agent", t.map.agentOf(static_cast<int>(i))},
                  {"switch", r.switchCtrl},
                  {"host_link_mbit", r.hostLinkMbit},
                  {"uplink_mbit", r.uplinkMbit}};
    const std::vector<double> perSpine = uplinksBySpine(t.spec, r.name);
    if (!perSpine.empty()) rack["uplink_mbit"] = perSpine;
    j["racks"].push_back(std::move(rack));
  }
  j["ring"] = ojson::array();
  for (const RingMember& m : t.ring) {
    j["ring"].push_back({{"rack", t.map.racks[m.rack].name}, {"ina", m.ina}, {"ranks", m.ranks}});
  }
  j["ports"] = ojson::object();
  for (size_t i = 0; i < t.map.racks.size(); ++i) {
    if (!t.map.racks[i].ina) continue;
    std::vector<int> ports;
    for (size_t c = 0; c < t.ring.size(); ++c) {
      ports.push_back(portOf(t.map, static_cast<int>(i), static_cast<int>(c)));
    }
    j["ports"][t.map.racks[i].name] = ports;
  }
  j["agents"] = ojson::object();
  for (size_t i = 0; i < t.map.racks.size(); ++i) {
    j["agents"][t.map.racks[i].name] = t.map.agentOf(static_cast<int>(i));
  }
  return j;
}

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (flag == "--json") {
      o.json = true;
      continue;
    }
    if (flag == "--no-node") {
      o.node = false;
      continue;
    }
    if (flag != "--file" && flag != "--racks" && flag != "--nranks" && flag != "--hostnames") {
      return usageError("unknown flag: " + std::string(flag));
    }
    if (i + 1 >= argc) return usageError(std::string(flag) + " needs a value");
    std::string value = argv[++i];
    if (flag == "--file") o.file = value;
    if (flag == "--racks") o.racks = value;
    if (flag == "--hostnames") o.hostnames = splitList(value);
    if (flag == "--nranks") {
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 1 || n > (1 << 20)) {
        return usageError("--nranks needs a positive number, got '" + value + "'");
      }
      o.nranks = static_cast<int>(n);
    }
  }
  if (!o.file.empty() && !o.racks.empty()) return usageError("give --file or --racks, not both");
  if (o.file.empty() && o.racks.empty()) {
    const config::Options env = config::environment();
    o.file = env.topoFile;
    if (o.file.empty()) o.racks = env.racks;
  }

  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (o.node) {
    NodeInfo node;
    Status s = detectNode(&node);
    if (!s.ok()) {
      std::fprintf(stderr, "rina-topo: %s\n", s.message().c_str());
      return kExitError;
    }
    if (o.json) {
      out["node"] = nodeJson(node);
    } else {
      std::fputs(node.describe().c_str(), stdout);
    }
  }
  if (!o.file.empty() || !o.racks.empty()) {
    Resolved t;
    Status s;
    if (!o.file.empty()) {
      t.source = "file " + o.file;
      s = loadTopologyFile(o.file, &t.spec);
    } else {
      t.source = "racks " + o.racks;
      s = parseRacksShortForm(o.racks, &t.spec);
    }
    if (s.ok()) {
      t.hostnames = o.hostnames.empty() ? defaultHostnames(t.spec) : o.hostnames;
      if (o.nranks > 0 && o.hostnames.empty()) {
        bool listsHosts = false;
        for (const RackSpec& r : t.spec.racks) listsHosts |= !r.hosts.empty();
        if (listsHosts && o.nranks != static_cast<int>(t.hostnames.size())) {
          return usageError("the topology lists hosts: give --hostnames for " +
                            std::to_string(o.nranks) + " ranks");
        }
        t.hostnames.assign(o.nranks, "-");
      } else if (o.nranks > 0 && o.nranks != static_cast<int>(t.hostnames.size())) {
        return usageError("--nranks " + std::to_string(o.nranks) + " but --hostnames names " +
                          std::to_string(t.hostnames.size()));
      }
      s = resolveRackMap(t.spec, t.hostnames, &t.map);
    }
    if (!s.ok()) {
      std::fprintf(stderr, "rina-topo: %s\n", s.message().c_str());
      return kExitError;
    }
    t.ring = ringMembers(t.map);
    if (o.json) {
      out["topology"] = topologyJson(t);
    } else {
      printText(t);
    }
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
  return kExitOk;
}

}  // namespace
}  // namespace rina::topo

int main(int argc, char** argv) { return rina::topo::run(argc, argv); }
