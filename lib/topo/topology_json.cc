#include "topo/topology_json.h"

#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace rina::topo {
namespace {

using nlohmann::json;

// Rates above this are a typo, not a link (10 Pbit/s).
constexpr double kMaxMbit = 1e10;
constexpr int kMaxRanksPerRack = 1 << 20;
constexpr size_t kMaxNameLength = 64;

// Where a value sits, for messages: "rack 'r0' (racks[0]): host 'h1': ".
std::string rackContext(const std::string& name, size_t index) {
  return name.empty() ? "racks[" + std::to_string(index) + "]: "
                      : "rack '" + name + "' (racks[" + std::to_string(index) + "]): ";
}

Status bad(const std::string& where, const std::string& key, const std::string& what,
           const json& value) {
  return errorf(rinaInvalidArgument, "topology: %skey '%s': %s, got %s", where.c_str(), key.c_str(),
                what.c_str(), value.dump().c_str());
}

Status checkKeys(const json& object, const std::set<std::string>& allowed,
                 const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (!allowed.count(key)) {
      std::string list;
      for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
      return errorf(rinaInvalidArgument, "topology: %sunknown key '%s' (known: %s)", where.c_str(),
                    key.c_str(), list.c_str());
    }
  }
  return {};
}

bool validName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Status readName(const json& value, const std::string& where, const std::string& key,
                std::string* out) {
  if (!value.is_string() || !validName(value.get<std::string>())) {
    return bad(where, key, "must be a name of 1-64 letters, digits, '-', '_' or '.'", value);
  }
  *out = value.get<std::string>();
  return {};
}

Status readMbit(const json& value, const std::string& where, const std::string& key, double* out) {
  if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > kMaxMbit) {
    return bad(where, key, "must be a positive number of Mbit/s", value);
  }
  *out = value.get<double>();
  return {};
}

// A rate for every spine, or a list of one rate per spine.
Status readMbitPerSpine(const json& value, const std::string& where, const std::string& key,
                        int spines, double* one, std::vector<double>* perSpine) {
  if (!value.is_array()) return readMbit(value, where, key, one);
  if (static_cast<int>(value.size()) != spines) {
    return bad(where, key,
               "must be one rate for every spine or a list of " + std::to_string(spines) +
                   " rates (one per spine)",
               value);
  }
  perSpine->resize(value.size());
  for (size_t s = 0; s < value.size(); ++s) {
    RINA_TRY(readMbit(value[s], where, key + "[" + std::to_string(s) + "]", &(*perSpine)[s]));
  }
  return {};
}

bool validIpv4(const std::string& text) {
  in_addr addr{};
  return inet_pton(AF_INET, text.c_str(), &addr) == 1;
}

Status readAddr(const json& value, const std::string& where, std::string* out) {
  if (!value.is_string() || !validIpv4(value.get<std::string>())) {
    return bad(where, "addr", "must be an IPv4 address like \"10.77.0.2\"", value);
  }
  *out = value.get<std::string>();
  return {};
}

Status readSwitch(const json& value, const std::string& where, std::string* out) {
  const char* what = "must be the switch's control address \"IPv4:port\"";
  if (!value.is_string()) return bad(where, "switch", what, value);
  const std::string text = value.get<std::string>();
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || !validIpv4(text.substr(0, colon))) {
    return bad(where, "switch", what, value);
  }
  int port = 0;
  const char* begin = text.data() + colon + 1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, port);
  if (ec != std::errc() || ptr != end || begin == end || port < 1 || port > 65535) {
    return bad(where, "switch", what, value);
  }
  *out = text;
  return {};
}

Status readSpineAddrs(const json& value, const std::string& where, int spines,
                      std::vector<std::string>* out) {
  if (!value.is_array() || static_cast<int>(value.size()) != spines) {
    return bad(where, "spine_addrs",
               "must list one IPv4 address per spine (" + std::to_string(spines) + ")", value);
  }
  std::set<std::string> seen;
  for (const json& a : value) {
    if (!a.is_string() || !validIpv4(a.get<std::string>())) {
      return bad(where, "spine_addrs", "each entry must be an IPv4 address like \"10.78.1.2\"", a);
    }
    if (!seen.insert(a.get<std::string>()).second) {
      return bad(where, "spine_addrs", "an address is listed twice", a);
    }
    out->push_back(a.get<std::string>());
  }
  return {};
}

