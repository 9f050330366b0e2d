// The member ring under hier and rina (DESIGN.md, "Rina data flow"): the
// buffer is cut into one chunk per member. Reduce-scatter: member m reduces
// chunk m - j at step j, the chunk's port adding the partial that came from
// the previous member's port for that chunk, and hands it to the next
// member's port; after R - 1 steps each member holds one final chunk. The
// all-gather passes final chunks on the same way and broadcasts each inside
// the member. Between steps the ports of neighbouring members move data in
// one engine run (a classic ring step), so no send waits on a later step.
#include <algorithm>
#include <cstring>
#include <utility>

#include "algo/rack_ina.h"
#include "algo/rack_steps.h"
#include "core/log.h"
#include "reduce/reduce.h"

namespace rina::algo {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

struct MemberChunks {
  size_t count;
  int n;
  size_t begin(int c) const { return (count / n) * c + std::min<size_t>(c, count % n); }
  size_t size(int c) const { return begin(c + 1) - begin(c); }
};

}  // namespace

Status memberRingAllReduce(Communicator& comm, const std::vector<Member>& members,
                           const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                           rinaRedOp_t op, uint64_t seq) {
  const int R = static_cast<int>(members.size());
  const int r = comm.rank();
  const int m = memberIndexOf(members, r);
  const Member& me = members[m];
  const Member& prev = members[mod(m - 1, R)];
  const Member& next = members[mod(m + 1, R)];
  const size_t es = reduce::dataTypeSize(type);
  char* recv = static_cast<char*>(recvv);
  if (sendv != recvv) std::memcpy(recv, sendv, count * es);
  const MemberChunks chunks{count, R};
  char* upstream = comm.scratch(chunks.size(0) * es);
  if (!upstream && chunks.size(0)) {
    return errorf(rinaSystemError, "rank %d: cannot allocate %zu bytes", r, chunks.size(0) * es);
  }
  RackCall call{comm, seq, type, op, 2 * R};
  RINA_TRY(checkCallsMatch(call, members, count));
  if (me.inaRack && comm.rackIna() && comm.rackIna()->active()) {
    RINA_TRY(comm.rackIna()->beginCollective(comm, seq));
  }
  if (R == 1 && rackAllReduceOnSwitch(call, me)) {
    // One INA rack is the whole ring: the switch returns the sum to every
    // worker, S up and S down each (reduce to a port and multicast would put
    // 2S on the port's uplink).
    const char* input = sendv != recvv ? static_cast<const char*>(sendv) : nullptr;
    RINA_TRY(rackAllReduce(call, me, recv, count, input, 1));
    if (op == rinaAvg) reduce::finishAverage(recv, count, type, comm.size());
    return {};
  }
  auto chunkAt = [&](int c) { return recv + chunks.begin(c) * es; };

  for (int j = 0; j < R; ++j) {
    const int c = mod(m - j, R);
    const int port = me.portFor(c);
    if (j > 0) {
      const int done = mod(m - j + 1, R);
      std::vector<SendItem> sends;
      std::vector<RecvItem> recvs;
      if (r == me.portFor(done)) {
        sends.push_back(SendItem{comm.hopTo(next.portFor(done)), chunkAt(done),
                                 chunks.size(done) * es, -1, j, 0});
      }
      if (r == port) {
        recvs.push_back(RecvItem{
            comm.hopFrom(prev.portFor(c)), upstream, chunks.size(c) * es, {}, -1, j, 0, {}});
      }
      RINA_TRY(runStep(call, std::move(sends), std::move(recvs)));
    }
    RINA_TRY(
        rackReduce(call, me, port, chunkAt(c), chunks.size(c), j > 0 ? upstream : nullptr, j + 1));
    if (j == R - 1 && r == port && op == rinaAvg) {
      reduce::finishAverage(chunkAt(c), chunks.size(c), type, comm.size());
    }
  }
  for (int j = 0; j < R; ++j) {
    const int c = mod(m + 1 - j, R);
    const int port = me.portFor(c);
    if (j > 0) {
      const int done = mod(m + 2 - j, R);
      std::vector<SendItem> sends;
      std::vector<RecvItem> recvs;
      if (r == me.portFor(done)) {
        sends.push_back(SendItem{comm.hopTo(next.portFor(done)), chunkAt(done),
                                 chunks.size(done) * es, -1, R + j, 0});
      }
      if (r == port) {
        recvs.push_back(RecvItem{
            comm.hopFrom(prev.portFor(c)), chunkAt(c), chunks.size(c) * es, {}, -1, R + j, 0, {}});
      }
      RINA_TRY(runStep(call, std::move(sends), std::move(recvs)));
    }
    RINA_TRY(rackBroadcast(call, me, port, chunkAt(c), chunks.size(c), R + j));
  }
  return {};
}

