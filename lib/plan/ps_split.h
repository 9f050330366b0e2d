// InArt (WWW 2024): the model split over several parameter servers. PS j
// receives m_j of the model's M units (e.g. 4 KiB blocks) at its ingress
// rate R_j (units/s) after being busy for B_j seconds, so it is done at
// B_j + m_j / R_j; the iteration waits for the slowest. Minimising the max
// is water-filling (plan/water_fill.h): with B = 0 the continuous optimum is
// m_j = M R_j / sum R (every PS done at M / sum R), and the integer split is
// within one unit-time (max_j 1/R_j) of it. Routing then uses the GRID LP
// with one group per PS and the shares m_j / M (plan/ps_routes.h).
#ifndef RINA_LIB_PLAN_PS_SPLIT_H_
#define RINA_LIB_PLAN_PS_SPLIT_H_

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace rina::plan {

struct ModelSplit {
  std::vector<int64_t> units;  // per PS, sums to the model's units
  double seconds = 0;          // max_j B_j + m_j / R_j of the integer split
  double lowerBound = 0;       // the continuous optimum (no split does better)
  // m_j / M for the PS that got units (PsRoutingProblem::shares) and their indices.
  std::vector<double> shares;
  std::vector<int> servers;
};

Status splitModel(int64_t modelUnits, const std::vector<double>& ingressUnitsPerSec,
                  const std::vector<double>& busySeconds, ModelSplit* out);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PS_SPLIT_H_
