// All-to-all over the host segment (transport/shm_group.h), when every rank
// is on this host and the kernel lets ranks copy between their memories
// (ShmGroup::copiesWork): each rank posts, in its slot, where each of its
// blocks lies and where each peer's block for it goes; then every block
// is copied once, straight from the sender's buffer into the receiver's
// (transport/cma.h), by whichever of the two gets to it first: the
// receiver reading (process_vm_readv) or the sender writing
// (process_vm_writev). So a rank that runs copies for a peer that does not
// (more ranks than cores), and no block waits for a header or a token
// through a FIFO. A rank returns once every block to and from it is copied.
#include <cstdio>
#include <cstring>
#include <string>

#include "algo/engine/partition.h"
#include "algo/flat/block_exchange.h"
#include "algo/flat/flat.h"
#include "algo/flat/host_segment_task.h"
#include "reduce/reduce.h"
#include "transport/cma.h"
#include "transport/shm_group.h"

namespace rina::algo {
namespace {

// What rank r posts for each peer p, in r's slot: its block for p, where
// p's block for r goes, and the words that say who copies r's block for p.
struct alignas(64) PostedBlock {
  uint64_t sendAddr;  // r's block for p
  uint64_t sendCount;
  uint64_t recvAddr;  // where p's block for r lands
  uint64_t recvCount;
  std::atomic<uint32_t> claimed;  // the round in which someone took r -> p
  std::atomic<uint32_t> copied;   // the round in which r -> p is in p's buffer
  std::atomic<uint32_t> failed;   // the round in which copying r -> p failed
};
static_assert(sizeof(PostedBlock) == 64);

class HostExchangeTask : public HostSegmentTask {
 public:
  HostExchangeTask(Context& ctx, transport::ShmGroup& g, uint64_t seq, rinaDataType_t type,
                   const std::vector<BlockPair>& pairs, SelfBlock self, uint64_t uniformCount)
      : HostSegmentTask(ctx, g),
        seq_(seq),
        es_(reduce::dataTypeSize(type)),
        pairs_(pairs),
        self_(self),
        round_(g.nextRound()),
        which_(static_cast<int>(round_ & 1)),
        mine_(hostAllToAllCall(seq, uniformCount, type, HostAllToAllPath::kStraight)) {
    byPeer_.assign(g.ranks(), nullptr);
    for (const BlockPair& p : pairs_) byPeer_[p.peer] = &p;
    handled_.assign(g.ranks(), 0);
  }

  Status progress(bool* moved) override {
    *moved = false;
    for (bool waiting = false; !waiting && phase_ != Phase::kDone;) {
      const Phase before = phase_;
      switch (phase_) {
        case Phase::kSlot:
          waiting = !post();
          break;
        case Phase::kCopy:
          RINA_TRY(copyBlocks(&waiting, moved));
          break;
        case Phase::kWait:
          RINA_TRY(waitCopied(&waiting));
          if (!waiting) {
            g_.finish(round_);
            phase_ = Phase::kDone;
          }
          break;
        case Phase::kDone:
          break;
      }
      *moved |= phase_ != before;
    }
    return {};
  }

  bool done() const override { return phase_ == Phase::kDone; }

  std::string describe() const override {
    static const char* what[] = {"finish reading the last round of this rank's slot",
                                 "post its blocks", "have its blocks copied", ""};
    char buf[200];
    std::snprintf(buf, sizeof buf, "all-to-all over the host segment: waiting for rank %d to %s",
                  waitPeer_, what[static_cast<int>(phase_)]);
    return buf;
  }

 private:
  enum class Phase { kSlot, kCopy, kWait, kDone };

  PostedBlock* table(int r) const { return reinterpret_cast<PostedBlock*>(g_.slot(r, which_)); }
  int pidOf(int r) const { return g_.control(r).pid; }
  int peerAt(int i) const { return mod(g_.rank() + i, g_.ranks()); }

