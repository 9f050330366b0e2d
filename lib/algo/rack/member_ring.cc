// The member ring under rina and hier (docs/racks.md): members are INA
// racks, racks aggregating on their hosts (hier) or autonomous workers; one
// pipelined engine run moves the rack phases (RackTask) and the ring between
// members' ports.
//
// rina: every INA rack is one member, reducing through its switch; every
// other rank is an autonomous member. hier: every rack is one member and
// aggregates on its hosts: each chunk is reduced to its port over shm/TCP,
// passed around the ring of racks, and broadcast inside the rack (it is also
// what an INA rack runs after it lost its switch). Both take the members,
// their order and their ports from the current plan.
#include "algo/rack/member_ring.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "algo/engine/partition.h"
#include "algo/flat/flat.h"
#include "algo/rack/plan_members.h"
#include "algo/rack/rack.h"
#include "algo/rack/rack_phases.h"
#include "algo/rack/rack_task.h"
#include "reduce/reduce.h"
#include "rina/ina_wire.h"

namespace rina::algo {

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

namespace {

// An element range of the buffer: its offset and count.
using Range = std::pair<size_t, size_t>;

// The buffer is cut into K segments, one sub-ring each; a member's port for
// segment k is portFor(k), so each INA rack spreads its inter-member traffic
// over all its workers. Everything runs in one engine loop:
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
// workers sends 2 (N-1)/N S each way. Autonomous members are plain ring
// members. A rack without its switch (and every hier rack) does the same
// over shm/TCP (RackTask): reduce to the ports, (n-1)/n S, and send the
// final pieces back.
//
// How far the rack's switch reduce may run ahead of the ring, in diagonals
// beyond those the ring reads next (each about R K slices per worker). Without a
// bound, the reduce's datagrams can fill the shared host link's queue while
// the ring's TCP waits behind them (perf/results/lab-b-two-racks-ab-reduce-lead.md).
constexpr size_t kReduceLeadDiagonals = 1;

// Names: chunk c of segment k is a *piece*; slice j of a piece is a
// *grain*; grain (j, t, k) is slice j of the t-th chunk in the rack's order
// (t = 0 first), segment k.
class MemberRing {
 public:
  // input: this rank's input when it is not in recv (out of place), read
  // where it is by the rack's switch reduce or, at a member of one rank, by
  // the ring; else null.
  MemberRing(RackCall& call, const std::vector<Member>& members, char* recv, const char* input,
             size_t count)
      : call_(call),
        ctx_(call.ctx),
        members_(members),
        R_(static_cast<int>(members.size())),
        m_(memberIndexOf(members, ctx_.rank())),
        me_(members[m_]),
        es_(reduce::dataTypeSize(call.type)),
        recv_(recv),
        input_(input),
        K_(subRingCount(members)),
        segments_{count, K_},
        steps_(2 * (R_ - 1)),
        e_(contextFor(ctx_, kAllReduce, call.seq, 2 * R_)) {
    for (int k = 0; k < K_; ++k) {
      if (me_.portFor(k) == ctx_.rank()) mine_.push_back(k);
    }
    const size_t maxChunk = (segments_.size(0) + R_ - 1) / R_;
    sliceElems_ = memberSliceElems(maxChunk, steps_, es_, ctx_.sliceBytes());
    nslices_ = static_cast<int>(std::max<size_t>(1, (maxChunk + sliceElems_ - 1) / sliceElems_));
    recvAt_.assign(static_cast<size_t>(steps_) * mine_.size() * nslices_, -1);
  }

  Status run() {
    if (me_.ranks.size() > 1) RINA_TRY(startRackTask());
    addRingItems();
    return e_.run();
  }

