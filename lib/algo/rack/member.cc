#include "algo/rack/member.h"

#include <algorithm>

#include "plan/plan.h"
#include "topo/ring_members.h"

namespace rina::algo {

std::vector<Member> hierMembers(const topo::RackMap& map) {
  std::vector<Member> out;
  for (const topo::Rack& r : map.racks) out.push_back(Member{r.ranks, false});
  return out;
}

std::vector<Member> inaMembers(const topo::RackMap& map) {
  std::vector<Member> out;
  for (const topo::RingMember& rm : topo::ringMembers(map)) {
    // An INA rack of one has nothing for its switch to sum: it runs as an
    // autonomous worker.
    out.push_back(Member{rm.ranks, rm.ina && rm.ranks.size() >= 2});
  }
  return out;
}

int memberIndexOf(const std::vector<Member>& members, int rank) {
  for (size_t i = 0; i < members.size(); ++i) {
    for (int r : members[i].ranks) {
      if (r == rank) return static_cast<int>(i);
    }
  }
  return -1;
}

namespace {

// beginMemberCall's check, with the rack start riding on it: an INA rack's
// agent sends its workers the header and then the RackStart, each worker
// takes both.
Status checkCallsMatch(RackCall& call, const std::vector<Member>& members, size_t count,
                       bool rackStart) {
  Context& ctx = call.ctx;
  const int r = ctx.rank();
  const int R = static_cast<int>(members.size());
  const int m = memberIndexOf(members, r);
  const Member& me = members[m];
  const CollHeader mine = collHeader(ctx, kAllReduce, call.seq, count, call.type, call.op, -1);
  std::vector<CollHeader> theirs(me.ranks.size() + 1);
  RackStart start;
  Engine e(contextFor(ctx, kAllReduce, call.seq, call.steps));
  const int agent = me.ranks.front();
  if (r == agent) {
    if (rackStart) RINA_TRY(call.rack->startAsAgent(ctx, &start));
    for (size_t w = 1; w < me.ranks.size(); ++w) {
      transport::Connection* c = ctx.peer(me.ranks[w]);
      addHeaderExchange(e, mine, &theirs[w], c, c, r);
      if (rackStart) {
        e.sends().push_back(SendItem{
            .conn = c, .data = reinterpret_cast<const char*>(&start), .len = sizeof start});
      }
    }
    if (R > 1) {
      addHeaderExchange(e, mine, &theirs[0], ctx.peer(members[(m + 1) % R].ranks.front()),
                        ctx.peer(members[(m + R - 1) % R].ranks.front()), r);
    }
    return e.run();
  }
  transport::Connection* c = ctx.peer(agent);
  addHeaderExchange(e, mine, &theirs[0], c, c, r);
  if (rackStart) {
    e.recvs().push_back(
        RecvItem{.conn = c, .dst = reinterpret_cast<char*>(&start), .len = sizeof start});
  }
  RINA_TRY(e.run());
  return rackStart ? call.rack->takeStart(ctx, start, agent) : Status();
}

}  // namespace

int subRingCount(const std::vector<Member>& members) {
  std::vector<int> sizes;
  for (const Member& m : members) sizes.push_back(static_cast<int>(m.ranks.size()));
  return plan::subRings(sizes);
}

bool inaReducible(rinaDataType_t type, rinaRedOp_t op) {
  return ina::switchElementSize(type) != 0 && (op == rinaSum || op == rinaAvg);
}

bool sumsOnSwitch(const RackCall& call, const Member& m) {
  return m.inaRack && call.rack && call.rack->active() && inaReducible(call.type, call.op);
}

Status beginMemberCall(RackCall& call, const std::vector<Member>& members, size_t count) {
  const Member& me = members[memberIndexOf(members, call.ctx.rank())];
  return checkCallsMatch(call, members, count, me.inaRack && call.rack && call.rack->startDue());
}

Status runStep(RackCall& call, std::vector<SendItem> sends, std::vector<RecvItem> recvs) {
  if (sends.empty() && recvs.empty()) return {};
  return runExchange(contextFor(call.ctx, kAllReduce, call.seq, call.steps), std::move(sends),
                     std::move(recvs));
}

}  // namespace rina::algo
