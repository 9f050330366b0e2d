#include "algo/rack/plan_members.h"

#include <algorithm>

#include "algo/engine/partition.h"
#include "algo/rack/rack.h"

namespace rina::algo {
namespace {

// Whether the plan keeps the rack one member (on its switch or its hosts):
// an INA rack of two or more that the plan does not make autonomous.
bool aggregates(const topo::Rack& rack, const plan::Plan& plan) {
  return rack.ina && rack.ranks.size() >= 2 &&
         plan.modeOf(rack.ranks.front()) != plan::RackMode::kAutonomous;
}

// The ranks of the ring member whose agent is `agent` under the plan: its
// rack, or the one autonomous worker.
std::vector<int> memberRanks(const topo::RackMap& map, const plan::Plan& plan, int agent) {
  const topo::Rack& rack = map.racks[map.rackOf[agent]];
  return aggregates(rack, plan) ? rack.ranks : std::vector<int>{agent};
}

const plan::Plan::RackPorts* portsOf(const plan::Plan& plan, int agent) {
  for (const plan::Plan::RackPorts& p : plan.ports) {
    if (p.agent == agent) return &p;
  }
  return nullptr;
}

// Rack indices in the order the plan's ring first reaches them.
std::vector<int> rackOrder(const topo::RackMap& map, const plan::Plan& plan) {
  std::vector<int> order;
  for (int agent : plan.ring) {
    const int rack = map.rackOf[agent];
    if (std::find(order.begin(), order.end(), rack) == order.end()) order.push_back(rack);
  }
  return order;
}

}  // namespace

Status checkPlanFits(const plan::Plan& plan, const topo::RackMap& map) {
  const int n = static_cast<int>(map.rackOf.size());
  const unsigned long long epoch = plan.epoch;
  std::vector<int> agents, sizes;
  for (const topo::Rack& rack : map.racks) {
    const plan::Plan::RackPorts* p =
        rack.ina && rack.ranks.size() >= 2 ? portsOf(plan, rack.ranks.front()) : nullptr;
    if (rack.ina && rack.ranks.size() >= 2 && !p) {
      return errorf(rinaInternalError, "plan #%llu: INA rack '%s' has no mode", epoch,
                    rack.name.c_str());
    }
    if (p && p->mode != plan::RackMode::kAutonomous) {
      agents.push_back(rack.ranks.front());
      sizes.push_back(static_cast<int>(rack.ranks.size()));
      continue;
    }
    for (int r : rack.ranks) agents.push_back(r), sizes.push_back(1);
  }
  std::sort(agents.begin(), agents.end());
  std::vector<int> ring = plan.ring;
  std::sort(ring.begin(), ring.end());
  if (ring != agents) {
    return errorf(rinaInternalError,
                  "plan #%llu: its ring does not visit the %zu ring members its rack modes make of "
                  "the rack map once each (%zu entries)",
                  epoch, agents.size(), plan.ring.size());
  }
  if (plan.hopSpine.size() != plan.ring.size()) {
    return errorf(rinaInternalError, "plan #%llu: %zu hop spines for %zu hops", epoch,
                  plan.hopSpine.size(), plan.ring.size());
  }
  for (int s : plan.hopSpine) {
    if (s < -1) return errorf(rinaInternalError, "plan #%llu: hop spine %d", epoch, s);
  }
  const size_t chunks = static_cast<size_t>(plan::subRings(sizes));
  for (const topo::Rack& rack : map.racks) {
    if (!rack.ina || rack.ranks.size() < 2) continue;
    const plan::Plan::RackPorts* p = portsOf(plan, rack.ranks.front());
    const size_t want = p->mode == plan::RackMode::kAutonomous ? 0 : chunks;
    if (p->portRanks.size() != want) {
      return errorf(rinaInternalError, "plan #%llu: INA rack '%s' (%s) has %zu ports, expected %zu",
                    epoch, rack.name.c_str(), plan::rackModeName(p->mode), p->portRanks.size(),
                    want);
    }
    for (int r : p->portRanks) {
      if (r < 0 || r >= n || map.rackOf[r] != map.rackOf[rack.ranks.front()]) {
        return errorf(rinaInternalError, "plan #%llu: port rank %d is not in rack '%s'", epoch, r,
                      rack.name.c_str());
      }
    }
  }
  return {};
}

std::vector<Member> inaMembers(const topo::RackMap& map, const plan::Plan* plan) {
  if (!plan) return inaMembers(map);
  std::vector<Member> out;
  for (size_t k = 0; k < plan->ring.size(); ++k) {
    const int agent = plan->ring[k];
    const topo::Rack& rack = map.racks[map.rackOf[agent]];
    Member m{memberRanks(map, *plan, agent), false};
    // A rack the plan sums on its hosts runs as a hier rack does, and as a
    // rack does after it lost its switch (RackTask's host phases).
    if (const plan::Plan::RackPorts* p = portsOf(*plan, agent); p && aggregates(rack, *plan)) {
      m.inaRack = p->mode == plan::RackMode::kSwitch;
      m.ports = p->portRanks;
    }
    m.spineToNext = plan->hopSpine[k];
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Member> hierMembers(const topo::RackMap& map, const plan::Plan* plan) {
  if (!plan) return hierMembers(map);
  const std::vector<int> order = rackOrder(map, *plan);
  const int R = static_cast<int>(order.size());
  const int hops = static_cast<int>(plan->ring.size());
  std::vector<Member> out;
  for (int i = 0; i < R; ++i) {
    const topo::Rack& rack = map.racks[order[i]];
    Member m{rack.ranks, false, {}, -1};
    if (const plan::Plan::RackPorts* p = portsOf(*plan, rack.ranks.front()); p && rack.ina) {
      m.ports = p->portRanks;  // empty for a rack rina runs autonomous: rotate
    }
    for (int k = 0; k < hops; ++k) {
      if (map.rackOf[plan->ring[k]] == order[i] &&
          map.rackOf[plan->ring[(k + 1) % hops]] == order[(i + 1) % R]) {
        m.spineToNext = plan->hopSpine[k];
        break;
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::set<int> planPeerRanks(int rank, const topo::RackMap& map, const plan::Plan& plan) {
  std::set<int> peers;
  const int hops = static_cast<int>(plan.ring.size());
  for (int k = 0; k < hops; ++k) {
    const std::vector<int> here = memberRanks(map, plan, plan.ring[k]);
    if (std::find(here.begin(), here.end(), rank) == here.end()) continue;
    for (int d : {-1, 1}) {
      for (int r : memberRanks(map, plan, plan.ring[mod(k + d, hops)])) peers.insert(r);
    }
  }
  const std::vector<int> racks = rackOrder(map, plan);
  const int R = static_cast<int>(racks.size());
  const int mine =
      static_cast<int>(std::find(racks.begin(), racks.end(), map.rackOf[rank]) - racks.begin());
  if (mine < R) {
    for (int d : {-1, 1}) {
      for (int r : map.racks[racks[mod(mine + d, R)]].ranks) peers.insert(r);
    }
  }
  peers.erase(rank);
  return peers;
}

}  // namespace rina::algo
