// All-to-all of equal blocks through the slots of the host segment
// (transport/shm_group.h), for calls of fewer than RINA_ALLTOALL_SLOT_BYTES
// sent per rank: each rank copies its blocks for its peers into its own
// slot and posts it, and each rank copies its block out of every peer's
// slot. Two memcpys per block and no system call, where the straight copy
// (host_exchange.cc) is one copy through process_vm_readv/writev, which
// pins the peer's pages every call. A block larger than a slot's share goes
// in chunks, one round each, through the rank's two slots in turn, so a
// rank fills one while its peers still read the other.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "algo/engine/partition.h"
#include "algo/flat/block_exchange.h"
#include "algo/flat/flat.h"
#include "reduce/reduce.h"
#include "transport/shm_group.h"

namespace rina::algo {
namespace {

// The bytes of a block that one round carries for one peer: the slot is
// cut into n - 1 shares, one per peer, on cache lines of their own.
size_t shareBytes(const transport::ShmGroup& g, size_t blockBytes) {
  const size_t most = g.slotBytes() / static_cast<size_t>(g.ranks() - 1) / 64 * 64;
  return std::min(most, (blockBytes + 63) / 64 * 64);
}

class SlotExchangeTask : public EngineTask {
 public:
  SlotExchangeTask(Context& ctx, transport::ShmGroup& g, uint64_t seq, const void* send, void* recv,
                   size_t count, rinaDataType_t type)
      : ctx_(ctx),
        g_(g),
        send_(static_cast<const char*>(send)),
        recv_(static_cast<char*>(recv)),
        blockBytes_(count * reduce::dataTypeSize(type)),
        share_(shareBytes(g, blockBytes_)),
        chunks_(blockBytes_ == 0 ? 1 : (blockBytes_ + share_ - 1) / share_),
        mine_(hostAllToAllCall(seq, count, type, HostAllToAllPath::kSlots)) {
    handled_.assign(g.ranks(), 0);
    startChunk();
  }

  Status progress(bool* moved) override {
    *moved = false;
    while (!done_) {
      bool waiting = false;
      if (phase_ == Phase::kSlot) {
        postChunk(&waiting);
      } else {
        RINA_TRY(readChunks(&waiting));
      }
      if (waiting) return {};
      *moved = true;
    }
    return {};
  }

  bool done() const override { return done_; }

  void arm(transport::WaitSet& ws, int*) override {
    transport::ShmGroupRank& peer = g_.control(waitPeer_);
    ws.addFutex(phase_ == Phase::kSlot ? &peer.done : &peer.posted[which_], seen_,
                &g_.control(g_.rank()).sleeping);
  }

  Status checkAlive() override {
    transport::Connection* c = ctx_.peer(waitPeer_);
    return c ? c->checkAlive() : Status();
  }

  std::string describe() const override {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "all-to-all through the host segment's slots: waiting for rank %d to %s %u (it "
                  "is at %u; chunk %zu of %zu)",
                  waitPeer_, phase_ == Phase::kSlot ? "finish reading round" : "post round",
                  phase_ == Phase::kSlot ? reuse_ : round_, seen_, chunk_ + 1, chunks_);
    return buf;
  }

 private:
  enum class Phase { kSlot, kRead };

  // Where in rank `from`'s slot its share for rank `to` lies.
  size_t shareAt(int from, int to) const {
    return static_cast<size_t>(to < from ? to : to - 1) * share_;
  }
  size_t chunkBegin() const { return chunk_ * share_; }
  size_t chunkBytes() const { return std::min(share_, blockBytes_ - chunkBegin()); }

  void startChunk() {
    round_ = g_.nextRound();
    which_ = static_cast<int>(round_ & 1);
    phase_ = Phase::kSlot;
    waitPeer_ = 0;
  }

