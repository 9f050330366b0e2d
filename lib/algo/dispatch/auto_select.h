// What RINA_ALGO=auto runs for an allreduce: recursive doubling below
// RINA_SMALL_MSG_BYTES; the flat ring without an INA rack; otherwise
// whichever of ring, hier and rina (with the plan's choice of how each INA
// rack takes part) the link model predicts fastest for this size. The
// predictions are the current plan's (plan::Plan::predicted, made by rank 0
// with plan/link_model.h from the rates the plan was made from and sent
// with it), so every rank decides alike, and the choice follows what the
// plan knows: a rack whose switch measured slow, a slow uplink.
#ifndef RINA_LIB_ALGO_DISPATCH_AUTO_SELECT_H_
#define RINA_LIB_ALGO_DISPATCH_AUTO_SELECT_H_

#include <cstddef>
#include <string>

#include "algo/engine/algorithm.h"
#include "plan/plan.h"
#include "topo/rack_map.h"

namespace rina::algo {

// The algorithm auto runs for `bytes` under plan (null: none made; the
// ring). *why, unless null, says so in one line (put in words only when
// asked: auto resolves at every call). rina wins only where it is predicted
// faster than the ring, hier only where faster than both.
Algorithm resolveAuto(const topo::RackMap& map, const plan::Plan* plan, size_t bytes,
                      size_t smallMsgBytes, std::string* why);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_DISPATCH_AUTO_SELECT_H_
