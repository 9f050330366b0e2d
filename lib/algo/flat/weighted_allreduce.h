// Weighted average over ranks on top of allReduce: rank r passes weight w_r
// (e.g. its batch size under InGo) and every rank gets
//   sum_r w_r x_r / sum_r w_r,
// the unbiased mean gradient when batches differ.
#ifndef RINA_LIB_ALGO_FLAT_WEIGHTED_ALLREDUCE_H_
#define RINA_LIB_ALGO_FLAT_WEIGHTED_ALLREDUCE_H_

#include <functional>

#include "core/status.h"
#include "rina/rina.h"

namespace rina::algo {

// The allreduce it runs on (the communicator's, with its algorithm).
using AllReduceFn = std::function<Status(const void* send, void* recv, size_t count,
                                         rinaDataType_t type, rinaRedOp_t op)>;

// Two collectives: a float64 allreduce of (weight, invalid-weight flag), so
// every rank agrees on W = sum w_r and on whether some rank's weight was bad
// (negative, NaN, inf: rinaInvalidArgument on every rank; W = 0 likewise),
// then each rank scales x by w_r / W (in float for float16/bfloat16) and the
// scaled buffers are summed. Floating types only (checked before any
// communication, so a mismatch is the caller's to avoid, as with count).
Status weightedAllReduce(const AllReduceFn& allReduce, const void* send, void* recv, size_t count,
                         rinaDataType_t type, double weight);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_FLAT_WEIGHTED_ALLREDUCE_H_