  // Once every peer has read what the slot carried last, this rank's chunk
  // of each of its blocks goes in and is posted.
  void postChunk(bool* waiting) {
    const int me = g_.rank();
    transport::ShmGroupRank& mine = g_.control(me);
    reuse_ = mine.posted[which_].load(std::memory_order_relaxed);
    for (; waitPeer_ < g_.ranks(); ++waitPeer_) {
      if (waitPeer_ == me) continue;
      seen_ = g_.control(waitPeer_).done.load(std::memory_order_acquire);
      if (!transport::seqAtLeast(seen_, reuse_)) {
        *waiting = true;
        return;
      }
    }
    char* slot = g_.slot(me, which_);
    for (int p = 0; p < g_.ranks(); ++p) {
      if (p == me) continue;
      std::memcpy(slot + shareAt(me, p), send_ + p * blockBytes_ + chunkBegin(), chunkBytes());
    }
    mine.call[which_] = mine_;
    g_.post(which_, round_);
    // The rank's own block, while the peers read.
    if (chunk_ == 0 && blockBytes_ > 0 && send_ != recv_) {
      std::memmove(recv_ + me * blockBytes_, send_ + me * blockBytes_, blockBytes_);
    }
    phase_ = Phase::kRead;
    std::fill(handled_.begin(), handled_.end(), 0);
  }

  // This rank's share of the chunk out of each peer's slot, rank + 1,
  // rank + 2, ... (so no two ranks read one slot first), skipping peers
  // that have not posted yet; then the round is finished.
  Status readChunks(bool* waiting) {
    const int me = g_.rank(), n = g_.ranks();
    int firstUnposted = -1;
    for (int i = 1; i < n; ++i) {
      const int p = mod(me + i, n);
      if (handled_[p]) continue;
      const uint32_t seen = g_.control(p).posted[which_].load(std::memory_order_acquire);
      if (seen != round_) {
        if (firstUnposted < 0) {
          firstUnposted = p;
          seen_ = seen;
        }
        continue;
      }
      RINA_TRY(checkHostAllToAllCall(me, p, mine_, g_.control(p).call[which_]));
      std::memcpy(recv_ + p * blockBytes_ + chunkBegin(), g_.slot(p, which_) + shareAt(p, me),
                  chunkBytes());
      handled_[p] = 1;
    }
    if (firstUnposted >= 0) {
      waitPeer_ = firstUnposted;
      *waiting = true;
      return {};
    }
    g_.finish(round_);
    if (++chunk_ == chunks_) {
      done_ = true;
    } else {
      startChunk();
    }
    return {};
  }

  Context& ctx_;
  transport::ShmGroup& g_;
  const char* send_;
  char* recv_;
  const size_t blockBytes_, share_, chunks_;
  const transport::ShmGroupCall mine_;
  std::vector<uint8_t> handled_;  // by peer: its share of this chunk is read
  size_t chunk_ = 0;
  uint32_t round_ = 0;
  int which_ = 0;
  Phase phase_ = Phase::kSlot;
  bool done_ = false;
  int waitPeer_ = 0;    // the rank waited on
  uint32_t seen_ = 0;   // its word as last read
  uint32_t reuse_ = 0;  // the round this rank's slot carried last
};

}  // namespace

bool slotExchangeFits(const Context& ctx, size_t bytesPerRank) {
  return ctx.size() > 1 && hostSegmentFits(ctx) && bytesPerRank < ctx.allToAllSlotBytes() &&
         ctx.hostGroup()->slotBytes() / static_cast<size_t>(ctx.size() - 1) >= 64;
}

Status slotAllToAll(Context& ctx, uint64_t seq, const void* send, void* recv, size_t count,
                    rinaDataType_t type) {
  transport::ShmGroup& g = *ctx.hostGroup();
  const size_t blockBytes = count * reduce::dataTypeSize(type);
  const size_t share = shareBytes(g, blockBytes);
  // Every page of the slots a round touches, readied once (ShmGroup::prepare).
  g.prepare(static_cast<size_t>(g.ranks() - 2) * share + std::min(share, blockBytes));
  SlotExchangeTask task(ctx, g, seq, send, recv, count, type);
  Engine e(contextFor(ctx, kAllToAll, seq, 2));
  e.addTask(&task);
  return e.run();
}

}  // namespace rina::algo
