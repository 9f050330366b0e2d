#include "plan/water_fill.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

namespace rina::plan {

Status waterFill(int64_t total, const std::vector<double>& rate, const std::vector<double>& baseIn,
                 WaterFill* out) {
  const size_t n = rate.size();
  if (n == 0) return errorf(rinaInvalidArgument, "water-fill: no servers");
  if (total < 0)
    return errorf(rinaInvalidArgument, "water-fill: total %lld < 0", static_cast<long long>(total));
  if (!baseIn.empty() && baseIn.size() != n) {
    return errorf(rinaInvalidArgument, "water-fill: %zu base times for %zu rates", baseIn.size(),
                  n);
  }
  std::vector<double> base = baseIn.empty() ? std::vector<double>(n, 0) : baseIn;
  for (size_t j = 0; j < n; ++j) {
    if (!(rate[j] > 0) || !std::isfinite(rate[j])) {
      return errorf(rinaInvalidArgument, "water-fill: rate %zu is %g (must be finite, > 0)", j,
                    rate[j]);
    }
    if (!(base[j] >= 0) || !std::isfinite(base[j])) {
      return errorf(rinaInvalidArgument, "water-fill: base time %zu is %g (must be finite, >= 0)",
                    j, base[j]);
    }
  }
  // Continuous: raise the level past the sorted bases until the volume fits.
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return base[a] < base[b]; });
  const double volume = static_cast<double>(total);
  double rateSum = 0, weighted = 0, level = base[idx[0]];
  for (size_t k = 0; k < n; ++k) {
    rateSum += rate[idx[k]];
    weighted += rate[idx[k]] * base[idx[k]];
    // With servers idx[0..k] filling: level = (volume + weighted) / rateSum.
    level = (volume + weighted) / rateSum;
    if (k + 1 == n || level <= base[idx[k + 1]]) break;
  }
  WaterFill w;
  level = std::max(level, base[idx[0]]);
  // Servers whose base alone exceeds the water level still bound T from below.
  w.level = std::max(level, base[idx[n - 1]]);
  w.continuous.resize(n);
  w.counts.resize(n);
  int64_t given = 0;
  for (size_t j = 0; j < n; ++j) {
    w.continuous[j] = std::max(0.0, (level - base[j]) * rate[j]);
    w.counts[j] = static_cast<int64_t>(std::floor(w.continuous[j]));
    given += w.counts[j];
  }
  // Floating error may overshoot by a unit: take back from the latest.
  while (given > total) {
    size_t worst = 0;
    double t = -1;
    for (size_t j = 0; j < n; ++j) {
      double tj = base[j] + static_cast<double>(w.counts[j]) / rate[j];
      if (w.counts[j] > 0 && tj > t) t = tj, worst = j;
    }
    --w.counts[worst], --given;
  }
  using Item = std::pair<double, size_t>;  // finish time with one more unit
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  for (size_t j = 0; j < n; ++j)
    heap.push({base[j] + static_cast<double>(w.counts[j] + 1) / rate[j], j});
  for (; given < total; ++given) {
    auto [t, j] = heap.top();
    heap.pop();
    ++w.counts[j];
    heap.push({base[j] + static_cast<double>(w.counts[j] + 1) / rate[j], j});
  }
  w.makespan = 0;
  for (size_t j = 0; j < n; ++j) {
    w.makespan = std::max(w.makespan, base[j] + static_cast<double>(w.counts[j]) / rate[j]);
  }
  *out = std::move(w);
  return {};
}

}  // namespace rina::plan
