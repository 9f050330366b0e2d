// The member ring under rina and hier (docs/racks.md): members are INA
// racks, racks aggregating on their hosts (hier) or autonomous workers; one
// pipelined engine run moves the rack phases (RackTask) and the ring between
// members' ports.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include "algo/partition.h"
#include "algo/plan_members.h"
#include "algo/rack_steps.h"
#include "algo/rack_task.h"
#include "core/log.h"
#include "reduce/reduce.h"
#include "rina/ina_wire.h"

namespace rina::algo {
namespace {

int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

// Sub-rings: enough that every member's workers hold equal shares (the lcm
// of the member sizes), unless that grows past kMaxSubRings.
constexpr int kMaxSubRings = 12;

}  // namespace

static_assert(kMemberSliceAlignElems == ina::kMaxPayloadElems,
              "member ring slices are whole INA datagrams of the largest payload");

size_t memberSliceElems(size_t chunkElems, int steps, size_t elemBytes, size_t sliceBytes) {
  const size_t most = std::max<size_t>(1, sliceBytes / elemBytes);
  const size_t least = std::max<size_t>(1, kMinMemberSliceBytes / elemBytes);
  const size_t want = chunkElems / (kMemberSlicesPerStep * static_cast<size_t>(std::max(1, steps)));
  // Whole INA datagrams: the switch's payload is a power of two up to
  // kMaxPayloadElems, and a slice's last datagram is sent full size.
  const size_t a = kMemberSliceAlignElems;
  const size_t aligned = std::max(a, (want + a / 2) / a * a);
  return std::min(most, std::max(least, aligned));
}

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

// The buffer is cut into K segments, one sub-ring each; a member's port for segment k is
// portFor(k), so each INA rack spreads its inter-member traffic over all its
// workers. Everything runs in one engine loop:
//  - each INA rack's RackTask sends every worker's buffer through the switch
//    as a reduce-scatter (a piece's sum to its port only: S up, S/n down
//    per worker), in the order the ring consumes the sums;
//  - the K sub-rings run a sliced ring allreduce over the members' ports
//    (R - 1 reduce-scatter and R - 1 all-gather steps, every element
//    reduced once); a ring item waits only for the slices of the rack sum
//    it reads, so the ring starts while the switch is still summing;
//  - each final piece goes from its port through the switch's multicast to
//    the rest of the rack as soon as it is final (S/n up, S (n-1)/n down;
//    the root gets an acknowledgement only).
// Per INA worker that is S (1 + 1/n + 2 (R-1) / (R n)) up, S/n less
// with port markers, and S (1 + 2 (R-1) / (R n)) down; a flat ring over N
// workers sends 2 (N-1)/N S each way. Autonomous members are plain ring members. A
// rack without its switch (and every hier rack) does the same over shm/TCP
// (RackTask): reduce to the ports, (n-1)/n S, and send the final pieces back.
// One INA rack alone is summed in one switch call instead.
Status memberRingAllReduce(Context& ctx, RackSwitch* rackSwitch, const std::vector<Member>& members,
                           const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                           rinaRedOp_t op, uint64_t seq) {
  const int R = static_cast<int>(members.size());
  const int r = ctx.rank();
  const int m = memberIndexOf(members, r);
  const Member& me = members[m];
  const Member& prev = members[mod(m - 1, R)];
  const Member& next = members[mod(m + 1, R)];
  const size_t es = reduce::dataTypeSize(type);
  char* recv = static_cast<char*>(recvv);
  if (sendv != recvv) std::memcpy(recv, sendv, count * es);
  const int K = subRingCount(members);
  const Chunks segments{count, K};
  RackCall call{ctx, rackSwitch, seq, type, op, 2 * R, ctx.portMarkers()};
  RINA_TRY(checkCallsMatch(call, members, count));
  if (me.inaRack && rackSwitch && rackSwitch->active()) {
    RINA_TRY(rackSwitch->beginCollective(ctx, seq));
  }
  if (R == 1 && rackAllReduceOnSwitch(call, me)) {
    // One INA rack is the whole ring: the switch returns the sum to every
    // worker, S up and S down each.
    const char* input = sendv != recvv ? static_cast<const char*>(sendv) : nullptr;
    RINA_TRY(rackAllReduce(call, me, recv, count, input));
    if (op == rinaAvg) reduce::finishAverage(recv, count, type, ctx.size());
    return {};
  }
  const reduce::ReduceFn fn = reduce::reduceFunction(type, op);
  std::vector<int> mine;  // the sub-rings this rank is a port of
  for (int k = 0; k < K; ++k) {
    if (me.portFor(k) == r) mine.push_back(k);
  }
  const size_t maxChunk = (segments.size(0) + R - 1) / R;
  const int steps = 2 * (R - 1);
  const size_t sliceElems = memberSliceElems(maxChunk, steps, es, ctx.sliceBytes());
  const int nslices =
      static_cast<int>(std::max<size_t>(1, (maxChunk + sliceElems - 1) / sliceElems));
  // Chunk c of segment k (a piece): its element offset and count.
  auto pieceOf = [&](int k, int c) {
    const Chunks chunks{segments.size(k), R};
    return std::pair<size_t, size_t>{segments.begin(k) + chunks.begin(c), chunks.size(c)};
  };
  Engine e(contextFor(ctx, kAllReduce, seq, 2 * R));
  // recvAt[(s * mine.size() + i) * nslices + j]: index of that receive.
  std::vector<int> recvAt(static_cast<size_t>(steps) * mine.size() * nslices, -1);
  // The rack's own work (switch reduce-scatter and all-gather, or their
  // host forms) runs as a task of the same engine; the ring's items wait
  // only for the slices they read.
  std::unique_ptr<RackTask> rack;
  // Slice j of chunk c of segment k (a grain): its element offset and count.
  auto grainOf = [&](int k, int c, int j) {
    const auto [at, n] = pieceOf(k, c);
    const size_t b = std::min(n, sliceElems * j);
    return std::pair<size_t, size_t>{at + b, std::min(n - b, sliceElems)};
  };
  // Grain (j, t, k): slice j of the t-th chunk in the rack's order, segment
  // k. Both rack orders go by diagonals d = j + t, as the ring's wavefront
  // reaches them (below); grainAt[(j * R + t) * K + k] is its place there.
  std::vector<size_t> grainAt(static_cast<size_t>(nslices) * R * K);
  std::vector<int> gatherSliceOf, gatherChunkOf, gatherRingOf;  // by place
  if (me.ranks.size() > 1) {
    // The ring needs the rack sums of chunks m, m - 1, ..., m + 1 (t = 0:
    // the one it sends first; t: the one reduce-scatter step t - 1 adds
    // to), and chunks become final at the ports in the order m + 1, m, ...,
    // m + 2 (t = 0 at the last reduce-scatter step, t at all-gather step
    // t - 1).
    std::vector<RackPiece> reduceOrder, gatherOrder;
    for (int d = 0; d < nslices + R - 1; ++d) {
      for (int t = std::max(0, d - nslices + 1); t < R && t <= d; ++t) {
        const int j = d - t;
        for (int k = 0; k < K; ++k) {
          grainAt[(static_cast<size_t>(j) * R + t) * K + k] = reduceOrder.size();
          const auto [at, n] = grainOf(k, mod(m - t, R), j);
          reduceOrder.push_back(RackPiece{at, n, me.portFor(k)});
          const auto [gat, gn] = grainOf(k, mod(m + 1 - t, R), j);
          gatherOrder.push_back(RackPiece{gat, gn, me.portFor(k)});
          gatherSliceOf.push_back(j);
          gatherChunkOf.push_back(t);
          gatherRingOf.push_back(k);
        }
      }
    }
    auto isFinal = [&, R](size_t i, size_t end) {
      if (end == 0) return true;
      // A member alone: a piece is final once the rack has reduced it (the
      // two orders list the same grains in the same places).
      if (R == 1) return rack->reduced(i, 0, end);
      const int j = gatherSliceOf[i], t = gatherChunkOf[i];
      const size_t mi = std::find(mine.begin(), mine.end(), gatherRingOf[i]) - mine.begin();
      const int s = t == 0 ? R - 2 : R - 1 + t - 1;
      return e.recvsDone() > static_cast<size_t>(recvAt[(s * mine.size() + mi) * nslices + j]);
    };
    rack = std::make_unique<RackTask>(call, me, recv, std::move(reduceOrder),
                                      std::move(gatherOrder), isFinal);
    RINA_TRY(rack->start());
    e.addTask(rack.get());
  }
  auto grainIndex = [&](int j, int t, int k) {
    return grainAt[(static_cast<size_t>(j) * R + t) * K + k];
  };
  // The member ring, as a wavefront: items go by diagonals d = s + j (step
  // s of slice j only needs step s - 1 of slice j), so a slice runs through
  // every step while later slices are still in the switch. Every rank lists
  // them in the same (d, s, sub-ring) order, so each connection carries its
  // messages in the same order on both ends.
  for (int d = 0; d < steps + nslices - 1; ++d) {
    for (int s = std::max(0, d - nslices + 1); s < steps && s <= d; ++s) {
      const int j = d - s;
      const bool gather = s >= R - 1;
      const int t = gather ? s - (R - 1) : s;
      const int sc = gather ? mod(m + 1 - t, R) : mod(m - t, R);
      const int rc = gather ? mod(m - t, R) : mod(m - t - 1, R);
      for (size_t i = 0; i < mine.size(); ++i) {
        const int k = mine[i];
        transport::Connection* to = ctx.hopTo(next.portFor(k), me.spineToNext);
        transport::Connection* from = ctx.hopFrom(prev.portFor(k), prev.spineToNext);
        const auto [outAt, on] = grainOf(k, sc, j);
        const auto [inAt, in] = grainOf(k, rc, j);
        const int after = s == 0 ? -1 : recvAt[((s - 1) * mine.size() + i) * nslices + j];
        SendItem out{.conn = to,
                     .data = recv + outAt * es,
                     .len = on * es,
                     .afterRecv = after,
                     .step = 2 + s,
                     .slice = j};
        // The rack's sum of what goes first and of what each reduce-scatter
        // step adds to must be in place.
        if (rack && s == 0) {
          out.ready = [&rack, g = grainIndex(j, 0, k), on] { return rack->reduced(g, 0, on); };
        }
        e.sends().push_back(std::move(out));
        RecvItem item{
            .conn = from, .dst = recv + inAt * es, .len = in * es, .step = 2 + s, .slice = j};
        if (!gather) {
          item.reduce = transport::RecvReduce{fn, recv + inAt * es, es};
          if (rack) {
            item.ready = [&rack, g = grainIndex(j, t + 1, k), in] {
              return rack->reduced(g, 0, in);
            };
          }
        }
        recvAt[(s * mine.size() + i) * nslices + j] = static_cast<int>(e.recvs().size());
        e.recvs().push_back(std::move(item));
      }
    }
  }
  RINA_TRY(e.run());
  // Every rank holds the same sums bit for bit, so each divides alike.
  if (op == rinaAvg) reduce::finishAverage(recv, count, type, ctx.size());
  return {};
}

}  // namespace rina::algo
