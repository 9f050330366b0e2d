// The transport seam: a Connection is a reliable, ordered byte stream to one
// peer. Both ends know every message's length from the collective's schedule,
// so there is no framing; endMessage() marks a boundary (a transport may pad
// to keep the next message aligned). All calls are non-blocking; a caller
// that cannot move on arms a WaitSet and sleeps in it.
#ifndef RINA_LIB_TRANSPORT_CONNECTION_H_
#define RINA_LIB_TRANSPORT_CONNECTION_H_

#include <cstddef>

#include "core/status.h"
#include "reduce/reduce.h"

namespace rina::transport {

class WaitSet;

// How received bytes land: copied (fn == nullptr) or combined element-wise,
// dst[i] = a[i] OP incoming[i], whole elements only. a may equal dst.
struct RecvReduce {
  reduce::ReduceFn fn = nullptr;
  const void* a = nullptr;
  size_t elemSize = 1;
};

enum class Direction { kSend, kRecv };

class Connection {
 public:
  explicit Connection(int peer) : peer_(peer) {}
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int peer() const { return peer_; }
  virtual const char* kind() const = 0;  // "socket", "shm"

  // Moves up to len bytes; *moved = 0 when it would block.
  virtual Status trySend(const void* data, size_t len, size_t* moved) = 0;
  // As trySend; with r.fn set, len and *moved are multiples of r.elemSize.
  virtual Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) = 0;
  // The message in this direction is complete.
  virtual void endMessage(Direction) {}
  // Adds the events that would let a blocked send / recv go on.
  virtual void armWait(WaitSet& ws, bool send, bool recv) = 0;
  // Non-blocking check that the peer process is still there.
  virtual Status checkAlive() = 0;

 private:
  int peer_;
};

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_CONNECTION_H_
