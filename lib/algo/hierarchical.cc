// hier: every rack is one member of the member ring (member_ring.cc) and aggregates
// on its hosts: each chunk is reduced to its port over shm/TCP, passed
// around the ring of racks, and broadcast inside the rack. It is also what
// an INA rack runs after it lost its switch.
#include "algo/plan_members.h"
#include "algo/rack_steps.h"

namespace rina::algo {

// The racks go around the ring in the order the current plan visits them,
// with the plan's ports in INA racks.
Status hierAllReduce(Context& ctx, PlanSource* plans, const void* send, void* recv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op) {
  // Every rank switches plans here alike.
  if (plans) RINA_TRY(plans->beforeCollective(ctx));
  const uint64_t seq = ctx.nextSeq();
  // Hier racks aggregate on their hosts: no INA rack state.
  return memberRingAllReduce(ctx, nullptr,
                             hierMembers(ctx.racks(), plans ? plans->current() : nullptr), send,
                             recv, count, type, op, seq);
}

}  // namespace rina::algo
