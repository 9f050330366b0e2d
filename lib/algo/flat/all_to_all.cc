// All-to-all: rank r's block for rank p goes to p. With every rank on this
// host, a call of equal blocks below RINA_ALLTOALL_SLOT_BYTES per rank goes
// through the host segment's slots (slot_exchange.cc), a larger one (or
// rinaAllToAllv) straight between the buffers, each block once
// (host_exchange.cc); else pairwise over the connections
// (block_exchange.h). The rank's own block is copied in place.
#include <cstring>

#include "algo/flat/block_exchange.h"
#include "algo/flat/flat.h"
#include "reduce/reduce.h"

namespace rina::algo {

namespace {

// uniformCount: every block's count when the call is rinaAllToAll (0: they
// may differ by pair).
Status exchange(Context& ctx, const void* sendv, const size_t* sendCounts, const size_t* sendDispls,
                void* recvv, const size_t* recvCounts, const size_t* recvDispls,
                rinaDataType_t type, uint64_t uniformCount) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t es = reduce::dataTypeSize(type);
  const char* send = static_cast<const char*>(sendv);
  char* recv = static_cast<char*>(recvv);
  ++ctx.stats().allToAlls;
  if (sendCounts[r] != recvCounts[r]) {
    return errorf(rinaInvalidArgument,
                  "rank %d: all-to-all: this rank sends %zu elements to itself but expects %zu", r,
                  sendCounts[r], recvCounts[r]);
  }
  const SelfBlock self{send + sendDispls[r] * es, recv + recvDispls[r] * es, sendCounts[r] * es};
  const bool onHost = n > 1 && hostExchangeFits(ctx);
  if (!onHost && self.bytes > 0) std::memmove(self.to, self.from, self.bytes);
  if (n == 1) return {};
  const uint64_t seq = ctx.nextSeq();
  std::vector<BlockPair> pairs;
  pairs.reserve(n - 1);
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    pairs.push_back(BlockPair{.peer = p,
                              .send = send + sendDispls[p] * es,
                              .sendCount = sendCounts[p],
                              .recv = recv + recvDispls[p] * es,
                              .recvCount = recvCounts[p]});
  }
  if (onHost) return hostAllToAll(ctx, seq, type, pairs, self, uniformCount);
  return exchangeBlocks(ctx, kAllToAll, seq, type, -1, pairs);
}

}  // namespace

Status allToAllv(Context& ctx, const void* send, const size_t* sendCounts, const size_t* sendDispls,
                 void* recv, const size_t* recvCounts, const size_t* recvDispls,
                 rinaDataType_t type) {
  return exchange(ctx, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, 0);
}

Status allToAll(Context& ctx, const void* send, void* recv, size_t count, rinaDataType_t type) {
  const int n = ctx.size();
  if (slotExchangeFits(ctx, count * reduce::dataTypeSize(type) * static_cast<size_t>(n))) {
    ++ctx.stats().allToAlls;
    return slotAllToAll(ctx, ctx.nextSeq(), send, recv, count, type);
  }
  std::vector<size_t> counts(n, count), displs(n);
  for (int p = 0; p < n; ++p) displs[p] = p * count;
  return exchange(ctx, send, counts.data(), displs.data(), recv, counts.data(), displs.data(), type,
                  count);
}

}  // namespace rina::algo
