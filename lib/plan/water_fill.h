// Min-max allocation by water-filling, shared by InArt (model split over
// parameter servers) and InGo (batch sizes over ranks).
//
// Problem: split `total` units over n servers, server j finishing at
//   T_j(m_j) = base_j + m_j / rate_j,
// to minimise T = max_j T_j (every j counts, even with m_j = 0).
// Continuous optimum (KKT; the Lagrange multiplier is the level T*): every
// server with m_j > 0 ends exactly at T*, the others have base_j >= T*, and
//   sum_j max(0, (T* - base_j) * rate_j) = total,
// found by sorting base_j and filling from the lowest. Integer optimum: the
// smallest T with sum_j max(0, floor((T - base_j) * rate_j)) >= total; we
// start from floor of the continuous m_j (never above an optimal integer
// allocation) and hand out the rest one unit at a time to the server that
// would finish earliest, which is optimal for a max of increasing functions.
// T*_cont = max(water level, max_j base_j): a server whose base is above the
// water gets nothing and still finishes at its base.
// Bound: T*_cont <= T_int <= T*_cont + max_j 1 / rate_j.
#ifndef RINA_LIB_PLAN_WATER_FILL_H_
#define RINA_LIB_PLAN_WATER_FILL_H_

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace rina::plan {

struct WaterFill {
  std::vector<int64_t> counts;     // integer allocation, sums to total
  std::vector<double> continuous;  // the continuous optimum's m_j
  double level = 0;                // T*_cont = max(water level, max_j base_j)
  double makespan = 0;             // max_j T_j of counts
};

// rate_j > 0 and finite, base_j >= 0 and finite (empty base = all 0),
// total >= 0: else rinaInvalidArgument naming the index.
Status waterFill(int64_t total, const std::vector<double>& rate, const std::vector<double>& base,
                 WaterFill* out);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_WATER_FILL_H_
