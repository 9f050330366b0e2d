// The rack algorithms (hier, rina, ps-ina) are rings (or a star) of
// *members*: an INA rack, a rack that aggregates on its hosts, or one
// autonomous worker. These are the steps inside one member: reduce a chunk
// of every worker's buffer to the chunk's port (through the switch, the port
// adding the upstream partial, or over shm/TCP), and broadcast a chunk from
// its port to the member's workers (switch multicast, or shm/TCP). A
// member's port per chunk comes from the current plan (plan_members.h), else
// ports rotate over its workers by chunk.
#ifndef RINA_LIB_ALGO_RACK_STEPS_H_
#define RINA_LIB_ALGO_RACK_STEPS_H_

#include <vector>

#include "algo/collectives.h"
#include "ina/ina_client.h"

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
std::vector<Member> rinaMembers(const topo::RackMap& map);
int memberIndexOf(const std::vector<Member>& members, int rank);
// rina's sub-rings over several members (member_ring.cc): the number of segments a
// buffer is cut into, so one port per segment and member; the planner makes
// that many port choices per INA rack.
int subRingCount(const std::vector<Member>& members);
// The member ring's pipeline slice (member_ring.cc), in elements: RINA_SLICE_BYTES
// at most, and small enough that a chunk of chunkElems has about
// kMemberSlicesPerStep slices per ring step, but not under
// kMinMemberSliceBytes; a multiple of kMemberSliceAlignElems (whole INA
// datagrams) unless RINA_SLICE_BYTES is smaller. The ring runs as a
// wavefront over (step, slice): with few slices per chunk much of a
// collective is the wavefront filling and draining, while the rack's switch
// reduce-scatter (upload-heavy) runs ahead at the start and its all-gather
// (download-heavy) is left at the end, each with the other direction of the
// host link half idle. Every rank computes the same value.
inline constexpr size_t kMemberSlicesPerStep = 8;
inline constexpr size_t kMinMemberSliceBytes = 16 * 1024;
inline constexpr size_t kMemberSliceAlignElems = 2048;  // ina::kMaxPayloadElems
size_t memberSliceElems(size_t chunkElems, int steps, size_t elemBytes, size_t sliceBytes);

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

// Whether the switch can sum this type and op (int32, float32, float16,
// bfloat16; sum and avg).
bool inaReducible(rinaDataType_t type, rinaRedOp_t op);

// The collective headers (engine.h) of this call, checked across members:
// every worker with its member's agent, and each agent with the agents of
// the members before and after it, so calls that differ anywhere are
// rinaInvalidUsage naming both sides.
Status checkCallsMatch(RackCall& call, const std::vector<Member>& members, size_t count);

// Counts one switch call of this rank in the communicator's stats.
void countInaCall(Context& ctx, const ina::InaCallStats& s, size_t hostSlices);

// Runs one engine over the items (step names the phase in errors).
Status runStep(RackCall& call, std::vector<SendItem> sends, std::vector<RecvItem> recvs);

// The rack's blocking phases, each a RackTask (rack_task.h) on its own, so
// a rack phase is written once for the member ring and for these.
//
// Every worker of m calls it: afterwards the port's data holds the op over
// the member's workers of their data (through the switch when it can sum
// the call, else over shm/TCP). Other workers' data is unchanged.
Status rackReduce(RackCall& call, const Member& m, int port, char* data, size_t count);
// Every worker of m calls it: the port's data (count elements) reaches every
// worker's data, bit for bit (switch multicast while the rack has its
// switch, lost datagrams repaired from the port; else shm/TCP).
Status rackBroadcast(RackCall& call, const Member& m, int port, char* data, size_t count);

// Whether rackAllReduce can run for this call: m is an INA rack with its
// switch in use and the switch sums call's type and op.
bool rackAllReduceOnSwitch(RackCall& call, const Member& m);
// Every worker of m calls it (only when rackAllReduceOnSwitch): afterwards
// every worker's data holds the sum over the member's workers, bit for bit
// the same on each (the member is the whole ring: no port, no broadcast).
// input: the worker's unchanged input when it is not data (out of place),
// else null (a copy is kept).
Status rackAllReduce(RackCall& call, const Member& m, char* data, size_t count, const char* input);

// The member ring of hier and rina (member_ring.cc): allreduce over members, seq
// already taken from ctx; rack: this rank's INA rack, or null.
Status memberRingAllReduce(Context& ctx, RackSwitch* rack, const std::vector<Member>& members,
                           const void* send, void* recv, size_t count, rinaDataType_t type,
                           rinaRedOp_t op, uint64_t seq);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_STEPS_H_
