#include "plan/ports.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace rina::plan {

Status apportion(const std::vector<double>& weights, int64_t total, std::vector<int64_t>* counts) {
  if (weights.empty()) return errorf(rinaInvalidArgument, "apportion: no weights");
  if (total < 0)
    return errorf(rinaInvalidArgument, "apportion: negative total %lld",
                  static_cast<long long>(total));
  double sum = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i]) || weights[i] < 0) {
      return errorf(rinaInvalidArgument, "apportion: weight %zu is %g (must be finite, >= 0)", i,
                    weights[i]);
    }
    sum += weights[i];
  }
  if (sum <= 0) return errorf(rinaInvalidArgument, "apportion: the weights sum to 0");
  const size_t n = weights.size();
  std::vector<int64_t> out(n);
  std::vector<double> rem(n);
  int64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    double quota = static_cast<double>(total) * (weights[i] / sum);
    out[i] = static_cast<int64_t>(std::floor(quota));
    rem[i] = quota - static_cast<double>(out[i]);
    given += out[i];
  }
  // Rounding in the quotas can leave given a little off total either way.
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return rem[a] > rem[b]; });
  for (size_t k = 0; given < total; k = (k + 1) % n) {
    if (weights[idx[k]] > 0) ++out[idx[k]], ++given;
  }
  for (size_t k = 0; given > total; k = (k + 1) % n) {
    size_t i = idx[n - 1 - k];
    if (out[i] > 0) --out[i], --given;
  }
  *counts = std::move(out);
  return {};
}

Status portsPerChunk(const std::vector<double>& weights, int chunks, std::vector<int>* ports) {
  std::vector<int64_t> counts;
  RINA_TRY(apportion(weights, chunks, &counts));
  const size_t n = weights.size();
  std::vector<int> out;
  std::vector<int64_t> given(n, 0);
  for (int c = 0; c < chunks; ++c) {
    // The worker furthest behind its count's even spread: deficit
    // (c + 1) * count_i / chunks - given_i, largest first.
    int pick = -1;
    double bestDeficit = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < n; ++i) {
      if (given[i] >= counts[i]) continue;
      double deficit = static_cast<double>(c + 1) * static_cast<double>(counts[i]) / chunks -
                       static_cast<double>(given[i]);
      if (deficit > bestDeficit) bestDeficit = deficit, pick = static_cast<int>(i);
    }
    ++given[pick];
    out.push_back(pick);
  }
  *ports = std::move(out);
  return {};
}

double portRate(const std::vector<double>& weights, const std::vector<int>& ports) {
  std::vector<int64_t> count(weights.size(), 0);
  for (int p : ports) ++count[p];
  double time = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (count[i] == 0) continue;
    if (weights[i] <= 0) return 0;
    time = std::max(time, static_cast<double>(count[i]) / weights[i]);
  }
  return time > 0 ? static_cast<double>(ports.size()) / time : 0;
}

}  // namespace rina::plan
