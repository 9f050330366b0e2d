// Routes for ps-ina (GRID, IEEE/ACM ToN 2023): every worker's gradients to a
// parameter server through at most one aggregating switch, maximising the
// minimum worker rate; the LP, the closed-form rate, rounding and repair are
// in docs/planning.md ("GRID"). Builders for topologies: ps_routes_topology.h.
#ifndef RINA_LIB_PLAN_PS_ROUTES_H_
#define RINA_LIB_PLAN_PS_ROUTES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace rina::plan {

struct PsRoutingProblem {
  struct Resource {
    std::string name;
    double capacity = 0;  // Mbit/s, > 0
  };
  struct AggNode {
    std::string name;
    int group = 0;             // which PS its stream goes to
    std::vector<int> outPath;  // resources of the aggregated stream to that PS
  };
  struct Option {
    int group = 0;
    int aggNode = -1;       // -1: straight to the PS, no aggregation
    std::vector<int> path;  // resources used by the worker's own flow
  };
  struct Worker {
    std::string name;
    std::vector<Option> options;
  };
  std::vector<Resource> resources;
  std::vector<AggNode> nodes;
  std::vector<Worker> workers;
  std::vector<double> shares{1.0};  // per group; sums to 1
};

// Indices in range, capacities finite and > 0, shares > 0 summing to 1, every
// worker with an option in every group, options' nodes in their group.
Status validateRoutingProblem(const PsRoutingProblem& g);

// routing[w][g]: index into workers[w].options of the option chosen for group g.
using Routing = std::vector<std::vector<int>>;

// The largest r the routing carries (closed form above).
double routingRate(const PsRoutingProblem& g, const Routing& routing);

struct RoutingLpResult {
  double rate = 0;                     // LP optimum r*
  std::vector<std::vector<double>> x;  // x[w][o] = f_{w,o} / (s_g r*)
  double seconds = 0;                  // solve time, wall clock
  double cpuSeconds = 0;               // solve time, this thread's CPU
  int rows = 0, cols = 0;
};

bool routingLpAvailable();  // built with GLPK
// rinaInvalidUsage if built without GLPK; rinaInternalError if GLPK fails.
Status solveRoutingLp(const PsRoutingProblem& g, RoutingLpResult* out);

struct RoundedRouting {
  Routing routing;
  double rate = 0;         // routingRate(routing), after repair
  double roundedRate = 0;  // the best sample before repair
};
// `samples` roundings from x with the given seed, then repair.
RoundedRouting roundRouting(const PsRoutingProblem& g, const RoutingLpResult& lp, int samples,
                            uint64_t seed);

// Moves that raise routingRate (or keep it and free a tight resource), until
// none does: close an aggregation node (move all its workers elsewhere at
// once; single moves cannot remove a node's stream into the PS), or change
// one worker's option.
void repairRouting(const PsRoutingProblem& g, Routing* routing);

// Baselines. Nearest switch (ATP): each worker aggregates at the first
// aggregation node on its way (the option with an aggregation node and the
// fewest path resources), else goes straight to the PS. No INA: straight to
// the PS, the direct options taken round robin by worker (ECMP-like).
Routing nearestSwitchRouting(const PsRoutingProblem& g);
Routing noInaRouting(const PsRoutingProblem& g);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PS_ROUTES_H_
