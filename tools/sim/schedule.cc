#include "sim/schedule.h"

#include <algorithm>
#include <iterator>
#include <string>
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

// The spine of each of `connections` connections from rack a to rack b,
// numbered from `first` (the planner picks each one's spine: ECMP hashes a
// connection onto one path); -1 for all when a == b.
std::vector<int> spinesOf(const SimTopology& topo, Planner& planner, int a, int b, int first,
                          int connections) {
  std::vector<int> out(connections, -1);
  for (int c = 0; a != b && c < connections; ++c) out[c] = planner.spineFor(topo, a, b, first + c);
  return out;
}

// `bytes` from rack a to rack b (nothing when a == b), split evenly over
// the connections whose spines are `spines`.
void crossRacks(const SimTopology& topo, int a, int b, const std::vector<int>& spines, double bytes,
                LinkBytes* lb) {
  if (a == b) return;
  for (int s : spines) {
    lb->add(topo.racks[a].up[s], bytes / spines.size());
    lb->add(topo.racks[b].down[s], bytes / spines.size());
  }
}

void crossRacks(const SimTopology& topo, Planner& planner, int a, int b, int first, int connections,
                double bytes, LinkBytes* lb) {
  crossRacks(topo, a, b, spinesOf(topo, planner, a, b, first, connections), bytes, lb);
}

