// The allreduce dispatcher: which algorithm runs a call (the communicator's
// algorithm, RINA_ALGO or rinaCommSetAlgorithm; auto resolved per call by
// size and the rack map, auto_select.h) and the hand-off to it, with the
// inputs the rack algorithms take (rack_inputs.h).
#ifndef RINA_LIB_ALGO_DISPATCH_DISPATCH_H_
#define RINA_LIB_ALGO_DISPATCH_DISPATCH_H_

#include <cstddef>

#include "algo/engine/algorithm.h"
#include "algo/engine/context.h"
#include "algo/rack/rack_inputs.h"
#include "rina/rina.h"

namespace rina::algo {

// The algorithm that runs an allreduce of `bytes` when `configured` is
// chosen: auto as resolveAuto says under plan (one INFO line the first
// time it picks each), ring below RINA_SMALL_MSG_BYTES as the latency
// algorithm (one-shot when every rank is on this host and the buffer fits
// its segment, else recursive doubling), oneshot likewise at any size.
Algorithm resolveAllReduce(Context& ctx, Algorithm configured, size_t bytes,
                           const plan::Plan* plan);

// Whether `configured` (auto as it resolves for large buffers) runs the
// rack algorithms that follow the plan (hier, rina), on two ranks or more.
bool followsPlan(const Context& ctx, Algorithm configured);

// Runs the allreduce by resolveAllReduce and counts it in ctx.stats().
Status allReduce(Context& ctx, Algorithm configured, const RackInputs& in, const void* send,
                 void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_DISPATCH_DISPATCH_H_
