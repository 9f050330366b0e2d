// The rack algorithms' members as the current plan (plan/plan.h) arranges
// them: ring order, the port rank of each chunk in INA racks, the spine of
// each inter-rack hop; and the ranks a plan makes a rank talk to, which the
// communicator connects on demand when the plan is adopted.
#ifndef RINA_LIB_ALGO_RACK_PLAN_MEMBERS_H_
#define RINA_LIB_ALGO_RACK_PLAN_MEMBERS_H_

#include <set>
#include <vector>

#include "algo/rack/member.h"
#include "plan/plan.h"
#include "topo/rack_map.h"

namespace rina::algo {

// Whether a plan received from rank 0 fits this communicator: every INA
// rack of two or more has a mode; its ring visits every member those modes
// make (a rack on its switch or its hosts is one, by its agent; every other
// rank is one) once; one spine (>= -1) per hop; each rack that aggregates
// has one port per sub-ring (plan::subRings of the members' sizes), all
// ranks of that rack, and an autonomous one none. rinaInternalError naming
// what does not fit.
Status checkPlanFits(const plan::Plan& plan, const topo::RackMap& map);

// rina: the members the plan's rack modes make, in its ring order, with
// its ports and hop spines: a rack on its switch is an INA member, one on
// its hosts a member that sums on its hosts (as after a lost switch), the
// ranks of an autonomous rack members of their own. plan null:
// rinaMembers(map).
std::vector<Member> rinaMembers(const topo::RackMap& map, const plan::Plan* plan);
// hier: every rack one member, in the order the plan's ring first visits
// its ranks; INA racks take the plan's ports, others rotate; a rack's
// spineToNext is that of a plan hop into the next rack, if there is one.
// plan null: hierMembers(map).
std::vector<Member> hierMembers(const topo::RackMap& map, const plan::Plan* plan);

// The ranks `rank` talks to under the plan in rina and hier besides
// basePeerRanks: every rank of the ring members before and after its own,
// and of the racks before and after its own in the plan's rack order
// (ports rotate, so any rank of a neighbour may be a chunk's partner). The
// relation is symmetric, so both ends of a pair agree on connecting it.
std::set<int> planPeerRanks(int rank, const topo::RackMap& map, const plan::Plan& plan);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_PLAN_MEMBERS_H_
