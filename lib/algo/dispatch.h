// The allreduce dispatcher: which algorithm runs a call (the communicator's
// algorithm, RINA_ALGO or rinaCommSetAlgorithm; auto resolved per call by
// size and the rack map, auto_select.h) and the hand-off to it.
#ifndef RINA_LIB_ALGO_DISPATCH_H_
#define RINA_LIB_ALGO_DISPATCH_H_

#include "comm/communicator.h"

namespace rina::algo {

// Picks the algorithm by comm.algorithm() and size: auto as resolveAuto
// says, ring below RINA_SMALL_MSG_BYTES as recursive doubling; counts the
// call in comm.stats().
Status allReduce(Communicator& comm, const void* send, void* recv, size_t count,
                 rinaDataType_t type, rinaRedOp_t op);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_DISPATCH_H_
