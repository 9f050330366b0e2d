// InGo (IWQoS 2024): per-rank batch sizes so that slow or poorly connected
// ranks do not stall every iteration, with the global batch kept.
//
// Rank i computes c_i samples/s and needs t_i seconds per iteration for its
// part of the gradient exchange (measured). With batch b_i it is ready after
// b_i / c_i + t_i; a synchronous iteration takes
//   T(b) = max_i (b_i / c_i + t_i),   sum_i b_i = B, b_i >= 0 integer.
// This is water-filling (plan/water_fill.h) with base t_i: the continuous
// optimum levels every rank with b_i > 0 at T*, and the integer answer
// satisfies T* <= T(b) <= T* + max_i 1 / c_i. Unequal batches keep the
// gradient unbiased when it is averaged with weights b_i
// (rinaAllReduceWeighted).
#ifndef RINA_LIB_PLAN_BATCH_SIZES_H_
#define RINA_LIB_PLAN_BATCH_SIZES_H_

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace rina::plan {

struct BatchAdvice {
  std::vector<int64_t> batch;   // per rank, sums to the global batch
  double iterationSeconds = 0;  // T(batch)
  double lowerBound = 0;        // T* (continuous optimum)
};

// commSeconds may be empty (all 0).
Status suggestBatchSizes(int64_t globalBatch, const std::vector<double>& samplesPerSec,
                         const std::vector<double>& commSeconds, BatchAdvice* out);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_BATCH_SIZES_H_
