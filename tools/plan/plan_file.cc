#include "plan_file.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "topo/topology_json.h"

namespace rina::tools {
namespace {

using json = nlohmann::json;

Status checkKeys(const json& obj, std::initializer_list<const char*> allowed,
                 const std::string& where) {
  if (!obj.is_object()) return errorf(rinaInvalidArgument, "%s: must be an object", where.c_str());
  std::set<std::string> ok(allowed.begin(), allowed.end());
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!ok.count(it.key())) {
      return errorf(rinaInvalidArgument, "%s: unknown key '%s'", where.c_str(), it.key().c_str());
    }
  }
  return {};
}

Status readMbit(const json& v, const std::string& where, double* out) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    return errorf(rinaInvalidArgument, "%s: must be a rate in Mbit/s >= 0, not %s", where.c_str(),
                  v.dump().c_str());
  }
  *out = v.get<double>();
  return {};
}

// A number (every spine) or a list with one rate per spine.
Status readPerSpine(const json& v, int spines, const std::string& where, std::vector<double>* out) {
  out->assign(spines, 0);
  if (v.is_array()) {
    if (static_cast<int>(v.size()) != spines) {
      return errorf(rinaInvalidArgument, "%s: %zu rates for %d spines", where.c_str(), v.size(),
                    spines);
    }
    for (int s = 0; s < spines; ++s)
      RINA_TRY(readMbit(v[s], where + "[" + std::to_string(s) + "]", &(*out)[s]));
    return {};
  }
  double x = 0;
  RINA_TRY(readMbit(v, where, &x));
  out->assign(spines, x);
  return {};
}

Status readName(const json& v, const std::string& where, std::string* out) {
  if (!v.is_string() || v.get<std::string>().empty()) {
    return errorf(rinaInvalidArgument, "%s: must be a non-empty name", where.c_str());
  }
  *out = v.get<std::string>();
  return {};
}

}  // namespace

