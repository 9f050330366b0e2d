// ps-ina, the ATP/SwitchML-style baseline rina is compared with: every
// member reduces the whole buffer to its agent (through the switch in an INA
// rack), the agents send their sums to the parameter server (rank 0, the
// agent of the first member), which adds them and sends the result back;
// each agent then broadcasts it in its member (switch multicast in an INA
// rack). The parameter server's link carries every member's full buffer.
#include <cstring>

#include "algo/rack/member.h"
#include "algo/rack/rack.h"
#include "algo/rack/rack_phases.h"
#include "reduce/reduce.h"

namespace rina::algo {

Status psInaAllReduce(Context& ctx, RackSwitch* rack, const void* sendv, void* recvv, size_t count,
                      rinaDataType_t type, rinaRedOp_t op) {
  const uint64_t seq = ctx.nextSeq();
  const std::vector<Member> members = inaMembers(ctx.racks());
  const int r = ctx.rank();
  const Member& me = members[memberIndexOf(members, r)];
  const int agent = me.ranks.front();
  const int server = members.front().ranks.front();
  const size_t es = reduce::dataTypeSize(type);
  const size_t bytes = count * es;
  char* recv = static_cast<char*>(recvv);
  if (sendv != recvv) std::memcpy(recv, sendv, bytes);
  RackCall call{ctx, rack, seq, type, op, 4};
  RINA_TRY(beginMemberCall(call, members, count));
  RINA_TRY(rackReduce(call, me, agent, recv, count));
  if (r == server) {
    const reduce::ReduceFn fn = reduce::reduceFunction(type, op);
    std::vector<RecvItem> recvs;
    for (size_t i = 1; i < members.size(); ++i) {
      recvs.push_back(RecvItem{.conn = ctx.peer(members[i].ranks.front()),
                               .dst = recv,
                               .len = bytes,
                               .reduce = transport::RecvReduce{fn, recv, es},
                               .step = 2,
                               .slice = static_cast<int>(i)});
    }
    RINA_TRY(runStep(call, {}, std::move(recvs)));
    if (op == rinaAvg) reduce::finishAverage(recv, count, type, ctx.size());
    std::vector<SendItem> sends;
    for (size_t i = 1; i < members.size(); ++i) {
      sends.push_back(SendItem{.conn = ctx.peer(members[i].ranks.front()),
                               .data = recv,
                               .len = bytes,
                               .step = 3,
                               .slice = static_cast<int>(i)});
    }
    RINA_TRY(runStep(call, std::move(sends), {}));
  } else if (r == agent) {
    RINA_TRY(runStep(
        call, {SendItem{.conn = ctx.peer(server), .data = recv, .len = bytes, .step = 2}}, {}));
    RINA_TRY(runStep(call, {},
                     {RecvItem{.conn = ctx.peer(server), .dst = recv, .len = bytes, .step = 3}}));
  }
  return rackBroadcast(call, me, agent, recv, count);
}

}  // namespace rina::algo
