// Directed point-to-point channels. The rank that first sends to a peer
// opens a connection of its own for that direction on first use: a
// shared-memory segment carrying frames (shm_frames.h) when both are on one
// host (unless RINA_SHM_DISABLE), else one TCP socket. The opening side never waits for the peer:
// it connects to the peer's listening socket, says hello and starts writing, and the receiving side
// takes the connection whenever it first receives from that peer (or waits for any peer). So a send
// needs nothing from the peer's current call, and the peer's collectives keep their own connections
// (the default ones), whose byte streams point-to-point messages never enter. The reverse direction
// of a channel carries only the receiver's short answers to large messages
// (algo/p2p/point_to_point.h).
#ifndef RINA_LIB_TRANSPORT_CHANNEL_H_
#define RINA_LIB_TRANSPORT_CHANNEL_H_

#include <memory>

#include "transport/connection.h"
#include "transport/mesh.h"

namespace rina::transport {

// The sending end of the channel this rank (opt.rank) opens to rank `to`;
// opt's table, communicator id, shared-memory settings and deadline apply.
// Errors name both ranks.
Status openChannel(const MeshOptions& opt, int to, std::unique_ptr<Connection>* out);

// The receiving end of the channel an arrival (a hello of kind
// kChannelHello, addressed to this rank) opens. Errors name both ranks.
Status acceptChannel(const MeshOptions& opt, Arrival arrival, std::unique_ptr<Connection>* out);

// One connection waiting on a listening socket, if any, with its hello read
// (bounded by deadline): *got is false when none was waiting. Refused
// connections (wrong communicator, another rank) are closed with a WARN and
// count as none.
Status acceptArrivalNow(const MeshOptions& opt, int listenFd, Deadline deadline, Arrival* out,
                        bool* got);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_CHANNEL_H_