namespace {

int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

// Sub-rings: enough that every member's workers hold equal shares (the lcm
// of the member sizes), unless that grows past kMaxSubRings.
constexpr int kMaxSubRings = 12;
int subRingCount(const std::vector<Member>& members) {
  int k = 1, largest = 1;
  for (const Member& m : members) {
    const int n = static_cast<int>(m.ranks.size());
    largest = std::max(largest, n);
    k = k / gcd(k, n) * n;
    if (k > kMaxSubRings) return largest;
  }
  return k;
}

}  // namespace

// rina over two or more members (DESIGN.md, "Rina data flow"). The buffer is
// cut into K segments, one sub-ring each; a member's port for segment k is
// portFor(k), so each INA rack spreads its inter-member traffic over all its
// workers. (1) Each INA rack reduce-scatters through its switch: segment
// k's rack sum lands on its port (S up, about S/n down per worker). (2) The
// K sub-rings run a sliced, pipelined ring allreduce over the members'
// ports, all in one engine run: R - 1 reduce-scatter and R - 1 all-gather
// steps, every element reduced once. (3) Each rack all-gathers its
// segments from their ports over shm/TCP ((n-1)/n S each way per worker,
// less than a switch multicast's S down). Autonomous members take part in
// (2) only. A rack whose switch is lost or refused does (1) on its hosts.
Status rinaSubRingAllReduce(Communicator& comm, const std::vector<Member>& members,
                            const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                            rinaRedOp_t op, uint64_t seq) {
  const int R = static_cast<int>(members.size());
  const int r = comm.rank();
  const int m = memberIndexOf(members, r);
  const Member& me = members[m];
  const Member& prev = members[mod(m - 1, R)];
  const Member& next = members[mod(m + 1, R)];
  const size_t es = reduce::dataTypeSize(type);
  char* recv = static_cast<char*>(recvv);
  if (sendv != recvv) std::memcpy(recv, sendv, count * es);
  const int K = subRingCount(members);
  const MemberChunks segments{count, K};
  RackCall call{comm, seq, type, op, 2 * R};
  RINA_TRY(checkCallsMatch(call, members, count));
  if (me.inaRack && comm.rackIna() && comm.rackIna()->active()) {
    RINA_TRY(comm.rackIna()->beginCollective(comm, seq));
  }
  // (1)
  if (me.ranks.size() > 1) {
    std::vector<PortRange> parts;
    for (int k = 0; k < K; ++k) {
      parts.push_back(PortRange{segments.begin(k), segments.begin(k + 1), me.portFor(k)});
    }
    RINA_TRY(rackReduceScatter(call, me, recv, count, parts, 1));
  }
  // (2) and (3) in one engine run. Items go in (step, sub-ring, slice) order
  // on every rank, so each connection carries its messages in the same
  // order on both ends. A slice of a port's segment is final after the last
  // reduce-scatter receive (chunk m + 1) or an all-gather receive; the port
  // sends it on to the rest of its rack one step later, so the rack's
  // all-gather overlaps the member ring.
  const reduce::ReduceFn fn = reduce::reduceFunction(type, op == rinaAvg ? rinaSum : op);
  const size_t sliceElems = std::max<size_t>(1, comm.sliceBytes() / es);
  std::vector<int> mine;  // the sub-rings this rank is a port of
  for (int k = 0; k < K; ++k) {
    if (me.portFor(k) == r) mine.push_back(k);
  }
  const size_t maxChunk = (segments.size(0) + R - 1) / R;
  const int nslices =
      static_cast<int>(std::max<size_t>(1, (maxChunk + sliceElems - 1) / sliceElems));
  const int steps = 2 * (R - 1);
  // Slice j of chunk c of segment k: element offset and count.
  auto sliceOf = [&](int k, int c, int j) {
    const MemberChunks chunks{segments.size(k), R};
    const size_t b = std::min(chunks.size(c), sliceElems * j);
    const size_t n = std::min(chunks.size(c) - b, sliceElems);
    return std::pair<size_t, size_t>{segments.begin(k) + chunks.begin(c) + b, n};
  };
  // The chunk whose slices become final at step s (s >= R - 2).
  auto finalAt = [&](int s) { return s == R - 2 ? mod(m + 1, R) : mod(m - (s - (R - 1)), R); };
  Engine e(contextFor(comm, kAllReduce, seq, 2 * R));
  // recvAt[(s * mine.size() + i) * nslices + j]: index of that receive.
  std::vector<int> recvAt;
  // (3) for the slices that became final at step s.
  auto rackGather = [&](int s) {
    if (me.ranks.size() < 2 || s < R - 2) return;
    const int c = finalAt(s);
    for (size_t i = 0; i < mine.size(); ++i) {
      for (int j = 0; j < nslices; ++j) {
        const auto [at, n] = sliceOf(mine[i], c, j);
        const int after = recvAt[(s * mine.size() + i) * nslices + j];
        for (int q : me.ranks) {
          if (q != r) {
            e.sends().push_back(SendItem{comm.peer(q), recv + at * es, n * es, after, 2 * R, j});
          }
        }
      }
    }
    for (int k = 0; k < K; ++k) {
      const int port = me.portFor(k);
      if (port == r) continue;
      for (int j = 0; j < nslices; ++j) {
        const auto [at, n] = sliceOf(k, c, j);
        e.recvs().push_back(
            RecvItem{comm.peer(port), recv + at * es, n * es, {}, -1, 2 * R, j, {}});
      }
    }
  };
  for (int s = 0; s < steps; ++s) {
    const bool gather = s >= R - 1;
    const int t = gather ? s - (R - 1) : s;
    const int sc = gather ? mod(m + 1 - t, R) : mod(m - t, R);
    const int rc = gather ? mod(m - t, R) : mod(m - t - 1, R);
    for (size_t i = 0; i < mine.size(); ++i) {
      const int k = mine[i];
      transport::Connection* to = comm.hopTo(next.portFor(k));
      transport::Connection* from = comm.hopFrom(prev.portFor(k));
      for (int j = 0; j < nslices; ++j) {
        const auto [outAt, outN] = sliceOf(k, sc, j);
        const auto [inAt, inN] = sliceOf(k, rc, j);
        const int after = s == 0 ? -1 : recvAt[((s - 1) * mine.size() + i) * nslices + j];
        e.sends().push_back(SendItem{to, recv + outAt * es, outN * es, after, 2 + s, j});
        RecvItem item{from, recv + inAt * es, inN * es, {}, -1, 2 + s, j, {}};
        if (!gather) item.reduce = transport::RecvReduce{fn, recv + inAt * es, es};
        recvAt.push_back(static_cast<int>(e.recvs().size()));
        e.recvs().push_back(std::move(item));
      }
    }
    if (s > 0) rackGather(s - 1);
  }
  rackGather(steps - 1);
  RINA_TRY(e.run());
  // Every rank holds the same sums bit for bit, so each divides alike.
  if (op == rinaAvg) reduce::finishAverage(recv, count, type, comm.size());
  return {};
}

Status rinaAllReduce(Communicator& comm, const void* send, void* recv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op) {
  const uint64_t seq = comm.nextSeq();
  std::vector<Member> members = rinaMembers(comm.racks());
  if (members.size() == 1) {
    return memberRingAllReduce(comm, members, send, recv, count, type, op, seq);
  }
  return rinaSubRingAllReduce(comm, members, send, recv, count, type, op, seq);
}

}  // namespace rina::algo