Status parsePlanFile(const std::string& text, PlanFile* out) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return errorf(rinaInvalidArgument, "not valid JSON");
  RINA_TRY(checkKeys(doc, {"topology", "measured", "chunks", "grid"}, "file"));
  if (!doc.contains("topology")) return errorf(rinaInvalidArgument, "file: no \"topology\"");
  // The topology section is a topology file (lib/topo/topology_json.h).
  topo::TopologySpec spec;
  RINA_TRY(topo::parseTopologyJson(doc["topology"].dump(), &spec));
  int countedRanks = 0;
  for (const auto& rack : spec.racks) countedRanks += rack.rankCount;
  // Counted racks take the first ranks; listed hosts follow in file order.
  std::vector<std::string> hostnames(countedRanks, "");
  for (const auto& rack : spec.racks) {
    for (const auto& h : rack.hosts) hostnames.push_back(h.name);
  }
  topo::RackMap map;
  RINA_TRY(topo::resolveRackMap(spec, hostnames, &map));
  PlanFile pf;
  RINA_TRY(plan::networkFromTopology(spec, map, &pf.net));
  std::map<std::string, int> rackIndex, hostIndex;
  for (size_t r = 0; r < pf.net.racks.size(); ++r)
    rackIndex[pf.net.racks[r].name] = static_cast<int>(r);
  for (size_t h = 0; h < pf.net.hosts.size(); ++h)
    hostIndex[pf.net.hosts[h].name] = static_cast<int>(h);
  auto host = [&](const json& v, const std::string& where, int* index) -> Status {
    std::string name;
    RINA_TRY(readName(v, where, &name));
    auto it = hostIndex.find(name);
    if (it == hostIndex.end())
      return errorf(rinaInvalidArgument, "%s: no host \"%s\"", where.c_str(), name.c_str());
    *index = it->second;
    return {};
  };
  if (doc.contains("measured")) {
    const json& m = doc["measured"];
    RINA_TRY(checkKeys(m, {"host_link_mbit", "uplink_mbit", "spine_mbit", "probes"}, "measured"));
    if (m.contains("host_link_mbit")) {
      if (!m["host_link_mbit"].is_object()) {
        return errorf(rinaInvalidArgument, "measured.host_link_mbit: must be an object");
      }
      for (auto it = m["host_link_mbit"].begin(); it != m["host_link_mbit"].end(); ++it) {
        int h;
        RINA_TRY(host(it.key(), "measured.host_link_mbit", &h));
        RINA_TRY(
            readMbit(it.value(), "measured.host_link_mbit." + it.key(), &pf.net.hosts[h].linkMbit));
      }
    }
    if (m.contains("uplink_mbit")) {
      if (!m["uplink_mbit"].is_object())
        return errorf(rinaInvalidArgument, "measured.uplink_mbit: must be an object");
      for (auto it = m["uplink_mbit"].begin(); it != m["uplink_mbit"].end(); ++it) {
        auto r = rackIndex.find(it.key());
        if (r == rackIndex.end()) {
          return errorf(rinaInvalidArgument, "measured.uplink_mbit: no rack \"%s\"",
                        it.key().c_str());
        }
        RINA_TRY(readPerSpine(it.value(), spec.spines, "measured.uplink_mbit." + it.key(),
                              &pf.net.racks[r->second].uplinkMbit));
      }
    }
    if (m.contains("spine_mbit")) {
      RINA_TRY(
          readPerSpine(m["spine_mbit"], spec.spines, "measured.spine_mbit", &pf.net.spineMbit));
    }
    if (m.contains("probes")) {
      if (!m["probes"].is_array())
        return errorf(rinaInvalidArgument, "measured.probes: must be a list");
      for (size_t k = 0; k < m["probes"].size(); ++k) {
        const json& p = m["probes"][k];
        std::string where = "measured.probes[" + std::to_string(k) + "]";
        RINA_TRY(checkKeys(p, {"from", "to", "mbit", "spine"}, where));
        if (!p.contains("from") || !p.contains("to") || !p.contains("mbit")) {
          return errorf(rinaInvalidArgument, "%s: needs \"from\", \"to\" and \"mbit\"",
                        where.c_str());
        }
        plan::Network::Probe probe;
        RINA_TRY(host(p["from"], where + ".from", &probe.from));
        RINA_TRY(host(p["to"], where + ".to", &probe.to));
        RINA_TRY(readMbit(p["mbit"], where + ".mbit", &probe.mbit));
        if (p.contains("spine")) {
          // The path it measured: it caps the hop over that spine only.
          if (!p["spine"].is_number_integer() || p["spine"].get<int64_t>() < 0 ||
              p["spine"].get<int64_t>() >= spec.spines) {
            return errorf(rinaInvalidArgument, "%s.spine: must be a spine from 0 to %d",
                          where.c_str(), spec.spines - 1);
          }
          probe.spine = static_cast<int>(p["spine"].get<int64_t>());
        }
        pf.net.probes.push_back(probe);
      }
    }
  }
  if (doc.contains("chunks")) {
    if (!doc["chunks"].is_number_integer() || doc["chunks"].get<int64_t>() < 1 ||
        doc["chunks"].get<int64_t>() > 1 << 20) {
      return errorf(rinaInvalidArgument, "chunks: must be a whole number from 1 to 1048576");
    }
    pf.chunks = doc["chunks"].get<int>();
  }
  if (doc.contains("grid")) {
    const json& g = doc["grid"];
    RINA_TRY(checkKeys(g, {"ps", "rack_agg_mbit", "spine_agg_mbit"}, "grid"));
    pf.hasGrid = true;
    if (!g.contains("ps"))
      return errorf(rinaInvalidArgument, "grid: no \"ps\" (the parameter server's host)");
    RINA_TRY(host(g["ps"], "grid.ps", &pf.grid.psHost));
    if (g.contains("rack_agg_mbit")) {
      if (!g["rack_agg_mbit"].is_object())
        return errorf(rinaInvalidArgument, "grid.rack_agg_mbit: must be an object");
      pf.grid.rackAggMbit.assign(pf.net.racks.size(), 0);
      for (auto it = g["rack_agg_mbit"].begin(); it != g["rack_agg_mbit"].end(); ++it) {
        auto r = rackIndex.find(it.key());
        if (r == rackIndex.end())
          return errorf(rinaInvalidArgument, "grid.rack_agg_mbit: no rack \"%s\"",
                        it.key().c_str());
        RINA_TRY(readMbit(it.value(), "grid.rack_agg_mbit." + it.key(),
                          &pf.grid.rackAggMbit[r->second]));
      }
    }
    if (g.contains("spine_agg_mbit"))
      RINA_TRY(readMbit(g["spine_agg_mbit"], "grid.spine_agg_mbit", &pf.grid.spineAggMbit));
  }
  RINA_TRY(plan::validateNetwork(pf.net));
  *out = std::move(pf);
  return {};
}

}  // namespace rina::tools
