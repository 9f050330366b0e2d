// Point-to-point messages (rinaSend / rinaRecv) on the directed channels of
// transport/channel.h. Each message is a 48-byte header (type, count, tag,
// the message's number on its channel) and its payload
// (message_protocol.h has the wire format); by size (MessageLimits, the
// RINA_P2P_* knobs):
//   - small ones go with their header in one send (one frame over shared
//     memory), eagerly, whether or not the receive is posted;
//   - larger ones (rendezvous: from RINA_P2P_EAGER_BYTES over shared
//     memory, RINA_P2P_RENDEZVOUS_BYTES over a socket) wait for the
//     receiver's answer, which asks for the bytes (they stream through the
//     channel), or, when the receive does not match (count, type, tag),
//     refuses, so both sides report the mismatch;
//   - the largest over shared memory (from RINA_P2P_COPY_BYTES) are copied
//     straight from the sender's buffer into the receiver's (one copy
//     instead of two): by both ranks for a blocking receive (each claims
//     chunks in turn, the sender writing with process_vm_writev, the
//     receiver reading with process_vm_readv), else by the receiver; where
//     the kernel refuses, they stream.
// An eager message that does not match is reported by the receiver only
// (the sender has finished by then). Messages between two ranks match in
// the order they were posted, per direction; a receive may name a tag
// (checked) or take any. A blocking send or receive on an open channel
// polls its connection directly (no engine, no allocation) unless it has
// to wait longer than ChannelSource::pollUs.
#ifndef RINA_LIB_ALGO_P2P_POINT_TO_POINT_H_
#define RINA_LIB_ALGO_P2P_POINT_TO_POINT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "algo/engine/context.h"
#include "algo/p2p/message.h"
#include "core/status.h"
#include "rina/rina.h"
#include "transport/connection.h"
#include "transport/wait_set.h"

namespace rina::algo {

// Where messages travel: the communicator's channels (lib/comm), opened by
// the sender on first use and taken by the receiver when they arrive.
class ChannelSource {
 public:
  virtual ~ChannelSource() = default;
  // The channel to peer, opened now if this rank has none (no wait for the peer).
  virtual Status sendChannel(int peer, transport::Connection** out) = 0;
  // The channel from peer; null until the peer opened it and it was taken.
  virtual transport::Connection* recvChannel(int peer) = 0;
  // Every channel from a peer taken so far.
  virtual std::vector<transport::Connection*> recvChannels() = 0;
  // Takes the channels that arrived, without waiting; *took: some did.
  virtual Status takeArrivals(bool* took) = 0;
  // What a wait for arrivals wakes on.
  virtual void armArrivals(transport::WaitSet& ws) = 0;
  // The number of the next message to / from peer (counted from 1).
  virtual uint64_t nextSendSeq(int peer) = 0;
  virtual uint64_t nextRecvSeq(int peer) = 0;
  // The number of the next batch that waits on several channels (for errors).
  virtual uint64_t nextBatch() = 0;
  // How long a blocking send or receive polls its channel without giving
  // up its core before the engine's loop (which yields, then sleeps).
  virtual int64_t pollUs() const = 0;
  // Which protocol a message of each size takes (the RINA_P2P_* knobs).
  virtual const MessageLimits& limits() const = 0;
};

// Runs a batch of messages: each peer's in the order given (per
// direction), all peers at once, each directed channel an engine of its
// own driven in one loop, so no order of posting across peers (a ring of
// sends and receives, both ends sending first) can deadlock. Waits have the
// context's timeout; errors name the rank, the peer and the message.
Status runMessages(Context& ctx, ChannelSource& channels, std::span<Message> batch);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_P2P_POINT_TO_POINT_H_
