// What the planner knows about the cluster: a two-level leaf-spine network
// (hosts under top-of-rack switches, racks joined by spines) with a rate on
// every link, from the topology file and overwritten by measured rates.
// Ring members are derived from it: an INA rack is one member, every host of
// a rack without INA is a member of its own.
#ifndef RINA_LIB_PLAN_NETWORK_H_
#define RINA_LIB_PLAN_NETWORK_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "plan/ring_order.h"
#include "topo/rack_map.h"

namespace rina::plan {

// Rates are Mbit/s per direction; 0 means unknown (no limit to the planner,
// weight 1 for port shares).
struct Network {
  struct Host {
    std::string name;
    int rack = 0;
    double linkMbit = 0;  // host <-> ToR
  };
  struct Rack {
    std::string name;
    bool ina = false;
    std::vector<int> hosts;          // indices into hosts (= ranks), ascending
    std::vector<double> uplinkMbit;  // per spine: ToR <-> spine s
    // INA racks: the rate the switch takes in the rack's datagrams at, in
    // Mbit/s of payload summed over its workers (measured: what the
    // workers' switch calls achieved, link_stats.h); 0 = unknown, no limit.
    double switchMbit = 0;
  };
  // A measured rate of the hop from one host to another (a probe between
  // candidate pairs); caps the hop between their members: over every path
  // (spine -1), or over spine s only (the measure of that path, which says
  // nothing of the others).
  struct Probe {
    int from = 0, to = 0;
    double mbit = 0;
    int spine = -1;
  };
  std::vector<Host> hosts;  // index = rank
  std::vector<Rack> racks;
  std::vector<double> spineMbit;  // per spine: capacity shared by every hop through it
  std::vector<Probe> probes;

  int spines() const { return static_cast<int>(spineMbit.size()); }
};

// From the rack map (ranks per rack) and the spec's rates: host link rates
// (the host's, else the rack's default), uplinks (per spine: the rack's
// uplink_mbit, else spine_link_mbit, each a rate or a list per spine;
// topo::uplinkMbitOn) and spec.spines spines, each non-blocking (0).
Status networkFromTopology(const topo::TopologySpec& spec, const topo::RackMap& map, Network* out);

// Checks indices and rates (finite, >= 0); rinaInvalidArgument naming the
// offending host, rack or probe.
Status validateNetwork(const Network& net);

struct Member {
  std::string name;  // rack name (a rack that aggregates) or host name
  int rack = 0;
  bool ina = false;        // summed by its switch
  std::vector<int> hosts;  // the rack's hosts (a rack that aggregates) or the one host
  int agent() const { return hosts.front(); }
};

// INA racks as one member each, other hosts one each (the rule of
// topo::ringMembers, which works on a RackMap); ordered by first rank.
std::vector<Member> ringMembers(const Network& net);

// A member's own send (= receive) rate: its host link, or for an INA rack the
// port rate of its hosts for `chunks` chunks (plan/ports.h).
double memberRate(const Network& net, const Member& m, int chunks);

// rate[a][b] for members a != b, before hops share uplinks and spines:
// min(member rates, best single spine path between different racks, probes).
// Unknown (0) rates count as +infinity. Between different racks this is the
// largest hopRatesBySpine entry.
RateMatrix hopRates(const Network& net, const std::vector<Member>& members, int chunks);

// rate[s][a][b]: the hop a -> b over spine s, before sharing: min(member
// rates, both racks' uplinks to s, spine s, probes of any path and of
// spine s). Members in one rack cross no spine: hopRates' entry on every s.
// One matrix per spine (none when net has no spines).
std::vector<RateMatrix> hopRatesBySpine(const Network& net, const std::vector<Member>& members,
                                        int chunks);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_NETWORK_H_
