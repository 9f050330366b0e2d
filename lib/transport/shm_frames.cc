#include "transport/shm_frames.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "transport/wait_set.h"

namespace rina::transport {
namespace {

constexpr uint32_t kLine = 64;
constexpr uint32_t kPrefix = 8;  // the length word and 4 bytes that keep the bytes 8-aligned
// How far ahead of the next frame the sender keeps the lines' words cleared.
constexpr uint32_t kClearAhead = 4096;
// How much of a frame the receiver prefetches once it sees the frame.
constexpr uint32_t kPrefetchBytes = 1024;
// Only frames up to this size, after another one, start laps early:
// larger ones (from 4 KiB payloads) copied faster through lines the
// receiver no longer holds.
constexpr uint32_t kLapRestartFrameBytes = 4096;
// After the jump the free space is what the lap used (the receiver's tail
// is then a lap behind): the frame and the next one's word fit in it.
static_assert(kLapRestartFrameBytes + kLine <= ShmFrameConnection::kLapRestartBytes);
// A frame word that says the next frame begins the FIFO's next lap (at
// offset 0); no frame is that long.
constexpr uint32_t kNextLap = 0xffffffffu;

uint32_t roundUp(uint32_t x) { return (x + kLine - 1) & ~(kLine - 1); }

std::atomic_ref<uint32_t> wordAt(char* data, uint32_t offset) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(data + offset));
}

}  // namespace

Status ShmFrameConnection::trySend(const void* data, size_t len, size_t* moved) {
  return trySendGather(data, len, nullptr, 0, moved);
}

Status ShmFrameConnection::trySendGather(const void* first, size_t firstLen, const void* second,
                                         size_t secondLen, size_t* moved) {
  *moved = 0;
  const size_t want = firstLen + secondLen;
  if (want == 0) return {};
  const uint32_t cap = mask_ + 1;
  const uint32_t whole = roundUp(static_cast<uint32_t>(std::min<size_t>(want + kPrefix, cap)));
  const bool isShort = whole <= kLapRestartFrameBytes;
  if (isShort && lastFrameShort_ && mask_ >= 2 * kLapRestartBytes &&
      static_cast<int32_t>(head_ - lapCheckAt_) >= 0) {
    startLapIfEmpty();
  }
  lastFrameShort_ = isShort;
  const uint32_t off = head_ & mask_;
  // The frame, not past the FIFO's end, and one line after it for the next
  // frame's word, which is cleared first.
  const uint32_t wantSpan = std::min<uint32_t>(cap - off, whole);
  uint32_t free = cap - (head_ - knownTail_);
  if (free < wantSpan + kLine) {
    knownTail_ = out_->tail.load(std::memory_order_acquire);
    free = cap - (head_ - knownTail_);
    if (free < 2 * kLine) return {};
  }
  const uint32_t span = std::min(wantSpan, (free - kLine) & ~(kLine - 1));
  const size_t n = std::min<size_t>(want, span - kPrefix);
  // The next frame's word is 0 before this one is published; usually the
  // clearing after the last frame got there first.
  if (static_cast<int32_t>(cleared_ - (head_ + span)) <= 0)
    clearWords(head_ + span, head_ + span + kLine);
  char* at = outData_ + off + kPrefix;
  const size_t a = std::min(n, firstLen);
  if (a > 0) reduce::copyBytes(at, first, a);
  if (n > a) reduce::copyBytes(at + a, second, n - a);
  wordAt(outData_, off).store(static_cast<uint32_t>(n), std::memory_order_release);
  head_ += span;
  out_->head.store(head_);  // seq_cst: pairs with the receiver's sleeping flag
  if (out_->consumerSleeping.load()) futexWake(&out_->head);
  *moved = n;
  // Clearing ahead, after the publication: taking a line back from the
  // receiver's cache (it polled the word there) is then off the next
  // frame's path, once per kClearAhead bytes instead of once per frame.
  if (static_cast<int32_t>(cleared_ - head_) < static_cast<int32_t>(kClearAhead / 2)) {
    clearWords(head_, head_ + kClearAhead);
  }
  return {};
}

