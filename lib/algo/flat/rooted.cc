// The rooted calls, moving what the root needs and no more: reduce as a
// pipelined chain into the root (every link carries the buffer once, where
// an allreduce carries it twice), gather and scatter straight between the
// root and each rank (block_exchange.h), each block once.
#include <cstring>

#include "algo/engine/partition.h"
#include "algo/flat/block_exchange.h"
#include "algo/flat/flat.h"
#include "reduce/reduce.h"

namespace rina::algo {
Status chainReduce(Context& ctx, const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                   rinaRedOp_t op, int root) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t es = reduce::dataTypeSize(type);
  const size_t bytes = count * es;
  const char* send = static_cast<const char*>(sendv);
  ++ctx.stats().reduces;
  if (finishedOnOneRank(ctx, sendv, recvv, bytes)) {
    // Division by one: only NaNs change, to the canonical NaN (reduce.h).
    if (op == rinaAvg) reduce::finishAverage(recvv, count, type, 1);
    return {};
  }
  const uint64_t seq = ctx.nextSeq();
  // Position in the chain: the root is 0, data flows from n - 1 down to 0,
  // from rank r + 1 to rank r.
  const int pos = mod(r - root, n);
  transport::Connection* up = pos < n - 1 ? ctx.peer(mod(r + 1, n)) : nullptr;
  transport::Connection* down = pos > 0 ? ctx.peer(mod(r - 1, n)) : nullptr;
  // What this rank passes on (its input plus everything upstream).
  char* acc = r == root ? static_cast<char*>(recvv) : (up ? ctx.scratch(bytes) : nullptr);
  if (up && !acc) {
    return errorf(rinaSystemError, "rank %d: reduce: cannot allocate %zu bytes", r, bytes);
  }
  const reduce::ReduceFn fn = reduce::reduceFunction(type, op);
  const ByteSlices slices = ByteSlices::of(bytes, es, ctx.sliceBytes());
  Engine e(contextFor(ctx, kReduce, seq, 1));
  CollHeader mine = collHeader(ctx, kReduce, seq, count, type, op, root), theirs{};
  addHeaderExchange(e, mine, &theirs, down, up, r);
  const int headerRecvs = up ? 1 : 0;
  for (int j = 0; j < slices.count(); ++j) {
    const size_t off = slices.offset(j), len = slices.size(j);
    if (up) {
      RecvItem item{.conn = up,
                    .dst = acc + off,
                    .len = len,
                    .reduce = transport::RecvReduce{fn, send + off, es},
                    .step = 1,
                    .slice = j};
      if (!down && op == rinaAvg) {
        item.onDone = [dst = acc + off, elems = len / es, type, n]() -> Status {
          reduce::finishAverage(dst, elems, type, n);
          return {};
        };
      }
      e.recvs().push_back(std::move(item));
    }
    if (down) {
      e.sends().push_back(SendItem{.conn = down,
                                   .data = (up ? acc : send) + off,
                                   .len = len,
                                   .afterRecv = up ? headerRecvs + j : -1,
                                   .step = 1,
                                   .slice = j});
    }
  }
  return e.run();
}

Status starGather(Context& ctx, const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                  int root) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t bytes = count * reduce::dataTypeSize(type);
  const char* send = static_cast<const char*>(sendv);
  char* recv = static_cast<char*>(recvv);
  ++ctx.stats().gathers;
  if (finishedOnOneRank(ctx, send, recv, bytes)) return {};
  if (r == root && send != recv + r * bytes) std::memmove(recv + r * bytes, send, bytes);
  const uint64_t seq = ctx.nextSeq();
  std::vector<BlockPair> pairs;
  if (r == root) {
    for (int p = 0; p < n; ++p) {
      if (p != r)
        pairs.push_back(BlockPair{.peer = p, .recv = recv + p * bytes, .recvCount = count});
    }
  } else {
    pairs.push_back(BlockPair{.peer = root, .send = send, .sendCount = count});
  }
  return exchangeBlocks(ctx, kGather, seq, type, root, pairs);
}

Status starScatter(Context& ctx, const void* sendv, void* recvv, size_t count, rinaDataType_t type,
                   int root) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t bytes = count * reduce::dataTypeSize(type);
  const char* send = static_cast<const char*>(sendv);
  char* recv = static_cast<char*>(recvv);
  ++ctx.stats().scatters;
  if (finishedOnOneRank(ctx, send, recv, bytes)) return {};
  if (r == root && recv != send + r * bytes) std::memmove(recv, send + r * bytes, bytes);
  const uint64_t seq = ctx.nextSeq();
  std::vector<BlockPair> pairs;
  if (r == root) {
    for (int p = 0; p < n; ++p) {
      if (p != r)
        pairs.push_back(BlockPair{.peer = p, .send = send + p * bytes, .sendCount = count});
    }
  } else {
    pairs.push_back(BlockPair{.peer = root, .recv = recv, .recvCount = count});
  }
  return exchangeBlocks(ctx, kScatter, seq, type, root, pairs);
}

}  // namespace rina::algo
