// The transport seam: a Connection is a reliable, ordered byte stream to one
// peer. Both ends know every message's length from the collective's schedule,
// so there is no framing; endMessage() marks a boundary (a transport may pad
// to keep the next message aligned). All calls are non-blocking; a caller
// that cannot move on arms a WaitSet and sleeps in it.
#ifndef RINA_LIB_TRANSPORT_CONNECTION_H_
#define RINA_LIB_TRANSPORT_CONNECTION_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "reduce/reduce.h"

namespace rina::transport {

class WaitSet;
struct SharedCopyWords;

// How received bytes land: copied (fn == nullptr) or combined element-wise,
// dst[i] = a[i] OP incoming[i], whole elements only. a may equal dst.
struct RecvReduce {
  reduce::ReduceFn fn = nullptr;
  const void* a = nullptr;
  size_t elemSize = 1;
};

enum class Direction { kSend, kRecv };

// What moved on a connection, per Direction (index 0 = send, 1 = receive).
// The step engine (lib/algo/engine/engine.h) is the only mover and keeps these; a
// transport does not. bytes: payload bytes moved by trySend / tryRecv
// (alignment padding excluded). busyNs: the engine's busy time, from the
// first to the last byte of each transfer (see engine.h). smoothBytes /
// smoothNs: sums over busy runs, decayed with a time constant of 100 ms of
// busy time; their ratio is the smoothed achieved rate.
struct LinkCounters {
  // The smoothed rate forgets older busy time with this time constant (in
  // busy time, so many short transfers do not wash out a long one).
  static constexpr double kRateWindowNs = 100e6;
  // Busy runs that moved fewer bytes leave the smoothed rate alone: their
  // time is mostly latency and engine passes (a 64-byte plan notice "runs"
  // at a few Mbit/s on any link), which would read as a slow link to the
  // planner.
  static constexpr double kRateMinBytes = 64 << 10;

  uint64_t bytes[2] = {};
  int64_t busyNs[2] = {};
  double smoothBytes[2] = {};
  double smoothNs[2] = {};

  // A busy run of ns that moved runBytes (already in bytes[]) ended.
  void closeRun(Direction d, double runBytes, int64_t ns) {
    const int i = static_cast<int>(d);
    busyNs[i] += ns;
    if (runBytes < kRateMinBytes) return;
    const double keep = std::exp(-static_cast<double>(ns) / kRateWindowNs);
    smoothBytes[i] = keep * smoothBytes[i] + runBytes;
    smoothNs[i] = keep * smoothNs[i] + static_cast<double>(ns);
  }

  // Smoothed bytes per second in direction d; 0 before anything moved.
  double rate(Direction d) const {
    const int i = static_cast<int>(d);
    return smoothNs[i] > 0 ? smoothBytes[i] * 1e9 / smoothNs[i] : 0.0;
  }
};

class Connection {
 public:
  explicit Connection(int peer) : peer_(peer) {}
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int peer() const { return peer_; }
  // A connection a new communicator takes over keeps its peer under the
  // peer's number there (rinaCommShrink renumbers the survivors in order).
  void renumber(int peer) { peer_ = peer; }
  LinkCounters& counters() { return counters_; }
  const LinkCounters& counters() const { return counters_; }
  virtual const char* kind() const = 0;  // "socket", "shm"

  // Moves up to len bytes; *moved = 0 when it would block.
  virtual Status trySend(const void* data, size_t len, size_t* moved) = 0;
  // As trySend for the bytes of `first` followed by those of `second`, as
  // one transfer where the transport can (one shared-memory frame, one
  // sendmsg): a short message and its header then reach the peer together.
  virtual Status trySendGather(const void* first, size_t firstLen, const void* second,
                               size_t secondLen, size_t* moved);
  // As trySend; with r.fn set, len and *moved are multiples of r.elemSize.
  virtual Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) = 0;
  // The message in this direction is complete.
  virtual void endMessage(Direction) {}
  // Adds the events that would let a blocked send / recv go on.
  virtual void armWait(WaitSet& ws, bool send, bool recv) = 0;
  // Non-blocking check that the peer process is still there.
  virtual Status checkAlive() = 0;
  // The same, also when bytes it sent before it went are still unread
  // (checkAlive waits for them to be read: they may be a call's last).
  virtual Status checkGone() { return checkAlive(); }
  // The peer's process id when the two share this host's memory (a shared
  // memory connection): its buffers can then be read in one copy with
  // process_vm_readv (transport/cma.h). 0 otherwise.
  virtual int sharedHostPid() const { return 0; }
  // Where the two processes of a shared-memory pair coordinate a block that
  // both copy (transport/cma.h), for blocks going in direction d of this
  // connection; null where the transport has none.
  virtual SharedCopyWords* sharedCopy(Direction d) {
    (void)d;
    return nullptr;
  }

  // Taking a connection over into a new communicator after a call that may
  // have stopped half way (transport/resync.h): both ends drop what they
  // were moving, beginResync says where this end's new stream starts
  // (token: the same on both ends, drawn per new communicator), and
  // pollResync skips what the peer sent before its start until *done.
  // Non-blocking; armResync adds what an unfinished resync waits for. A
  // transport that cannot do this keeps canResync() false and the pair is
  // connected afresh.
  virtual bool canResync() const { return false; }
  virtual void beginResync(uint64_t /*token*/) {}
  virtual Status pollResync(bool* done) {
    *done = false;
    return errorf(rinaInternalError, "%s connections cannot be taken over", kind());
  }
  virtual void armResync(WaitSet& /*ws*/) {}

 private:
  int peer_;
  LinkCounters counters_;
};

inline Status Connection::trySendGather(const void* first, size_t firstLen, const void* second,
                                        size_t secondLen, size_t* moved) {
  RINA_TRY(trySend(first, firstLen, moved));
  if (*moved < firstLen || secondLen == 0) return {};
  size_t more = 0;
  RINA_TRY(trySend(second, secondLen, &more));
  *moved += more;
  return {};
}

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_CONNECTION_H_
