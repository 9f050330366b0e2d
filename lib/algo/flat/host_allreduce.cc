// Allreduce over the host segment (transport/shm_group.h), when every rank
// is on this host: no pairwise streams, every hand-off one store that the
// waiting ranks poll (or sleep on).
//   one-shot (below RINA_SMALL_MSG_BYTES): every rank copies its buffer into
//     its own slot and posts it, then reduces all slots in rank order 0..n-1:
//     one dependent hand-off per call instead of the log2(n) rounds of
//     recursive doubling, each of which could put a rank to sleep.
//   two-shot (up to RINA_TWO_SHOT_BYTES): the buffer goes in chunks of a
//     slot's size; per chunk every rank posts its chunk, reduces its own
//     share of it (1/n) over all slots in rank order, puts that sum back
//     into its slot and posts it, then copies the others' sums: two
//     hand-offs per chunk where the ring has 2(n-1) per slice, and each
//     rank reads and writes about 3x its bytes (one-shot: n+1 times).
// Either way every element is reduced once, in rank order, so every rank
// holds the same bits. A rank waits only for the peers it still needs, in
// the step engine's loop (spin, then futex, timeout and abort as
// everywhere).
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "algo/engine/partition.h"
#include "algo/flat/flat.h"
#include "algo/flat/host_segment_task.h"
#include "reduce/reduce.h"
#include "transport/shm_group.h"

namespace rina::algo {
namespace {

class HostAllReduceTask : public HostSegmentTask {
 public:
  HostAllReduceTask(Context& ctx, transport::ShmGroup& group, bool twoShot, uint64_t seq,
                    const void* send, void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op,
                    CollKind kind)
      : HostSegmentTask(ctx, group),
        twoShot_(twoShot),
        send_(static_cast<const char*>(send)),
        recv_(static_cast<char*>(recv)),
        count_(count),
        es_(reduce::dataTypeSize(type)),
        chunkElems_(std::max<size_t>(1, group.slotBytes() / es_)),
        chunks_(count == 0 ? 1 : (count + chunkElems_ - 1) / chunkElems_),
        type_(type),
        op_(op),
        fn_(reduce::reduceFunction(type, op)),
        mine_{seq,
              count,
              static_cast<uint8_t>(type),
              static_cast<uint8_t>(op),
              static_cast<uint8_t>(kind),
              0,
              0,
              {}} {
    startChunk();
  }

  Status progress(bool* moved) override {
    *moved = false;
    while (!done_) {
      bool waiting = false;
      switch (phase_) {
        case Phase::kSlot:
          postInput(&waiting);
          break;
        case Phase::kInputs:
          RINA_TRY(reduceShare(&waiting));
          break;
        case Phase::kSums:
          gatherSums(&waiting);
          break;
      }
      if (waiting) return {};
      *moved = true;
    }
    return {};
  }

  bool done() const override { return done_; }

  // Waiting for inputs: spin while every rank that has yet to post last
  // posted from another CPU (it runs there, or waits behind a rank that
  // does), so that yielding would only hand this CPU to a core-mate that
  // waits for the same posts.
  bool spinsRatherThanYields() const override {
    if (phase_ != Phase::kInputs) return false;
    const int cpu = sched_getcpu();
    for (int r = 0; r < g_.ranks(); ++r) {
      if (r == g_.rank()) continue;
      const transport::ShmGroupRank& peer = g_.control(r);
      if (peer.posted[which_].load(std::memory_order_acquire) == round_) continue;
      // Not posted yet: where it posted its last round from.
      if (peer.call[which_ ^ 1].cpu == cpu) return false;
    }
    return true;
  }

  std::string describe() const override {
    char buf[240];
    const char* what = phase_ == Phase::kSlot     ? "finish reading round"
                       : phase_ == Phase::kInputs ? "post its input for round"
                                                  : "post its share of the sum for round";
    std::snprintf(buf, sizeof buf,
                  "%s step %d of %d: waiting for rank %d to %s %u (it is at %u; chunk %zu of %zu)",
                  twoShot_ ? "two-shot" : "one-shot", static_cast<int>(phase_) + 1,
                  twoShot_ ? 3 : 2, waitPeer_, what, phase_ == Phase::kSlot ? reuse_ : round_,
                  seen_, chunk_ + 1, chunks_);
    return buf;
  }

 private:
  enum class Phase { kSlot, kInputs, kSums };

  std::atomic<uint32_t>* waitWord() const override {
    transport::ShmGroupRank& peer = g_.control(waitPeer_);
    return phase_ == Phase::kSlot     ? &peer.done
           : phase_ == Phase::kInputs ? &peer.posted[which_]
                                      : &peer.reduced[which_];
  }

