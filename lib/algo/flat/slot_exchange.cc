// All-to-all of equal blocks through the slots of the host segment
// (transport/shm_group.h), for calls of fewer than RINA_ALLTOALL_SLOT_BYTES
// sent per rank: each rank copies its blocks for its peers into its own
// slot and posts it, and each rank copies its block out of every peer's
// slot. Two memcpys per block and no system call, where the straight copy
// (host_exchange.cc) is one copy through process_vm_readv/writev, which
// pins the peer's pages every call. A block larger than a slot's share goes
// in chunks, one round each, through the rank's two slots in turn, so a
// rank fills one while its peers still read the other. From
// RINA_ALLTOALL_STREAM_BYTES sent per rank on, the copies into the receive
// buffer bypass the cache (reduce::streamBytes): there the ranks' receive
// buffers no longer fit in the cache beside their send buffers and the
// slots, and a plain store would read its line in first and push out the
// slot lines a peer is about to read.
//
// A sender whose whole send buffer lies in memory from rinaMemAlloc
// (core/shared_memory.h) and not over its receive buffer copies
// nothing into its slot: it posts the call's first round only, with a
// descriptor of its buffer, and each receiver copies its whole block
// straight out of the sender's buffer, mapped, at that round (one copy),
// and waits for nothing more from it. Such a sender returns only once every
// peer has finished the call's last round, as the user may then write the
// buffer. Senders of either kind mix in one call (the rounds count alike).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "algo/engine/partition.h"
#include "algo/flat/block_exchange.h"
#include "algo/flat/flat.h"
#include "algo/flat/host_segment_task.h"
#include "core/shared_memory.h"
#include "reduce/reduce.h"
#include "transport/cma.h"
#include "transport/shm_group.h"

namespace rina::algo {
namespace {

// The bytes of a block that one round carries for one peer: the slot is
// cut into n - 1 shares, one per peer, on cache lines of their own, and a
// block into as few chunks as fit, of equal size (no short last round).
size_t shareBytes(const transport::ShmGroup& g, size_t blockBytes) {
  const size_t most = g.slotBytes() / static_cast<size_t>(g.ranks() - 1) / 64 * 64;
  const size_t chunks = std::max<size_t>(1, (blockBytes + most - 1) / most);
  return ((blockBytes + chunks - 1) / chunks + 63) / 64 * 64;
}

class SlotExchangeTask : public HostSegmentTask {
 public:
  // share: shareBytes(g, count elements of type); stream: the copies into
  // recv bypass the cache.
  SlotExchangeTask(Context& ctx, transport::ShmGroup& g, uint64_t seq, const void* send, void* recv,
                   size_t count, rinaDataType_t type, size_t share, bool stream)
      : HostSegmentTask(ctx, g),
        send_(static_cast<const char*>(send)),
        recv_(static_cast<char*>(recv)),
        blockBytes_(count * reduce::dataTypeSize(type)),
        share_(share),
        stream_(stream),
        chunks_(blockBytes_ == 0 ? 1 : (blockBytes_ + share_ - 1) / share_),
        mine_(hostAllToAllCall(seq, count, type, HostAllToAllPath::kSlots)),
        firstRound_(g.nextRound()) {
    // One round per chunk, numbered alike on every rank.
    for (size_t c = 1; c < chunks_; ++c) g.nextRound();
    handled_.assign(g.ranks(), 0);
    blockRead_.assign(g.ranks(), 0);
    const size_t total = blockBytes_ * static_cast<size_t>(g.ranks());
    const bool apart = send_ + total <= recv_ || recv_ + total <= send_;
    mapped_ = blockBytes_ > 0 && apart && findSharedMemory(send_, total, &range_);
  }

  // A chunk is posted before it is read, and the next one as soon as its
  // slot is free (every peer has read what it carried), so a rank that has
  // the core leaves its peers two chunks to read when they get theirs.
  Status progress(bool* moved) override {
    *moved = false;
    while (chunk_ < chunks_) {
      if (posted_ == chunk_ && !tryPost()) return {};
      if (posted_ == chunk_ + 1 && posted_ < chunks_ && tryPost()) *moved = true;
      bool waiting = false;
      RINA_TRY(readChunk(&waiting));
      if (waiting) return {};
      *moved = true;
    }
    if (mapped_ && !released_) {
      if (!peersFinished()) return {};
      released_ = true;
      *moved = true;
    }
    return {};
  }

