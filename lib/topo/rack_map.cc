#include "topo/rack_map.h"

#include <charconv>
#include <map>
#include <set>

#include "topo/topology_json.h"

namespace rina::topo {

Status parseRacksShortForm(std::string_view text, TopologySpec* out) {
  TopologySpec spec;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    RackSpec rack;
    std::string_view count = item;
    if (size_t colon = item.find(':'); colon != std::string_view::npos) {
      std::string_view flag = item.substr(colon + 1);
      if (flag != "ina") {
        return errorf(rinaInvalidArgument, "RINA_RACKS: rack %zu: unknown flag '%.*s' (only 'ina')",
                      spec.racks.size(), static_cast<int>(flag.size()), flag.data());
      }
      rack.ina = true;
      count = item.substr(0, colon);
    }
    auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), rack.rankCount);
    if (ec != std::errc() || end != count.data() + count.size() || rack.rankCount <= 0) {
      return errorf(rinaInvalidArgument,
                    "RINA_RACKS: rack %zu: '%.*s' is not a positive rank count (form: 3:ina,2,1)",
                    spec.racks.size(), static_cast<int>(item.size()), item.data());
    }
    rack.name = 'r' + std::to_string(spec.racks.size());
    spec.racks.push_back(std::move(rack));
    pos = comma + 1;
  }
  *out = std::move(spec);
  return {};
}

double uplinkMbitOn(const TopologySpec& spec, const RackSpec& rack, int spine) {
  auto pick = [spine](const std::vector<double>& list, double one) {
    if (list.empty()) return one;
    return spine >= 0 && spine < static_cast<int>(list.size()) ? list[spine] : 0.0;
  };
  const double own = pick(rack.uplinkMbitBySpine, rack.uplinkMbit);
  return own > 0 ? own : pick(spec.spineLinkMbitBySpine, spec.spineLinkMbit);
}

bool RackMap::anyIna() const {
  for (const Rack& r : racks) {
    if (r.ina) return true;
  }
  return false;
}

std::string RackMap::describe() const {
  std::string s;
  for (const Rack& r : racks) {
    if (!s.empty()) s += ' ';
    s += r.name + "[" + (r.ina ? "ina:" : "");
    for (size_t i = 0; i < r.ranks.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(r.ranks[i]);
    }
    s += "]";
  }
  return s;
}

Status resolveRackMap(const TopologySpec& spec, const std::vector<std::string>& hostnames,
                      RackMap* out) {
  const int nranks = static_cast<int>(hostnames.size());
  RackMap map;
  map.rackOf.assign(nranks, -1);
  std::vector<Rack> racks(spec.racks.size());
  std::map<std::string, int> rackOfHost;
  int next = 0;  // next rank for count-based racks
  for (size_t i = 0; i < spec.racks.size(); ++i) {
    const RackSpec& rs = spec.racks[i];
    if (!rs.hosts.empty() && rs.rankCount > 0) {
      return errorf(rinaInvalidUsage, "rack '%s' gives both hosts and a rank count",
                    rs.name.c_str());
    }
    racks[i] = Rack{rs.name, rs.ina, {}, rs.switchCtrl, rs.hostLinkMbit, rs.uplinkMbit};
    for (const HostSpec& h : rs.hosts) {
      if (!rackOfHost.emplace(h.name, static_cast<int>(i)).second) {
        return errorf(rinaInvalidUsage, "host '%s' is listed in two racks", h.name.c_str());
      }
    }
    for (int k = 0; k < rs.rankCount; ++k, ++next) {
      if (next >= nranks) {
        return errorf(rinaInvalidUsage, "the racks hold more ranks than the %d there are", nranks);
      }
      racks[i].ranks.push_back(next);
    }
  }
  for (int r = next; r < nranks; ++r) {
    auto it = rackOfHost.find(hostnames[r]);
    if (it == rackOfHost.end()) {
      return errorf(rinaInvalidUsage, "rank %d (host '%s') is in no rack of the topology", r,
                    hostnames[r].c_str());
    }
    racks[it->second].ranks.push_back(r);
  }
  for (Rack& r : racks) {
    if (r.ranks.empty()) continue;
    for (int rank : r.ranks) map.rackOf[rank] = static_cast<int>(map.racks.size());
    map.racks.push_back(std::move(r));
  }
  *out = std::move(map);
  return {};
}

