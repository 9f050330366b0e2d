// Switch broadcast (BCAST) from one worker to its rack (InaClient::broadcast):
// the root's bytes reach every worker bit for bit (any type: they travel as
// raw 32-bit words), in slices of 4 x sliceElems() bytes.
//
// The root keeps a window in flight (slice_window.h), paced by the switch's
// acknowledgement of each slice (a header-only RESULT to the root), and
// resends on timeout (the switch multicasts its stored copy again); it
// returns rinaTimeout when the switch is silent for switchTimeoutMs. A
// receiver takes the multicasts, also those that came while it was still in
// an earlier call, and returns when it has every slice, or lists what is
// missing once nothing new came for quietMs (switchTimeoutMs before the
// first slice).
#ifndef RINA_LIB_INA_BROADCAST_CALL_H_
#define RINA_LIB_INA_BROADCAST_CALL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "ina/datagram_pump.h"

namespace rina::ina {

struct InaBroadcastResult {
  // Slices this worker does not hold: NACKed at the root, or never arrived
  // here. The caller sends them over the host connections.
  std::vector<uint32_t> missingSlices;
  InaCallStats stats;
};

// Every worker of the rack calls it with the same size; exactly one is root.
Status broadcastThroughSwitch(DatagramPump& pump, void* buffer, size_t bytes, bool isRoot,
                              int quietMs, InaBroadcastResult* result);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_BROADCAST_CALL_H_