  bool done() const override { return chunk_ == chunks_ && (!mapped_ || released_); }

  std::string describe() const override {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "all-to-all through the host segment's slots: waiting for rank %d to %s (its "
                  "word is at %u; chunk %zu of %zu)",
                  waitPeer_,
                  wait_ == Wait::kSlotFree ? "finish reading the round this slot carried last"
                  : wait_ == Wait::kPosted
                      ? "post its chunk"
                      : "finish reading this rank's send buffer (the last round)",
                  seen_, std::min(chunk_ + 1, chunks_), chunks_);
    return buf;
  }

 private:
  uint32_t roundOf(size_t chunk) const { return firstRound_ + static_cast<uint32_t>(chunk); }
  // Where in rank `from`'s slot its share for rank `to` lies.
  size_t shareAt(int from, int to) const {
    return static_cast<size_t>(to < from ? to : to - 1) * share_;
  }
  size_t chunkBytes(size_t chunk) const { return std::min(share_, blockBytes_ - chunk * share_); }
  void copyOut(char* to, const char* from, size_t bytes) const {
    if (stream_) {
      reduce::streamBytes(to, from, bytes);
    } else {
      reduce::copyBytes(to, from, bytes);
    }
  }

  enum class Wait { kSlotFree, kPosted, kBufferRead };
  void waitOn(std::atomic<uint32_t>* word, uint32_t seen, int peer, Wait wait) {
    waitWord_ = word;
    seen_ = seen;
    waitPeer_ = peer;
    wait_ = wait;
  }

  // Whether every peer has finished reading `round` (else what to wait on).
  bool peersRead(uint32_t round, Wait wait) {
    for (int p = 0; p < g_.ranks(); ++p) {
      if (p == g_.rank()) continue;
      std::atomic<uint32_t>* done = &g_.control(p).done;
      const uint32_t seen = done->load(std::memory_order_acquire);
      if (!transport::seqAtLeast(seen, round)) {
        waitOn(done, seen, p, wait);
        return false;
      }
    }
    return true;
  }
  bool peersFinished() { return peersRead(roundOf(chunks_ - 1), Wait::kBufferRead); }

  // Bytes [from, from + bytes) of this rank's block out of peer p's send
  // buffer, which its descriptor d names: mapped here, or, where this
  // process may not map it, copied out of the peer's process.
  Status readMapped(int p, const transport::ShmGroupMappedSend& d, size_t from, size_t bytes) {
    const int me = g_.rank();
    const PeerAllocation a{g_.control(p).pid, d.fd, d.serial};
    const size_t at = static_cast<size_t>(me) * blockBytes_ + from;
    char* to = recv_ + p * blockBytes_ + from;
    const char* buffer = nullptr;
    Status s = g_.peerMappings().map(me, p, a, d.offset, blockBytes_ * g_.ranks(), &buffer);
    if (s.ok()) {
      copyOut(to, buffer + at, bytes);
      return {};
    }
    if (s.code() != rinaSystemError || !g_.copiesWork()) return s;
    return transport::readProcessMemory(a.pid, d.address + at, to, bytes);
  }

