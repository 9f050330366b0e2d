#include "plan/network.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plan/ports.h"

namespace rina::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double orInf(double mbit) { return mbit > 0 ? mbit : kInf; }

Status checkRate(double v, const char* what, const std::string& name) {
  if (!std::isfinite(v) || v < 0) {
    return errorf(rinaInvalidArgument, "%s '%s': rate %g is not a finite number >= 0", what,
                  name.c_str(), v);
  }
  return {};
}

}  // namespace

Status networkFromTopology(const topo::TopologySpec& spec, const topo::RackMap& map, Network* out) {
  Network net;
  if (spec.spines < 1) return errorf(rinaInvalidArgument, "topology: spines %d < 1", spec.spines);
  // spine_link_mbit is the ToR-spine link rate where a rack gives none (as in
  // rina-netlab and rina-sim); the spine switch itself is non-blocking.
  net.spineMbit.assign(spec.spines, 0);
  net.hosts.resize(map.rackOf.size());
  for (size_t r = 0; r < map.racks.size(); ++r) {
    const topo::Rack& rack = map.racks[r];
    Network::Rack nr;
    nr.name = rack.name;
    nr.ina = rack.ina;
    nr.hosts = rack.ranks;
    // The spec's host entries, by position, give per-host rates.
    const topo::RackSpec* rs = nullptr;
    for (const topo::RackSpec& s : spec.racks) {
      if (s.name == rack.name) rs = &s;
    }
    nr.uplinkMbit.assign(spec.spines, rack.uplinkMbit);
    for (int s = 0; rs && s < spec.spines; ++s) nr.uplinkMbit[s] = topo::uplinkMbitOn(spec, *rs, s);
    for (size_t k = 0; k < rack.ranks.size(); ++k) {
      Network::Host& h = net.hosts[rack.ranks[k]];
      h.rack = static_cast<int>(r);
      h.linkMbit = rack.hostLinkMbit;
      h.name = "rank" + std::to_string(rack.ranks[k]);
      if (rs && k < rs->hosts.size()) {
        h.name = rs->hosts[k].name;
        if (rs->hosts[k].linkMbit > 0) h.linkMbit = rs->hosts[k].linkMbit;
      }
    }
    net.racks.push_back(std::move(nr));
  }
  RINA_TRY(validateNetwork(net));
  *out = std::move(net);
  return {};
}

Status validateNetwork(const Network& net) {
  const int nh = static_cast<int>(net.hosts.size());
  for (size_t s = 0; s < net.spineMbit.size(); ++s) {
    RINA_TRY(checkRate(net.spineMbit[s], "spine", std::to_string(s)));
  }
  std::vector<int> seen(nh, 0);
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const Network::Rack& rack = net.racks[r];
    if (rack.hosts.empty())
      return errorf(rinaInvalidArgument, "rack '%s' has no hosts", rack.name.c_str());
    if (rack.uplinkMbit.size() != net.spineMbit.size()) {
      return errorf(rinaInvalidArgument, "rack '%s' has %zu uplink rates for %zu spines",
                    rack.name.c_str(), rack.uplinkMbit.size(), net.spineMbit.size());
    }
    for (double u : rack.uplinkMbit) RINA_TRY(checkRate(u, "uplink of rack", rack.name));
    RINA_TRY(checkRate(rack.switchMbit, "switch of rack", rack.name));
    for (int h : rack.hosts) {
      if (h < 0 || h >= nh) {
        return errorf(rinaInvalidArgument, "rack '%s' names host %d of %d", rack.name.c_str(), h,
                      nh);
      }
      if (net.hosts[h].rack != static_cast<int>(r) || seen[h]++) {
        return errorf(rinaInvalidArgument, "host %d ('%s') is not in exactly rack '%s'", h,
                      net.hosts[h].name.c_str(), rack.name.c_str());
      }
    }
  }
  for (int h = 0; h < nh; ++h) {
    if (!seen[h])
      return errorf(rinaInvalidArgument, "host %d ('%s') is in no rack", h,
                    net.hosts[h].name.c_str());
    RINA_TRY(checkRate(net.hosts[h].linkMbit, "host", net.hosts[h].name));
  }
  for (const Network::Probe& p : net.probes) {
    if (p.from < 0 || p.from >= nh || p.to < 0 || p.to >= nh || p.from == p.to) {
      return errorf(rinaInvalidArgument, "probe %d -> %d: not two hosts of %d", p.from, p.to, nh);
    }
    RINA_TRY(checkRate(p.mbit, "probe from host", net.hosts[p.from].name));
    if (p.spine < -1 || p.spine >= net.spines()) {
      return errorf(rinaInvalidArgument, "probe %d -> %d: spine %d of %d", p.from, p.to, p.spine,
                    net.spines());
    }
  }
  return {};
}

