// Ring collectives. Ranks pass chunks to rank+1 and receive from rank-1; the
// buffer is cut into n chunks and each chunk into slices, and slice j of step
// s+1 is sent as soon as slice j of step s has been received (and reduced),
// so the steps overlap like a pipeline.
#include <cstring>

#include "algo/engine/partition.h"
#include "algo/flat/flat.h"
#include "reduce/reduce.h"

namespace rina::algo {
namespace {

// Slices of at most sliceElems within a chunk; slice j may be empty.
struct Slice {
  size_t offset;  // element offset in the buffer
  size_t elems;
};
Slice sliceOf(size_t chunkBegin, size_t chunkSize, size_t sliceElems, int j) {
  size_t start = std::min(chunkSize, sliceElems * j);
  size_t end = std::min(chunkSize, start + sliceElems);
  return Slice{chunkBegin + start, end - start};
}

// This rank's place in the ring and its two neighbours.
struct RingView {
  int n;
  int r;
  transport::Connection* next;
  transport::Connection* prev;
};
RingView ringOf(Context& ctx) {
  const int n = ctx.size(), r = ctx.rank();
  // Each hop on its spine (RINA_PATHS / the plan): both ends ask for the same one.
  return RingView{n, r, ctx.hopTo(mod(r + 1, n)), ctx.hopFrom(mod(r - 1, n))};
}

// avg: the rank that completes a slice divides it, once, before it is shared.
std::function<Status()> divideWhenDone(char* dst, size_t elems, rinaDataType_t type, int n) {
  return [dst, elems, type, n]() -> Status {
    reduce::finishAverage(dst, elems, type, n);
    return {};
  };
}

}  // namespace

Status ringAllReduce(Context& ctx, const void* sendv, void* recvv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op) {
  const auto [n, r, next, prev] = ringOf(ctx);
  const size_t es = reduce::dataTypeSize(type);
  const char* send = static_cast<const char*>(sendv);
  char* recv = static_cast<char*>(recvv);
  const uint64_t seq = ctx.nextSeq();
  const reduce::ReduceFn fn = reduce::reduceFunction(type, op);

  const Chunks chunks{count, n};
  const size_t sliceElems = std::max<size_t>(1, ctx.sliceBytes() / es);
  const size_t maxChunk = chunks.size(0);
  const int nslices =
      static_cast<int>(std::max<size_t>(1, (maxChunk + sliceElems - 1) / sliceElems));
  const int steps = 2 * (n - 1);

  Engine e(contextFor(ctx, kAllReduce, seq, steps));
  CollHeader mine = collHeader(ctx, kAllReduce, seq, count, type, op, -1), theirs{};
  addHeaderExchange(e, mine, &theirs, next, prev, r);
  e.sends().reserve(1 + static_cast<size_t>(steps) * nslices);
  e.recvs().reserve(1 + static_cast<size_t>(steps) * nslices);
  for (int s = 0; s < steps; ++s) {
    const int sc = mod(r - s, n), rc = mod(r - s - 1, n);
    for (int j = 0; j < nslices; ++j) {
      Slice out = sliceOf(chunks.begin(sc), chunks.size(sc), sliceElems, j);
      Slice in = sliceOf(chunks.begin(rc), chunks.size(rc), sliceElems, j);
      const char* src = (s == 0 ? send : recv) + out.offset * es;
      // Slice j of step s-1 must be in (and reduced) before it goes on.
      int after = s == 0 ? -1 : 1 + (s - 1) * nslices + j;
      e.sends().push_back(SendItem{.conn = next,
                                   .data = src,
                                   .len = out.elems * es,
                                   .afterRecv = after,
                                   .step = s + 1,
                                   .slice = j});
      RecvItem item{.conn = prev,
                    .dst = recv + in.offset * es,
                    .len = in.elems * es,
                    .step = s + 1,
                    .slice = j};
      if (s < n - 1) {
        // Each chunk arrives once per rank in this phase: add our own input.
        item.reduce = transport::RecvReduce{fn, send + in.offset * es, es};
        if (s == n - 2 && op == rinaAvg) item.onDone = divideWhenDone(item.dst, in.elems, type, n);
      }
      e.recvs().push_back(std::move(item));
    }
  }
  return e.run();
}

Status ringReduceScatter(Context& ctx, const void* sendv, void* recvv, size_t recvCount,
                         rinaDataType_t type, rinaRedOp_t op) {
  const size_t es = reduce::dataTypeSize(type);
  const size_t blockBytes = recvCount * es;
  if (finishedOnOneRank(ctx, sendv, recvv, blockBytes)) return {};
  const auto [n, r, next, prev] = ringOf(ctx);
  const char* send = static_cast<const char*>(sendv);
  char* recv = static_cast<char*>(recvv);
  const uint64_t seq = ctx.nextSeq();
  const reduce::ReduceFn fn = reduce::reduceFunction(type, op);
  // Partial sums of other ranks' blocks pass through two staging blocks:
  // step s lands in tmp[s % 2] and leaves from it at step s + 1.
  char* tmp = ctx.scratch(2 * blockBytes);
  if (!tmp && blockBytes)
    return errorf(rinaSystemError, "rank %d: cannot allocate %zu bytes", r, 2 * blockBytes);

  const size_t sliceElems = std::max<size_t>(1, ctx.sliceBytes() / es);
  const int nslices =
      static_cast<int>(std::max<size_t>(1, (recvCount + sliceElems - 1) / sliceElems));
  const int steps = n - 1;
  Engine e(contextFor(ctx, kReduceScatter, seq, steps));
  CollHeader mine = collHeader(ctx, kReduceScatter, seq, recvCount, type, op, -1), theirs{};
  addHeaderExchange(e, mine, &theirs, next, prev, r);
  for (int s = 0; s < steps; ++s) {
    const int sc = mod(r - s - 1, n), rc = mod(r - s - 2, n);
    for (int j = 0; j < nslices; ++j) {
      Slice sl = sliceOf(0, recvCount, sliceElems, j);
      const size_t off = sl.offset * es, len = sl.elems * es;
      const char* src =
          s == 0 ? send + sc * blockBytes + off : tmp + ((s - 1) % 2) * blockBytes + off;
      int after = s == 0 ? -1 : 1 + (s - 1) * nslices + j;
      e.sends().push_back(SendItem{
          .conn = next, .data = src, .len = len, .afterRecv = after, .step = s + 1, .slice = j});
      const bool last = s == steps - 1;
      char* dst = last ? recv + off : tmp + (s % 2) * blockBytes + off;
      // Reusing tmp[s % 2] must wait until step s - 1's data left it.
      int gate = (!last && s >= 2) ? 1 + (s - 1) * nslices + j : -1;
      RecvItem item{.conn = prev,
                    .dst = dst,
                    .len = len,
                    .reduce = transport::RecvReduce{fn, send + rc * blockBytes + off, es},
                    .afterSend = gate,
                    .step = s + 1,
                    .slice = j};
      if (last && op == rinaAvg) item.onDone = divideWhenDone(dst, sl.elems, type, n);
      e.recvs().push_back(std::move(item));
    }
  }
  return e.run();
}

Status ringAllGather(Context& ctx, const void* sendv, void* recvv, size_t sendCount,
                     rinaDataType_t type, CollKind kind) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t es = reduce::dataTypeSize(type);
  const char* send = static_cast<const char*>(sendv);
  char* recv = static_cast<char*>(recvv);
  const size_t blockBytes = sendCount * es;
  if (finishedOnOneRank(ctx, send, recv, blockBytes)) return {};
  if (send != recv + r * blockBytes) reduce::copyBytes(recv + r * blockBytes, send, blockBytes);
  const uint64_t seq = ctx.nextSeq();
  const RingView ring = ringOf(ctx);
  transport::Connection* next = ring.next;
  transport::Connection* prev = ring.prev;
  const ByteSlices slices = ByteSlices::of(blockBytes, es, ctx.sliceBytes());
  const int nslices = slices.count();
  const int steps = n - 1;
  Engine e(contextFor(ctx, kind, seq, steps));
  CollHeader mine = collHeader(ctx, kind, seq, sendCount, type, rinaSum, -1), theirs{};
  addHeaderExchange(e, mine, &theirs, next, prev, r);
  for (int s = 0; s < steps; ++s) {
    const int sc = mod(r - s, n), rc = mod(r - s - 1, n);
    for (int j = 0; j < nslices; ++j) {
      const size_t off = slices.offset(j), len = slices.size(j);
      int after = s == 0 ? -1 : 1 + (s - 1) * nslices + j;
      e.sends().push_back(SendItem{.conn = next,
                                   .data = recv + sc * blockBytes + off,
                                   .len = len,
                                   .afterRecv = after,
                                   .step = s + 1,
                                   .slice = j});
      e.recvs().push_back(RecvItem{.conn = prev,
                                   .dst = recv + rc * blockBytes + off,
                                   .len = len,
                                   .step = s + 1,
                                   .slice = j});
    }
  }
  return e.run();
}