 private:
  // Chunk c of segment k.
  Range pieceOf(int k, int c) const {
    const Chunks chunks{segments_.size(k), R_};
    return {segments_.begin(k) + chunks.begin(c), chunks.size(c)};
  }
  // Slice j of chunk c of segment k.
  Range grainOf(int k, int c, int j) const {
    const auto [at, n] = pieceOf(k, c);
    const size_t b = std::min(n, sliceElems_ * j);
    return {at + b, std::min(n - b, sliceElems_)};
  }
  // Grain (j, t, k)'s place in the rack's two orders.
  size_t& grainIndex(int j, int t, int k) {
    return grainAt_[(static_cast<size_t>(j) * R_ + t) * K_ + k];
  }
  // Where recvAt_ keeps the engine index of the ring's receive at step s,
  // slice j, of this rank's i-th sub-ring.
  size_t recvPlace(int s, size_t i, int j) const { return (s * mine_.size() + i) * nslices_ + j; }

  // The rack's own work (switch reduce-scatter and all-gather, or their
  // host forms) runs as a task of the same engine; the ring's items wait
  // only for the slices they read.
  Status startRackTask();
  // Whether grain gatherOrder[i] is final at this rank (its first `end`
  // elements): the ring's last receive of it is in.
  bool gatherFinal(size_t i, size_t end) const;
  // How many pieces of the rack's reduce order its switch reduce may have
  // sent by now (RackTask::limitSwitchReduce): those of the diagonals the
  // ring's wavefront reads next, and kReduceLeadDiagonals more.
  size_t reduceAhead() const;
  // The member ring, as a wavefront of sends and receives.
  void addRingItems();

