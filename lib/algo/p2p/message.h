// One point-to-point message as the caller describes it (a send or a
// receive), shared by the batch runner (point_to_point.h) and the wire
// protocol that moves it (message_protocol.h).
#ifndef RINA_LIB_ALGO_P2P_MESSAGE_H_
#define RINA_LIB_ALGO_P2P_MESSAGE_H_

#include <cstddef>

#include "rina/rina.h"

namespace rina::algo {

inline constexpr int kAnyPeer = -1;  // a receive from whichever peer sends first
inline constexpr int kAnyTag = -1;   // a receive that takes any tag

// Which way a message goes by its size (the RINA_P2P_* knobs, docs/knobs.md;
// message_protocol.h has the protocol each way names).
struct MessageLimits {
  // Shared memory: below this size the payload follows its header at once
  // (eager); from it the sender waits for the receiver's answer first.
  size_t eagerBytes = 32 << 10;
  // Shared memory, answered messages: below this size the payload streams
  // through the channel (the two ranks copying into and out of it at once);
  // from it, it is copied straight between the two buffers (by both ranks
  // for a blocking receive, else by the receiver).
  size_t copyBytes = 4 << 20;
  // Sockets: from this size the sender waits for the receiver's answer
  // before the payload moves (so a mismatch is reported on both sides).
  size_t rendezvousBytes = 1 << 20;
};

// One message of a batch: a send to peer, or a receive from it.
struct Message {
  bool send = false;
  int peer = 0;  // a receive may take kAnyPeer (alone in its batch)
  const void* sendBuf = nullptr;
  void* recvBuf = nullptr;
  size_t count = 0;  // elements of type
  rinaDataType_t type = rinaUint8;
  int tag = 0;  // a receive may take kAnyTag
  // Set by the run, for a receive: the sender and the message's tag.
  int source = -1;
  int sourceTag = 0;
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_P2P_MESSAGE_H_