  // Elements [begin, begin + size) of the current chunk that rank r sums
  // (two-shot: its share; one-shot: all of it, for every rank).
  struct Range {
    size_t begin, size;
  };
  Range shareOf(int r) const {
    if (!twoShot_) return Range{0, chunkCount_};
    const Chunks shares{chunkCount_, g_.ranks()};
    return Range{shares.begin(r), shares.size(r)};
  }

  void startChunk() {
    round_ = g_.nextRound();
    which_ = static_cast<int>(round_ & 1);
    chunkBegin_ = chunk_ * chunkElems_;
    chunkCount_ = std::min(chunkElems_, count_ - chunkBegin_);
    phase_ = Phase::kSlot;
    waitPeer_ = 0;
  }

  // Phase 1: once every peer has read what the slot carried last, this
  // rank's chunk goes in and is posted. Rounds back to back need no wait
  // (peers posted round k-1 after reading k-2); other collectives in
  // between can make it a real one.
  void postInput(bool* waiting) {
    transport::ShmGroupRank& me = g_.control(g_.rank());
    reuse_ = me.posted[which_].load(std::memory_order_relaxed);
    // Known without reading the peers' done words (lines every peer writes
    // every call): see reduceShare.
    if (transport::seqAtLeast(g_.peersFinished(), reuse_)) waitPeer_ = g_.ranks();
    for (; waitPeer_ < g_.ranks(); ++waitPeer_) {
      if (waitPeer_ == g_.rank()) continue;
      seen_ = g_.control(waitPeer_).done.load(std::memory_order_acquire);
      if (!transport::seqAtLeast(seen_, reuse_)) {
        *waiting = true;
        return;
      }
    }
    reduce::copyBytes(g_.slot(g_.rank(), which_), send_ + chunkBegin_ * es_, chunkCount_ * es_);
    me.call[which_] = mine_;
    me.call[which_].cpu = static_cast<uint16_t>(sched_getcpu());
    g_.post(which_, round_);
    phase_ = Phase::kInputs;
    waitPeer_ = 0;
  }

  // Phase 2: this rank's share of the chunk summed over every slot, in rank
  // order, as each peer's input arrives (straight into the output, which
  // the chunk's input no longer needs: it is in the slot). Two-shot: the
  // share is posted back in this rank's slot for the others.
  Status reduceShare(bool* waiting) {
    const Range mine = shareOf(g_.rank());
    char* out = recv_ + (chunkBegin_ + mine.begin) * es_;
    for (; waitPeer_ < g_.ranks(); ++waitPeer_) {
      const int r = waitPeer_;
      if (r != g_.rank()) {
        seen_ = g_.control(r).posted[which_].load(std::memory_order_acquire);
        if (seen_ != round_) {
          *waiting = true;
          return {};
        }
        RINA_TRY(checkCall(r));
      }
      const char* in = g_.slot(r, which_) + mine.begin * es_;
      if (r == 0) {
        reduce::copyBytes(out, in, mine.size * es_);
      } else {
        fn_(out, out, in, mine.size);
      }
    }
    // Every peer posted this round, which it does only after reading every
    // round before: the chunk before (endChunk, then startChunk), or the
    // collectives before this call, which returned.
    g_.setPeersFinished(round_ - 1);
    if (op_ == rinaAvg) reduce::finishAverage(out, mine.size, type_, g_.ranks());
    if (!twoShot_) {
      endChunk();
      return {};
    }
    reduce::copyBytes(g_.slot(g_.rank(), which_) + mine.begin * es_, out, mine.size * es_);
    g_.postReduced(which_, round_);
    phase_ = Phase::kSums;
    waitPeer_ = 0;
    return {};
  }

  // Phase 3 (two-shot): every other rank's share of the sum, out of its slot.
  void gatherSums(bool* waiting) {
    for (; waitPeer_ < g_.ranks(); ++waitPeer_) {
      const int r = waitPeer_;
      if (r == g_.rank()) continue;
      seen_ = g_.control(r).reduced[which_].load(std::memory_order_acquire);
      if (seen_ != round_) {
        *waiting = true;
        return;
      }
      const Range theirs = shareOf(r);
      reduce::copyBytes(recv_ + (chunkBegin_ + theirs.begin) * es_,
                        g_.slot(r, which_) + theirs.begin * es_, theirs.size * es_);
    }
    endChunk();
  }

  void endChunk() {
    g_.finish(round_);
    if (++chunk_ == chunks_) {
      done_ = true;
    } else {
      startChunk();
    }
  }

