// Which spine each inter-rack hop takes: RINA_PATHS picks a rule (under
// "planned" a hier / rina member hop takes the current Plan's spine when it
// has one: algo::Context::hopSpine).
//   planned: plan::assignSpines over the rack-level hops of the rank ring
//            (r -> r+1 across racks), from the topology file's rates
//            (per-spine uplink_mbit / spine_link_mbit, host links); one
//            spine per directed rack pair. Without rates every choice ties
//            and spine 0 wins.
//   fixed:   spine 0 for every hop (one path, as a single-homed host).
//   hash:    (from + to) % spines, the ECMP-like static spread.
// A hop inside a rack, or a pair without a spine of its own, uses the
// default connection (spine -1).
#ifndef RINA_LIB_PLAN_PATH_CHOICE_H_
#define RINA_LIB_PLAN_PATH_CHOICE_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "topo/rack_map.h"

namespace rina::plan {

enum class PathPolicy { kPlanned, kFixed, kHash };
Status parsePathPolicy(const std::string& text, PathPolicy* out);
const char* pathPolicyName(PathPolicy p);

class PathChoice {
 public:
  // spines < 2: no choice, every hop is -1.
  static Status make(PathPolicy policy, int spines, const topo::RackMap& map,
                     const topo::TopologySpec* spec, PathChoice* out);

  // The spine of the hop from rank `from` to rank `to`; -1: default path.
  int spineFor(int from, int to) const;
  int spines() const { return spines_; }
  PathPolicy policy() const { return policy_; }
  // "planned over 2 spines: a->b s1, b->a s1" for RINA_DEBUG=INFO.
  std::string describe() const;

 private:
  PathPolicy policy_ = PathPolicy::kPlanned;
  int spines_ = 0;
  std::vector<int> rackOf_;
  std::vector<std::string> rackNames_;
  std::vector<std::vector<int>> rackPairSpine_;  // planned: [from][to], -1 unset
  double bottleneckMbit_ = 0;
};

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PATH_CHOICE_H_
