#include "plan/path_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plan/network.h"
#include "plan/paths.h"

namespace rina::plan {

Status parsePathPolicy(const std::string& text, PathPolicy* out) {
  if (text == "planned") {
    *out = PathPolicy::kPlanned;
  } else if (text == "fixed") {
    *out = PathPolicy::kFixed;
  } else if (text == "hash") {
    *out = PathPolicy::kHash;
  } else {
    return errorf(rinaInvalidArgument, "RINA_PATHS=%s: expected planned, fixed or hash",
                  text.c_str());
  }
  return {};
}

const char* pathPolicyName(PathPolicy p) {
  switch (p) {
    case PathPolicy::kPlanned:
      return "planned";
    case PathPolicy::kFixed:
      return "fixed";
    case PathPolicy::kHash:
      return "hash";
  }
  return "?";
}

namespace {

// The planner's network: from the topology file when it describes these
// spines, else the racks alone with every rate unknown.
Network networkFor(int spines, const topo::RackMap& map, const topo::TopologySpec* spec) {
  Network net;
  if (spec && spec->spines == spines && networkFromTopology(*spec, map, &net).ok()) {
    return net;
  }
  net = Network{};
  net.spineMbit.assign(spines, 0);
  net.hosts.resize(map.rackOf.size());
  for (size_t r = 0; r < map.racks.size(); ++r) {
    Network::Rack rack;
    rack.name = map.racks[r].name;
    rack.hosts = map.racks[r].ranks;
    rack.uplinkMbit.assign(spines, 0);
    for (int h : rack.hosts) {
      net.hosts[h].rack = static_cast<int>(r);
      net.hosts[h].name = "rank" + std::to_string(h);
    }
    net.racks.push_back(std::move(rack));
  }
  return net;
}

double orInf(double v) { return v > 0 ? v : std::numeric_limits<double>::infinity(); }

}  // namespace

Status PathChoice::make(PathPolicy policy, int spines, const topo::RackMap& map,
                        const topo::TopologySpec* spec, PathChoice* out) {
  PathChoice c;
  c.policy_ = policy;
  c.spines_ = spines;
  c.rackOf_ = map.rackOf;
  for (const topo::Rack& r : map.racks) c.rackNames_.push_back(r.name);
  if (spines >= 2 && policy == PathPolicy::kPlanned) {
    const Network net = networkFor(spines, map, spec);
    const int racks = static_cast<int>(map.racks.size());
    c.rackPairSpine_.assign(racks, std::vector<int>(racks, -1));
    std::vector<SpineHop> hops;
    std::vector<std::vector<bool>> seen(racks, std::vector<bool>(racks, false));
    const int n = static_cast<int>(map.rackOf.size());
    for (int r = 0; r < n && n > 1; ++r) {
      const int to = (r + 1) % n;
      const int a = map.rackOf[r], b = map.rackOf[to];
      if (a == b || seen[a][b]) continue;
      seen[a][b] = true;
      const double own = std::min(orInf(net.hosts[r].linkMbit), orInf(net.hosts[to].linkMbit));
      hops.push_back(SpineHop{a, b, std::isinf(own) ? 0 : own});
    }
    if (!hops.empty()) {
      const SpineAssignment a = assignSpines(net, hops);
      for (size_t i = 0; i < hops.size(); ++i) {
        c.rackPairSpine_[hops[i].fromRack][hops[i].toRack] = a.spine[i];
      }
      c.bottleneckMbit_ = a.bottleneck;
    }
  }
  *out = std::move(c);
  return {};
}

int PathChoice::spineFor(int from, int to) const {
  if (spines_ < 2 || from < 0 || to < 0 || from >= static_cast<int>(rackOf_.size()) ||
      to >= static_cast<int>(rackOf_.size())) {
    return -1;
  }
  const int a = rackOf_[from], b = rackOf_[to];
  if (a == b) return -1;
  switch (policy_) {
    case PathPolicy::kFixed:
      return 0;
    case PathPolicy::kHash:
      return (from + to) % spines_;
    case PathPolicy::kPlanned:
      return rackPairSpine_[a][b];
  }
  return -1;
}

std::string PathChoice::describe() const {
  if (spines_ < 2) return "one path between racks";
  std::string s =
      std::string(pathPolicyName(policy_)) + " over " + std::to_string(spines_) + " spines";
  if (policy_ != PathPolicy::kPlanned) return s;
  for (size_t a = 0; a < rackPairSpine_.size(); ++a) {
    for (size_t b = 0; b < rackPairSpine_[a].size(); ++b) {
      if (rackPairSpine_[a][b] < 0) continue;
      s += " " + rackNames_[a] + "->" + rackNames_[b] + ":s" + std::to_string(rackPairSpine_[a][b]);
    }
  }
  if (std::isfinite(bottleneckMbit_) && bottleneckMbit_ > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " (bottleneck %.0f Mbit/s)", bottleneckMbit_);
    s += buf;
  }
  return s;
}

}  // namespace rina::plan