  // The peer's call record must be ours: same call number, count, type, op.
  Status checkCall(int r) const {
    const transport::ShmGroupCall theirs = g_.control(r).call[which_];
    if (theirs.seq == mine_.seq && theirs.count == mine_.count &&
        theirs.datatype == mine_.datatype && theirs.op == mine_.op &&
        theirs.collective == mine_.collective) {
      return {};
    }
    return errorf(
        rinaInvalidUsage,
        "rank %d: calls do not match: peer %d is in %s #%llu (count %llu, %s, %s) "
        "while this rank is in %s #%llu (count %llu, %s, %s)",
        g_.rank(), r, collectiveName(theirs.collective),
        static_cast<unsigned long long>(theirs.seq), static_cast<unsigned long long>(theirs.count),
        reduce::dataTypeName(static_cast<rinaDataType_t>(theirs.datatype)),
        reduce::opName(static_cast<rinaRedOp_t>(theirs.op)), collectiveName(mine_.collective),
        static_cast<unsigned long long>(mine_.seq), static_cast<unsigned long long>(mine_.count),
        reduce::dataTypeName(type_), reduce::opName(op_));
  }

  const bool twoShot_;
  const char* send_;
  char* recv_;
  const size_t count_, es_, chunkElems_, chunks_;
  const rinaDataType_t type_;
  const rinaRedOp_t op_;
  const reduce::ReduceFn fn_;
  const transport::ShmGroupCall mine_;
  size_t chunk_ = 0, chunkBegin_ = 0, chunkCount_ = 0;
  uint32_t round_ = 0;
  int which_ = 0;
  Phase phase_ = Phase::kSlot;
  bool done_ = false;
  uint32_t reuse_ = 0;  // the round our slot carried last
};

Status runHostAllReduce(Context& ctx, bool twoShot, const void* send, void* recv, size_t count,
                        rinaDataType_t type, rinaRedOp_t op, CollKind kind) {
  transport::ShmGroup& g = *ctx.hostGroup();
  g.prepare(count * reduce::dataTypeSize(type));
  const uint64_t seq = ctx.nextSeq();
  HostAllReduceTask task(ctx, g, twoShot, seq, send, recv, count, type, op, kind);
  Engine e(contextFor(ctx, kind, seq, twoShot ? 3 : 2));
  e.addTask(&task);
  return e.run();
}

}  // namespace

bool hostSegmentFits(const Context& ctx) {
  const transport::ShmGroup* g = ctx.hostGroup();
  return g && g->ranks() == ctx.size();
}

bool oneShotFits(const Context& ctx, size_t bytes) {
  return hostSegmentFits(ctx) && bytes <= ctx.hostGroup()->slotBytes() &&
         bytes <= ctx.smallMsgBytes();
}

size_t hostSlotBytes(size_t smallMsgBytes, size_t twoShotBytes, int ranks) {
  constexpr size_t kMostPerSlot = 1 << 20, kMostInAll = 32 << 20;
  size_t slot = smallMsgBytes;
  if (twoShotBytes > smallMsgBytes) slot = std::max(slot, kMostPerSlot);
  slot = std::min(slot, kMostPerSlot);
  if (ranks > 0) slot = std::min(slot, kMostInAll / (2 * static_cast<size_t>(ranks)));
  return (slot + 63) & ~size_t{63};
}

Status oneShotAllReduce(Context& ctx, const void* send, void* recv, size_t count,
                        rinaDataType_t type, rinaRedOp_t op, CollKind kind) {
  const size_t bytes = count * reduce::dataTypeSize(type);
  if (!oneShotFits(ctx, bytes)) {
    return errorf(rinaInvalidUsage,
                  "rank %d: one-shot allreduce of %zu bytes needs every rank on this host and at "
                  "most %zu bytes (RINA_SMALL_MSG_BYTES)",
                  ctx.rank(), bytes, ctx.hostGroup() ? ctx.hostGroup()->slotBytes() : size_t{0});
  }
  return runHostAllReduce(ctx, false, send, recv, count, type, op, kind);
}

Status twoShotAllReduce(Context& ctx, const void* send, void* recv, size_t count,
                        rinaDataType_t type, rinaRedOp_t op) {
  if (!hostSegmentFits(ctx)) {
    return errorf(rinaInvalidUsage,
                  "rank %d: two-shot allreduce needs every rank on this host and the host "
                  "segment (RINA_SMALL_MSG_BYTES > 0, shared memory on)",
                  ctx.rank());
  }
  return runHostAllReduce(ctx, true, send, recv, count, type, op, kAllReduce);
}

}  // namespace rina::algo
