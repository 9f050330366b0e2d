// The rack algorithms' entry points and what the communicator asks of them
// (plan_members.cc: whether a plan fits, whom it makes a rank talk to),
// with their inputs (rack_inputs.h): the one header of lib/algo/rack that
// the rooms and layers above include (member.h: what a member is;
// member_ring.cc: hier and rina; ps_ina.cc).
#ifndef RINA_LIB_ALGO_RACK_RACK_H_
#define RINA_LIB_ALGO_RACK_RACK_H_

#include <set>

#include "algo/engine/context.h"
#include "algo/rack/rack_inputs.h"
#include "core/status.h"
#include "plan/plan.h"
#include "rina/rina.h"

namespace rina::algo {

// hier and rina follow plans' current plan (null: the rack order), after
// plans->beforeCollective; rack: this rank's INA rack (null: none).
// hier: reduce inside each rack to the chunk's port (shm/TCP), ring between
// racks, broadcast inside each rack.
Status hierAllReduce(Context& ctx, PlanSource* plans, const void* send, void* recv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op);
// rina: INA racks are one ring member each, reducing through their switch
// (the port adds the upstream partial) and broadcasting by switch
// multicast; other ranks are autonomous ring members.
Status inaMemberRingAllReduce(Context& ctx, PlanSource* plans, RackSwitch* rack, const void* send,
                              void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op);
// ps-ina (ATP/SwitchML-style baseline): every member reduces to its agent
// (through the switch in INA racks), the agents' sums meet at rank 0 (the
// parameter server), which sends the result back to be broadcast.
Status psInaAllReduce(Context& ctx, RackSwitch* rack, const void* send, void* recv, size_t count,
                      rinaDataType_t type, rinaRedOp_t op);

// The plans the communicator agrees on (plan/plan.h), as the rack
// algorithms read them.
// Whether a plan received from rank 0 fits this communicator: every INA
// rack of two or more has a mode; its ring visits every member those modes
// make (a rack on its switch or its hosts is one, by its agent; every other
// rank is one) once; one spine (>= -1) per hop; each rack that aggregates
// has one port per sub-ring (plan::subRings of the members' sizes), all
// ranks of that rack, and an autonomous one none. rinaInternalError naming
// what does not fit.
Status checkPlanFits(const plan::Plan& plan, const topo::RackMap& map);

// The ranks `rank` talks to under the plan in rina and hier besides
// basePeerRanks: every rank of the ring members before and after its own,
// and of the racks before and after its own in the plan's rack order
// (ports rotate, so any rank of a neighbour may be a chunk's partner). The
// relation is symmetric, so both ends of a pair agree on connecting it.
std::set<int> planPeerRanks(int rank, const topo::RackMap& map, const plan::Plan& plan);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_RACK_H_
