#include "algo/rack_steps.h"

#include <algorithm>
#include <string>

#include "algo/rack_task.h"
#include "reduce/reduce.h"
#include "topo/ring_members.h"

namespace rina::algo {
namespace {

// One rack phase alone: a RackTask in an engine of its own.
Status runTask(RackCall& call, RackTask& task) {
  Engine e(contextFor(call.ctx, kAllReduce, call.seq, call.steps));
  RINA_TRY(task.start());
  e.addTask(&task);
  return e.run();
}

}  // namespace

void countInaCall(Context& ctx, const ina::InaCallStats& s, size_t hostSlices) {
  ctx.stats().inaCalls++;
  ctx.stats().inaRetransmissions += s.retransmissions;
  ctx.stats().inaDatagrams += s.datagramsSent;
  ctx.stats().inaFastRetransmissions += s.fastRetransmissions;
  ctx.stats().inaLateAnswers += s.lateAnswers;
  ctx.stats().inaSocketDrops += s.socketDrops;
  ctx.stats().inaWindowCuts += s.windowCuts;
  ctx.stats().inaHostSlices += hostSlices;
}

std::vector<Member> hierMembers(const topo::RackMap& map) {
  std::vector<Member> out;
  for (const topo::Rack& r : map.racks) out.push_back(Member{r.ranks, false});
  return out;
}

std::vector<Member> rinaMembers(const topo::RackMap& map) {
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

bool inaReducible(rinaDataType_t type, rinaRedOp_t op) {
  bool typeOk =
      type == rinaInt32 || type == rinaFloat32 || type == rinaFloat16 || type == rinaBfloat16;
  return typeOk && (op == rinaSum || op == rinaAvg);
}

Status checkCallsMatch(RackCall& call, const std::vector<Member>& members, size_t count) {
  Context& ctx = call.ctx;
  const int r = ctx.rank();
  const int R = static_cast<int>(members.size());
  const int m = memberIndexOf(members, r);
  const Member& me = members[m];
  const CollHeader mine = collHeader(ctx, kAllReduce, call.seq, count, call.type, call.op, -1);
  std::vector<CollHeader> theirs(me.ranks.size() + 1);
  Engine e(contextFor(ctx, kAllReduce, call.seq, call.steps));
  const int agent = me.ranks.front();
  if (r == agent) {
    for (size_t w = 1; w < me.ranks.size(); ++w) {
      transport::Connection* c = ctx.peer(me.ranks[w]);
      addHeaderExchange(e, mine, &theirs[w], c, c, r);
    }
    if (R > 1) {
      addHeaderExchange(e, mine, &theirs[0], ctx.peer(members[(m + 1) % R].ranks.front()),
                        ctx.peer(members[(m + R - 1) % R].ranks.front()), r);
    }
  } else {
    transport::Connection* c = ctx.peer(agent);
    addHeaderExchange(e, mine, &theirs[0], c, c, r);
  }
  return e.run();
}

Status runStep(RackCall& call, std::vector<SendItem> sends, std::vector<RecvItem> recvs) {
  if (sends.empty() && recvs.empty()) return {};
  return runExchange(contextFor(call.ctx, kAllReduce, call.seq, call.steps), std::move(sends),
                     std::move(recvs));
}

bool rackAllReduceOnSwitch(RackCall& call, const Member& m) {
  RackSwitch* ina = m.inaRack ? call.rack : nullptr;
  return ina && ina->active() && inaReducible(call.type, call.op);
}

Status rackAllReduce(RackCall& call, const Member& m, char* data, size_t count, const char* input) {
  if (count == 0) return {};
  RackTask task(call, m, data, {RackPiece{0, count, kEveryWorker}}, {}, nullptr, input);
  return runTask(call, task);
}

Status rackReduce(RackCall& call, const Member& m, int port, char* data, size_t count) {
  if (count == 0) return {};
  RackTask task(call, m, data, {RackPiece{0, count, port}}, {}, nullptr);
  return runTask(call, task);
}

Status rackBroadcast(RackCall& call, const Member& m, int port, char* data, size_t count) {
  if (count == 0 || m.ranks.size() < 2) return {};
  RackTask task(call, m, data, {}, {RackPiece{0, count, port}},
                [](size_t, size_t) { return true; });
  return runTask(call, task);
}

}  // namespace rina::algo
