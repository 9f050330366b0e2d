#include "algo/rack_steps.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/log.h"
#include "reduce/reduce.h"
#include "topo/ring_members.h"

namespace rina::algo {
namespace {

constexpr uint32_t kRackMagic = 0x5241434b;  // "RACK"
// Broadcast receivers list what is missing once the switch sent nothing new
// for this long (a lost datagram; then the port sends it over shm/TCP).
constexpr int kBroadcastQuietMs = 200;

enum RackMsgKind : uint8_t { kGo = 1, kDone, kReport };

// Rack control messages between a chunk's port and the member's workers.
struct RackMsg {
  uint32_t magic = kRackMagic;
  uint8_t kind = 0;
  uint8_t fallback = 0;  // the port lost the switch: the rack now aggregates on hosts
  uint16_t pad = 0;
  uint32_t count = 0;  // slices listed after the message
  uint32_t pad2 = 0;
};
static_assert(sizeof(RackMsg) == 16);

const char* kindName(uint8_t k) {
  return k == kGo ? "go" : k == kDone ? "done" : k == kReport ? "report" : "unknown";
}

Status checkMsg(const RackCall& call, const RackMsg& m, uint8_t kind, int peer) {
  if (m.magic != kRackMagic || m.kind != kind) {
    return errorf(rinaInternalError,
                  "rank %d: allreduce #%llu: rank %d sent rack message '%s' where '%s' was due",
                  call.ctx.rank(), static_cast<unsigned long long>(call.seq), peer,
                  m.magic == kRackMagic ? kindName(m.kind) : "corrupt", kindName(kind));
  }
  return {};
}

struct Range {
  size_t begin, end;  // elements (or bytes for broadcasts)
};

std::vector<Range> rangesOf(const std::vector<uint32_t>& slices, size_t sliceLen, size_t total) {
  std::vector<Range> out;
  for (uint32_t i : slices) {
    size_t b = size_t{i} * sliceLen;
    if (b < total) out.push_back(Range{b, std::min(total, b + sliceLen)});
  }
  return out;
}

std::vector<int> othersOf(const Member& m, int port) {
  std::vector<int> out;
  for (int r : m.ranks) {
    if (r != port) out.push_back(r);
  }
  return out;
}

// Host aggregation of ranges of the chunk at port: data = data (+ upstream)
// op every other worker's data.
Status hostReduce(RackCall& call, const std::vector<int>& others, int port, char* data,
                  const char* upstream, const std::vector<Range>& ranges, int step) {
  Context& ctx = call.ctx;
  const size_t es = reduce::dataTypeSize(call.type);
  const reduce::ReduceFn fn = reduce::reduceFunction(call.type, call.op);
  std::vector<SendItem> sends;
  std::vector<RecvItem> recvs;
  if (ctx.rank() == port) {
    for (const Range& r : ranges) {
      if (upstream)
        fn(data + r.begin * es, data + r.begin * es, upstream + r.begin * es, r.end - r.begin);
    }
    for (int q : others) {
      for (size_t i = 0; i < ranges.size(); ++i) {
        char* dst = data + ranges[i].begin * es;
        recvs.push_back(RecvItem{ctx.peer(q),
                                 dst,
                                 (ranges[i].end - ranges[i].begin) * es,
                                 transport::RecvReduce{fn, dst, es},
                                 -1,
                                 step,
                                 static_cast<int>(i),
                                 {}});
      }
    }
  } else {
    for (size_t i = 0; i < ranges.size(); ++i) {
      sends.push_back(SendItem{ctx.peer(port), data + ranges[i].begin * es,
                               (ranges[i].end - ranges[i].begin) * es, -1, step,
                               static_cast<int>(i)});
    }
  }
  return runStep(call, std::move(sends), std::move(recvs));
}

Status inaReduce(RackCall& call, RackSwitch& ina, const std::vector<int>& others, int port, char* data,
                 size_t count, const char* upstream, int step) {
  Context& ctx = call.ctx;
  const int me = ctx.rank();
  const size_t es = reduce::dataTypeSize(call.type);
  const size_t P = ina.client().sliceElems();
  RackMsg go{};
  go.kind = kGo;
  std::vector<Range> ranges;
  if (me == port) {
    std::vector<SendItem> sends;
    for (int q : others)
      sends.push_back(SendItem{ctx.peer(q), reinterpret_cast<char*>(&go), sizeof go, -1, step, 0});
    RINA_TRY(runStep(call, std::move(sends), {}));
    // What the host finishes must start from this worker's input.
    std::vector<char> saved(data, data + count * es);
    ina::InaCallOptions o;
    o.upstreamPartial = upstream;
    o.resultToPortOnly = true;
    o.isPort = true;
    ina::InaCallResult res;
    Status st = ina.client().allreduce(data, count, call.type, o, &res);
    RackMsg done{};
    done.kind = kDone;
    done.fallback = st.ok() ? 0 : 1;
    if (st.ok()) {
      done.count = static_cast<uint32_t>(res.hostSlices.size());
      ranges = rangesOf(res.hostSlices, P, count);
    } else {
      ina.fallBack(ctx, st.message(), true);
      ranges = {Range{0, count}};
    }
    countInaCall(ctx, res.stats,
                 st.ok() ? res.hostSlices.size() : ina::InaClient::sliceCount(count, P));
    sends.clear();
    for (int q : others) {
      sends.push_back(
          SendItem{ctx.peer(q), reinterpret_cast<char*>(&done), sizeof done, -1, step, 0});
      if (done.count) {
        sends.push_back(SendItem{ctx.peer(q), reinterpret_cast<const char*>(res.hostSlices.data()),
                                 4 * res.hostSlices.size(), -1, step, 0});
      }
    }
    RINA_TRY(runStep(call, std::move(sends), {}));
    for (const Range& r : ranges)
      std::memcpy(data + r.begin * es, saved.data() + r.begin * es, (r.end - r.begin) * es);
  } else {
    RINA_TRY(runStep(
        call, {},
        {RecvItem{ctx.peer(port), reinterpret_cast<char*>(&go), sizeof go, {}, -1, step, 0, {}}}));
    RINA_TRY(checkMsg(call, go, kGo, port));
    ina::InaCallOptions o;
    o.resultToPortOnly = true;
    ina::InaCallResult res;
    Status st = ina.client().allreduce(data, count, call.type, o, &res);
    if (!st.ok()) RINA_INFO("rank %d: %s (the port decides)", me, st.message().c_str());
    countInaCall(ctx, res.stats, 0);
    RackMsg done{};
    RINA_TRY(runStep(
        call, {},
        {RecvItem{
            ctx.peer(port), reinterpret_cast<char*>(&done), sizeof done, {}, -1, step, 0, {}}}));
    RINA_TRY(checkMsg(call, done, kDone, port));
    if (done.fallback) {
      ina.fallBack(ctx, "the port of this chunk lost the switch", false);
      ranges = {Range{0, count}};
    } else if (done.count) {
      std::vector<uint32_t> slices(done.count);
      RINA_TRY(runStep(call, {},
                       {RecvItem{ctx.peer(port),
                                 reinterpret_cast<char*>(slices.data()),
                                 4 * slices.size(),
                                 {},
                                 -1,
                                 step,
                                 0,
                                 {}}}));
      ranges = rangesOf(slices, P, count);
    }
  }
  if (ranges.empty()) return {};
  return hostReduce(call, others, port, data, upstream, ranges, step);
}

Status inaBroadcast(RackCall& call, RackSwitch& ina, const std::vector<int>& others, int port,
                    char* data, size_t bytes, int step) {
  Context& ctx = call.ctx;
  const int me = ctx.rank();
  const size_t sliceBytes = 4 * ina.client().sliceElems();
  RackMsg go{};
  go.kind = kGo;
  ina::InaBroadcastResult res;
  if (me == port) {
    std::vector<SendItem> sends;
    for (int q : others)
      sends.push_back(SendItem{ctx.peer(q), reinterpret_cast<char*>(&go), sizeof go, -1, step, 0});
    RINA_TRY(runStep(call, std::move(sends), {}));
    Status st = ina.client().broadcast(data, bytes, true, kBroadcastQuietMs, &res);
    if (!st.ok()) ina.fallBack(ctx, st.message(), true);
    countInaCall(ctx, res.stats, 0);
    RackMsg status{};
    status.kind = kDone;
    status.fallback = st.ok() ? 0 : 1;
    std::vector<RackMsg> reports(others.size());
    sends.clear();
    std::vector<RecvItem> recvs;
    for (size_t i = 0; i < others.size(); ++i) {
      sends.push_back(SendItem{ctx.peer(others[i]), reinterpret_cast<char*>(&status),
                               sizeof status, -1, step, 0});
      recvs.push_back(RecvItem{ctx.peer(others[i]),
                               reinterpret_cast<char*>(&reports[i]),
                               sizeof(RackMsg),
                               {},
                               -1,
                               step,
                               0,
                               {}});
    }
    RINA_TRY(runStep(call, std::move(sends), std::move(recvs)));
    std::vector<std::vector<uint32_t>> missing(others.size());
    recvs.clear();
    for (size_t i = 0; i < others.size(); ++i) {
      RINA_TRY(checkMsg(call, reports[i], kReport, others[i]));
      missing[i].resize(reports[i].count);
      if (reports[i].count) {
        recvs.push_back(RecvItem{ctx.peer(others[i]),
                                 reinterpret_cast<char*>(missing[i].data()),
                                 4 * missing[i].size(),
                                 {},
                                 -1,
                                 step,
                                 0,
                                 {}});
      }
    }
    RINA_TRY(runStep(call, {}, std::move(recvs)));
    sends.clear();
    for (size_t i = 0; i < others.size(); ++i) {
      std::vector<Range> ranges = status.fallback ? std::vector<Range>{Range{0, bytes}}
                                                  : rangesOf(missing[i], sliceBytes, bytes);
      for (const Range& r : ranges) {
        sends.push_back(
            SendItem{ctx.peer(others[i]), data + r.begin, r.end - r.begin, -1, step, 0});
      }
    }
    return runStep(call, std::move(sends), {});
  }
  RINA_TRY(runStep(
      call, {},
      {RecvItem{ctx.peer(port), reinterpret_cast<char*>(&go), sizeof go, {}, -1, step, 0, {}}}));
  RINA_TRY(checkMsg(call, go, kGo, port));
  RINA_TRY(ina.client().broadcast(data, bytes, false, kBroadcastQuietMs, &res));
  countInaCall(ctx, res.stats, res.missingSlices.size());
  RackMsg report{}, status{};
  report.kind = kReport;
  report.count = static_cast<uint32_t>(res.missingSlices.size());
  RINA_TRY(runStep(
      call,
      {SendItem{ctx.peer(port), reinterpret_cast<char*>(&report), sizeof report, -1, step, 0}},
      {RecvItem{
          ctx.peer(port), reinterpret_cast<char*>(&status), sizeof status, {}, -1, step, 0, {}}}));
  RINA_TRY(checkMsg(call, status, kDone, port));
  if (report.count) {
    RINA_TRY(
        runStep(call,
                {SendItem{ctx.peer(port), reinterpret_cast<const char*>(res.missingSlices.data()),
                          4 * res.missingSlices.size(), -1, step, 0}},
                {}));
  }
  if (status.fallback) ina.fallBack(ctx, "the port of this chunk lost the switch", false);
  std::vector<Range> ranges = status.fallback ? std::vector<Range>{Range{0, bytes}}
                                              : rangesOf(res.missingSlices, sliceBytes, bytes);
  std::vector<RecvItem> recvs;
  for (const Range& r : ranges) {
    recvs.push_back(
        RecvItem{ctx.peer(port), data + r.begin, r.end - r.begin, {}, -1, step, 0, {}});
  }
  return runStep(call, {}, std::move(recvs));
}

// After a switch call in which every worker of m took part: the agent
// collects each worker's host slices and whether it lost the switch, and
// tells every worker the union (ascending) or, when anyone lost the switch,
// that the rack falls back (*fallback; the slice list is then empty).
// Workers may disagree (one got a result before a preemption, another did
// not), so only the union is safe to redo on the hosts.
Status agreeOnHostSlices(RackCall& call, RackSwitch& ina, const Member& m, const Status& st,
                         const ina::InaCallResult& res, size_t count, int step,
                         std::vector<uint32_t>* slices, bool* fallback) {
  Context& ctx = call.ctx;
  const int me = ctx.rank();
  const int agent = m.ranks.front();
  const std::vector<int> others = othersOf(m, agent);
  const size_t P = ina.client().sliceElems();
  RackMsg report{};
  report.kind = kReport;
  report.fallback = st.ok() ? 0 : 1;
  report.count = st.ok() ? static_cast<uint32_t>(res.hostSlices.size()) : 0;
  slices->clear();
  RackMsg done{};
  done.kind = kDone;
  if (me == agent) {
    std::vector<RackMsg> reports(others.size());
    std::vector<RecvItem> recvs;
    for (size_t i = 0; i < others.size(); ++i) {
      recvs.push_back(RecvItem{ctx.peer(others[i]),
                               reinterpret_cast<char*>(&reports[i]),
                               sizeof(RackMsg),
                               {},
                               -1,
                               step,
                               0,
                               {}});
    }
    RINA_TRY(runStep(call, {}, std::move(recvs)));
    std::vector<std::vector<uint32_t>> lists(others.size());
    recvs.clear();
    std::string lostBy;
    for (size_t i = 0; i < others.size(); ++i) {
      RINA_TRY(checkMsg(call, reports[i], kReport, others[i]));
      if (reports[i].fallback && lostBy.empty()) lostBy = std::to_string(others[i]);
      lists[i].resize(reports[i].count);
      if (reports[i].count) {
        recvs.push_back(RecvItem{ctx.peer(others[i]),
                                 reinterpret_cast<char*>(lists[i].data()),
                                 4 * lists[i].size(),
                                 {},
                                 -1,
                                 step,
                                 0,
                                 {}});
      }
    }
    RINA_TRY(runStep(call, {}, std::move(recvs)));
    if (!st.ok() || !lostBy.empty()) {
      done.fallback = 1;
      ina.fallBack(ctx,
                   !st.ok() ? st.message() : "rank " + lostBy + " got no answer from the switch",
                   true);
    } else {
      *slices = res.hostSlices;
      for (const auto& l : lists) slices->insert(slices->end(), l.begin(), l.end());
      std::sort(slices->begin(), slices->end());
      slices->erase(std::unique(slices->begin(), slices->end()), slices->end());
      done.count = static_cast<uint32_t>(slices->size());
    }
    countInaCall(ctx, res.stats,
                 done.fallback ? ina::InaClient::sliceCount(count, P) : slices->size());
    std::vector<SendItem> sends;
    for (int q : others) {
      sends.push_back(
          SendItem{ctx.peer(q), reinterpret_cast<char*>(&done), sizeof done, -1, step, 0});
      if (done.count) {
        sends.push_back(SendItem{ctx.peer(q), reinterpret_cast<const char*>(slices->data()),
                                 4 * slices->size(), -1, step, 0});
      }
    }
    RINA_TRY(runStep(call, std::move(sends), {}));
  } else {
    if (!st.ok()) RINA_INFO("rank %d: %s (the agent decides)", me, st.message().c_str());
    countInaCall(ctx, res.stats, 0);
    std::vector<SendItem> sends{
        SendItem{ctx.peer(agent), reinterpret_cast<char*>(&report), sizeof report, -1, step, 0}};
    if (report.count) {
      sends.push_back(SendItem{ctx.peer(agent),
                               reinterpret_cast<const char*>(res.hostSlices.data()),
                               4 * res.hostSlices.size(), -1, step, 0});
    }
    RINA_TRY(runStep(
        call, std::move(sends),
        {RecvItem{
            ctx.peer(agent), reinterpret_cast<char*>(&done), sizeof done, {}, -1, step, 0, {}}}));
    RINA_TRY(checkMsg(call, done, kDone, agent));
    if (done.fallback) ina.fallBack(ctx, "a worker of the rack lost the switch", false);
    slices->resize(done.count);
    if (done.count) {
      RINA_TRY(runStep(call, {},
                       {RecvItem{ctx.peer(agent),
                                 reinterpret_cast<char*>(slices->data()),
                                 4 * slices->size(),
                                 {},
                                 -1,
                                 step,
                                 0,
                                 {}}}));
    }
  }
  *fallback = done.fallback != 0;
  return {};
}

// A member that is the whole ring (one INA rack, no other member): every
// worker needs the rack sum, so the switch sends it to every worker (S up
// and S down per worker) instead of reducing to a port and multicasting it
// back (2S up on the port). Host slices (the union over the rack) or, after
// a lost switch, everything are summed on the hosts from the saved inputs
// and sent from the agent, so every worker ends with the same bits.
Status inaAllReduce(RackCall& call, RackSwitch& ina, const Member& m, char* data, size_t count,
                    const char* input, int step) {
  Context& ctx = call.ctx;
  const int me = ctx.rank();
  const int agent = m.ranks.front();
  const std::vector<int> others = othersOf(m, agent);
  const size_t es = reduce::dataTypeSize(call.type);
  const size_t P = ina.client().sliceElems();
  // The inputs of host slices: the caller's send buffer, or a copy when in
  // place, in the communicator's scratch (a fresh allocation would fault in
  // every page of it, at every call).
  if (!input) {
    char* saved = ctx.scratch(count * es);
    if (!saved) {
      return errorf(rinaSystemError, "rank %d: cannot allocate %zu bytes", me, count * es);
    }
    std::memcpy(saved, data, count * es);
    input = saved;
  }
  ina::InaCallResult res;
  Status st = ina.client().allreduce(data, count, call.type, ina::InaCallOptions{}, &res);
  std::vector<uint32_t> slices;
  bool fallback = false;
  RINA_TRY(agreeOnHostSlices(call, ina, m, st, res, count, step, &slices, &fallback));
  std::vector<Range> ranges =
      fallback ? std::vector<Range>{Range{0, count}} : rangesOf(slices, P, count);
  if (ranges.empty()) return {};
  for (const Range& r : ranges)
    std::memcpy(data + r.begin * es, input + r.begin * es, (r.end - r.begin) * es);
  RINA_TRY(hostReduce(call, others, agent, data, nullptr, ranges, step));
  std::vector<SendItem> sends;
  std::vector<RecvItem> recvs;
  for (const Range& r : ranges) {
    char* at = data + r.begin * es;
    const size_t bytes = (r.end - r.begin) * es;
    if (me == agent) {
      for (int q : others) sends.push_back(SendItem{ctx.peer(q), at, bytes, -1, step + 1, 0});
    } else {
      recvs.push_back(RecvItem{ctx.peer(agent), at, bytes, {}, -1, step + 1, 0, {}});
    }
  }
  return runStep(call, std::move(sends), std::move(recvs));
}

}  // namespace

bool rackAllReduceOnSwitch(RackCall& call, const Member& m) {
  RackSwitch* ina = m.inaRack ? call.rack : nullptr;
  return ina && ina->active() && inaReducible(call.type, call.op);
}

Status rackAllReduce(RackCall& call, const Member& m, char* data, size_t count, const char* input,
                     int step) {
  if (count == 0) return {};
  return inaAllReduce(call, *call.rack, m, data, count, input, step);
}

void countInaCall(Context& ctx, const ina::InaCallStats& s, size_t hostSlices) {
  ctx.stats().inaCalls++;
  ctx.stats().inaRetransmissions += s.retransmissions;
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
  constexpr uint32_t kHeaderMagic = 0x52484452;  // as every collective's header
  Context& ctx = call.ctx;
  const int r = ctx.rank();
  const int R = static_cast<int>(members.size());
  const int m = memberIndexOf(members, r);
  const Member& me = members[m];
  const CollHeader mine{kHeaderMagic,
                        kAllReduce,
                        static_cast<uint8_t>(call.type),
                        static_cast<uint8_t>(call.op),
                        0,
                        call.seq,
                        count,
                        -1,
                        0};
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
  Engine e(contextFor(call.ctx, kAllReduce, call.seq, call.steps));
  e.sends() = std::move(sends);
  e.recvs() = std::move(recvs);
  return e.run();
}

Status rackReduce(RackCall& call, const Member& m, int port, char* data, size_t count,
                  const char* upstream, int step) {
  if (count == 0) return {};
  RackSwitch* ina = m.inaRack ? call.rack : nullptr;
  std::vector<int> others = othersOf(m, port);
  if (ina && ina->active() && inaReducible(call.type, call.op)) {
    return inaReduce(call, *ina, others, port, data, count, upstream, step);
  }
  return hostReduce(call, others, port, data, upstream, {Range{0, count}}, step);
}

Status rackBroadcast(RackCall& call, const Member& m, int port, char* data, size_t count,
                     int step) {
  if (count == 0 || m.ranks.size() < 2) return {};
  const size_t bytes = count * reduce::dataTypeSize(call.type);
  RackSwitch* ina = m.inaRack ? call.rack : nullptr;
  std::vector<int> others = othersOf(m, port);
  if (ina && ina->active()) return inaBroadcast(call, *ina, others, port, data, bytes, step);
  Context& ctx = call.ctx;
  std::vector<SendItem> sends;
  std::vector<RecvItem> recvs;
  if (ctx.rank() == port) {
    for (int q : others) sends.push_back(SendItem{ctx.peer(q), data, bytes, -1, step, 0});
  } else {
    recvs.push_back(RecvItem{ctx.peer(port), data, bytes, {}, -1, step, 0, {}});
  }
  return runStep(call, std::move(sends), std::move(recvs));
}

}  // namespace rina::algo
