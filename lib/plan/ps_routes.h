// GRID (IEEE/ACM ToN 2023) for ps-ina: route every worker's gradients to a
// parameter server (PS) through at most one aggregating switch, maximising
// the minimum worker sending rate r.
//
// The instance is generic: capacitated resources (links in one direction, a
// switch's aggregation throughput, the PS's ingress), aggregation nodes (a
// switch that sums what reaches it and sends one aggregated stream along a
// fixed path to the PS) and per worker a list of options (an aggregation
// node or none, and the resources of the path to it). Builders for concrete
// topologies are in plan/ps_routes_topology.h. InArt's several PS are groups:
// group g carries the share s_g of the model to its own PS, and every worker
// chooses one option per group.
//
// LP (the relaxation; f = flow on an option, y_a = rate of a's aggregated
// stream, all >= 0):
//   max r
//   sum_{o in options(w, g)} f_{w,o} = s_g r                for every worker w, group g
//   sum_{o of w aggregating at a} f_{w,o} <= y_a             for every w and node a
//   sum_{o using l} f_{w,o} + sum_{a: l on a's path} y_a <= c_l   for every resource l
// A switch's aggregation capacity is a resource on the options that
// aggregate there. Every integral routing at rate r is feasible here (f = s_g r
// on the chosen option, y_a = s_g r for a used node), so LP >= best integral.
//
// Integral rate: with one option per (worker, group), resource l carries
// load r * k_l where k_l = sum of shares of chosen options using l plus
// shares of the used nodes whose stream uses l; the best rate is
// min_l c_l / k_l (closed form, routingRate()). Randomized rounding picks
// option o of (w, g) with probability f_{w,o} / (s_g r), repeats, keeps the
// best routing and repairs it (repairRouting); the repaired nearest-switch
// routing is one more candidate, so the result is never below ATP's.
#ifndef RINA_LIB_PLAN_PS_ROUTES_H_
#define RINA_LIB_PLAN_PS_ROUTES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace rina::plan {

struct GridInstance {
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
Status validateGrid(const GridInstance& g);

// routing[w][g]: index into workers[w].options of the option chosen for group g.
using Routing = std::vector<std::vector<int>>;

// The largest r the routing carries (closed form above).
double routingRate(const GridInstance& g, const Routing& routing);

struct GridLpResult {
  double rate = 0;                     // LP optimum r*
  std::vector<std::vector<double>> x;  // x[w][o] = f_{w,o} / (s_g r*)
  double seconds = 0;                  // solve time, wall clock
  double cpuSeconds = 0;               // solve time, this thread's CPU
  int rows = 0, cols = 0;
};

bool gridLpAvailable();  // built with GLPK
// rinaInvalidUsage if built without GLPK; rinaInternalError if GLPK fails.
Status solveGridLp(const GridInstance& g, GridLpResult* out);

struct GridRounding {
  Routing routing;
  double rate = 0;         // routingRate(routing), after repair
  double roundedRate = 0;  // the best sample before repair
};
// `samples` roundings from x with the given seed, then repair.
GridRounding roundGrid(const GridInstance& g, const GridLpResult& lp, int samples, uint64_t seed);

// Moves that raise routingRate (or keep it and free a tight resource), until
// none does: close an aggregation node (move all its workers elsewhere at
// once; single moves cannot remove a node's stream into the PS), or change
// one worker's option.
void repairRouting(const GridInstance& g, Routing* routing);

// Baselines. Nearest switch (ATP): each worker aggregates at the first
// aggregation node on its way (the option with an aggregation node and the
// fewest path resources), else goes straight to the PS. No INA: straight to
// the PS, the direct options taken round robin by worker (ECMP-like).
Routing nearestSwitchRouting(const GridInstance& g);
Routing noInaRouting(const GridInstance& g);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PS_ROUTES_H_
