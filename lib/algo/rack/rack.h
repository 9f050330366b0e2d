// The rack algorithms' entry points, the one header the dispatcher uses
// (member.h: what a member is; member_ring.cc: hier and rina; ps_ina.cc).
#ifndef RINA_LIB_ALGO_RACK_RACK_H_
#define RINA_LIB_ALGO_RACK_RACK_H_

#include "algo/engine/context.h"
#include "algo/rack/rack_inputs.h"
#include "core/status.h"
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
Status inaRingAllReduce(Context& ctx, PlanSource* plans, RackSwitch* rack, const void* send,
                        void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op);
// ps-ina (ATP/SwitchML-style baseline): every member reduces to its agent
// (through the switch in INA racks), the agents' sums meet at rank 0 (the
// parameter server), which sends the result back to be broadcast.
Status psInaAllReduce(Context& ctx, RackSwitch* rack, const void* send, void* recv, size_t count,
                      rinaDataType_t type, rinaRedOp_t op);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_RACK_H_