  // Waits until *word == want (or, phase 1, at least want); false: not yet.
  bool reached(std::atomic<uint32_t>* word, uint32_t want, bool atLeast, int peer) {
    seen_ = word->load(std::memory_order_acquire);
    if (atLeast ? transport::seqAtLeast(seen_, want) : seen_ == want) return true;
    waitWord_ = word;
    waitPeer_ = peer;
    return false;
  }

  // Phase 1: once every peer has read what this slot carried last, the
  // table of this rank's blocks goes in and is posted.
  bool post() {
    transport::ShmGroupRank& me = g_.control(g_.rank());
    const uint32_t reuse = me.posted[which_].load(std::memory_order_relaxed);
    for (; next_ < g_.ranks(); ++next_) {
      if (next_ != g_.rank() && !reached(&g_.control(next_).done, reuse, true, next_)) {
        return false;
      }
    }
    PostedBlock* t = table(g_.rank());
    for (int p = 0; p < g_.ranks(); ++p) {
      const BlockPair* b = byPeer_[p];
      t[p].sendAddr = b ? reinterpret_cast<uintptr_t>(b->send) : 0;
      t[p].sendCount = b ? b->sendCount : 0;
      t[p].recvAddr = b ? reinterpret_cast<uintptr_t>(b->recv) : 0;
      t[p].recvCount = b ? b->recvCount : 0;
    }
    me.call[which_] = mine_;
    g_.post(which_, round_);
    if (self_.bytes > 0) std::memmove(self_.to, self_.from, self_.bytes);
    phase_ = Phase::kCopy;
    next_ = 1;
    return true;
  }

