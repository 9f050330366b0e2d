#include "plan/ps_routes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace rina::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// (rate, resources at that rate): fewer tight resources is a step towards a
// higher rate, which lets single moves climb off plateaus.
std::pair<double, int> score(const PsRoutingProblem& g, const Routing& routing) {
  std::vector<double> load(g.resources.size(), 0);
  std::vector<char> used(g.nodes.size(), 0);
  for (size_t w = 0; w < g.workers.size(); ++w) {
    for (size_t grp = 0; grp < routing[w].size(); ++grp) {
      const PsRoutingProblem::Option& o = g.workers[w].options[routing[w][grp]];
      for (int l : o.path) load[l] += g.shares[o.group];
      if (o.aggNode >= 0) used[o.aggNode] = 1;
    }
  }
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    if (!used[a]) continue;
    for (int l : g.nodes[a].outPath) load[l] += g.shares[g.nodes[a].group];
  }
  double rate = kInf;
  int at = 0;
  for (size_t l = 0; l < load.size(); ++l) {
    if (load[l] <= 0) continue;
    double v = g.resources[l].capacity / load[l];
    if (v < rate * (1 - 1e-12))
      rate = v, at = 1;
    else if (v <= rate * (1 + 1e-12))
      ++at;
  }
  return {rate, at};
}

bool better(std::pair<double, int> a, std::pair<double, int> b) {
  if (a.first > b.first * (1 + 1e-12)) return true;
  return a.first >= b.first * (1 - 1e-12) && a.second < b.second;
}

}  // namespace

Status validateRoutingProblem(const PsRoutingProblem& g) {
  const int nr = static_cast<int>(g.resources.size());
  const int nn = static_cast<int>(g.nodes.size());
  const int ng = static_cast<int>(g.shares.size());
  if (ng < 1) return errorf(rinaInvalidArgument, "GRID: no groups (shares is empty)");
  double total = 0;
  for (int k = 0; k < ng; ++k) {
    if (!(g.shares[k] > 0) || !std::isfinite(g.shares[k])) {
      return errorf(rinaInvalidArgument, "GRID: share of group %d is %g (must be > 0)", k,
                    g.shares[k]);
    }
    total += g.shares[k];
  }
  if (std::fabs(total - 1) > 1e-9)
    return errorf(rinaInvalidArgument, "GRID: shares sum to %g, not 1", total);
  for (const auto& r : g.resources) {
    if (!(r.capacity > 0) || !std::isfinite(r.capacity)) {
      return errorf(rinaInvalidArgument,
                    "GRID: resource '%s' has capacity %g (must be finite, > 0)", r.name.c_str(),
                    r.capacity);
    }
  }
  auto checkPath = [&](const std::vector<int>& path, const std::string& who) -> Status {
    for (int l : path) {
      if (l < 0 || l >= nr)
        return errorf(rinaInvalidArgument, "GRID: %s uses resource %d of %d", who.c_str(), l, nr);
    }
    return {};
  };
  for (const auto& a : g.nodes) {
    if (a.group < 0 || a.group >= ng) {
      return errorf(rinaInvalidArgument, "GRID: node '%s' is in group %d of %d", a.name.c_str(),
                    a.group, ng);
    }
    RINA_TRY(checkPath(a.outPath, "node '" + a.name + "'"));
  }
  if (g.workers.empty()) return errorf(rinaInvalidArgument, "GRID: no workers");
  for (const auto& w : g.workers) {
    std::vector<int> perGroup(ng, 0);
    for (const auto& o : w.options) {
      if (o.group < 0 || o.group >= ng) {
        return errorf(rinaInvalidArgument, "GRID: worker '%s' has an option in group %d of %d",
                      w.name.c_str(), o.group, ng);
      }
      if (o.aggNode >= nn || o.aggNode < -1 ||
          (o.aggNode >= 0 && g.nodes[o.aggNode].group != o.group)) {
        return errorf(rinaInvalidArgument, "GRID: worker '%s' has an option with bad node %d",
                      w.name.c_str(), o.aggNode);
      }
      RINA_TRY(checkPath(o.path, "worker '" + w.name + "'"));
      ++perGroup[o.group];
    }
    for (int k = 0; k < ng; ++k) {
      if (!perGroup[k]) {
        return errorf(rinaInvalidArgument, "GRID: worker '%s' has no option for group %d",
                      w.name.c_str(), k);
      }
    }
  }
  return {};
}

double routingRate(const PsRoutingProblem& g, const Routing& routing) {
  return score(g, routing).first;
}

