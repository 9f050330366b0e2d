// The member ring under hier and rina (DESIGN.md, "Rina data flow"): the
// buffer is cut into one chunk per member. Reduce-scatter: member m reduces
// chunk m - j at step j, the chunk's port adding the partial that came from
// the previous member's port for that chunk, and hands it to the next
// member's port; after R - 1 steps each member holds one final chunk. The
// all-gather passes final chunks on the same way and broadcasts each inside
// the member. Between steps the ports of neighbouring members move data in
// one engine run (a classic ring step), so no send waits on a later step.
#include <cstring>

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
        sends.push_back(SendItem{comm.peer(next.portFor(done)), chunkAt(done),
                                 chunks.size(done) * es, -1, j, 0});
      }
      if (r == port) {
        recvs.push_back(
            RecvItem{comm.peer(prev.portFor(c)), upstream, chunks.size(c) * es, {}, -1, j, 0, {}});
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
        sends.push_back(SendItem{comm.peer(next.portFor(done)), chunkAt(done),
                                 chunks.size(done) * es, -1, R + j, 0});
      }
      if (r == port) {
        recvs.push_back(RecvItem{
            comm.peer(prev.portFor(c)), chunkAt(c), chunks.size(c) * es, {}, -1, R + j, 0, {}});
      }
      RINA_TRY(runStep(call, std::move(sends), std::move(recvs)));
    }
    RINA_TRY(rackBroadcast(call, me, port, chunkAt(c), chunks.size(c), R + j));
  }
  return {};
}

Status rinaAllReduce(Communicator& comm, const void* send, void* recv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op) {
  const uint64_t seq = comm.nextSeq();
  return memberRingAllReduce(comm, rinaMembers(comm.racks()), send, recv, count, type, op, seq);
}

}  // namespace rina::algo
