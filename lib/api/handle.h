// The C++ communicator behind a C handle, for tests and tools inside the
// build that call lib/comm and lib/algo directly (e.g. comm::gatherLinkRates).
#ifndef RINA_LIB_API_HANDLE_H_
#define RINA_LIB_API_HANDLE_H_

#include "comm/communicator.h"
#include "core/config.h"
#include "rina/rina.h"

namespace rina::api {

// Null for a null handle.
comm::Communicator* communicatorOf(rinaComm_t comm);

// rinaCommInitRank with the knobs given instead of read from the
// environment (which rinaCommInitRank does with config::fromEnvironment).
rinaResult_t commInitRank(rinaComm_t* comm, int nranks, const rinaUniqueId& uniqueId, int rank,
                          const config::Options& options);

}  // namespace rina::api

#endif  // RINA_LIB_API_HANDLE_H_
