// Port workers per chunk inside an INA rack. The port of a chunk carries its
// inter-rack traffic (receives the upstream partial, sends the rack sum on),
// so chunks are shared out in proportion to the workers' host link rates:
// a faster host is port for more chunks.
#ifndef RINA_LIB_PLAN_PORTS_H_
#define RINA_LIB_PLAN_PORTS_H_

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace rina::plan {

// Largest-remainder (Hamilton) apportionment: counts[i] is floor(q_i) or
// ceil(q_i) of the quota q_i = total * w_i / sum(w), and the counts add up to
// total exactly. Ties in the remainder go to the lower index. Weights must be
// finite and >= 0 with a positive sum: else rinaInvalidArgument.
Status apportion(const std::vector<double>& weights, int64_t total, std::vector<int64_t>* counts);

// Which worker (index into weights) is port for each of `chunks` chunks:
// counts from apportion(), interleaved so that consecutive chunks go to
// different workers where possible (chunk c goes to the worker furthest
// behind its share after c chunks, smooth weighted round-robin).
Status portsPerChunk(const std::vector<double>& weights, int chunks, std::vector<int>* ports);

// The rack's port throughput for a chunk assignment: every port moves its
// chunks over its own link in parallel, so the rack finishes after
// max_i(count_i / w_i) chunk-times; the rate is chunks / that (same unit as w).
double portRate(const std::vector<double>& weights, const std::vector<int>& ports);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PORTS_H_