std::vector<Member> ringMembers(const Network& net) {
  std::vector<Member> members;
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const Network::Rack& rack = net.racks[r];
    if (rack.ina) {
      members.push_back(Member{rack.name, static_cast<int>(r), true, rack.hosts});
    } else {
      for (int h : rack.hosts) {
        members.push_back(Member{net.hosts[h].name, static_cast<int>(r), false, {h}});
      }
    }
  }
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.agent() < b.agent(); });
  return members;
}

double memberRate(const Network& net, const Member& m, int chunks) {
  if (m.hosts.size() == 1) return orInf(net.hosts[m.agent()].linkMbit);
  std::vector<double> weights;
  bool anyUnknown = false;
  for (int h : m.hosts) {
    weights.push_back(net.hosts[h].linkMbit);
    anyUnknown |= net.hosts[h].linkMbit <= 0;
  }
  if (anyUnknown) return kInf;
  std::vector<int> ports;
  if (!portsPerChunk(weights, std::max(chunks, 1), &ports).ok()) return kInf;
  return portRate(weights, ports);
}

namespace {

// Per spine (one matrix when there are none): hop rates with probes of any
// path and of that spine applied; `path` says whether the spine's own links
// count (false: no spines).
std::vector<RateMatrix> hopRatesOn(const Network& net, const std::vector<Member>& members,
                                   int chunks) {
  const size_t n = members.size();
  std::vector<double> own(n);
  for (size_t i = 0; i < n; ++i) own[i] = memberRate(net, members[i], chunks);
  std::vector<int> memberOf(net.hosts.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    for (int h : members[i].hosts) memberOf[h] = static_cast<int>(i);
  }
  const int S = std::max(net.spines(), 1);
  std::vector<RateMatrix> rate(S, RateMatrix(n, std::vector<double>(n, 0)));
  for (int s = 0; s < S; ++s) {
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (a == b) continue;
        double r = std::min(own[a], own[b]);
        const int ra = members[a].rack, rb = members[b].rack;
        if (ra != rb && net.spines() > 0) {
          r = std::min({r, orInf(net.racks[ra].uplinkMbit[s]), orInf(net.racks[rb].uplinkMbit[s]),
                        orInf(net.spineMbit[s])});
        }
        rate[s][a][b] = r;
      }
    }
    // Probes cap the hop between the members that hold their hosts; one of
    // a spine only where the hop crosses that spine.
    for (const Network::Probe& p : net.probes) {
      const int a = memberOf[p.from], b = memberOf[p.to];
      if (a < 0 || b < 0 || a == b || p.mbit <= 0) continue;
      const bool crosses = members[a].rack != members[b].rack && net.spines() > 0;
      if (p.spine >= 0 && (!crosses || p.spine != s)) continue;
      rate[s][a][b] = std::min(rate[s][a][b], p.mbit);
    }
  }
  return rate;
}

}  // namespace

RateMatrix hopRates(const Network& net, const std::vector<Member>& members, int chunks) {
  std::vector<RateMatrix> bySpine = hopRatesOn(net, members, chunks);
  RateMatrix rate = bySpine[0];
  const size_t n = members.size();
  for (size_t s = 1; s < bySpine.size(); ++s) {
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (members[a].rack != members[b].rack) rate[a][b] = std::max(rate[a][b], bySpine[s][a][b]);
      }
    }
  }
  return rate;
}

std::vector<RateMatrix> hopRatesBySpine(const Network& net, const std::vector<Member>& members,
                                        int chunks) {
  if (net.spines() == 0) return {};
  return hopRatesOn(net, members, chunks);
}

}  // namespace rina::plan
