#include "plan/paths.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace rina::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double orInf(double mbit) { return mbit > 0 ? mbit : kInf; }

// Link loads of an assignment: uplink (rack, spine), downlink (rack, spine)
// and spine, and the resulting bottleneck and how many links sit at it.
struct Loads {
  int spines, racks;
  std::vector<int> up, down, spine;
  Loads(int s, int r) : spines(s), racks(r), up(s * r, 0), down(s * r, 0), spine(s, 0) {}
  void add(const SpineHop& h, int s, int d) {
    up[h.fromRack * spines + s] += d;
    down[h.toRack * spines + s] += d;
    spine[s] += d;
  }
};

std::pair<double, int> evaluate(const Network& net, const std::vector<SpineHop>& hops,
                                const Loads& L, const std::vector<int>& assign) {
  double b = kInf;
  int at = 0;
  auto see = [&](double v) {
    if (v < b)
      b = v, at = 1;
    else if (v == b)
      ++at;
  };
  for (size_t i = 0; i < hops.size(); ++i) see(orInf(hops[i].on(assign[i])));
  for (int r = 0; r < L.racks; ++r) {
    for (int s = 0; s < L.spines; ++s) {
      if (int k = L.up[r * L.spines + s]) see(orInf(net.racks[r].uplinkMbit[s]) / k);
      if (int k = L.down[r * L.spines + s]) see(orInf(net.racks[r].uplinkMbit[s]) / k);
    }
  }
  for (int s = 0; s < L.spines; ++s) {
    if (L.spine[s]) see(orInf(net.spineMbit[s]) / L.spine[s]);
  }
  return {b, at};
}

bool better(std::pair<double, int> a, std::pair<double, int> b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

std::pair<double, int> evaluateAll(const Network& net, const std::vector<SpineHop>& hops,
                                   const std::vector<int>& spine) {
  Loads L(net.spines(), static_cast<int>(net.racks.size()));
  for (size_t i = 0; i < hops.size(); ++i) L.add(hops[i], spine[i], 1);
  return evaluate(net, hops, L, spine);
}

SpineAssignment searchSpines(const Network& net, const std::vector<SpineHop>& hops) {
  const int S = net.spines();
  const size_t n = hops.size();
  SpineAssignment out;
  out.spine.assign(n, 0);
  Loads L(S, static_cast<int>(net.racks.size()));
  long combos = 1;
  for (size_t i = 0; i < n && combos <= kExactSpineAssignments; ++i) combos *= S;
  if (combos <= kExactSpineAssignments) {
    // Odometer over all S^n assignments.
    std::vector<int> cur(n, 0);
    for (size_t i = 0; i < n; ++i) L.add(hops[i], 0, 1);
    std::pair<double, int> best = evaluate(net, hops, L, cur);
    out.spine = cur;
    for (long c = 1; c < combos; ++c) {
      for (size_t i = 0; i < n; ++i) {
        L.add(hops[i], cur[i], -1);
        cur[i] = (cur[i] + 1) % S;
        L.add(hops[i], cur[i], 1);
        if (cur[i] != 0) break;
      }
      auto v = evaluate(net, hops, L, cur);
      if (better(v, best)) best = v, out.spine = cur;
    }
    out.bottleneck = best.first;
    out.exact = true;
    return out;
  }
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return orInf(hops[a].ownMbit) < orInf(hops[b].ownMbit);
  });
  // evaluate() reads every hop's own rate on its spine in the assignment:
  // hops not placed yet sit on their fastest spine (an upper bound of what
  // they can get) and load nothing.
  for (size_t i = 0; i < n; ++i) {
    for (int s = 1; s < S; ++s) {
      if (orInf(hops[i].on(s)) > orInf(hops[i].on(out.spine[i]))) out.spine[i] = s;
    }
  }
  for (size_t i : idx) {
    int pick = 0;
    std::pair<double, int> best{-kInf, 0};
    for (int s = 0; s < S; ++s) {
      out.spine[i] = s;
      L.add(hops[i], s, 1);
      auto v = evaluate(net, hops, L, out.spine);
      L.add(hops[i], s, -1);
      if (better(v, best)) best = v, pick = s;
    }
    out.spine[i] = pick;
    L.add(hops[i], pick, 1);
  }
  auto cur = evaluate(net, hops, L, out.spine);
  for (int pass = 0; pass < 50; ++pass) {
    bool improved = false;
    for (size_t i = 0; i < n; ++i) {
      for (int s = 0; s < S; ++s) {
        const int was = out.spine[i];
        if (s == was) continue;
        L.add(hops[i], was, -1);
        L.add(hops[i], s, 1);
        out.spine[i] = s;
        auto v = evaluate(net, hops, L, out.spine);
        if (better(v, cur)) {
          cur = v, improved = true;
        } else {
          L.add(hops[i], s, -1);
          L.add(hops[i], was, 1);
          out.spine[i] = was;
        }
      }
    }
    if (!improved) break;
  }
  out.bottleneck = cur.first;
  return out;
}

}  // namespace

double spineAssignmentRate(const Network& net, const std::vector<SpineHop>& hops,
                           const std::vector<int>& spine) {
  return evaluateAll(net, hops, spine).first;
}

SpineAssignment assignSpines(const Network& net, const std::vector<SpineHop>& hops,
                             const std::vector<int>& incumbent) {
  const int S = net.spines();
  const size_t n = hops.size();
  bool haveIncumbent = incumbent.size() == n;
  for (int s : incumbent) haveIncumbent &= s >= 0 && s < S;
  SpineAssignment out = searchSpines(net, hops);
  if (haveIncumbent) {
    const auto kept = evaluateAll(net, hops, incumbent);
    if (!better(evaluateAll(net, hops, out.spine), kept)) {
      out.spine = incumbent;
      out.bottleneck = kept.first;
    }
  }
  return out;
}

}  // namespace rina::plan
