#include "plan/ps_split.h"

#include "plan/water_fill.h"

namespace rina::plan {

Status splitModel(int64_t modelUnits, const std::vector<double>& ingressUnitsPerSec,
                  const std::vector<double>& busySeconds, ModelSplit* out) {
  WaterFill w;
  Status s = waterFill(modelUnits, ingressUnitsPerSec, busySeconds, &w);
  if (!s.ok()) return s.prepend("InArt model split: ");
  ModelSplit split;
  split.units = w.counts;
  split.seconds = w.makespan;
  split.lowerBound = w.level;
  for (size_t j = 0; j < w.counts.size(); ++j) {
    if (w.counts[j] == 0) continue;
    split.shares.push_back(static_cast<double>(w.counts[j]) / static_cast<double>(modelUnits));
    split.servers.push_back(static_cast<int>(j));
  }
  *out = std::move(split);
  return {};
}

}  // namespace rina::plan
