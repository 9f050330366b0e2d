// The allreduce dispatcher: which algorithm runs a call (the communicator's
// algorithm, RINA_ALGO or rinaCommSetAlgorithm; auto resolved per call by
// size and the rack map, auto_select.h) and the hand-off to it, with the
// inputs the rack algorithms take (rack/rack_inputs.h); and the peers each
// algorithm talks to (peers.cc), from which the communicator knows whom to
// connect: a rank holds O(rack size) connections, not n - 1. The one header
// of lib/algo/dispatch that the layers above include.
#ifndef RINA_LIB_ALGO_DISPATCH_DISPATCH_H_
#define RINA_LIB_ALGO_DISPATCH_DISPATCH_H_

#include <cstddef>
#include <set>

#include "algo/engine/algorithm.h"
#include "algo/engine/context.h"
#include "algo/rack/rack_inputs.h"
#include "rina/rina.h"
#include "topo/rack_map.h"

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

// Whom each algorithm talks to.
// Ring neighbours and recursive doubling partners (including the fold
// pairs for non-powers of two).
std::set<int> neighbourRanks(int rank, int nranks);

// The peers of the rack algorithms (hier, rina, ps-ina): every rank of this
// rank's rack and of the racks before and after it (in rack order, cyclic),
// because ports rotate over a rack's workers by chunk and a ring member's
// neighbours are always in the same or an adjacent rack; and for ps-ina
// rank 0 (the parameter server) with every rack's agent.
std::set<int> rackPeerRanks(int rank, const topo::RackMap& map);

// The peers a rank keeps whatever the plan: neighbourRanks, its own rack,
// and the ps-ina star (rank 0 with every rack's agent). A plan adds the
// ranks of its ring neighbours (rack/rack.h: planPeerRanks).
std::set<int> basePeerRanks(int rank, const topo::RackMap& map);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_DISPATCH_DISPATCH_H_