Status chainBroadcast(Context& ctx, const void* sendv, void* recvv, size_t count,
                      rinaDataType_t type, int root) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t es = reduce::dataTypeSize(type);
  const size_t bytes = count * es;
  char* recv = static_cast<char*>(recvv);
  if (finishedOnOneRank(ctx, sendv, recvv, bytes)) return {};
  if (r == root && sendv != recvv) reduce::copyBytes(recv, sendv, bytes);
  const uint64_t seq = ctx.nextSeq();
  const int pos = mod(r - root, n);
  transport::Connection* next = pos < n - 1 ? ctx.peer(mod(r + 1, n)) : nullptr;
  transport::Connection* prev = pos > 0 ? ctx.peer(mod(r - 1, n)) : nullptr;
  const ByteSlices slices = ByteSlices::of(bytes, es, ctx.sliceBytes());
  Engine e(contextFor(ctx, kBroadcast, seq, 1));
  CollHeader mine = collHeader(ctx, kBroadcast, seq, count, type, rinaSum, root), theirs{};
  addHeaderExchange(e, mine, &theirs, next, prev, r);
  for (int j = 0; j < slices.count(); ++j) {
    const size_t off = slices.offset(j), len = slices.size(j);
    if (prev)
      e.recvs().push_back(
          RecvItem{.conn = prev, .dst = recv + off, .len = len, .step = 1, .slice = j});
    if (next)
      e.sends().push_back(SendItem{.conn = next,
                                   .data = recv + off,
                                   .len = len,
                                   .afterRecv = prev ? 1 + j : -1,
                                   .step = 1,
                                   .slice = j});
  }
  return e.run();
}

}  // namespace rina::algo
