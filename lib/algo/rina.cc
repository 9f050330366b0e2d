// rina: every INA rack is one member of the member ring (member_ring.cc),
// reducing through its switch; every other rank is an autonomous member.
// The members and their ports come from the current plan.
#include "algo/collectives.h"
#include "algo/plan_members.h"
#include "algo/rack_steps.h"

namespace rina::algo {

Status inaRingAllReduce(Context& ctx, PlanSource* plans, RackSwitch* rack, const void* send,
                        void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op) {
  // Every rank switches plans here alike.
  if (plans) RINA_TRY(plans->beforeCollective(ctx));
  const uint64_t seq = ctx.nextSeq();
  return memberRingAllReduce(ctx, rack,
                             rinaMembers(ctx.racks(), plans ? plans->current() : nullptr), send,
                             recv, count, type, op, seq);
}

}  // namespace rina::algo
