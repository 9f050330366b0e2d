// Shared-memory connection between two ranks on one host: one segment with a
// single-producer/single-consumer byte FIFO per direction, small enough to
// stay in the last-level cache, so a slice goes sender -> cache -> receiver
// and the receiver reduces straight out of the FIFO. Waiting uses futexes on
// the FIFO counters; the TCP socket the pair met on stays open only to notice
// a peer that dies.
#ifndef RINA_LIB_TRANSPORT_SHM_CONNECTION_H_
#define RINA_LIB_TRANSPORT_SHM_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "core/socket.h"
#include "transport/cma.h"
#include "transport/connection.h"

namespace rina::transport {

// One direction's control words, each side's on its own cache line.
// A message that finds the FIFO empty starts again at its beginning (the
// producer skips to the next multiple of the capacity and says where in
// restartAt, counted by restarts), so traffic that fits keeps reusing the
// same pages instead of cycling through the whole FIFO: a fresh page costs a
// fault on first touch (tens of microseconds on a virtual machine), and
// the pages in use stay in the cache.
//
// A resync (Connection::beginResync) is published by the producer the same
// way: where its new stream begins (syncHead, a head value) and the restarts
// it had published by then, under the resync's token (stored last); the
// consumer takes them as its tail and its restarts seen.
struct FifoControl {
  alignas(64) std::atomic<uint32_t> head;  // bytes written (mod 2^32)
  std::atomic<uint32_t> consumerSleeping;
  std::atomic<uint32_t> restarts;   // restarts published so far
  std::atomic<uint32_t> restartAt;  // where the latest restart begins (a head value)
  std::atomic<uint32_t> syncToken;  // the latest resync's token (0: none)
  std::atomic<uint32_t> syncHead;
  std::atomic<uint32_t> syncRestarts;
  alignas(64) std::atomic<uint32_t> tail;  // bytes consumed
  std::atomic<uint32_t> producerSleeping;
};

struct ShmSegmentHeader {
  uint32_t magic;
  uint32_t fifoBytes;       // power of two
  FifoControl fifo[2];      // [0]: lower rank -> higher rank, [1]: the other way
  SharedCopyWords copy[2];  // blocks both sides copy, per direction as fifo
};

// Segment names begin "/rina-<pid of the creator>-" (or, for a host
// segment, of the rank that owns its name). A process killed between
// creating a segment and its peer mapping it (when the name is removed)
// leaves the name behind; removeStaleSegments, run before every creation,
// removes the names whose pid is no longer alive. (A pid is judged in this
// process's pid namespace: ranks that share /dev/shm across pid namespaces
// should not share it with others' live set-ups.)
void removeStaleSegments();

// An mmap'ed named segment; the name is removed as soon as the peer has
// mapped it (by the peer, mesh.cc), else by the creator when it goes.
class ShmSegment {
 public:
  static Status create(const std::string& name, uint32_t fifoBytes, ShmSegment* out);
  static Status open(const std::string& name, ShmSegment* out);
  ShmSegment() = default;
  ShmSegment(ShmSegment&& o) noexcept;
  ShmSegment& operator=(ShmSegment&& o) noexcept;
  ~ShmSegment();

  ShmSegmentHeader* header() const { return static_cast<ShmSegmentHeader*>(base_); }
  char* data(int fifo) const;
  const std::string& name() const { return name_; }
  void unlink();
  // The name is the peer's to remove (it does once mapped), even after this
  // segment goes: a point-to-point channel's messages must reach a peer
  // that maps it later. A name never mapped goes with the stale ones once
  // this process is gone (removeStaleSegments).
  void leaveNameToPeer() { linked_ = false; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool linked_ = false;
};

// What both kinds of shared-memory connection keep (this one and the
// framed one, shm_frames.h): the pair's segment seen from one side (the
// FIFO it writes, the one it reads, the shared-copy words of each
// direction), the peer's process, and the socket that tells the peer died.
class ShmPairConnection : public Connection {
 public:
  const char* kind() const override { return "shm"; }
  Status checkAlive() override;
  int sharedHostPid() const override { return peerPid_; }
  SharedCopyWords* sharedCopy(Direction d) override {
    return d == Direction::kSend ? outCopy_ : inCopy_;
  }

 protected:
  // lowerSide: this end writes FIFO 0; peerPid: the peer's process id, 0
  // when not known.
  ShmPairConnection(int peer, bool lowerSide, ShmSegment segment, Fd liveness, int peerPid);

  ShmSegment segment_;
  int peerPid_;
  Fd liveness_;
  FifoControl* out_;
  FifoControl* in_;
  SharedCopyWords* outCopy_;
  SharedCopyWords* inCopy_;
  char* outData_;
  char* inData_;
  uint32_t mask_;
};

class ShmConnection : public ShmPairConnection {
 public:
  // lowerSide: this rank is the lower of the pair (sends on fifo 0);
  // peerPid: the peer's process id (sharedHostPid), 0 when not known.
  ShmConnection(int peer, bool lowerSide, ShmSegment segment, Fd liveness, int peerPid = 0)
      : ShmPairConnection(peer, lowerSide, std::move(segment), std::move(liveness), peerPid) {}

  Status trySend(const void* data, size_t len, size_t* moved) override;
  Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) override;
  void endMessage(Direction d) override;
  void armWait(WaitSet& ws, bool send, bool recv) override;
  bool canResync() const override { return true; }
  void beginResync(uint64_t token) override;
  Status pollResync(bool* done) override;
  void armResync(WaitSet& ws) override;

 private:
  uint32_t seenTail_ = 0;  // counters as the last try saw them
  uint32_t seenHead_ = 0;
  bool padSend_ = false;  // align the next message to 64 bytes (or restart)
  bool padRecv_ = false;
  // Producer: restarts published, and whether the latest one may still be
  // ahead of the consumer's tail (until then the bytes it skipped count as
  // consumed: the FIFO was empty). Consumer: restarts taken.
  uint32_t restartsSent_ = 0;
  bool restartPending_ = false;
  uint32_t restartsTaken_ = 0;
  uint32_t resyncToken_ = 0;  // the resync under way; 0: none
};

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_SHM_CONNECTION_H_
