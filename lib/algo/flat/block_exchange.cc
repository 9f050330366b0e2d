#include "algo/flat/block_exchange.h"

#include <unistd.h>

#include <algorithm>

#include "algo/engine/engine.h"
#include "algo/engine/partition.h"
#include "core/log.h"
#include "reduce/reduce.h"
#include "transport/cma.h"

namespace rina::algo {
namespace {

constexpr uint32_t kTokenMagic = 0x544b4252;  // "RBKT"
enum Verdict : uint32_t { kTaken = 1, kStreamIt = 2 };

// The collective header (its count: what the sender sends to the
// receiver), what the sender expects back, and where its block lies.
struct BlockHeader {
  CollHeader coll;
  uint64_t recvCount;  // elements the sender takes from the receiver
  uint64_t addr;       // the block in the sender's memory (shared memory pairs)
  int32_t pid;         // the sender's process
  uint32_t pad[3];
};
static_assert(sizeof(BlockHeader) == 80);

struct Token {
  uint32_t magic;
  uint32_t verdict;  // Verdict
  uint64_t pad;
};
static_assert(sizeof(Token) == 16);

struct PairState {
  const BlockPair* pair;
  transport::Connection* conn;
  bool shared;  // the peer's memory can be read (sharedHostPid)
  BlockHeader out{}, in{};
  CollHeader expected{};  // what the peer's header must say
  Token tokenOut{}, tokenIn{};
};

// The peer's header against this rank's call; both directions' counts, so
// both ranks of a pair that disagree report it.
Status checkBlockHeader(const PairState& st, int rank) {
  const CollHeader& theirs = st.in.coll;
  CollHeader sameCount = st.expected;
  sameCount.count = theirs.count;
  RINA_TRY(checkCollHeader(sameCount, theirs, rank, st.pair->peer));
  return checkPairCounts(rank, theirs.collective, theirs.seq, st.pair->peer, theirs.count,
                         st.in.recvCount, st.expected.count, st.pair->sendCount);
}

}  // namespace

Status checkPairCounts(int rank, uint8_t kind, uint64_t seq, int peer, uint64_t theySend,
                       uint64_t theyExpect, uint64_t weExpect, uint64_t weSend) {
  if (theySend == weExpect && theyExpect == weSend) return {};
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  return errorf(rinaInvalidUsage,
                "rank %d: %s #%llu: counts do not match: rank %d sends %llu elements to this "
                "rank and expects %llu from it; this rank expects %llu from it and sends %llu",
                rank, collectiveName(kind), u(seq), peer, u(theySend), u(theyExpect), u(weExpect),
                u(weSend));
}

Status exchangeBlocks(Context& ctx, uint8_t kind, uint64_t seq, rinaDataType_t type, int root,
                      const std::vector<BlockPair>& pairs) {
  const int n = ctx.size(), r = ctx.rank();
  const size_t es = reduce::dataTypeSize(type);
  std::vector<PairState> states(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    PairState& st = states[i];
    st.pair = &pairs[i];
    st.conn = ctx.peer(pairs[i].peer);
    if (!st.conn) {
      return errorf(rinaInternalError, "rank %d: %s #%llu: no connection to rank %d", r,
                    collectiveName(kind), static_cast<unsigned long long>(seq), pairs[i].peer);
    }
    st.shared = st.conn->sharedHostPid() != 0;
    st.out.coll = collHeader(ctx, kind, seq, pairs[i].sendCount, type, rinaSum, root);
    st.out.recvCount = pairs[i].recvCount;
    st.out.addr = reinterpret_cast<uintptr_t>(pairs[i].send);
    st.out.pid = st.shared ? static_cast<int32_t>(getpid()) : 0;
    st.expected = collHeader(ctx, kind, seq, pairs[i].recvCount, type, rinaSum, root);
    st.tokenOut.magic = kTokenMagic;
  }
  // Sends in step order (to r + 1, r + 2, ...), receives mirrored.
  std::vector<PairState*> sendOrder, recvOrder;
  for (PairState& st : states) sendOrder.push_back(&st), recvOrder.push_back(&st);
  std::sort(sendOrder.begin(), sendOrder.end(), [&](const PairState* a, const PairState* b) {
    return mod(a->pair->peer - r, n) < mod(b->pair->peer - r, n);
  });
  std::sort(recvOrder.begin(), recvOrder.end(), [&](const PairState* a, const PairState* b) {
    return mod(r - a->pair->peer, n) < mod(r - b->pair->peer, n);
  });
  auto stepTo = [&](const PairState* st) { return mod(st->pair->peer - r, n); };
  auto stepFrom = [&](const PairState* st) { return mod(r - st->pair->peer, n); };

  Engine e(contextFor(ctx, kind, seq, n - 1));
  e.sends().reserve(3 * states.size());
  e.recvs().reserve(3 * states.size());
  // Headers, both ways: the receiver of a shared-memory block takes it now.
  for (PairState* st : sendOrder) {
    e.sends().push_back(SendItem{.conn = st->conn,
                                 .data = reinterpret_cast<const char*>(&st->out),
                                 .len = sizeof st->out,
                                 .step = stepTo(st)});
  }
  std::vector<int> headerAt(states.size()), tokenAt(states.size());
  std::vector<size_t> payloadSendAt(states.size()), payloadRecvAt(states.size());
  // Indices are known before the items exist: headers, tokens, payloads.
  size_t nShared = 0;
  for (const PairState& st : states) nShared += st.shared ? 1 : 0;
  {
    size_t at = 0;
    for (PairState* st : recvOrder) headerAt[st - states.data()] = static_cast<int>(at++);
    for (PairState* st : sendOrder) {
      if (st->shared) tokenAt[st - states.data()] = static_cast<int>(at++);
    }
    for (PairState* st : recvOrder) payloadRecvAt[st - states.data()] = at++;
    at = states.size() + nShared;
    for (PairState* st : sendOrder) payloadSendAt[st - states.data()] = at++;
  }
  for (PairState* st : recvOrder) {
    const size_t i = st - states.data();
    const size_t recvBytes = st->pair->recvCount * es;
    e.recvs().push_back(RecvItem{
        .conn = st->conn,
        .dst = reinterpret_cast<char*>(&st->in),
        .len = sizeof st->in,
        .step = stepFrom(st),
        .onDone = [&e, st, i, recvBytes, r, &payloadRecvAt]() -> Status {
          RINA_TRY(checkBlockHeader(*st, r));
          if (!st->shared) {
            e.recvs()[payloadRecvAt[i]].len = recvBytes;
            return {};
          }
          st->tokenOut.verdict = kTaken;
          if (recvBytes == 0) return {};
          Status pulled =
              st->in.pid == st->conn->sharedHostPid()
                  ? transport::readProcessMemory(st->in.pid, st->in.addr, st->pair->recv, recvBytes)
                  : errorf(rinaRemoteError, "it names process %d", st->in.pid);
          if (!pulled.ok()) {
            RINA_INFO("rank %d: %s: rank %d's block comes through the FIFO instead: %s", r,
                      collectiveName(st->in.coll.collective), st->pair->peer,
                      pulled.message().c_str());
            st->tokenOut.verdict = kStreamIt;
            e.recvs()[payloadRecvAt[i]].len = recvBytes;
          }
          return {};
        }});
  }
  // Tokens on shared-memory pairs: "taken" or "stream it", after the header.
  for (PairState* st : recvOrder) {
    if (!st->shared) continue;
    e.sends().push_back(SendItem{.conn = st->conn,
                                 .data = reinterpret_cast<const char*>(&st->tokenOut),
                                 .len = sizeof st->tokenOut,
                                 .afterRecv = headerAt[st - states.data()],
                                 .step = stepFrom(st)});
  }
  for (PairState* st : sendOrder) {
    if (!st->shared) continue;
    const size_t i = st - states.data();
    const size_t sendBytes = st->pair->sendCount * es;
    e.recvs().push_back(
        RecvItem{.conn = st->conn,
                 .dst = reinterpret_cast<char*>(&st->tokenIn),
                 .len = sizeof st->tokenIn,
                 .step = stepTo(st),
                 .onDone = [&e, st, i, sendBytes, r, &payloadSendAt]() -> Status {
                   if (st->tokenIn.magic != kTokenMagic ||
                       (st->tokenIn.verdict != kTaken && st->tokenIn.verdict != kStreamIt)) {
                     return errorf(rinaRemoteError, "rank %d: rank %d sent a corrupt block token",
                                   r, st->pair->peer);
                   }
                   if (st->tokenIn.verdict == kStreamIt)
                     e.sends()[payloadSendAt[i]].len = sendBytes;
                   return {};
                 }});
  }
  // Payloads: streamed, or (shared memory) only when the peer asked for it.
  for (PairState* st : recvOrder) {
    e.recvs().push_back(
        RecvItem{.conn = st->conn, .dst = st->pair->recv, .len = 0, .step = stepFrom(st)});
  }
  for (PairState* st : sendOrder) {
    const size_t i = st - states.data();
    e.sends().push_back(SendItem{.conn = st->conn,
                                 .data = st->pair->send,
                                 .len = st->shared ? 0 : st->pair->sendCount * es,
                                 .afterRecv = st->shared ? tokenAt[i] : -1,
                                 .step = stepTo(st)});
  }
  return e.run();
}

}  // namespace rina::algo
