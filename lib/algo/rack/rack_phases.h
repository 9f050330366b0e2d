// The rack's blocking phases: each one RackTask (rack_task.h) in an engine
// of its own, so a rack phase is written once for the member ring (which
// runs RackTask beside its ring items) and for these. ps-ina is built from
// them, and the member ring uses rackAllReduce when one INA rack is the
// whole ring.
#ifndef RINA_LIB_ALGO_RACK_RACK_PHASES_H_
#define RINA_LIB_ALGO_RACK_RACK_PHASES_H_

#include "algo/rack/member.h"

namespace rina::algo {

// Every worker of m calls it: afterwards the port's data holds the op over
// the member's workers of their data (through the switch when it can sum
// the call, else over shm/TCP). Other workers' data is unchanged.
Status rackReduce(RackCall& call, const Member& m, int port, char* data, size_t count);
// Every worker of m calls it: the port's data (count elements) reaches every
// worker's data, bit for bit (switch multicast while the rack has its
// switch, lost datagrams repaired from the port; else shm/TCP).
Status rackBroadcast(RackCall& call, const Member& m, int port, char* data, size_t count);

// Every worker of m calls it (only when sumsOnSwitch, member.h): afterwards
// every worker's data holds the sum over the member's workers, bit for bit
// the same on each (the member is the whole ring: no port, no broadcast).
// input: the worker's unchanged input when it is not data (out of place),
// else null (a copy is kept).
Status rackAllReduce(RackCall& call, const Member& m, char* data, size_t count, const char* input);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_RACK_PHASES_H_
