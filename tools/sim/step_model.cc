#include "sim/step_model.h"

#include <cmath>

#include "sim/flow_engine.h"

namespace rina::sim {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// The host of `member` that ports chunk c. Equal shares rotate (c mod k),
// so consecutive chunks use different hosts; other shares deal the chunks
// to hosts in proportion, in order.
int portOf(const RingMember& m, const std::vector<double>& shares, int c, int chunks) {
  const int k = static_cast<int>(m.hosts.size());
  bool equal = true;
  for (double s : shares) equal = equal && std::abs(s - 1.0 / k) < 1e-12;
  if (equal) return m.hosts[c % k];
  const double x = (c % chunks + 0.5) / chunks;
  double cum = 0;
  for (size_t h = 0; h < shares.size(); ++h) {
    cum += shares[h];
    if (x < cum) return m.hosts[h];
  }
  return m.hosts.back();
}

}  // namespace

bool stepSynchronousAllreduce(Algorithm algo, const SimTopology& topo, double bytes,
                              double stepLatencySec, Planner& planner, StepRun* out,
                              std::string* error) {
  if (algo != Algorithm::kRing && algo != Algorithm::kInaMemberRing) {
    *error = std::string("the step model covers ring and rina, not ") + algorithmName(algo);
    return false;
  }
  std::vector<RingMember> members;
  for (size_t r = 0; r < topo.racks.size(); ++r) {
    const SimRack& rack = topo.racks[r];
    if (algo == Algorithm::kInaMemberRing && rack.ina) {
      members.push_back(RingMember{static_cast<int>(r), true, rack.hosts});
    } else {
      for (int h : rack.hosts) members.push_back(RingMember{static_cast<int>(r), false, {h}});
    }
  }
  const int n = static_cast<int>(members.size());
  const std::vector<int> order = planner.ringOrder(topo, members);
  std::vector<std::vector<double>> shares(n);
  for (int m = 0; m < n; ++m) shares[m] = planner.portShares(topo, members[m]);
  FlowEngine engine;
  for (size_t l = 0; l < topo.linkCapacity.size(); ++l) {
    engine.addLink(topo.linkNames[l], topo.linkCapacity[l]);
  }
  const double chunk = bytes / n;
  auto hop = [&](std::vector<Usage>* u, int from, int to, int fromHost, int toHost, int conn) {
    u->push_back({topo.hosts[fromHost].up, 1});
    u->push_back({topo.hosts[toHost].down, 1});
    const int a = members[from].rack, b = members[to].rack;
    if (a != b) {
      const int s = planner.spineFor(topo, a, b, conn);
      u->push_back({topo.racks[a].up[s], 1});
      u->push_back({topo.racks[b].down[s], 1});
    }
  };
  // The switch sums chunk c of member m: every worker sends, the port gets the sum.
  auto aggregate = [&](std::vector<Usage>* u, int m, int port, bool multicast) {
    const SimRack& rack = topo.racks[members[m].rack];
    for (int h : members[m].hosts) {
      u->push_back({topo.hosts[h].up, 1});
      if (multicast || h == port) u->push_back({topo.hosts[h].down, 1});
    }
    if (rack.aggregation >= 0) u->push_back({rack.aggregation, double(members[m].hosts.size())});
  };
  // flows[q][i]: what position i moves at step q, one chunk's worth.
  std::vector<std::vector<std::vector<Usage>>> flows;
  // Reduce-scatter: at step s position i sends chunk i - s (an INA rack sums
  // it first, its port adding the upstream partial).
  for (int s = 0; s < n - 1; ++s) {
    auto& step = flows.emplace_back(n);
    for (int i = 0; i < n; ++i) {
      const int m = order[i], next = order[(i + 1) % n], c = mod(i - s, n);
      const int port = portOf(members[m], shares[m], c, n);
      const int to = portOf(members[next], shares[next], c, n);
      if (members[m].ina) aggregate(&step[i], m, port, false);
      hop(&step[i], m, next, port, to, i + c);
    }
  }
  // The last sum of each INA rack completes its chunk: multicast to the rack.
  if (algo == Algorithm::kInaMemberRing) {
    auto& step = flows.emplace_back(n);
    for (int i = 0; i < n; ++i) {
      const int m = order[i], c = mod(i + 1, n);
      if (members[m].ina) aggregate(&step[i], m, portOf(members[m], shares[m], c, n), true);
    }
  }
  // All-gather: position i sends chunk i + 1 - t; an INA receiver's port
  // hands it to the switch, which multicasts it to the others.
  for (int t = 0; t < n - 1; ++t) {
    auto& step = flows.emplace_back(n);
    for (int i = 0; i < n; ++i) {
      const int m = order[i], next = order[(i + 1) % n], c = mod(i + 1 - t, n);
      const int port = portOf(members[m], shares[m], c, n);
      const int to = portOf(members[next], shares[next], c, n);
      hop(&step[i], m, next, port, to, i + c);
      if (members[next].ina) {
        step[i].push_back({topo.hosts[to].up, 1});
        for (int h : members[next].hosts) {
          if (h != to) step[i].push_back({topo.hosts[h].down, 1});
        }
      }
    }
  }
  const int steps = static_cast<int>(flows.size());
  for (const auto& step : flows) {
    for (const auto& f : step) engine.startFlow(f, chunk, nullptr);
    if (!engine.run(error)) return false;
  }
  out->steps = steps;
  out->seconds = engine.now() + steps * stepLatencySec;
  return true;
}

}  // namespace rina::sim
