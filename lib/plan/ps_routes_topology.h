// GRID instances (plan/ps_routes.h) for concrete topologies: a k-ary fat tree
// (the GRID paper's setting, perf/plan) and the leaf-spine Network of the
// planner (rina-plan --grid). Traffic flows only towards the PS hosts, so
// only the links in that direction are resources.
#ifndef RINA_LIB_PLAN_PS_ROUTES_TOPOLOGY_H_
#define RINA_LIB_PLAN_PS_ROUTES_TOPOLOGY_H_

#include <cstdint>
#include <vector>

#include "plan/network.h"
#include "plan/ps_routes.h"

namespace rina::plan {

// k-ary fat tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2
// cores, k^3/4 hosts (128 for k = 8); host h sits under edge h / (k/2).
// Aggregation capacities are per switch, 0 = that switch cannot aggregate.
// Options per worker and PS: aggregate at its edge switch, at an aggregation
// switch of its pod (k/2 choices), at a core (k^2/4 choices, other pods
// only), at the PS's edge switch (over any shortest path), or none (any
// shortest path). A node's aggregated stream takes one fixed shortest path,
// spread over the uplinks by switch index.
struct FatTreeSpec {
  int k = 8;
  std::vector<double> hostMbit;     // per host; the PS's is its ingress
  double edgeAggMbit = 100000;      // edge <-> aggregation links
  double aggCoreMbit = 100000;      // aggregation <-> core links
  std::vector<double> edgeAggCap;   // per edge switch (k^2/2), Mbit/s of input summed
  std::vector<double> aggAggCap;    // per aggregation switch (k^2/2)
  std::vector<double> coreAggCap;   // per core (k^2/4)
  std::vector<int> psHosts{0};      // one per group (InArt: several)
  std::vector<double> shares{1.0};  // model share per PS
};
Status buildFatTreeRoutingProblem(const FatTreeSpec& spec, PsRoutingProblem* out);

// Random heterogeneous rates for experiments: host links drawn uniformly from
// hostRates (default {10, 25, 40, 100} Gbit/s; the PS, host 0, gets 100),
// a fraction of the switches aggregating with capacity drawn from
// {100, 200, 400} Gbit/s.
FatTreeSpec randomFatTree(int k, double inaFraction, uint64_t seed,
                          const std::vector<double>& hostRates = {10000, 25000, 40000, 100000});

// The planner's leaf-spine network with PS host ps: options aggregate at the
// worker's ToR (if INA), at a spine (if spineAggMbit > 0), at the PS's ToR
// (if INA), or none, over any spine. aggMbit: per rack, the ToR's
// aggregation capacity (0 = unlimited).
struct LeafSpineRoutingSpec {
  int psHost = 0;
  std::vector<double> rackAggMbit;  // per rack; empty = all unlimited
  double spineAggMbit = 0;          // > 0: spines aggregate with this capacity
};
Status buildLeafSpineRoutingProblem(const Network& net, const LeafSpineRoutingSpec& spec,
                                    PsRoutingProblem* out);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PS_ROUTES_TOPOLOGY_H_
