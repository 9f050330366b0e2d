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

// Port choices the planner makes per INA rack: one per rina sub-ring
// (subRingCount of the map's rina members).
int planChunks(const topo::RackMap& map);

// Whether a plan received from rank 0 fits this communicator: its ring
// visits every ring member (topo::ringMembers) once, by the member's agent;
// one spine (>= -1) per hop; each INA rack of two or more has `chunks`
// ports, all ranks of that rack. rinaInternalError naming what does not fit.
Status checkPlanFits(const plan::Plan& plan, const topo::RackMap& map, int chunks);

// rina: the map's members (rinaMembers(map)) in the plan's ring order, with
// the plan's ports and hop spines. plan null: rinaMembers(map).
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