Status readHost(const json& value, const std::string& where, int spines, HostSpec* host) {
  if (value.is_string()) return readName(value, where, "hosts", &host->name);
  if (!value.is_object()) {
    return bad(where, "hosts", "each host must be a name or an object with \"name\"", value);
  }
  if (!value.contains("name")) {
    return errorf(rinaInvalidArgument, "topology: %shost %s has no 'name'", where.c_str(),
                  value.dump().c_str());
  }
  RINA_TRY(readName(value["name"], where, "name", &host->name));
  const std::string at = where + "host '" + host->name + "': ";
  RINA_TRY(checkKeys(value, {"name", "link_mbit", "addr", "spine_addrs"}, at));
  if (value.contains("link_mbit"))
    RINA_TRY(readMbit(value["link_mbit"], at, "link_mbit", &host->linkMbit));
  if (value.contains("addr")) RINA_TRY(readAddr(value["addr"], at, &host->addr));
  if (value.contains("spine_addrs")) {
    RINA_TRY(readSpineAddrs(value["spine_addrs"], at, spines, &host->spineAddrs));
  }
  return {};
}

Status readRack(const json& value, size_t index, int spines, RackSpec* rack) {
  if (!value.is_object()) {
    return errorf(rinaInvalidArgument, "topology: racks[%zu] must be an object, got %s", index,
                  value.dump().c_str());
  }
  std::string where = rackContext("", index);
  if (value.contains("name")) RINA_TRY(readName(value["name"], where, "name", &rack->name));
  if (rack->name.empty()) rack->name = 'r' + std::to_string(index);
  where = rackContext(rack->name, index);
  RINA_TRY(checkKeys(
      value, {"name", "ina", "hosts", "ranks", "switch", "host_link_mbit", "uplink_mbit"}, where));
  if (value.contains("ina")) {
    if (!value["ina"].is_boolean()) return bad(where, "ina", "must be true or false", value["ina"]);
    rack->ina = value["ina"].get<bool>();
  }
  const bool hasHosts = value.contains("hosts");
  const bool hasRanks = value.contains("ranks");
  if (hasHosts == hasRanks) {
    return errorf(rinaInvalidArgument,
                  "topology: %sgive exactly one of 'hosts' (ranks join by hostname) and 'ranks' "
                  "(the next N ranks)",
                  where.c_str());
  }
  if (hasHosts) {
    const json& hosts = value["hosts"];
    if (!hosts.is_array() || hosts.empty()) {
      return bad(where, "hosts", "must be a non-empty list of hosts", hosts);
    }
    for (const json& h : hosts) {
      HostSpec host;
      RINA_TRY(readHost(h, where, spines, &host));
      rack->hosts.push_back(std::move(host));
    }
  } else {
    const json& ranks = value["ranks"];
    if (!ranks.is_number_integer() || ranks.get<int64_t>() < 1 ||
        ranks.get<int64_t>() > kMaxRanksPerRack) {
      return bad(where, "ranks", "must be a positive whole number of ranks", ranks);
    }
    rack->rankCount = static_cast<int>(ranks.get<int64_t>());
  }
  if (value.contains("switch")) {
    RINA_TRY(readSwitch(value["switch"], where, &rack->switchCtrl));
    if (!rack->ina) {
      return errorf(rinaInvalidArgument,
                    "topology: %skey 'switch': a switch address needs \"ina\": true",
                    where.c_str());
    }
  }
  if (value.contains("host_link_mbit")) {
    RINA_TRY(readMbit(value["host_link_mbit"], where, "host_link_mbit", &rack->hostLinkMbit));
  }
  if (value.contains("uplink_mbit")) {
    RINA_TRY(readMbitPerSpine(value["uplink_mbit"], where, "uplink_mbit", spines, &rack->uplinkMbit,
                              &rack->uplinkMbitBySpine));
  }
  return {};
}

