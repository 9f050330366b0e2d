// The collectives on a Communicator. Arguments are already validated by the
// C API; counts are in elements.
#ifndef RINA_LIB_ALGO_COLLECTIVES_H_
#define RINA_LIB_ALGO_COLLECTIVES_H_

#include "algo/communicator.h"
#include "algo/engine.h"

namespace rina::algo {

// The engine settings for one collective on comm.
EngineContext contextFor(Communicator& comm, uint8_t kind, uint64_t seq, int steps);

// Picks ring or recursive doubling by comm.algorithm() and size.
Status allReduce(Communicator& comm, const void* send, void* recv, size_t count,
                 rinaDataType_t type, rinaRedOp_t op);

// Reduce-scatter then all-gather around the ring, sliced and pipelined.
// Every element is reduced once (by the rank that finishes its chunk) and
// then copied, so all ranks hold bitwise identical results.
Status ringAllReduce(Communicator& comm, const void* send, void* recv, size_t count,
                     rinaDataType_t type, rinaRedOp_t op);

// Latency algorithm: log2(n) exchanges of the whole buffer.
Status recursiveDoublingAllReduce(Communicator& comm, const void* send, void* recv, size_t count,
                                  rinaDataType_t type, rinaRedOp_t op);

Status ringReduceScatter(Communicator& comm, const void* send, void* recv, size_t recvCount,
                         rinaDataType_t type, rinaRedOp_t op);
Status ringAllGather(Communicator& comm, const void* send, void* recv, size_t sendCount,
                     rinaDataType_t type);
// A pipelined chain root -> root+1 -> ... -> root-1.
Status chainBroadcast(Communicator& comm, const void* send, void* recv, size_t count,
                      rinaDataType_t type, int root);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_COLLECTIVES_H_
