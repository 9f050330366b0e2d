#include "plan/ring_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace rina::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The heuristic's objective, compared lexicographically: a larger
// bottleneck, then fewer hops at the bottleneck (a step towards lifting it),
// then a larger sum.
struct Score {
  double bottleneck = -kInf;
  int atBottleneck = 0;
  double sum = -kInf;
  bool better(const Score& o) const {
    if (bottleneck != o.bottleneck) return bottleneck > o.bottleneck;
    if (atBottleneck != o.atBottleneck) return atBottleneck < o.atBottleneck;
    return sum > o.sum + 1e-9 * std::max(1.0, std::abs(o.sum));
  }
};

Score score(const RateMatrix& rate, const std::vector<int>& order) {
  Score s;
  s.bottleneck = cycleBottleneck(rate, order);
  s.sum = cycleSum(rate, order);
  const size_t n = order.size();
  for (size_t k = 0; k < n; ++k) {
    if (rate[order[k]][order[(k + 1) % n]] == s.bottleneck) ++s.atBottleneck;
  }
  return s;
}

void rotateToZero(std::vector<int>* order) {
  auto it = std::find(order->begin(), order->end(), 0);
  std::rotate(order->begin(), it, order->end());
}

RingOrder finish(const RateMatrix& rate, std::vector<int> order, bool exact) {
  rotateToZero(&order);
  RingOrder r;
  r.bottleneck = cycleBottleneck(rate, order);
  r.sum = cycleSum(rate, order);
  r.order = std::move(order);
  r.exact = exact;
  return r;
}

RingOrder trivial(int n) {
  RingOrder r;
  for (int i = 0; i < n; ++i) r.order.push_back(i);
  r.bottleneck = kInf;
  r.exact = true;
  return r;
}

}  // namespace

double cycleBottleneck(const RateMatrix& rate, const std::vector<int>& order) {
  const size_t n = order.size();
  if (n < 2) return kInf;
  double b = kInf;
  for (size_t k = 0; k < n; ++k) b = std::min(b, rate[order[k]][order[(k + 1) % n]]);
  return b;
}

double cycleSum(const RateMatrix& rate, const std::vector<int>& order) {
  const size_t n = order.size();
  if (n < 2) return 0;
  double s = 0;
  for (size_t k = 0; k < n; ++k) s += rate[order[k]][order[(k + 1) % n]];
  return s;
}

double ringUpperBound(const RateMatrix& rate) {
  const int n = static_cast<int>(rate.size());
  if (n < 2) return kInf;
  double bound = kInf;
  for (int i = 0; i < n; ++i) {
    double out = -kInf, in = -kInf;
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      out = std::max(out, rate[i][j]);
      in = std::max(in, rate[j][i]);
    }
    bound = std::min({bound, out, in});
  }
  return bound;
}

RingOrder exactRingOrder(const RateMatrix& rate) {
  const int n = static_cast<int>(rate.size());
  if (n < 2) return trivial(n);
  // Paths start at member 0; a subset mask covers members 1..n-1 (bit j-1).
  const int m = n - 1;
  const uint32_t full = (1u << m) - 1;
  std::vector<double> best(static_cast<size_t>(full + 1) * m, -kInf);
  for (int j = 0; j < m; ++j) best[(1u << j) * m + j] = rate[0][j + 1];
  for (uint32_t mask = 1; mask <= full; ++mask) {
    for (int j = 0; j < m; ++j) {
      double v = best[mask * m + j];
      if (!(mask & (1u << j)) || v == -kInf) continue;
      for (int k = 0; k < m; ++k) {
        if (mask & (1u << k)) continue;
        uint32_t next = mask | (1u << k);
        double w = std::min(v, rate[j + 1][k + 1]);
        if (w > best[next * m + k]) best[next * m + k] = w;
      }
    }
  }
  double bstar = -kInf;
  for (int j = 0; j < m; ++j) bstar = std::max(bstar, std::min(best[full * m + j], rate[j + 1][0]));

  // Second pass: the largest sum over cycles that use only hops >= B*.
  std::vector<double> sum(best.size(), -kInf);
  std::vector<int8_t> parent(best.size(), -1);
  for (int j = 0; j < m; ++j) {
    if (rate[0][j + 1] >= bstar) sum[(1u << j) * m + j] = rate[0][j + 1];
  }
  for (uint32_t mask = 1; mask <= full; ++mask) {
    for (int j = 0; j < m; ++j) {
      double v = sum[mask * m + j];
      if (!(mask & (1u << j)) || v == -kInf) continue;
      for (int k = 0; k < m; ++k) {
        if ((mask & (1u << k)) || rate[j + 1][k + 1] < bstar) continue;
        uint32_t next = mask | (1u << k);
        double w = v + rate[j + 1][k + 1];
        if (w > sum[next * m + k]) {
          sum[next * m + k] = w;
          parent[next * m + k] = static_cast<int8_t>(j);
        }
      }
    }
  }
  int last = -1;
  double bestSum = -kInf;
  for (int j = 0; j < m; ++j) {
    if (sum[full * m + j] == -kInf || rate[j + 1][0] < bstar) continue;
    double s = sum[full * m + j] + rate[j + 1][0];
    if (s > bestSum) bestSum = s, last = j;
  }
  std::vector<int> order;
  uint32_t mask = full;
  while (last >= 0) {
    order.push_back(last + 1);
    int p = parent[mask * m + last];
    mask &= ~(1u << last);
    last = p;
  }
  order.push_back(0);
  std::reverse(order.begin(), order.end());
  return finish(rate, std::move(order), true);
}

