// The rack algorithms' members as the current plan (plan/plan.h) arranges
// them: ring order, the port rank of each chunk in INA racks, the spine of
// each inter-rack hop; and the ranks a plan makes a rank talk to, which the
// communicator connects on demand when the plan is adopted.
#ifndef RINA_LIB_ALGO_RACK_PLAN_MEMBERS_H_
#define RINA_LIB_ALGO_RACK_PLAN_MEMBERS_H_

#include <vector>

#include "algo/rack/member.h"
#include "plan/plan.h"
#include "topo/rack_map.h"

namespace rina::algo {

// rina: the members the plan's rack modes make, in its ring order, with
// its ports and hop spines: a rack on its switch is an INA member, one on
// its hosts a member that sums on its hosts (as after a lost switch), the
// ranks of an autonomous rack members of their own. plan null:
// inaMembers(map).
std::vector<Member> inaMembers(const topo::RackMap& map, const plan::Plan* plan);
// hier: every rack one member, in the order the plan's ring first visits
// its ranks; INA racks take the plan's ports, others rotate; a rack's
// spineToNext is that of a plan hop into the next rack, if there is one.
// plan null: hierMembers(map).
std::vector<Member> hierMembers(const topo::RackMap& map, const plan::Plan* plan);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_PLAN_MEMBERS_H_
