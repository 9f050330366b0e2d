#include "sim/plan_adapter.h"

#include <algorithm>

#include "plan/paths.h"
#include "plan/ports.h"
#include "plan/rack_modes.h"
#include "plan/ring_order.h"

namespace rina::sim {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes/s per Mbit/s
// Port shares are counts of this many chunks (fine enough for a fluid model).
constexpr int64_t kShareChunks = 1024;

}  // namespace

plan::Network planNetworkOf(const SimTopology& topo) {
  plan::Network net;
  net.spineMbit.assign(topo.spines, 0);
  for (const SimHost& h : topo.hosts) {
    net.hosts.push_back(plan::Network::Host{h.name, h.rack, h.rate / kMbit});
  }
  for (const SimRack& r : topo.racks) {
    plan::Network::Rack rack;
    rack.name = r.name;
    rack.ina = r.ina;
    rack.hosts = r.hosts;
    for (int s = 0; s < topo.spines; ++s) {
      rack.uplinkMbit.push_back(std::min(topo.linkCapacity[r.up[s]], topo.linkCapacity[r.down[s]]) /
                                kMbit);
    }
    net.racks.push_back(std::move(rack));
  }
  return net;
}

std::vector<plan::RackMode> LibPlanner::rackModes(const SimTopology& topo,
                                                  const std::vector<JobRack>& racks, double bytes) {
  plan::Network net;
  net.spineMbit.assign(topo.spines, 0);
  for (const JobRack& jr : racks) {
    const SimRack& r = topo.racks[jr.rack];
    plan::Network::Rack rack;
    rack.name = r.name;
    rack.ina = jr.switchUsable;
    for (int s = 0; s < topo.spines; ++s) {
      rack.uplinkMbit.push_back(std::min(topo.linkCapacity[r.up[s]], topo.linkCapacity[r.down[s]]) /
                                kMbit);
    }
    // The switch term is (k + 1)/A per byte; the slots carry 2 per byte.
    const double k = static_cast<double>(jr.hosts.size());
    double bps = topo.sw.slotThroughput(topo.sw.window) * (k + 1) / 2;
    if (r.aggregation >= 0) bps = std::min(bps, topo.linkCapacity[r.aggregation]);
    rack.switchMbit = bps / kMbit;
    for (int h : jr.hosts) {
      rack.hosts.push_back(static_cast<int>(net.hosts.size()));
      net.hosts.push_back(plan::Network::Host{
          topo.hosts[h].name, static_cast<int>(net.racks.size()), topo.hosts[h].rate / kMbit});
    }
    net.racks.push_back(std::move(rack));
  }
  plan::ChoiceOptions o;
  o.model = model_;
  o.bytes = bytes;
  o.forceIna = forceIna_;
  plan::RackChoice choice;
  if (!plan::chooseRackModes(net, o, &choice).ok()) return Planner::rackModes(topo, racks, bytes);
  shares_.clear();
  for (size_t i = 0; i < racks.size(); ++i) shares_[racks[i].rack] = choice.shares[i];
  lastChoice_ = plan::describeChoice(net, choice, bytes, model_);
  return choice.modes;
}

std::vector<int> LibPlanner::ringOrder(const SimTopology& topo,
                                       const std::vector<RingMember>& members) {
  const plan::Network net = planNetworkOf(topo);
  std::vector<plan::Member> pm;
  for (const RingMember& m : members) {
    pm.push_back(plan::Member{topo.racks[m.rack].name, m.rack, m.ina, m.hosts});
  }
  const int chunks = std::max<int>(1, static_cast<int>(members.size()));
  const plan::RateMatrix rates = plan::hopRates(net, pm, chunks);
  std::vector<int> order = plan::bestRingOrder(rates).order;
  if (order.size() != members.size()) return fallback_.ringOrder(topo, members);
  // Spines for the inter-rack hops of this order.
  hopSpine_.clear();
  std::vector<plan::SpineHop> hops;
  const size_t n = order.size();
  for (size_t k = 0; k < n && n > 1; ++k) {
    const int a = order[k], b = order[(k + 1) % n];
    if (members[a].rack == members[b].rack) continue;
    hops.push_back(plan::SpineHop{members[a].rack, members[b].rack, rates[a][b]});
  }
  bottleneckMbit_ = 0;
  if (!hops.empty() && topo.spines > 0) {
    const plan::SpineAssignment sa = plan::assignSpines(net, hops);
    for (size_t i = 0; i < hops.size(); ++i) {
      hopSpine_.emplace(std::pair{hops[i].fromRack, hops[i].toRack}, sa.spine[i]);
    }
    bottleneckMbit_ = sa.bottleneck;
  }
  return order;
}

std::vector<double> LibPlanner::portShares(const SimTopology& topo, const RingMember& member) {
  if (auto it = shares_.find(member.rack);
      it != shares_.end() && it->second.size() == member.hosts.size()) {
    return it->second;
  }
  std::vector<double> weights;
  for (int h : member.hosts) weights.push_back(topo.hosts[h].rate);
  std::vector<int64_t> counts;
  if (!plan::apportion(weights, kShareChunks, &counts).ok()) {
    return fallback_.portShares(topo, member);
  }
  std::vector<double> shares;
  for (int64_t c : counts) shares.push_back(static_cast<double>(c) / kShareChunks);
  return shares;
}

int LibPlanner::spineFor(const SimTopology& topo, int from, int to, int connection) {
  auto it = hopSpine_.find({from, to});
  return it != hopSpine_.end() ? it->second : fallback_.spineFor(topo, from, to, connection);
}

int LibPlanner::aggregationRack(const SimTopology& topo, int host) {
  hopSpine_.clear();
  return fallback_.aggregationRack(topo, host);
}

}  // namespace rina::sim
