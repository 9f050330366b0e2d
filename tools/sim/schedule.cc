#include "sim/schedule.h"

#include <algorithm>
#include <unordered_map>

namespace rina::sim {
namespace {

// Bytes per link, per byte of the buffer.
class LinkBytes {
 public:
  void add(int link, double bytes) {
    if (link >= 0 && bytes > 0) bytes_[link] += bytes;
  }
  std::vector<Usage> usages() const {
    std::vector<Usage> out;
    out.reserve(bytes_.size());
    for (const auto& [link, b] : bytes_) out.push_back(Usage{link, b});
    std::sort(out.begin(), out.end(),
              [](const Usage& a, const Usage& b) { return a.link < b.link; });
    return out;
  }

 private:
  std::unordered_map<int, double> bytes_;
};

// `bytes` from rack a to rack b (nothing when a == b), split evenly over
// `connections` connections numbered from `first`; the planner picks each
// one's spine (ECMP hashes a connection onto one path).
void crossRacks(const SimTopology& topo, Planner& planner, int a, int b, int first, int connections,
                double bytes, LinkBytes* lb) {
  if (a == b) return;
  for (int c = 0; c < connections; ++c) {
    const int s = planner.spineFor(topo, a, b, first + c);
    lb->add(topo.racks[a].up[s], bytes / connections);
    lb->add(topo.racks[b].down[s], bytes / connections);
  }
}

// Racks in order with the job's hosts in each.
std::vector<std::pair<int, std::vector<int>>> hostsByRack(const SimTopology& topo,
                                                          const std::vector<int>& hosts) {
  std::vector<std::pair<int, std::vector<int>>> out;
  for (int h : hosts) {
    const int r = topo.hosts[h].rack;
    if (out.empty() || out.back().first != r) out.emplace_back(r, std::vector<int>{});
    out.back().second.push_back(h);
  }
  return out;
}

// ring and rina: ring members are INA racks (when `useIna` and the job has
// slots there) and autonomous workers. With R members and chunks C = 1/R,
// every hop carries 2(R-1)C. An INA rack adds, per worker w porting a share
// f_w of the chunks: S up (its contributions), S down (the final chunk and
// the all-gather multicast), and f_w (R-1)C up (handing all-gather chunks
// to the switch); the hop traffic enters and leaves at the ports.
Collective ringOfMembers(const SimTopology& topo, const std::vector<int>& hosts,
                         const InaAccess& ina, Planner& planner, bool useIna) {
  std::vector<RingMember> members;
  for (auto& [rack, rackHosts] : hostsByRack(topo, hosts)) {
    if (useIna && topo.racks[rack].ina && ina.usable(rack)) {
      members.push_back(RingMember{rack, true, rackHosts});
    } else {
      for (int h : rackHosts) members.push_back(RingMember{rack, false, {h}});
    }
  }
  const int n = static_cast<int>(members.size());
  std::vector<std::vector<double>> shares(n);
  for (int m = 0; m < n; ++m) {
    shares[m] = members[m].ina ? planner.portShares(topo, members[m]) : std::vector<double>{1.0};
  }
  const std::vector<int> order = planner.ringOrder(topo, members);
  const double chunk = 1.0 / n, hop = 2.0 * (n - 1) * chunk;
  LinkBytes lb;
  for (int i = 0; i < n && n > 1; ++i) {
    const int a = order[i], b = order[(i + 1) % n];
    for (size_t k = 0; k < members[a].hosts.size(); ++k) {
      lb.add(topo.hosts[members[a].hosts[k]].up, hop * shares[a][k]);
    }
    for (size_t k = 0; k < members[b].hosts.size(); ++k) {
      lb.add(topo.hosts[members[b].hosts[k]].down, hop * shares[b][k]);
    }
    // Chunks move between different port pairs: one connection per port.
    const int conns = static_cast<int>(std::max(members[a].hosts.size(), members[b].hosts.size()));
    // Numbered from the job's first host, so jobs on other hosts do not all
    // land on the same spines.
    crossRacks(topo, planner, members[a].rack, members[b].rack, hosts.front() + i, conns, hop, &lb);
  }
  for (int m = 0; m < n; ++m) {
    if (!members[m].ina) continue;
    const SimRack& rack = topo.racks[members[m].rack];
    const double k = static_cast<double>(members[m].hosts.size());
    for (size_t w = 0; w < members[m].hosts.size(); ++w) {
      const SimHost& h = topo.hosts[members[m].hosts[w]];
      lb.add(h.up, 1.0 + shares[m][w] * (n - 1) * chunk);
      lb.add(h.down, 1.0);
    }
    lb.add(rack.aggregation, k + (n - 1) * chunk);
    lb.add(ina.slotPipe[members[m].rack], 1.0 + (n - 1) * chunk);
  }
  return Collective{lb.usages(), n > 1 ? 2 * (n - 1) : 1, n};
}

// hier: a pipelined chain reduce to the rack's port, a ring over the ports,
// a chain broadcast back.
Collective hierarchical(const SimTopology& topo, const std::vector<int>& hosts, Planner& planner) {
  LinkBytes lb;
  auto racks = hostsByRack(topo, hosts);
  const int n = static_cast<int>(racks.size());
  std::vector<int> ports;
  std::vector<RingMember> members;
  int longestChain = 0;
  for (auto& [rack, rackHosts] : racks) {
    RingMember member{rack, false, rackHosts};
    const std::vector<double> share = planner.portShares(topo, member);
    const size_t port = std::max_element(share.begin(), share.end()) - share.begin();
    ports.push_back(rackHosts[port]);
    members.push_back(RingMember{rack, false, {rackHosts[port]}});
    // Chain: the others in order, ending (reduce) or starting (broadcast) at the port.
    std::vector<int> chain;
    for (int h : rackHosts) {
      if (h != rackHosts[port]) chain.push_back(h);
    }
    longestChain = std::max(longestChain, static_cast<int>(chain.size()));
    for (size_t i = 0; i < chain.size(); ++i) {
      lb.add(topo.hosts[chain[i]].up, 1.0);                            // reduce: towards the port
      if (i > 0) lb.add(topo.hosts[chain[i]].down, 1.0);               // reduce: from the previous
      lb.add(topo.hosts[chain[i]].down, 1.0);                          // broadcast: from port side
      if (i + 1 < chain.size()) lb.add(topo.hosts[chain[i]].up, 1.0);  // broadcast: onwards
    }
    if (!chain.empty()) {
      lb.add(topo.hosts[rackHosts[port]].down, 1.0);
      lb.add(topo.hosts[rackHosts[port]].up, 1.0);
    }
  }
  const std::vector<int> order = planner.ringOrder(topo, members);
  const double hop = 2.0 * (n - 1) / n;
  for (int i = 0; i < n && n > 1; ++i) {
    const int a = order[i], b = order[(i + 1) % n];
    lb.add(topo.hosts[ports[a]].up, hop);
    lb.add(topo.hosts[ports[b]].down, hop);
    crossRacks(topo, planner, members[a].rack, members[b].rack, hosts.front() + i, 1, hop, &lb);
  }
  return Collective{lb.usages(), 2 * (n - 1) + 2 * longestChain, n};
}

// ps-ina: workers send to their aggregation switch (or straight to the
// PSs), each switch sends one sum to the PSs, the PSs send the result back
// to each switch (which multicasts it) and to each direct worker. With P
// servers each holds 1/P of the model (InArt's split, equal here).
Collective psIna(const SimTopology& topo, const std::vector<int>& hosts, const InaAccess& ina,
                 Planner& planner) {
  LinkBytes lb;
  const double share = 1.0 / topo.ps.size();
  // `from` (a rack, and a host link pair when host >= 0) <-> every PS.
  auto toServers = [&](int fromRack, const SimHost* host, int connection) {
    for (const SimHost& ps : topo.ps) {
      if (host) {
        lb.add(host->up, share);
        lb.add(host->down, share);
      }
      lb.add(ps.down, share);
      lb.add(ps.up, share);
      crossRacks(topo, planner, fromRack, ps.rack, connection, 1, share, &lb);
      crossRacks(topo, planner, ps.rack, fromRack, connection, 1, share, &lb);
    }
  };
  std::vector<int> groupSize(topo.racks.size(), 0);
  int direct = 0;
  for (int h : hosts) {
    const SimHost& host = topo.hosts[h];
    int agg = planner.aggregationRack(topo, h);
    if (agg >= 0 && !(topo.racks[agg].ina && ina.usable(agg))) agg = -1;
    if (agg < 0) {
      ++direct;
      toServers(host.rack, &host, h);
      continue;
    }
    ++groupSize[agg];
    lb.add(host.up, 1.0);
    lb.add(host.down, 1.0);
    crossRacks(topo, planner, host.rack, agg, h, 1, 1.0, &lb);
    crossRacks(topo, planner, agg, host.rack, h, 1, 1.0, &lb);
  }
  int groups = 0;
  for (size_t r = 0; r < groupSize.size(); ++r) {
    if (groupSize[r] == 0) continue;
    ++groups;
    lb.add(topo.racks[r].aggregation, groupSize[r] + 1.0);  // contributions + the result
    lb.add(ina.slotPipe[r], 1.0);
    toServers(static_cast<int>(r), nullptr, static_cast<int>(r));
  }
  return Collective{lb.usages(), 2, groups + direct};
}

}  // namespace

bool parseAlgorithm(std::string_view name, Algorithm* out) {
  if (name == "ring") {
    *out = Algorithm::kRing;
  } else if (name == "hier") {
    *out = Algorithm::kHier;
  } else if (name == "rina") {
    *out = Algorithm::kRina;
  } else if (name == "ps-ina") {
    *out = Algorithm::kPsIna;
  } else {
    return false;
  }
  return true;
}

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kHier:
      return "hier";
    case Algorithm::kRina:
      return "rina";
    case Algorithm::kPsIna:
      return "ps-ina";
  }
  return "?";
}

Collective planAllreduce(Algorithm algo, const SimTopology& topo, const std::vector<int>& hosts,
                         const InaAccess& ina, Planner& planner) {
  switch (algo) {
    case Algorithm::kRing:
      return ringOfMembers(topo, hosts, ina, planner, false);
    case Algorithm::kHier:
      return hierarchical(topo, hosts, planner);
    case Algorithm::kRina:
      return ringOfMembers(topo, hosts, ina, planner, true);
    case Algorithm::kPsIna:
      return psIna(topo, hosts, ina, planner);
  }
  return {};
}

}  // namespace rina::sim
