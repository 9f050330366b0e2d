#include "algo/rack/plan_members.h"

#include <algorithm>

#include "algo/engine/partition.h"
#include "algo/rack/rack.h"
#include "topo/ring_members.h"

namespace rina::algo {
namespace {

// The ranks of the ring member whose agent is `agent`: its INA rack, or the
// one autonomous worker.
std::vector<int> memberRanks(const topo::RackMap& map, int agent) {
  const topo::Rack& rack = map.racks[map.rackOf[agent]];
  return rack.ina ? rack.ranks : std::vector<int>{agent};
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

int planChunks(const topo::RackMap& map) { return subRingCount(inaMembers(map)); }

Status checkPlanFits(const plan::Plan& plan, const topo::RackMap& map, int chunks) {
  const int n = static_cast<int>(map.rackOf.size());
  std::vector<int> agents;
  for (const topo::RingMember& m : topo::ringMembers(map)) agents.push_back(m.ranks.front());
  std::sort(agents.begin(), agents.end());
  std::vector<int> ring = plan.ring;
  std::sort(ring.begin(), ring.end());
  if (ring != agents) {
    return errorf(rinaInternalError,
                  "plan #%llu: its ring does not visit the %zu ring members of the rack map once "
                  "each (%zu entries)",
                  static_cast<unsigned long long>(plan.epoch), agents.size(), plan.ring.size());
  }
  if (plan.hopSpine.size() != plan.ring.size()) {
    return errorf(rinaInternalError, "plan #%llu: %zu hop spines for %zu hops",
                  static_cast<unsigned long long>(plan.epoch), plan.hopSpine.size(),
                  plan.ring.size());
  }
  for (int s : plan.hopSpine) {
    if (s < -1) {
      return errorf(rinaInternalError, "plan #%llu: hop spine %d",
                    static_cast<unsigned long long>(plan.epoch), s);
    }
  }
  for (const topo::Rack& rack : map.racks) {
    if (!rack.ina || rack.ranks.size() < 2) continue;
    const plan::Plan::RackPorts* p = portsOf(plan, rack.ranks.front());
    if (!p || static_cast<int>(p->portRanks.size()) != chunks) {
      return errorf(rinaInternalError, "plan #%llu: INA rack '%s' has %zu ports, expected %d",
                    static_cast<unsigned long long>(plan.epoch), rack.name.c_str(),
                    p ? p->portRanks.size() : size_t{0}, chunks);
    }
    for (int r : p->portRanks) {
      if (r < 0 || r >= n || map.rackOf[r] != map.rackOf[rack.ranks.front()]) {
        return errorf(rinaInternalError, "plan #%llu: port rank %d is not in rack '%s'",
                      static_cast<unsigned long long>(plan.epoch), r, rack.name.c_str());
      }
    }
  }
  return {};
}

std::vector<Member> inaMembers(const topo::RackMap& map, const plan::Plan* plan) {
  if (!plan) return inaMembers(map);
  const std::vector<Member> byRank = inaMembers(map);
  std::vector<Member> out;
  for (size_t k = 0; k < plan->ring.size(); ++k) {
    const int agent = plan->ring[k];
    Member m = byRank[memberIndexOf(byRank, agent)];
    if (const plan::Plan::RackPorts* p = portsOf(*plan, agent); p && m.inaRack) {
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
      m.ports = p->portRanks;
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
    const std::vector<int> here = memberRanks(map, plan.ring[k]);
    if (std::find(here.begin(), here.end(), rank) == here.end()) continue;
    for (int d : {-1, 1}) {
      for (int r : memberRanks(map, plan.ring[mod(k + d, hops)])) peers.insert(r);
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
