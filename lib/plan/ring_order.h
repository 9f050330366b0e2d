// Ring order over ring members that maximises the bottleneck hop rate (the
// bottleneck travelling-salesman problem on a directed rate matrix).
//
// Exact for up to kExactRingMembers members: a Held-Karp dynamic program over
// subsets, first for the best bottleneck B*, then (among tours whose hops are
// all >= B*) for the largest sum of hop rates, so ties prefer fast hops.
// Beyond that a heuristic: greedy "fastest next hop" tours from every start,
// improved by 2-opt and node moves under the lexicographic objective
// (bottleneck, hops at the bottleneck, sum); then a binary search on the
// bottleneck over the distinct hop rates, each threshold t tested by
// Warnsdorff-rule construction plus local search on the number of hops < t.
// Its gap to the exact answer on random instances is measured in
// tests/plan/plan_ring_test.cc (docs/planning.md); ringUpperBound() bounds
// it above.
#ifndef RINA_LIB_PLAN_RING_ORDER_H_
#define RINA_LIB_PLAN_RING_ORDER_H_

#include <vector>

namespace rina::plan {

// rate[i][j]: Mbit/s of the hop i -> j (i != j); the diagonal is ignored.
using RateMatrix = std::vector<std::vector<double>>;

inline constexpr int kExactRingMembers = 12;

struct RingOrder {
  std::vector<int> order;  // a cycle; order.front() == 0
  double bottleneck = 0;   // min over hops order[k] -> order[k+1] (cyclic)
  double sum = 0;          // sum of the hop rates
  bool exact = false;      // proven optimal bottleneck (and best sum among those)
};

// The bottleneck and sum of a given cycle.
double cycleBottleneck(const RateMatrix& rate, const std::vector<int>& order);
double cycleSum(const RateMatrix& rate, const std::vector<int>& order);

// Exact (n <= kExactRingMembers) or heuristic (larger n). n = 0 or 1: the
// trivial ring with bottleneck +inf.
RingOrder bestRingOrder(const RateMatrix& rate);

// Exposed for tests: each method on its own.
RingOrder exactRingOrder(const RateMatrix& rate);  // n <= kExactRingMembers
RingOrder heuristicRingOrder(const RateMatrix& rate);

// An upper bound on any cycle's bottleneck: every member needs one outgoing
// and one incoming hop, so B* <= min_i min(max_j rate[i][j], max_j rate[j][i]).
double ringUpperBound(const RateMatrix& rate);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_RING_ORDER_H_
