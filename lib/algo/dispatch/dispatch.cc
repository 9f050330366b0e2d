// Which allreduce algorithm runs a call, and the hand-off to it (dispatch.h).
#include "algo/dispatch/dispatch.h"

#include <string>

#include "algo/dispatch/auto_select.h"
#include "algo/flat/flat.h"
#include "algo/rack/rack.h"
#include "core/log.h"
#include "reduce/reduce.h"

namespace rina::algo {

namespace {

// The latency algorithm for `bytes`: one-shot over the host segment when
// every rank is on this host and the buffer fits, else recursive doubling.
Algorithm latencyAlgorithm(const Context& ctx, size_t bytes) {
  return oneShotFits(ctx, bytes) ? Algorithm::kOneShot : Algorithm::kRecursiveDoubling;
}

}  // namespace

Algorithm resolveAllReduce(Context& ctx, Algorithm configured, size_t bytes,
                           const plan::Plan* plan) {
  if (configured == Algorithm::kAuto) {
    Algorithm a = resolveAuto(ctx.racks(), plan, bytes, ctx.smallMsgBytes(), nullptr);
    const bool oneShot =
        a == Algorithm::kRecursiveDoubling && latencyAlgorithm(ctx, bytes) == Algorithm::kOneShot;
    if (oneShot) a = Algorithm::kOneShot;
    if (ctx.noteAutoChoice(a)) {
      // Said once per choice, so the reason is put in words only then.
      std::string why;
      (void)resolveAuto(ctx.racks(), plan, bytes, ctx.smallMsgBytes(), &why);
      if (oneShot) why += ", one-shot: every rank on this host";
      RINA_INFO("rank %d: auto runs %s (%s)", ctx.rank(), algorithmName(a), why.c_str());
    }
    return a;
  }
  if (configured == Algorithm::kRing && bytes < ctx.smallMsgBytes()) {
    return latencyAlgorithm(ctx, bytes);
  }
  if (configured == Algorithm::kOneShot) {
    return latencyAlgorithm(ctx, bytes);
  }
  return configured;
}

bool followsPlan(const Context& ctx, Algorithm configured) {
  if (ctx.size() < 2) return false;
  return configured == Algorithm::kHier || configured == Algorithm::kInaMemberRing ||
         (configured == Algorithm::kAuto && ctx.racks().anyIna());
}

Status allReduce(Context& ctx, Algorithm configured, const RackInputs& in, const void* send,
                 void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op) {
  // avg over one rank is the value itself
  if (finishedOnOneRank(ctx, send, recv, count * reduce::dataTypeSize(type))) return {};
  const size_t bytes = count * reduce::dataTypeSize(type);
  // auto chooses by the plan: made now if it is not yet (every rank gets
  // here alike: the plan is the same everywhere).
  if (configured == Algorithm::kAuto && in.plans && bytes >= ctx.smallMsgBytes() &&
      followsPlan(ctx, configured) && !in.plans->current()) {
    RINA_TRY(in.plans->start(ctx));
  }
  const Algorithm a =
      resolveAllReduce(ctx, configured, bytes, in.plans ? in.plans->current() : nullptr);
  ctx.stats().calls[static_cast<int>(a)]++;
  // Every header of the call says which algorithm runs it (engine.h), and
  // with every rank on this host, so does the host segment.
  struct CallAlgorithm {
    Context& ctx;
    CallAlgorithm(Context& c, Algorithm a) : ctx(c) { ctx.beginCallAlgorithm(a); }
    ~CallAlgorithm() { ctx.beginCallAlgorithm(Algorithm::kAuto); }
  } callAlgorithm(ctx, a);
  switch (a) {
    case Algorithm::kRecursiveDoubling:
      return recursiveDoublingAllReduce(ctx, send, recv, count, type, op);
    case Algorithm::kOneShot:
      return oneShotAllReduce(ctx, send, recv, count, type, op);
    case Algorithm::kHier:
      return hierAllReduce(ctx, in.plans, send, recv, count, type, op);
    case Algorithm::kInaMemberRing:
      return inaMemberRingAllReduce(ctx, in.plans, in.rack, send, recv, count, type, op);
    case Algorithm::kPsIna:
      return psInaAllReduce(ctx, in.rack, send, recv, count, type, op);
    case Algorithm::kRing:
    case Algorithm::kAuto:
      return ringAllReduce(ctx, send, recv, count, type, op);
  }
  return errorf(rinaInternalError, "unknown algorithm");
}

}  // namespace rina::algo
