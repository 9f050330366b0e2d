// All-to-all: rank r's block for rank p goes straight to p, each block
// once: through the host segment when every rank is on this host
// (host_exchange.cc), else pairwise over the connections
// (block_exchange.h); the rank's own block is copied in place.
#include <cstring>

#include "algo/flat/block_exchange.h"
#include "algo/flat/flat.h"
#include "reduce/reduce.h"

namespace rina::algo {

Status allToAllv(Context& ctx, const void* sendv, const size_t* sendCounts,
                 const size_t* sendDispls, void* recvv, const size_t* recvCounts,
                 const size_t* recvDispls, rinaDataType_t type) {
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
  if (onHost) return hostAllToAll(ctx, seq, type, pairs, self);
  return exchangeBlocks(ctx, kAllToAll, seq, type, -1, pairs);
}

}  // namespace rina::algo