// A host's share of a hop sent (received) over the NICs of the hop's
// connections' spines, evenly (multi-rail hosts; one NIC: all on it).
void hostUp(const SimHost& h, const std::vector<int>& spines, double bytes, LinkBytes* lb) {
  for (int s : spines) lb->add(h.upOn(s), bytes / spines.size());
}
void hostDown(const SimHost& h, const std::vector<int>& spines, double bytes, LinkBytes* lb) {
  for (int s : spines) lb->add(h.downOn(s), bytes / spines.size());
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
// slots there) and autonomous workers, or, as the planner says
// (Planner::rackModes), a rack summed on its hosts, or an INA rack's hosts
// autonomous. With R members and chunks C = 1/R, every hop carries
// 2(R-1)C. An INA rack adds, per worker w porting a share f_w of the
// chunks: (1 - f_w) S up with port markers, else S (its contributions to
// the switch's reduce-scatter), S down (its share's sums and the others'
// final pieces), and f_w S up (every final piece of its share goes to the
// switch's multicast, the rack's own chunk included:
// lib/algo/rack/member_ring.cc, per INA worker S (1 + 2(R-1)/(Rn)) up,
// without markers S (1 + 1/n + 2(R-1)/(Rn)); one INA rack alone: S up, one
// switch call). A rack summed
// on its hosts sends each worker's (1 - f_w) S to the ports and the ports'
// final pieces back, (n - 1) f_w S each way at a port. The hop traffic
// enters and leaves at the ports, over the NIC of the hop's spine on
// multi-rail hosts (switch and in-rack traffic stays on NIC 0).
Collective ringOfMembers(const SimTopology& topo, const std::vector<int>& hosts,
                         const InaAccess& ina, Planner& planner, bool useIna, double bytes) {
  std::vector<JobRack> racks;
  for (auto& [rack, rackHosts] : hostsByRack(topo, hosts)) {
    racks.push_back(JobRack{rack, rackHosts, useIna && topo.racks[rack].ina && ina.usable(rack)});
  }
  std::vector<plan::RackMode> modes(racks.size(), plan::RackMode::kAutonomous);
  if (useIna) modes = planner.rackModes(topo, racks, bytes);
  std::vector<RingMember> members;
  for (size_t i = 0; i < racks.size(); ++i) {
    const JobRack& r = racks[i];
    const bool several = r.hosts.size() >= 2;
    if (modes[i] == plan::RackMode::kSwitch && r.switchUsable && several) {
      members.push_back(RingMember{r.rack, true, r.hosts});
    } else if (modes[i] == plan::RackMode::kHosts && several) {
      members.push_back(RingMember{r.rack, false, r.hosts, true});
    } else {
      for (int h : r.hosts) members.push_back(RingMember{r.rack, false, {h}});
    }
  }
  const int n = static_cast<int>(members.size());
  std::vector<std::vector<double>> shares(n);
  for (int m = 0; m < n; ++m) {
    shares[m] = members[m].hosts.size() > 1 ? planner.portShares(topo, members[m])
                                            : std::vector<double>{1.0};
  }
  const std::vector<int> order = planner.ringOrder(topo, members);
  const double chunk = 1.0 / n, hop = 2.0 * (n - 1) * chunk;
  LinkBytes lb;
  for (int i = 0; i < n && n > 1; ++i) {
    const int a = order[i], b = order[(i + 1) % n];
    // Chunks move between different port pairs: one connection per port.
    // Numbered from the job's first host, so jobs on other hosts do not all
    // land on the same spines.
    const int conns = static_cast<int>(std::max(members[a].hosts.size(), members[b].hosts.size()));
    const std::vector<int> spines =
        spinesOf(topo, planner, members[a].rack, members[b].rack, hosts.front() + i, conns);
    for (size_t k = 0; k < members[a].hosts.size(); ++k) {
      hostUp(topo.hosts[members[a].hosts[k]], spines, hop * shares[a][k], &lb);
    }
    for (size_t k = 0; k < members[b].hosts.size(); ++k) {
      hostDown(topo.hosts[members[b].hosts[k]], spines, hop * shares[b][k], &lb);
    }
    crossRacks(topo, members[a].rack, members[b].rack, spines, hop, &lb);
  }
  // One member alone (an INA rack) is one switch call: every worker sends S
  // and gets the sum back, no multicast.
  const double gather = n > 1 ? 1.0 : 0.0;
  for (int m = 0; m < n; ++m) {
    const double k = static_cast<double>(members[m].hosts.size());
    if (members[m].hostSum) {
      for (size_t w = 0; w < members[m].hosts.size(); ++w) {
        const SimHost& h = topo.hosts[members[m].hosts[w]];
        const double f = shares[m][w];
        lb.add(h.up, (1 - f) + (k - 1) * f);
        lb.add(h.down, (k - 1) * f + (1 - f));
      }
      continue;
    }
    if (!members[m].ina) continue;
    const SimRack& rack = topo.racks[members[m].rack];
    for (size_t w = 0; w < members[m].hosts.size(); ++w) {
      const SimHost& h = topo.hosts[members[m].hosts[w]];
      const double own = ina.portMarkers ? gather * shares[m][w] : 0.0;
      lb.add(h.up, 1.0 - own + gather * shares[m][w]);
      lb.add(h.down, 1.0);
    }
    // k contributions summed, and (with a ring) the whole buffer multicast
    // once; both run on the job's slots.
    lb.add(rack.aggregation, k + gather);
    lb.add(ina.slotPipe[members[m].rack], 1.0 + gather);
  }
  const int steps = n > 1 ? 2 * (n - 1) : members[0].ina ? 1 : 2;
  return Collective{lb.usages(), steps, n};
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
    const std::vector<int> spines =
        spinesOf(topo, planner, members[a].rack, members[b].rack, hosts.front() + i, 1);
    hostUp(topo.hosts[ports[a]], spines, hop, &lb);
    hostDown(topo.hosts[ports[b]], spines, hop, &lb);
    crossRacks(topo, members[a].rack, members[b].rack, spines, hop, &lb);
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

bool parseSimulatedAlgorithm(std::string_view name, Algorithm* out) {
  Algorithm a;
  if (!algo::parseAlgorithm(std::string(name), &a).ok()) return false;
  if (std::find(std::begin(kSimulatedAlgorithms), std::end(kSimulatedAlgorithms), a) ==
      std::end(kSimulatedAlgorithms)) {
    return false;
  }
  *out = a;
  return true;
}

std::string simulatedAlgorithmNames() {
  std::string names;
  for (const algo::AlgorithmEntry& e : algo::kAlgorithmTable) {
    if (std::find(std::begin(kSimulatedAlgorithms), std::end(kSimulatedAlgorithms), e.algorithm) ==
        std::end(kSimulatedAlgorithms)) {
      continue;
    }
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

Collective planAllreduce(Algorithm algo, const SimTopology& topo, const std::vector<int>& hosts,
                         const InaAccess& ina, Planner& planner, double bytes) {
  switch (algo) {
    case Algorithm::kRing:
      return ringOfMembers(topo, hosts, ina, planner, false, bytes);
    case Algorithm::kHier:
      return hierarchical(topo, hosts, planner);
    case Algorithm::kInaMemberRing:
      return ringOfMembers(topo, hosts, ina, planner, true, bytes);
    case Algorithm::kPsIna:
      return psIna(topo, hosts, ina, planner);
    case Algorithm::kAuto:
    case Algorithm::kRecursiveDoubling:
    case Algorithm::kOneShot:
      break;  // not simulated: parseSimulatedAlgorithm refuses them
  }
  return {};
}

}  // namespace rina::sim
