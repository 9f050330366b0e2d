// The flat collectives: on a ring, chain or star of ranks over a Context,
// with no notion of racks; the one header of lib/algo/flat that the rooms
// and layers above include. Arguments are already validated by the C API;
// counts are in elements. The dispatcher (algo/dispatch/dispatch.h) picks
// among the allreduce algorithms; the rack algorithms are algo/rack/rack.h.
#ifndef RINA_LIB_ALGO_FLAT_FLAT_H_
#define RINA_LIB_ALGO_FLAT_FLAT_H_

#include <cstring>
#include <functional>

#include "algo/engine/context.h"
#include "algo/engine/engine.h"

namespace rina::algo {

// The one-rank shortcut of the collectives below (all-to-all aside: its one
// block moves by its displacements, as on any number of ranks). On one rank
// the result is the input (the root, where there is one, is this rank), so
// when ctx has one rank this copies `bytes` from send to recv (nothing when
// they are the same buffer; memmove, as one may sit inside the other) and
// returns true: the caller is done, apart from its own bookkeeping.
inline bool finishedOnOneRank(const Context& ctx, const void* send, void* recv, size_t bytes) {
  if (ctx.size() != 1) return false;
  if (send != recv && bytes > 0) std::memmove(recv, send, bytes);
  return true;
}

// Reduce-scatter then all-gather around the ring, sliced and pipelined.
// Every element is reduced once (by the rank that finishes its chunk) and
// then copied, so all ranks hold bitwise identical results.
Status ringAllReduce(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type,
                     rinaRedOp_t op);

// Latency algorithm: log2(n) exchanges of the whole buffer. kind: what the
// collective header says (kMembership for the checks of rinaCommGrow).
Status recursiveDoublingAllReduce(Context& ctx, const void* send, void* recv, size_t count,
                                  rinaDataType_t type, rinaRedOp_t op, CollKind kind = kAllReduce);

// Allreduce through the host segment when every rank is on this host
// (host_allreduce.cc). One-shot, the latency algorithm: each rank posts its
// buffer and reduces all of them. Two-shot, up to RINA_TWO_SHOT_BYTES: in
// chunks of a slot, each rank sums its 1/n share of a chunk and posts it
// for the others. hostSegmentFits: the segment exists and covers every
// rank; oneShotFits: and `bytes` fit a slot and RINA_SMALL_MSG_BYTES. kind:
// what each rank's call record says, as for recursiveDoublingAllReduce.
bool hostSegmentFits(const Context& ctx);
bool oneShotFits(const Context& ctx, size_t bytes);
Status oneShotAllReduce(Context& ctx, const void* send, void* recv, size_t count,
                        rinaDataType_t type, rinaRedOp_t op, CollKind kind = kAllReduce);
Status twoShotAllReduce(Context& ctx, const void* send, void* recv, size_t count,
                        rinaDataType_t type, rinaRedOp_t op);
// The size of each of a rank's two slots in the host segment, from the
// knobs and the ranks on the host: RINA_SMALL_MSG_BYTES, or 1 MiB (two-shot
// chunks) when RINA_TWO_SHOT_BYTES is above it; at most 1 MiB and 32 MiB
// over all slots. 0: no segment.
size_t hostSlotBytes(size_t smallMsgBytes, size_t twoShotBytes, int ranks);

Status ringReduceScatter(Context& ctx, const void* send, void* recv, size_t recvCount,
                         rinaDataType_t type, rinaRedOp_t op);
// kind: what the collective header says (kMembership for the exchanges
// that make new communicators).
Status ringAllGather(Context& ctx, const void* send, void* recv, size_t sendCount,
                     rinaDataType_t type, CollKind kind = kAllGather);
// A pipelined chain root -> root+1 -> ... -> root-1.
Status chainBroadcast(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type,
                      int root);

// The calls that move blocks (block_exchange.h) or reduce to one rank
// (rooted.cc). Their peers must be connected (lib/comm does it: every peer
// for all-to-all, the root with every rank for gather and scatter).

// Rank r's block for rank p (sendCounts[p] elements at sendDispls[p]) lands
// in rank p's recv at recvDispls[r]; each block moves once, pairwise.
// recvCounts[p] must equal rank p's sendCounts[r] (checked on both sides).
// send and recv must not overlap.
Status allToAllv(Context& ctx, const void* send, const size_t* sendCounts, const size_t* sendDispls,
                 void* recv, const size_t* recvCounts, const size_t* recvDispls,
                 rinaDataType_t type);
// allToAllv with count elements to and from every rank (block p at
// p * count); with every rank on this host, below RINA_ALLTOALL_SLOT_BYTES
// sent per rank, through the slots of the host segment.
Status allToAll(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type);
// A pipelined chain root+n-1 -> ... -> root+1 -> root, each rank adding its
// input on the way: every link carries the buffer once, the root receives
// it once. recv: the root's result (other ranks: unused).
Status chainReduce(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type,
                   rinaRedOp_t op, int root);
// Every rank's count elements straight to the root's recv (block r at r * count).
Status starGather(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type,
                  int root);
// The root's block r (send + r * count) straight to rank r's recv.
Status starScatter(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type,
                   int root);

// Weighted average over ranks on top of any allreduce
// (weighted_allreduce.cc): rank r passes weight w_r (e.g. its batch size
// from plan/batch_sizes.h) and every rank gets
//   sum_r w_r x_r / sum_r w_r,
// the unbiased mean gradient when batches differ.
// The allreduce it runs on (the communicator's, with its algorithm).
using AllReduceFn = std::function<Status(const void* send, void* recv, size_t count,
                                         rinaDataType_t type, rinaRedOp_t op)>;

// Two collectives: a float64 allreduce of (weight, invalid-weight flag), so
// every rank agrees on W = sum w_r and on whether some rank's weight was bad
// (negative, NaN, inf: rinaInvalidArgument on every rank; W = 0 likewise),
// then each rank scales x by w_r / W (in float for float16/bfloat16) and the
// scaled buffers are summed. Floating types only (checked before any
// communication, so a mismatch is the caller's to avoid, as with count).
Status weightedAllReduce(const AllReduceFn& allReduce, const void* send, void* recv, size_t count,
                         rinaDataType_t type, double weight);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_FLAT_FLAT_H_