  RackCall& call_;
  Context& ctx_;
  const std::vector<Member>& members_;
  const int R_;  // members
  const int m_;  // this rank's member
  const Member& me_;
  const size_t es_;
  char* recv_;
  const char* input_;
  const int K_;  // sub-rings
  const Chunks segments_;
  const int steps_;          // ring steps: R - 1 reduce-scatter, R - 1 all-gather
  std::vector<int> mine_;    // the sub-rings this rank is a port of
  size_t sliceElems_ = 0;    // a grain's size
  int nslices_ = 1;          // grains per piece
  std::vector<int> recvAt_;  // by recvPlace(); -1 until listed
  Engine e_;
  std::unique_ptr<RackTask> rack_;
  std::vector<size_t> grainAt_;  // grainIndex()
  struct GatherGrain {
    int slice, chunk, ring;  // j, t, k
  };
  std::vector<GatherGrain> gatherGrains_;  // by place in gatherOrder
  std::vector<size_t> diagEnd_;            // reduce order's pieces up to each diagonal
  std::vector<int> sendDiag_, recvDiag_;   // each ring item's diagonal, by engine index
  bool ringless_ = false;                  // a port of no sub-ring
};

Status MemberRing::startRackTask() {
  // The ring needs the rack sums of chunks m, m - 1, ..., m + 1 (t = 0:
  // the one it sends first; t: the one reduce-scatter step t - 1 adds
  // to), and chunks become final at the ports in the order m + 1, m, ...,
  // m + 2 (t = 0 at the last reduce-scatter step, t at all-gather step
  // t - 1). Both orders go by diagonals d = j + t, as the ring's wavefront
  // reaches them.
  grainAt_.assign(static_cast<size_t>(nslices_) * R_ * K_, 0);
  std::vector<RackPiece> reduceOrder, gatherOrder;
  diagEnd_.clear();
  for (int d = 0; d < nslices_ + R_ - 1; ++d) {
    for (int t = std::max(0, d - nslices_ + 1); t < R_ && t <= d; ++t) {
      const int j = d - t;
      for (int k = 0; k < K_; ++k) {
        grainIndex(j, t, k) = reduceOrder.size();
        const auto [at, n] = grainOf(k, mod(m_ - t, R_), j);
        reduceOrder.push_back(RackPiece{.begin = at, .count = n, .port = me_.portFor(k)});
        const auto [gat, gn] = grainOf(k, mod(m_ + 1 - t, R_), j);
        gatherOrder.push_back(RackPiece{.begin = gat, .count = gn, .port = me_.portFor(k)});
        gatherGrains_.push_back(GatherGrain{.slice = j, .chunk = t, .ring = k});
      }
    }
    diagEnd_.push_back(reduceOrder.size());
  }
  rack_ = std::make_unique<RackTask>(
      call_, me_, recv_, std::move(reduceOrder), std::move(gatherOrder),
      [this](size_t i, size_t end) { return gatherFinal(i, end); }, input_);
  ringless_ = mine_.empty() || steps_ == 0;
  rack_->limitSwitchReduce([this] { return reduceAhead(); });
  RINA_TRY(rack_->start());
  e_.addTask(rack_.get());
  return {};
}

size_t MemberRing::reduceAhead() const {
  // The ring's wavefront: the diagonal of its next receive or send,
  // whichever is further (a send is at most one diagonal past the receives
  // it follows). Its items there read rack sums of diagonals up to d + 1.
  // A worker that is no sub-ring's port has no wavefront to follow (and
  // the ports' rings need its contributions): no bound. Before the ring's
  // items are listed it is at diagonal 0.
  if (ringless_) return SIZE_MAX;
  const size_t ri = e_.recvsDone(), si = e_.sendsDone();
  int d = 0;
  if (!recvDiag_.empty()) {
    if (ri >= recvDiag_.size()) return SIZE_MAX;
    d = recvDiag_[ri];
  }
  if (si < sendDiag_.size()) d = std::max(d, sendDiag_[si]);
  const size_t upTo = static_cast<size_t>(d) + 1 + kReduceLeadDiagonals;
  return upTo < diagEnd_.size() ? diagEnd_[upTo] : SIZE_MAX;
}

bool MemberRing::gatherFinal(size_t i, size_t end) const {
  if (end == 0) return true;
  // A member alone: a piece is final once the rack has reduced it (the
  // two orders list the same grains in the same places).
  if (R_ == 1) return rack_->reduced(i, 0, end);
  const GatherGrain& g = gatherGrains_[i];
  const size_t mi = std::find(mine_.begin(), mine_.end(), g.ring) - mine_.begin();
  const int s = g.chunk == 0 ? R_ - 2 : R_ - 1 + g.chunk - 1;
  const int last = recvAt_[recvPlace(s, mi, g.slice)];
  return e_.recvsDone() > static_cast<size_t>(last);
}

void MemberRing::addRingItems() {
  const Member& prev = members_[mod(m_ - 1, R_)];
  const Member& next = members_[mod(m_ + 1, R_)];
  const reduce::ReduceFn fn = reduce::reduceFunction(call_.type, call_.op);
  // What this rank adds in the reduce-scatter and sends first: its rack's
  // sums (in recv_), or its own input (a member of one rank, as the flat
  // ring reads it).
  const char* own = rack_ || !input_ ? recv_ : input_;
  // Items go by diagonals d = s + j (step s of slice j only needs step
  // s - 1 of slice j), so a slice runs through every step while later
  // slices are still in the switch. Every rank lists them in the same (d,
  // s, sub-ring) order, so each connection carries its messages in the
  // same order on both ends.
  for (int d = 0; d < steps_ + nslices_ - 1; ++d) {
    for (int s = std::max(0, d - nslices_ + 1); s < steps_ && s <= d; ++s) {
      const int j = d - s;
      const bool gather = s >= R_ - 1;
      const int t = gather ? s - (R_ - 1) : s;
      const int sc = gather ? mod(m_ + 1 - t, R_) : mod(m_ - t, R_);
      const int rc = gather ? mod(m_ - t, R_) : mod(m_ - t - 1, R_);
      for (size_t i = 0; i < mine_.size(); ++i) {
        const int k = mine_[i];
        const auto [outAt, on] = grainOf(k, sc, j);
        const auto [inAt, in] = grainOf(k, rc, j);
        SendItem out{.conn = ctx_.hopTo(next.portFor(k), me_.spineToNext),
                     .data = (s == 0 ? own : recv_) + outAt * es_,
                     .len = on * es_,
                     .afterRecv = s == 0 ? -1 : recvAt_[recvPlace(s - 1, i, j)],
                     .step = 2 + s,
                     .slice = j};
        // The rack's sum of what goes first and of what each reduce-scatter
        // step adds to must be in place.
        if (rack_ && s == 0) {
          out.ready = [this, g = grainIndex(j, 0, k), on] { return rack_->reduced(g, 0, on); };
        }
        e_.sends().push_back(std::move(out));
        sendDiag_.push_back(d);
        RecvItem item{.conn = ctx_.hopFrom(prev.portFor(k), prev.spineToNext),
                      .dst = recv_ + inAt * es_,
                      .len = in * es_,
                      .step = 2 + s,
                      .slice = j};
        if (!gather) {
          item.reduce = transport::RecvReduce{fn, own + inAt * es_, es_};
          if (rack_) {
            item.ready = [this, g = grainIndex(j, t + 1, k), in] {
              return rack_->reduced(g, 0, in);
            };
          }
        }
        recvAt_[recvPlace(s, i, j)] = static_cast<int>(e_.recvs().size());
        e_.recvs().push_back(std::move(item));
        recvDiag_.push_back(d);
      }
    }
  }
}

// The member ring over members, seq already taken from ctx; rackSwitch:
// this rank's INA rack, or null. One INA rack alone is summed in one switch
// call instead.
Status memberRingAllReduce(Context& ctx, RackSwitch* rackSwitch, const std::vector<Member>& members,
                           const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                           rinaRedOp_t op, uint64_t seq) {
  const int R = static_cast<int>(members.size());
  char* recv = static_cast<char*>(recvv);
  RackCall call{ctx, rackSwitch, seq, type, op, 2 * R, ctx.portMarkers()};
  RINA_TRY(beginMemberCall(call, members, count));
  const Member& me = members[memberIndexOf(members, ctx.rank())];
  const bool onSwitch = sumsOnSwitch(call, me);
  // Out of place, the input stays where it is when the switch reads it (an
  // INA rack) or the ring does (a member of one rank), as the flat ring
  // reads it: no copy of the whole buffer before the first byte moves.
  // Host sums inside a rack start from a copy in recv.
  const char* input = nullptr;
  if (sendv != recvv) {
    if (onSwitch || (me.ranks.size() == 1 && R > 1)) {
      input = static_cast<const char*>(sendv);
    } else {
      std::memcpy(recv, sendv, count * reduce::dataTypeSize(type));
    }
  }
  if (R == 1 && onSwitch) {
    // One INA rack is the whole ring: the switch returns the sum to every
    // worker, S up and S down each.
    RINA_TRY(rackAllReduce(call, me, recv, count, input));
  } else {
    MemberRing ring(call, members, recv, input, count);
    RINA_TRY(ring.run());
  }
  // Every rank holds the same sums bit for bit, so each divides alike.
  if (op == rinaAvg) reduce::finishAverage(recv, count, type, ctx.size());
  return {};
}

// hier's and rina's start: every rank switches plans here alike, takes the
// collective's seq, and lays out the members the current plan gives.
using MembersOfPlan = std::vector<Member> (*)(const topo::RackMap&, const plan::Plan*);
Status planMembersAndRun(Context& ctx, PlanSource* plans, RackSwitch* rack, MembersOfPlan membersOf,
                         const void* send, void* recv, size_t count, rinaDataType_t type,
                         rinaRedOp_t op) {
  if (plans) RINA_TRY(plans->beforeCollective(ctx));
  const uint64_t seq = ctx.nextSeq();
  return memberRingAllReduce(ctx, rack, membersOf(ctx.racks(), plans ? plans->current() : nullptr),
                             send, recv, count, type, op, seq);
}

}  // namespace

Status hierAllReduce(Context& ctx, PlanSource* plans, const void* send, void* recv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op) {
  // Hier racks aggregate on their hosts: no INA rack state.
  return planMembersAndRun(ctx, plans, nullptr, hierMembers, send, recv, count, type, op);
}

Status inaMemberRingAllReduce(Context& ctx, PlanSource* plans, RackSwitch* rack, const void* send,
                              void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op) {
  return planMembersAndRun(ctx, plans, rack, inaMembers, send, recv, count, type, op);
}

}  // namespace rina::algo
