#include "algo/dispatch/auto_select.h"

#include <cstdio>

namespace rina::algo {

Algorithm resolveAuto(const topo::RackMap& map, const plan::Plan* plan, size_t bytes,
                      size_t smallMsgBytes, std::string* why) {
  char buf[200];
  if (bytes < smallMsgBytes) {
    if (why) {
      std::snprintf(buf, sizeof buf, "%zu bytes < RINA_SMALL_MSG_BYTES (%zu): rd", bytes,
                    smallMsgBytes);
      *why = buf;
    }
    return Algorithm::kRecursiveDoubling;
  }
  if (!map.anyIna()) {
    if (why) *why = "no INA rack: ring";
    return Algorithm::kRing;
  }
  if (!plan) {
    if (why) *why = "no plan: ring";
    return Algorithm::kRing;
  }
  const plan::Plan::Predicted& p = plan->predicted;
  const double S = static_cast<double>(bytes), L = p.stepLatencySec;
  const double ring = p.ring.seconds(S, L), hier = p.hier.seconds(S, L),
               rina = p.rina.seconds(S, L);
  Algorithm a = rina < ring ? Algorithm::kInaMemberRing : Algorithm::kRing;
  if (hier < ring && hier < rina) a = Algorithm::kHier;
  if (why) {
    std::snprintf(buf, sizeof buf,
                  "link model of plan #%llu at %zu bytes: rina %.3g s, ring %.3g s, hier %.3g s: "
                  "%s",
                  static_cast<unsigned long long>(plan->epoch), bytes, rina, ring, hier,
                  algorithmName(a));
    *why = buf;
  }
  return a;
}

}  // namespace rina::algo