  // Takes the copy of `from`'s block for `to` for this round; false when
  // the other rank of the pair took it first.
  bool claim(PostedBlock& b) {
    uint32_t seen = b.claimed.load(std::memory_order_relaxed);
    while (seen != round_) {
      if (b.claimed.compare_exchange_weak(seen, round_, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

  Status copied(PostedBlock& b, Status st, int from, int to) {
    if (!st.ok()) {
      g_.publish(&b.failed, round_);
      return st.prepend("rank " + std::to_string(g_.rank()) + ": all-to-all #" +
                        std::to_string(seq_) + ": rank " + std::to_string(from) + "'s block for " +
                        std::to_string(to) + ": ");
    }
    g_.publish(&b.copied, round_);
    return {};
  }

  // Phase 2: peer by peer (rank + 1, rank + 2, ...), each once it has
  // posted, skipping those that have not yet (with more ranks than cores a
  // peer that waits for a core must not hold up the pairs that are ready):
  // the counts of the pair checked both ways, then its block for this rank
  // read (unless it wrote it already) and this rank's block for it written
  // (unless it read it already).
  Status copyBlocks(bool* waiting, bool* moved) {
    const int me = g_.rank();
    int firstUnposted = 0;
    for (int i = 1; i < g_.ranks(); ++i) {
      if (handled_[i]) continue;
      const int p = peerAt(i);
      if (g_.control(p).posted[which_].load(std::memory_order_acquire) != round_) {
        if (firstUnposted == 0) firstUnposted = i;
        continue;
      }
      RINA_TRY(checkHostAllToAllCall(me, p, mine_, g_.control(p).call[which_]));
      PostedBlock& in = table(p)[me];
      PostedBlock& out = table(me)[p];
      RINA_TRY(checkPairCounts(me, kAllToAll, seq_, p, in.sendCount, in.recvCount, out.recvCount,
                               out.sendCount));
      handled_[i] = 1;
      *moved = true;  // a block copied, or the other rank of the pair took it
      if (in.sendCount > 0 && claim(in)) {
        RINA_TRY(copied(
            in,
            transport::readProcessMemory(pidOf(p), in.sendAddr,
                                         reinterpret_cast<char*>(out.recvAddr), in.sendCount * es_),
            p, me));
      }
      if (out.sendCount > 0 && claim(out)) {
        RINA_TRY(copied(
            out,
            transport::writeProcessMemory(pidOf(p), reinterpret_cast<const char*>(out.sendAddr),
                                          in.recvAddr, out.sendCount * es_),
            me, p));
      }
    }
    if (firstUnposted > 0) {
      // Looked at again (it may have posted meanwhile): else what the wait sleeps on.
      const int p = peerAt(firstUnposted);
      *waiting = !reached(&g_.control(p).posted[which_], round_, false, p);
      return {};
    }
    phase_ = Phase::kWait;
    next_ = 1;
    return {};
  }

  // Phase 3: every block to and from this rank is in.
  Status waitCopied(bool* waiting) {
    const int me = g_.rank();
    for (; next_ < g_.ranks(); ++next_) {
      const int p = peerAt(next_);
      for (PostedBlock* b : {&table(p)[me], &table(me)[p]}) {
        if (b->sendCount == 0) continue;
        if (b->failed.load(std::memory_order_acquire) == round_) {
          return errorf(rinaRemoteError,
                        "rank %d: all-to-all #%llu: rank %d could not copy a block of this pair "
                        "(its log says why)",
                        me, static_cast<unsigned long long>(seq_), p);
        }
        if (!reached(&b->copied, round_, false, p)) {
          *waiting = true;
          return {};
        }
      }
    }
    return {};
  }

  const uint64_t seq_;
  const size_t es_;
  const std::vector<BlockPair>& pairs_;
  const SelfBlock self_;
  std::vector<const BlockPair*> byPeer_;
  std::vector<uint8_t> handled_;  // phase 2: the steps (peer = rank + step) done
  const uint32_t round_;
  const int which_;
  const transport::ShmGroupCall mine_;
  Phase phase_ = Phase::kSlot;
  int next_ = 0;  // the peer (phase 1: rank; later: step) looked at next
};

}  // namespace

transport::ShmGroupCall hostAllToAllCall(uint64_t seq, uint64_t count, rinaDataType_t type,
                                         HostAllToAllPath path) {
  return {seq, count, static_cast<uint8_t>(type), static_cast<uint8_t>(path), kAllToAll, 0, 0, {}};
}

Status checkHostAllToAllCall(int rank, int peer, const transport::ShmGroupCall& mine,
                             const transport::ShmGroupCall& theirs) {
  if (theirs.seq == mine.seq && theirs.collective == mine.collective &&
      theirs.datatype == mine.datatype && theirs.count == mine.count && theirs.op == mine.op) {
    return {};
  }
  const auto path = [](const transport::ShmGroupCall& c) {
    if (c.collective != kAllToAll) return "";
    return c.op == static_cast<uint8_t>(HostAllToAllPath::kSlots) ? ", through the slots"
                                                                  : ", straight";
  };
  return errorf(rinaInvalidUsage,
                "rank %d: calls do not match: peer %d is in %s #%llu (%s, %llu elements per "
                "block%s) while this rank is in all-to-all #%llu (%s, %llu elements per block%s); "
                "0 elements per block: blocks of their own sizes (rinaAllToAllv)",
                rank, peer, collectiveName(theirs.collective),
                static_cast<unsigned long long>(theirs.seq),
                reduce::dataTypeName(static_cast<rinaDataType_t>(theirs.datatype)),
                static_cast<unsigned long long>(theirs.count), path(theirs),
                static_cast<unsigned long long>(mine.seq),
                reduce::dataTypeName(static_cast<rinaDataType_t>(mine.datatype)),
                static_cast<unsigned long long>(mine.count), path(mine));
}

bool hostExchangeFits(const Context& ctx) {
  const transport::ShmGroup* g = ctx.hostGroup();
  return hostSegmentFits(ctx) && g->copiesWork() &&
         g->slotBytes() >= sizeof(PostedBlock) * static_cast<size_t>(ctx.size());
}

Status hostAllToAll(Context& ctx, uint64_t seq, rinaDataType_t type,
                    const std::vector<BlockPair>& pairs, SelfBlock self, uint64_t uniformCount) {
  HostExchangeTask task(ctx, *ctx.hostGroup(), seq, type, pairs, self, uniformCount);
  Engine e(contextFor(ctx, kAllToAll, seq, 3));
  e.addTask(&task);
  return e.run();
}

}  // namespace rina::algo
