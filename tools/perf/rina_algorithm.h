// rinaAllReduce with a named algorithm, as an AllreduceAlgorithm.
#ifndef RINA_TOOLS_PERF_RINA_ALGORITHM_H_
#define RINA_TOOLS_PERF_RINA_ALGORITHM_H_

#include <memory>
#include <string>

#include "perf/bench.h"
#include "rina/rina.h"

namespace rina::perf {

// Fatal (exit kExitError) unless result is rinaSuccess; the message names the
// call and carries rinaCommGetLastError(comm) (comm may be null).
void checkRina(rinaResult_t result, rinaComm_t comm, const std::string& call);

// Checks the name with rinaCommSetAlgorithm right away (fatal if unknown).
std::unique_ptr<AllreduceAlgorithm> makeRinaAlgorithm(rinaComm_t comm, const std::string& name);

// "0.1.0", from rinaGetVersion.
std::string rinaVersionString();

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_RINA_ALGORITHM_H_
