// Moving whole blocks between this rank and some peers over the default
// connections, each block once: all-to-all, gather and scatter are lists of
// such pairs. Every pair first exchanges an 80-byte header (the collective
// header with the pair's counts both ways, and where this rank's block
// lies), so a call, type or count that differs is reported on both sides.
// Then:
//   - over shared memory the receiver copies the block straight out of the
//     sender's buffer (process_vm_readv: one copy, no FIFO), and each side
//     tells the other (a 16-byte token) that it took the block, or that it
//     could not and wants it streamed through the FIFO;
//   - over any other connection the sender streams the block.
// Sends go in step order (to rank + 1, rank + 2, ...) and receives in the
// mirrored order (from rank - 1, rank - 2, ...), the pairwise exchange's
// order, so the lists of all ranks always meet.
#ifndef RINA_LIB_ALGO_FLAT_BLOCK_EXCHANGE_H_
#define RINA_LIB_ALGO_FLAT_BLOCK_EXCHANGE_H_

#include <cstdint>
#include <vector>

#include "algo/engine/context.h"
#include "core/status.h"
#include "rina/rina.h"
#include "transport/shm_group.h"

namespace rina::algo {

// What moves between this rank and one peer (either side may be empty).
struct BlockPair {
  int peer = 0;
  const char* send = nullptr;  // this rank's block for peer
  uint64_t sendCount = 0;      // elements
  char* recv = nullptr;        // where peer's block lands
  uint64_t recvCount = 0;
};

// The pairs of one call (kind: engine.h's CollKind, seq its number); each
// peer at most once, never this rank. Both ends list each other.
Status exchangeBlocks(Context& ctx, uint8_t kind, uint64_t seq, rinaDataType_t type, int root,
                      const std::vector<BlockPair>& pairs);

// The same for an all-to-all whose ranks are all on this host, through its
// segment: every block copied by its sender or its receiver, whichever
// comes first (host_exchange.cc). hostExchangeFits: every rank can run it
// (the segment covers them, the kernel lets them copy between processes,
// a slot holds the table of blocks); the same answer on every rank. The
// rank's block to itself (bytes from `from` to `to`) is copied once its
// table is posted, while peers can already copy theirs.
bool hostExchangeFits(const Context& ctx);
struct SelfBlock {
  const char* from;
  char* to;
  size_t bytes;
};
// uniformCount: the count of every block of an all-to-all (rinaAllToAll),
// 0 for blocks of their own sizes; it goes into the call record.
Status hostAllToAll(Context& ctx, uint64_t seq, rinaDataType_t type,
                    const std::vector<BlockPair>& pairs, SelfBlock self, uint64_t uniformCount);

// An all-to-all of equal blocks (count elements each, block p at
// p * count) through the slots of the host segment (slot_exchange.cc),
// for fewer than RINA_ALLTOALL_SLOT_BYTES sent per rank: the sender copies
// its blocks into its slot, each receiver copies its own out, in chunks
// when the blocks exceed a slot. slotExchangeFits: the same answer on every
// rank that calls with the same count.
bool slotExchangeFits(const Context& ctx, size_t bytesPerRank);
Status slotAllToAll(Context& ctx, uint64_t seq, const void* send, void* recv, size_t count,
                    rinaDataType_t type);

// The call record either host path posts with its slot (count: the
// elements of each block, 0 when they differ by pair; op: the path), and
// the check every reader makes of a peer's: a peer in another call, or in
// this all-to-all with another count or through the other path (different
// counts on the two ranks choose different paths), is rinaInvalidUsage
// naming both.
enum class HostAllToAllPath : uint8_t { kStraight = 0, kSlots = 1 };
transport::ShmGroupCall hostAllToAllCall(uint64_t seq, uint64_t count, rinaDataType_t type,
                                         HostAllToAllPath path);
Status checkHostAllToAllCall(int rank, int peer, const transport::ShmGroupCall& mine,
                             const transport::ShmGroupCall& theirs);

// A pair whose counts (elements) do not agree: what peer sends this rank
// and expects from it, against what this rank expects and sends. Ok when
// they agree; else rinaInvalidUsage naming all four, so both ranks of the
// pair report it.
Status checkPairCounts(int rank, uint8_t kind, uint64_t seq, int peer, uint64_t theySend,
                       uint64_t theyExpect, uint64_t weExpect, uint64_t weSend);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_FLAT_BLOCK_EXCHANGE_H_
