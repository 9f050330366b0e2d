#include "plan/batch_sizes.h"

#include "plan/water_fill.h"

namespace rina::plan {

Status suggestBatchSizes(int64_t globalBatch, const std::vector<double>& samplesPerSec,
                         const std::vector<double>& commSeconds, BatchAdvice* out) {
  WaterFill w;
  Status s = waterFill(globalBatch, samplesPerSec, commSeconds, &w);
  if (!s.ok()) return s.prepend("InGo batch sizes: ");
  out->batch = std::move(w.counts);
  out->iterationSeconds = w.makespan;
  out->lowerBound = w.level;
  return {};
}

}  // namespace rina::plan