void ShmFrameConnection::startLapIfEmpty() {
  const uint32_t off = head_ & mask_;
  const uint32_t lapStart = head_ - off;
  if (off < kLapRestartBytes) {  // a frame ended at the FIFO's end: a lap begins anyway
    lapCheckAt_ = lapStart + kLapRestartBytes;
    return;
  }
  const uint32_t next = lapStart + mask_ + 1;
  knownTail_ = out_->tail.load(std::memory_order_acquire);
  lapCheckAt_ = next + kLapRestartBytes;
  if (knownTail_ != head_) return;  // the receiver is behind: go on round the FIFO
  // Everything sent was read: the lines from the FIFO's start are free.
  // The first one's word is cleared before the jump is published (the
  // receiver polls it next); the rest after the frame, as usual.
  cleared_ = next;
  clearWords(next, next + kLine);
  wordAt(outData_, head_ & mask_).store(kNextLap, std::memory_order_release);
  head_ = next;  // published with the frame that follows
}

void ShmFrameConnection::clearWords(uint32_t from, uint32_t to) {
  // Only where the receiver is done (its tail as last read): a frame it
  // still reads keeps its words. Every line's, since any line may begin a
  // frame; those of frames written later are overwritten then.
  const uint32_t freeEnd = knownTail_ + mask_ + 1;
  if (static_cast<int32_t>(to - freeEnd) > 0) to = freeEnd;
  uint32_t pos = static_cast<int32_t>(cleared_ - from) > 0 ? cleared_ : from;
  for (; static_cast<int32_t>(to - pos) > 0; pos += kLine) {
    wordAt(outData_, pos & mask_).store(0, std::memory_order_relaxed);
  }
  cleared_ = pos;
}

uint32_t ShmFrameConnection::frameWordAt(uint32_t pos) const {
  return wordAt(inData_, pos & mask_).load(std::memory_order_acquire);
}

Status ShmFrameConnection::tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) {
  *moved = 0;
  if (r.fn) {
    return errorf(rinaInternalError, "a frame connection to rank %d cannot reduce on receive",
                  peer());
  }
  char* out = static_cast<char*>(dst);
  size_t got = 0;
  while (got < len) {
    if (frameLeft_ == 0) {
      uint32_t n = frameWordAt(frameAt_);
      if (n == kNextLap) {
        frameAt_ = (frameAt_ & ~mask_) + mask_ + 1;
        n = frameWordAt(frameAt_);
      }
      if (n == 0) break;
      if (n > mask_ + 1 - (frameAt_ & mask_) - kPrefix) {
        return errorf(rinaRemoteError,
                      "rank %d sent a frame of %u bytes at FIFO offset %u (of %u): corrupt", peer(),
                      n, frameAt_ & mask_, mask_ + 1);
      }
      frameLeft_ = n;
      readAt_ = frameAt_ + kPrefix;
      // The frame's next lines are asked for now, while its first bytes
      // (a message's header) are looked at, not one miss after another.
      const char* frame = inData_ + (frameAt_ & mask_);
      for (uint32_t line = kLine; line < std::min(kPrefix + n, kPrefetchBytes); line += kLine) {
        __builtin_prefetch(frame + line);
      }
    }
    const size_t take = std::min<size_t>(len - got, frameLeft_);
    reduce::copyBytes(out + got, inData_ + (readAt_ & mask_), take);
    got += take;
    readAt_ += static_cast<uint32_t>(take);
    frameLeft_ -= static_cast<uint32_t>(take);
    if (frameLeft_ == 0) frameAt_ = roundUp(readAt_ - frameAt_) + frameAt_;
  }
  *moved = got;
  // The space comes back a frame at a time (a header read alone leaves its
  // payload's frame unfinished: one store per message, not two). A sender
  // waiting for space waits at most for the rest of one frame, which is
  // all written.
  if (got == 0 || frameLeft_ != 0) return {};
  in_->tail.store(frameAt_);  // seq_cst: pairs with the sleeping flag
  if (in_->producerSleeping.load()) futexWake(&in_->tail);
  return {};
}

void ShmFrameConnection::armWait(WaitSet& ws, bool send, bool recv) {
  if (send) ws.addFutex(&out_->tail, knownTail_, &out_->producerSleeping);
  if (recv) {
    // head before the word: a frame published after this look moves head
    // past `seen`, so the wait cannot sleep through it.
    const uint32_t seen = in_->head.load();
    const bool waiting = frameLeft_ == 0 && frameWordAt(frameAt_) == 0;
    ws.addFutex(&in_->head, waiting ? seen : seen + 1, &in_->consumerSleeping);
  }
}

}  // namespace rina::transport
