// Recursive doubling: log2(p) rounds in which partners swap their whole
// partial result and combine it. With p the largest power of two <= n, the
// first 2(n-p) ranks fold in pairs first (even sends to odd) and get the
// result back at the end. Partners combine the same two values in opposite
// order; the kernels are commutative bit for bit, so all ranks agree exactly.
#include <cstring>

#include "algo/flat/flat.h"
#include "reduce/reduce.h"

namespace rina::algo {
namespace {

// One exchange with one partner: headers, then the buffers.
Status exchange(Context& ctx, uint64_t seq, int step, int steps, const CollHeader& mine,
                transport::Connection* to, const char* out, transport::Connection* from, char* in,
                const transport::RecvReduce& reduce, size_t bytes) {
  Engine e(contextFor(ctx, static_cast<CollKind>(mine.collective), seq, steps));
  CollHeader theirs{};
  addHeaderExchange(e, mine, &theirs, to, from, ctx.rank());
  if (to) e.sends().push_back(SendItem{.conn = to, .data = out, .len = bytes, .step = step});
  if (from)
    e.recvs().push_back(
        RecvItem{.conn = from, .dst = in, .len = bytes, .reduce = reduce, .step = step});
  return e.run();
}

}  // namespace

Status recursiveDoublingAllReduce(Context& ctx, const void* send, void* recvv, size_t count,
                                  rinaDataType_t type, rinaRedOp_t op, CollKind kind) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t es = reduce::dataTypeSize(type);
  const size_t bytes = count * es;
  char* recv = static_cast<char*>(recvv);
  if (send != recv) std::memcpy(recv, send, bytes);
  const uint64_t seq = ctx.nextSeq();
  const reduce::ReduceFn fn = reduce::reduceFunction(type, op);
  const CollHeader mine = collHeader(ctx, kind, seq, count, type, op, -1);
  char* tmp = ctx.scratch(bytes);
  if (!tmp && bytes) return errorf(rinaSystemError, "rank %d: cannot allocate %zu bytes", r, bytes);

  int p = 1, rounds = 0;
  while (p * 2 <= n) p *= 2, ++rounds;
  const int rem = n - p;
  const int steps = rounds + (rem > 0 ? 2 : 0);
  int step = 0;
  int newRank = r - rem;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      // Give the data to r+1, take the result back from it.
      RINA_TRY(
          exchange(ctx, seq, 1, steps, mine, ctx.peer(r + 1), recv, nullptr, nullptr, {}, bytes));
      return exchange(ctx, seq, steps, steps, mine, nullptr, nullptr, ctx.peer(r + 1), recv, {},
                      bytes);
    }
    // Nothing of ours has been sent yet, so reduce straight into recv.
    RINA_TRY(exchange(ctx, seq, 1, steps, mine, nullptr, nullptr, ctx.peer(r - 1), recv,
                      transport::RecvReduce{fn, recv, es}, bytes));
    newRank = r / 2;
    step = 1;
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    int partnerNew = newRank ^ mask;
    int partner = partnerNew < rem ? partnerNew * 2 + 1 : partnerNew + rem;
    transport::Connection* c = ctx.peer(partner);
    ++step;
    // Receive into tmp: our own buffer is still being sent.
    RINA_TRY(exchange(ctx, seq, step, steps, mine, c, recv, c, tmp, {}, bytes));
    fn(recv, recv, tmp, count);
  }
  if (op == rinaAvg) reduce::finishAverage(recv, count, type, n);
  if (r < 2 * rem) {
    RINA_TRY(
        exchange(ctx, seq, steps, steps, mine, ctx.peer(r - 1), recv, nullptr, nullptr, {}, bytes));
  }
  return {};
}

}  // namespace rina::algo