  // Chunk posted_ of each of this rank's blocks into its slot, once every
  // peer has read what the slot carried last; false (and what to wait on)
  // when one has not yet.
  bool tryPost() {
    const int me = g_.rank();
    const uint32_t round = roundOf(posted_);
    const int which = static_cast<int>(round & 1);
    transport::ShmGroupRank& mine = g_.control(me);
    if (!peersRead(mine.posted[which].load(std::memory_order_relaxed), Wait::kSlotFree)) {
      return false;
    }
    if (mapped_) {
      mine.mapped[which] = {range_.serial, range_.offset, reinterpret_cast<uintptr_t>(send_),
                            range_.fd, 0};
    } else {
      char* slot = g_.slot(me, which);
      const size_t from = posted_ * share_, bytes = chunkBytes(posted_);
      for (int p = 0; p < g_.ranks(); ++p) {
        if (p == me) continue;
        reduce::copyBytes(slot + shareAt(me, p), send_ + p * blockBytes_ + from, bytes);
      }
      mine.mapped[which].serial = 0;
    }
    mine.call[which] = mine_;
    g_.post(which, round);
    // The rank's own block, while the peers read.
    if (posted_ == 0 && blockBytes_ > 0 && send_ != recv_) {
      copyOut(recv_ + me * blockBytes_, send_ + me * blockBytes_, blockBytes_);
    }
    // A mapped buffer is read whole at the first round: the later rounds
    // carry nothing from this rank, and its peers do not wait for them.
    posted_ = mapped_ ? chunks_ : posted_ + 1;
    return true;
  }

  // This rank's share of chunk chunk_ out of each peer's slot, rank + 1,
  // rank + 2, ... (so no two ranks read one slot first), skipping peers
  // that have not posted it yet; then the round is finished.
  Status readChunk(bool* waiting) {
    const int me = g_.rank(), n = g_.ranks();
    const uint32_t round = roundOf(chunk_);
    const int which = static_cast<int>(round & 1);
    const size_t from = chunk_ * share_, bytes = chunkBytes(chunk_);
    bool blocked = false;
    for (int i = 1; i < n; ++i) {
      const int p = mod(me + i, n);
      if (handled_[p]) continue;
      if (blockRead_[p]) {  // its whole block came at the first round
        handled_[p] = 1;
        continue;
      }
      std::atomic<uint32_t>* posted = &g_.control(p).posted[which];
      const uint32_t seen = posted->load(std::memory_order_acquire);
      if (seen != round) {
        if (!blocked) waitOn(posted, seen, p, Wait::kPosted);
        blocked = true;
        continue;
      }
      RINA_TRY(checkHostAllToAllCall(me, p, mine_, g_.control(p).call[which]));
      const transport::ShmGroupMappedSend d = g_.control(p).mapped[which];  // untrusted: a copy
      if (d.serial == 0) {
        copyOut(recv_ + p * blockBytes_ + from, g_.slot(p, which) + shareAt(p, me), bytes);
      } else {
        RINA_TRY(readMapped(p, d, from, chunk_ == 0 ? blockBytes_ : bytes));
        blockRead_[p] = chunk_ == 0;
      }
      handled_[p] = 1;
    }
    if (blocked) {
      *waiting = true;
      return {};
    }
    g_.finish(round);
    std::fill(handled_.begin(), handled_.end(), 0);
    ++chunk_;
    return {};
  }

  const char* send_;
  char* recv_;
  const size_t blockBytes_, share_;
  const bool stream_;
  const size_t chunks_;
  const transport::ShmGroupCall mine_;
  const uint32_t firstRound_;       // chunk c goes in round firstRound_ + c
  std::vector<uint8_t> handled_;    // by peer: its share of chunk chunk_ is read
  std::vector<uint8_t> blockRead_;  // by peer: its whole block read from its mapped buffer
  size_t chunk_ = 0;                // the chunk read next
  size_t posted_ = 0;               // the chunks this rank has posted
  Wait wait_ = Wait::kPosted;
  bool mapped_ = false;  // this rank's blocks are read from its send buffer
  SharedMemoryRange range_;
  bool released_ = false;  // mapped_: every peer has read its last round
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
  const bool stream = blockBytes * static_cast<size_t>(g.ranks()) >= ctx.allToAllStreamBytes();
  // Every page of the slots a round touches, readied once (ShmGroup::prepare).
  g.prepare(static_cast<size_t>(g.ranks() - 2) * share + std::min(share, blockBytes));
  SlotExchangeTask task(ctx, g, seq, send, recv, count, type, share, stream);
  Engine e(contextFor(ctx, kAllToAll, seq, 2));
  e.addTask(&task);
  return e.run();
}

}  // namespace rina::algo