namespace {

// Closing an aggregation node: single-worker moves cannot remove a node's
// stream (the PS ingress pays for every used node) unless the last worker
// leaves, so also try moving every worker of node a at once, each to the
// option (in the same group) that is best for the routing so far.
bool closeNodes(const PsRoutingProblem& g, Routing* routing, std::pair<double, int>* cur) {
  bool improved = false;
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    Routing trial = *routing;
    bool moved = false, stuck = false;
    for (size_t w = 0; w < g.workers.size() && !stuck; ++w) {
      for (size_t grp = 0; grp < trial[w].size() && !stuck; ++grp) {
        if (g.workers[w].options[trial[w][grp]].aggNode != static_cast<int>(a)) continue;
        const int group = g.workers[w].options[trial[w][grp]].group;
        int pick = -1;
        std::pair<double, int> best{-kInf, 0};
        for (size_t o = 0; o < g.workers[w].options.size(); ++o) {
          const auto& opt = g.workers[w].options[o];
          if (opt.group != group || opt.aggNode == static_cast<int>(a)) continue;
          trial[w][grp] = static_cast<int>(o);
          auto v = score(g, trial);
          if (pick < 0 || better(v, best)) best = v, pick = static_cast<int>(o);
        }
        stuck = pick < 0;  // no other way for this worker: node a stays
        trial[w][grp] = stuck ? (*routing)[w][grp] : pick;
        moved = true;
      }
    }
    if (!moved || stuck) continue;
    auto v = score(g, trial);
    if (better(v, *cur)) *routing = std::move(trial), *cur = v, improved = true;
  }
  return improved;
}

}  // namespace

void repairRouting(const PsRoutingProblem& g, Routing* routing) {
  auto cur = score(g, *routing);
  for (int pass = 0; pass < 20; ++pass) {
    bool improved = closeNodes(g, routing, &cur);
    for (size_t w = 0; w < g.workers.size(); ++w) {
      for (size_t grp = 0; grp < (*routing)[w].size(); ++grp) {
        int keep = (*routing)[w][grp];
        int group = g.workers[w].options[keep].group;
        for (size_t o = 0; o < g.workers[w].options.size(); ++o) {
          if (static_cast<int>(o) == keep || g.workers[w].options[o].group != group) continue;
          (*routing)[w][grp] = static_cast<int>(o);
          auto v = score(g, *routing);
          if (better(v, cur)) {
            cur = v, keep = static_cast<int>(o), improved = true;
          }
          (*routing)[w][grp] = keep;
        }
      }
    }
    if (!improved) break;
  }
}

RoundedRouting roundRouting(const PsRoutingProblem& g, const RoutingLpResult& lp, int samples,
                            uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t ng = g.shares.size();
  RoundedRouting best;
  best.roundedRate = -1;
  for (int s = 0; s < std::max(samples, 1); ++s) {
    Routing routing(g.workers.size(), std::vector<int>(ng, -1));
    for (size_t w = 0; w < g.workers.size(); ++w) {
      const auto& opts = g.workers[w].options;
      for (size_t grp = 0; grp < ng; ++grp) {
        std::vector<double> weight(opts.size(), 0);
        double total = 0;
        for (size_t o = 0; o < opts.size(); ++o) {
          if (opts[o].group != static_cast<int>(grp)) continue;
          weight[o] = w < lp.x.size() && o < lp.x[w].size() ? std::max(0.0, lp.x[w][o]) : 0;
          total += weight[o];
        }
        if (total <= 0) {  // r* = 0 or no LP: uniform over the group's options
          for (size_t o = 0; o < opts.size(); ++o)
            weight[o] = opts[o].group == static_cast<int>(grp);
        }
        std::discrete_distribution<int> pick(weight.begin(), weight.end());
        routing[w][grp] = pick(rng);
      }
    }
    double rate = routingRate(g, routing);
    if (rate > best.roundedRate) best.routing = std::move(routing), best.roundedRate = rate;
  }
  repairRouting(g, &best.routing);
  best.rate = routingRate(g, best.routing);
  // The nearest-switch routing, repaired, as one more candidate: GRID's
  // answer is then never below ATP's.
  Routing nearest = nearestSwitchRouting(g);
  repairRouting(g, &nearest);
  if (double r = routingRate(g, nearest); r > best.rate)
    best.routing = std::move(nearest), best.rate = r;
  return best;
}

Routing nearestSwitchRouting(const PsRoutingProblem& g) {
  const size_t ng = g.shares.size();
  Routing routing(g.workers.size(), std::vector<int>(ng, -1));
  for (size_t w = 0; w < g.workers.size(); ++w) {
    const auto& opts = g.workers[w].options;
    for (size_t grp = 0; grp < ng; ++grp) {
      int pick = -1, direct = -1;
      for (size_t o = 0; o < opts.size(); ++o) {
        if (opts[o].group != static_cast<int>(grp)) continue;
        if (opts[o].aggNode < 0) {
          if (direct < 0) direct = static_cast<int>(o);
        } else if (pick < 0 || opts[o].path.size() < opts[pick].path.size()) {
          pick = static_cast<int>(o);
        }
      }
      routing[w][grp] = pick >= 0 ? pick : direct;
    }
  }
  return routing;
}

Routing noInaRouting(const PsRoutingProblem& g) {
  const size_t ng = g.shares.size();
  Routing routing(g.workers.size(), std::vector<int>(ng, -1));
  for (size_t w = 0; w < g.workers.size(); ++w) {
    const auto& opts = g.workers[w].options;
    for (size_t grp = 0; grp < ng; ++grp) {
      std::vector<int> direct;
      for (size_t o = 0; o < opts.size(); ++o) {
        if (opts[o].group == static_cast<int>(grp) && opts[o].aggNode < 0)
          direct.push_back(static_cast<int>(o));
      }
      if (direct.empty()) {  // no direct path: the nearest aggregation is all there is
        routing[w][grp] = nearestSwitchRouting(g)[w][grp];
      } else {
        routing[w][grp] = direct[w % direct.size()];
      }
    }
  }
  return routing;
}

}  // namespace rina::plan
