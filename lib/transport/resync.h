// Connections a new communicator takes over from the one it replaces
// (rinaCommShrink, rinaCommGrow): the old communicator's last call may have
// stopped half way on either end, so each byte stream is brought back to a
// common start before the new communicator's first message
// (Connection::beginResync / pollResync). Every connection of the rank at
// once, so no pair waits on another.
#ifndef RINA_LIB_TRANSPORT_RESYNC_H_
#define RINA_LIB_TRANSPORT_RESYNC_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "transport/connection.h"

namespace rina::transport {

// Until every connection's peer has resynced with token too, or deadline
// (rinaTimeout naming the peers still missing); abort (may be null) is
// looked at every 100 ms. Each connection must canResync(); begun: their
// beginResync(token) was called already. rank names this rank in errors.
Status resyncAll(const std::vector<Connection*>& conns, uint64_t token, int rank, Deadline deadline,
                 const std::atomic<bool>* abort, bool begun = false);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_RESYNC_H_
