// The rack algorithms (hier, rina, ps-ina) are rings (or a star) of
// *members*: an INA rack, a rack that aggregates on its hosts, or one
// autonomous worker. This header is what every layer above it shares about
// members: who they are, one collective's settings (RackCall), and the
// checks and exchanges a member makes before and between its phases. The
// phases inside a member are RackTask (rack_task.h), run alone by
// rack_phases.h or beside the member ring (member_ring.h).
#ifndef RINA_LIB_ALGO_RACK_MEMBER_H_
#define RINA_LIB_ALGO_RACK_MEMBER_H_

#include <vector>

#include "algo/engine/context.h"
#include "algo/engine/engine.h"
#include "algo/rack/rack_inputs.h"

namespace rina::algo {

struct Member {
  std::vector<int> ranks;       // ascending; ranks.front() is the agent
  bool inaRack = false;         // an INA rack of two or more (its mode: RackCall::rack)
  std::vector<int> ports = {};  // the plan's port rank per chunk (wraps); empty: rotate
  int spineToNext = -1;         // the plan's path of the hop to the next member; -1: any
  // The plan's ports, else round-robin over the member's ranks by chunk
  // (topo::portOf's rule).
  int portFor(size_t chunk) const {
    return ports.empty() ? ranks[chunk % ranks.size()] : ports[chunk % ports.size()];
  }
};

// hier: every rack is one member.
std::vector<Member> hierMembers(const topo::RackMap& map);
// rina / ps-ina: topo::ringMembers: an INA rack is one member (switch
// aggregation when it has two or more ranks); every rank of a rack without
// INA is an autonomous member.
std::vector<Member> inaMembers(const topo::RackMap& map);
int memberIndexOf(const std::vector<Member>& members, int rank);
// rina's sub-rings over several members (member_ring.cc): the number of
// segments a buffer is cut into, so one port per segment and member; the
// planner makes that many port choices per INA rack.
int subRingCount(const std::vector<Member>& members);

// One collective's settings for the steps.
struct RackCall {
  Context& ctx;
  RackSwitch* rack;  // this rank's INA rack (used by members with inaRack); may be null
  uint64_t seq;
  rinaDataType_t type;
  rinaRedOp_t op;
  int steps;                 // for error messages
  bool portMarkers = false;  // rina's reduce-scatter sends port markers (RINA_INA_PORT_MARKERS)
};

// Whether the switch can sum this type and op (the types of
// ina::switchElementSize; sum and avg).
bool inaReducible(rinaDataType_t type, rinaRedOp_t op);
// Whether member m sums this call on its switch: m is an INA rack with its
// switch in use and the switch sums call's type and op.
bool sumsOnSwitch(const RackCall& call, const Member& m);

// What every member's rank does before its first phase. It checks the
// collective headers (engine.h) of this call across members: every worker
// with its member's agent, and each agent with the agents of the members
// before and after it, so calls that differ anywhere are rinaInvalidUsage
// naming both sides. In an INA rack whose switch is in use the agent's
// RackStart (the rack's mode, new slots after a preemption) goes to its
// workers in the same exchange, right after its header.
Status beginMemberCall(RackCall& call, const std::vector<Member>& members, size_t count);

// Runs one engine over the items (step names the phase in errors).
Status runStep(RackCall& call, std::vector<SendItem> sends, std::vector<RecvItem> recvs);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_MEMBER_H_
