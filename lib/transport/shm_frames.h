// A shared-memory connection whose bytes travel in frames, for the
// point-to-point channels (channel.h). Each send writes one frame into the
// FIFO: a length word, then the bytes, the frame 64-byte aligned and never
// across the FIFO's end. The receiver polls the length word where the next
// frame begins, in the cache line that holds the frame's first bytes, rather
// than a counter the sender rewrites for every frame; the sender reads the
// receiver's progress only when its own copy of it says the FIFO is full.
// A short message and its header (trySendGather) then cost one frame, and
// the two processes move about one cache line each way per message instead
// of the FIFO counters' several.
//
// A frame's length word is 0 until the frame is published: before the
// sender publishes a frame the word where the next one will begin is
// cleared, so the receiver never takes leftover bytes for a frame. The
// sender clears the words of the lines ahead in a batch after publishing,
// so the line the receiver polls is not taken back on every frame. The
// counters (the segment's FifoControl) are still kept: head for the
// receiver to sleep on, tail for the sender to see space.
//
// Once past the first kLapRestartBytes of a lap, at a frame of at most
// 4 KiB that follows another such frame, the sender looks (once a lap)
// whether the receiver has read everything; if so, that frame begins the
// next lap (a word kNextLap where the receiver polls says so). Traffic that
// the receiver keeps up with, such as a ping-pong of short messages, then
// reuses the FIFO's first pages and lines, which stay mapped and in the two
// cores' caches, instead of cycling through all of it (each page's first
// touch faults).
#ifndef RINA_LIB_TRANSPORT_SHM_FRAMES_H_
#define RINA_LIB_TRANSPORT_SHM_FRAMES_H_

#include <cstdint>
#include <utility>

#include "core/socket.h"
#include "transport/connection.h"
#include "transport/shm_connection.h"

namespace rina::transport {

class ShmFrameConnection : public ShmPairConnection {
 public:
  // How far into a lap the sender looks whether it can start the next.
  // Large enough that the tail read it takes (a cache miss) is rare for
  // frames of a few KiB; small enough to stay in the caches.
  static constexpr uint32_t kLapRestartBytes = 8 << 10;

  // lowerSide: this end writes FIFO 0 (a channel's sender); peerPid: the
  // peer's process id (sharedHostPid), 0 when not known.
  ShmFrameConnection(int peer, bool lowerSide, ShmSegment segment, Fd liveness, int peerPid)
      : ShmPairConnection(peer, lowerSide, std::move(segment), std::move(liveness), peerPid) {}

  Status trySend(const void* data, size_t len, size_t* moved) override;
  Status trySendGather(const void* first, size_t firstLen, const void* second, size_t secondLen,
                       size_t* moved) override;
  // Copies only (r.fn must be null: frames may cut an element in two).
  Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) override;
  void armWait(WaitSet& ws, bool send, bool recv) override;

 private:
  uint32_t frameWordAt(uint32_t pos) const;
  // Past kLapRestartBytes into a lap: reads the receiver's tail, and when
  // it has read everything, moves head_ to the next lap (the jump is
  // published with the next frame's head).
  void startLapIfEmpty();
  // Zeroes the word of every line in [from, to) not cleared yet (not the
  // lines of a frame being written: its payload covers them), as far as
  // the receiver has freed the FIFO.
  void clearWords(uint32_t from, uint32_t to);

  // Sender: where the next frame begins, and the receiver's tail as last read.
  uint32_t head_ = 0;
  uint32_t knownTail_ = 0;
  // Every line's word from the next frame up to here is 0 (the sender
  // clears ahead, clearWords).
  uint32_t cleared_ = 0;
  // Where the sender looks next whether it can start a lap.
  uint32_t lapCheckAt_ = kLapRestartBytes;
  // The last frame sent was short enough to start a lap: larger payloads
  // (and the short header just after one) go on round the FIFO, which
  // they crossed faster than lines the receiver had just read.
  bool lastFrameShort_ = true;
  // Receiver: where the current (or next) frame begins, where its unread
  // bytes begin and how many are left.
  uint32_t frameAt_ = 0;
  uint32_t readAt_ = 0;
  uint32_t frameLeft_ = 0;
};

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_SHM_FRAMES_H_