RackMap rackPerHost(const std::vector<std::string>& hostIds) {
  RackMap map;
  std::map<std::string, int> index;
  map.rackOf.resize(hostIds.size());
  for (size_t r = 0; r < hostIds.size(); ++r) {
    auto [it, fresh] = index.emplace(hostIds[r], static_cast<int>(map.racks.size()));
    if (fresh) {
      Rack rack;
      rack.name = "host" + std::to_string(map.racks.size());
      map.racks.push_back(std::move(rack));
    }
    map.racks[it->second].ranks.push_back(static_cast<int>(r));
    map.rackOf[r] = it->second;
  }
  return map;
}

}  // namespace rina::topo

namespace rina::topo {

std::string hostnameOf(const std::string& hostId) { return hostId.substr(0, hostId.find('/')); }

RackMap subRackMap(const RackMap& map, const std::vector<int>& members, bool partialRacksKeepIna) {
  RackMap out;
  out.rackOf.assign(members.size(), -1);
  for (size_t k = 0; k < map.racks.size(); ++k) {
    const Rack& rack = map.racks[k];
    Rack sub = rack;
    sub.ranks.clear();
    for (size_t i = 0; i < members.size(); ++i) {
      const int m = members[i];
      if (m >= 0 && m < static_cast<int>(map.rackOf.size()) &&
          map.rackOf[m] == static_cast<int>(k)) {
        sub.ranks.push_back(static_cast<int>(i));
      }
    }
    if (sub.ranks.empty()) continue;
    const bool whole = sub.ranks.size() == rack.ranks.size();
    sub.ina = rack.ina && sub.ranks.size() >= 2 && (partialRacksKeepIna || whole);
    for (int r : sub.ranks) out.rackOf[r] = static_cast<int>(out.racks.size());
    out.racks.push_back(std::move(sub));
  }
  return out;
}

std::string shortFormOf(const RackMap& map) {
  std::string text;
  int next = 0;
  for (const Rack& rack : map.racks) {
    for (int r : rack.ranks) {
      if (r != next++) return "";
    }
    if (!text.empty()) text += ",";
    text += std::to_string(rack.ranks.size());
    if (rack.ina) text += ":ina";
  }
  return text;
}

Status rackMapFrom(const std::string& file, const std::string& racks,
                   const std::vector<std::string>& hostIds, RackMap* out, TopologySpec* specOut) {
  std::vector<std::string> names;
  for (const std::string& id : hostIds) names.push_back(hostnameOf(id));
  TopologySpec spec;
  if (!file.empty()) {
    RINA_TRY(loadTopologyFile(file, &spec).prepend("RINA_TOPO_FILE=" + file + ": "));
    RINA_TRY(resolveRackMap(spec, names, out).prepend("RINA_TOPO_FILE=" + file + ": "));
  } else if (racks.empty()) {
    *out = rackPerHost(hostIds);
    for (const Rack& r : out->racks) {
      RackSpec rs;
      rs.name = r.name;
      spec.racks.push_back(rs);
    }
  } else {
    RINA_TRY(parseRacksShortForm(racks, &spec));
    int total = 0;
    for (const RackSpec& r : spec.racks) total += r.rankCount;
    if (total != static_cast<int>(hostIds.size())) {
      return errorf(rinaInvalidUsage, "RINA_RACKS=%s holds %d ranks but the communicator has %zu",
                    racks.c_str(), total, hostIds.size());
    }
    RINA_TRY(resolveRackMap(spec, names, out).prepend("RINA_RACKS: "));
  }
  if (specOut) *specOut = std::move(spec);
  return {};
}

}  // namespace rina::topo