namespace {

// Local search on a tour under `better`: 2-opt (reverse a segment) and moving
// one member elsewhere; each pass takes every improving move it meets,
// O(n^3) per pass.
template <typename Key, typename Better>
void localSearch(std::vector<int>* tour, Key key, Better better) {
  const int n = static_cast<int>(tour->size());
  auto cur = key(*tour);
  for (int pass = 0; pass < 20; ++pass) {
    bool improved = false;
    for (int i = 1; i < n - 1; ++i) {
      for (int j = i + 1; j < n; ++j) {
        std::vector<int> cand = *tour;
        std::reverse(cand.begin() + i, cand.begin() + j + 1);
        auto v = key(cand);
        if (better(v, cur)) *tour = std::move(cand), cur = v, improved = true;
      }
    }
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        std::vector<int> cand = *tour;
        int v0 = cand[i];
        cand.erase(cand.begin() + i);
        cand.insert(cand.begin() + j, v0);
        auto v = key(cand);
        if (better(v, cur)) *tour = std::move(cand), cur = v, improved = true;
      }
    }
    if (!improved) break;
  }
}

int hopsBelow(const RateMatrix& rate, const std::vector<int>& tour, double t) {
  const size_t n = tour.size();
  int bad = 0;
  for (size_t k = 0; k < n; ++k) bad += rate[tour[k]][tour[(k + 1) % n]] < t;
  return bad;
}

// A cycle using only hops >= t, or empty if none was found. Construction by
// Warnsdorff's rule (go to the member with the fewest fast hops left, so
// members that are hard to reach are not stranded), then local search on the
// number of slow hops.
std::vector<int> cycleAtLeast(const RateMatrix& rate, double t) {
  const int n = static_cast<int>(rate.size());
  // Constructions from every start, O(n^2) each (fast-hop counts kept up to
  // date); local search, O(n^3) a pass, only on the best few (all when n is small).
  std::vector<std::pair<int, std::vector<int>>> built;
  for (int start = 0; start < n; ++start) {
    std::vector<int> tour{start};
    std::vector<bool> used(n, false);
    std::vector<int> degree(n, 0);  // fast hops from j to members not yet used
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) degree[j] += k != j && rate[j][k] >= t;
    }
    auto take = [&](int v) {
      used[v] = true;
      for (int j = 0; j < n; ++j) degree[j] -= j != v && rate[j][v] >= t;
    };
    take(start);
    for (int step = 1; step < n; ++step) {
      int cur = tour.back(), pick = -1;
      for (int j = 0; j < n; ++j) {
        if (used[j] || rate[cur][j] < t) continue;
        if (pick < 0 || degree[j] < degree[pick] ||
            (degree[j] == degree[pick] && rate[cur][j] > rate[cur][pick])) {
          pick = j;
        }
      }
      if (pick < 0) {  // stuck: the fastest way out, a slow hop
        for (int j = 0; j < n; ++j) {
          if (!used[j] && (pick < 0 || rate[cur][j] > rate[cur][pick])) pick = j;
        }
      }
      take(pick);
      tour.push_back(pick);
    }
    int bad = hopsBelow(rate, tour, t);
    if (bad == 0) return tour;
    built.push_back({bad, std::move(tour)});
  }
  std::sort(built.begin(), built.end());
  const size_t polish = std::max<size_t>(2, 256 / static_cast<size_t>(n));
  for (size_t i = 0; i < built.size() && i < polish; ++i) {
    std::vector<int>& tour = built[i].second;
    localSearch(
        &tour, [&](const std::vector<int>& c) { return hopsBelow(rate, c, t); },
        [](int a, int b) { return a < b; });
    if (hopsBelow(rate, tour, t) == 0) return tour;
  }
  return {};
}

}  // namespace

RingOrder heuristicRingOrder(const RateMatrix& rate) {
  const int n = static_cast<int>(rate.size());
  if (n < 2) return trivial(n);
  // Start: greedy "fastest next hop" from every start, polished under the
  // lexicographic objective.
  std::vector<int> order;
  Score bestScore;
  for (int start = 0; start < n; ++start) {
    std::vector<int> tour{start};
    std::vector<bool> used(n, false);
    used[start] = true;
    for (int step = 1; step < n; ++step) {
      int cur = tour.back(), pick = -1;
      for (int j = 0; j < n; ++j) {
        if (!used[j] && (pick < 0 || rate[cur][j] > rate[cur][pick])) pick = j;
      }
      used[pick] = true;
      tour.push_back(pick);
    }
    Score s = score(rate, tour);
    if (order.empty() || s.better(bestScore)) order = tour, bestScore = s;
  }
  auto key = [&](const std::vector<int>& c) { return score(rate, c); };
  auto better = [](const Score& a, const Score& b) { return a.better(b); };
  localSearch(&order, key, better);
  // Then binary search on the bottleneck: the candidate thresholds are the
  // distinct hop rates between the current bottleneck and the upper bound.
  std::vector<double> values;
  const double have = cycleBottleneck(rate, order), bound = ringUpperBound(rate);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && rate[i][j] > have && rate[i][j] <= bound) values.push_back(rate[i][j]);
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  size_t lo = 0, hi = values.size();  // values[0..lo) are known reachable
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    std::vector<int> tour = cycleAtLeast(rate, values[mid]);
    if (tour.empty()) {
      hi = mid;
    } else {
      order = std::move(tour);
      lo = mid + 1;
    }
  }
  localSearch(&order, key, better);
  return finish(rate, std::move(order), false);
}

RingOrder bestRingOrder(const RateMatrix& rate) {
  if (static_cast<int>(rate.size()) <= kExactRingMembers) return exactRingOrder(rate);
  return heuristicRingOrder(rate);
}

}  // namespace rina::plan