Status readTopology(const json& doc, TopologySpec* spec) {
  if (!doc.is_object()) {
    return errorf(rinaInvalidArgument, "topology: the document must be an object, got %s",
                  doc.dump().c_str());
  }
  RINA_TRY(checkKeys(doc, {"name", "spines", "spine_link_mbit", "racks"}, ""));
  if (doc.contains("name")) RINA_TRY(readName(doc["name"], "", "name", &spec->name));
  if (doc.contains("spines")) {
    const json& spines = doc["spines"];
    if (!spines.is_number_integer() || spines.get<int64_t>() < 1 || spines.get<int64_t>() > 64) {
      return bad("", "spines", "must be a whole number from 1 to 64", spines);
    }
    spec->spines = static_cast<int>(spines.get<int64_t>());
  }
  if (doc.contains("spine_link_mbit")) {
    RINA_TRY(readMbitPerSpine(doc["spine_link_mbit"], "", "spine_link_mbit", spec->spines,
                              &spec->spineLinkMbit, &spec->spineLinkMbitBySpine));
  }
  if (!doc.contains("racks")) {
    return errorf(rinaInvalidArgument, "topology: no 'racks' list");
  }
  const json& racks = doc["racks"];
  if (!racks.is_array() || racks.empty()) {
    return bad("", "racks", "must be a non-empty list of racks", racks);
  }
  std::set<std::string> rackNames, hostNames;
  for (size_t i = 0; i < racks.size(); ++i) {
    RackSpec rack;
    RINA_TRY(readRack(racks[i], i, spec->spines, &rack));
    if (!rackNames.insert(rack.name).second) {
      return errorf(rinaInvalidArgument, "topology: racks[%zu]: rack name '%s' is used twice", i,
                    rack.name.c_str());
    }
    for (const HostSpec& h : rack.hosts) {
      if (!hostNames.insert(h.name).second) {
        return errorf(rinaInvalidArgument, "topology: %shost '%s' is listed twice",
                      rackContext(rack.name, i).c_str(), h.name.c_str());
      }
    }
    spec->racks.push_back(std::move(rack));
  }
  return {};
}

// Whole rates print as integers ("500", not "500.0").
nlohmann::ordered_json mbitValue(double v) {
  if (v == std::floor(v) && v < 9e15) return static_cast<int64_t>(v);
  return v;
}

nlohmann::ordered_json mbitList(const std::vector<double>& rates) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (double v : rates) list.push_back(mbitValue(v));
  return list;
}

}  // namespace

Status parseTopologyJson(std::string_view text, TopologySpec* out) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return errorf(rinaInvalidArgument, "topology: not valid JSON: %s", e.what());
  }
  TopologySpec spec;
  RINA_TRY(readTopology(doc, &spec));
  *out = std::move(spec);
  return {};
}

Status loadTopologyFile(const std::string& path, TopologySpec* out) {
  std::ifstream file(path);
  if (!file) {
    return systemErrorf(errno, "topology file %s: cannot open", path.c_str());
  }
  std::stringstream text;
  text << file.rdbuf();
  if (file.bad()) return systemErrorf(errno, "topology file %s: cannot read", path.c_str());
  Status s = parseTopologyJson(text.str(), out);
  if (!s.ok()) s.prepend(path + ": ");
  return s;
}

std::string topologyToJson(const TopologySpec& spec, int indent) {
  // ordered_json: keys come out in the schema's order, not sorted.
  using ojson = nlohmann::ordered_json;
  ojson doc = ojson::object();
  if (!spec.name.empty()) doc["name"] = spec.name;
  if (spec.spines != 1) doc["spines"] = spec.spines;
  if (spec.spineLinkMbit > 0) doc["spine_link_mbit"] = mbitValue(spec.spineLinkMbit);
  if (!spec.spineLinkMbitBySpine.empty())
    doc["spine_link_mbit"] = mbitList(spec.spineLinkMbitBySpine);
  ojson racks = ojson::array();
  for (const RackSpec& r : spec.racks) {
    ojson rack = ojson::object();
    rack["name"] = r.name;
    if (r.ina) rack["ina"] = true;
    if (r.rankCount > 0) rack["ranks"] = r.rankCount;
    if (!r.hosts.empty()) {
      ojson hosts = ojson::array();
      for (const HostSpec& h : r.hosts) {
        if (h.linkMbit <= 0 && h.addr.empty() && h.spineAddrs.empty()) {
          hosts.push_back(h.name);
          continue;
        }
        ojson host = {{"name", h.name}};
        if (h.linkMbit > 0) host["link_mbit"] = mbitValue(h.linkMbit);
        if (!h.addr.empty()) host["addr"] = h.addr;
        if (!h.spineAddrs.empty()) host["spine_addrs"] = h.spineAddrs;
        hosts.push_back(std::move(host));
      }
      rack["hosts"] = std::move(hosts);
    }
    if (!r.switchCtrl.empty()) rack["switch"] = r.switchCtrl;
    if (r.hostLinkMbit > 0) rack["host_link_mbit"] = mbitValue(r.hostLinkMbit);
    if (r.uplinkMbit > 0) rack["uplink_mbit"] = mbitValue(r.uplinkMbit);
    if (!r.uplinkMbitBySpine.empty()) rack["uplink_mbit"] = mbitList(r.uplinkMbitBySpine);
    racks.push_back(std::move(rack));
  }
  doc["racks"] = std::move(racks);
  return doc.dump(indent);
}

}  // namespace rina::topo
