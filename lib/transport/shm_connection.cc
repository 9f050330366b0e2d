#include "transport/shm_connection.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "transport/socket_connection.h"
#include "transport/wait_set.h"

namespace rina::transport {
namespace {

constexpr uint32_t kShmMagic = 0x52534d32;  // "RSM2": FIFOs restart when empty
constexpr uint32_t kAlign = 64;

size_t headerBytes() { return (sizeof(ShmSegmentHeader) + 4095) & ~size_t{4095}; }

uint32_t roundUp(uint32_t x) { return (x + kAlign - 1) & ~(kAlign - 1); }

}  // namespace

void removeStaleSegments() {
  DIR* dir = opendir("/dev/shm");
  if (!dir) return;
  const pid_t self = getpid();
  while (dirent* e = readdir(dir)) {
    // rina-<pid>-...
    if (std::strncmp(e->d_name, "rina-", 5) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(e->d_name + 5, &end, 10);
    if (end == e->d_name + 5 || *end != '-' || pid <= 0 || pid == self) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string name = std::string("/") + e->d_name;
    if (shm_unlink(name.c_str()) == 0) {
      RINA_INFO("removed the shared-memory segment %s of process %ld, which is gone", name.c_str(),
                pid);
    }
  }
  closedir(dir);
}

Status ShmSegment::create(const std::string& name, uint32_t fifoBytes, ShmSegment* out) {
  removeStaleSegments();
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return systemErrorf(errno, "shm_open(%s)", name.c_str());
  Fd owner(fd);
  ShmSegment seg;
  seg.name_ = name;
  seg.linked_ = true;
  seg.size_ = headerBytes() + 2 * static_cast<size_t>(fifoBytes);
  if (ftruncate(fd, static_cast<off_t>(seg.size_)) != 0) {
    int err = errno;
    shm_unlink(name.c_str());
    return systemErrorf(err, "ftruncate(%s, %zu) (is /dev/shm full?)", name.c_str(), seg.size_);
  }
  seg.base_ = mmap(nullptr, seg.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (seg.base_ == MAP_FAILED) {
    seg.base_ = nullptr;
    return systemErrorf(errno, "mmap(%s)", name.c_str());
  }
  ShmSegmentHeader* h = seg.header();
  h->fifoBytes = fifoBytes;
  for (auto& f : h->fifo) {
    f.head = 0;
    f.tail = 0;
    f.consumerSleeping = 0;
    f.producerSleeping = 0;
    f.restarts = 0;
    f.restartAt = 0;
    f.syncToken = 0;
    f.syncHead = 0;
    f.syncRestarts = 0;
  }
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kShmMagic;
  *out = std::move(seg);
  return {};
}

Status ShmSegment::open(const std::string& name, ShmSegment* out) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return systemErrorf(errno, "shm_open(%s)", name.c_str());
  Fd owner(fd);
  struct stat st {};
  if (fstat(fd, &st) != 0) return systemErrorf(errno, "fstat(%s)", name.c_str());
  ShmSegment seg;
  seg.name_ = name;
  seg.size_ = static_cast<size_t>(st.st_size);
  if (seg.size_ < headerBytes()) return errorf(rinaInternalError, "%s is too small", name.c_str());
  seg.base_ = mmap(nullptr, seg.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (seg.base_ == MAP_FAILED) {
    seg.base_ = nullptr;
    return systemErrorf(errno, "mmap(%s)", name.c_str());
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (seg.header()->magic != kShmMagic ||
      headerBytes() + 2 * static_cast<size_t>(seg.header()->fifoBytes) != seg.size_) {
    return errorf(rinaInternalError, "%s is not a rina segment", name.c_str());
  }
  *out = std::move(seg);
  return {};
}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    this->~ShmSegment();
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    name_ = std::move(o.name_);
    linked_ = std::exchange(o.linked_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  unlink();
  if (base_) munmap(base_, size_);
  base_ = nullptr;
}

char* ShmSegment::data(int fifo) const {
  return static_cast<char*>(base_) + headerBytes() +
         static_cast<size_t>(fifo) * header()->fifoBytes;
}

void ShmSegment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

ShmPairConnection::ShmPairConnection(int peer, bool lowerSide, ShmSegment segment, Fd liveness,
                                     int peerPid)
    : Connection(peer),
      segment_(std::move(segment)),
      peerPid_(peerPid),
      liveness_(std::move(liveness)) {
  ShmSegmentHeader* h = segment_.header();
  int outIdx = lowerSide ? 0 : 1;
  out_ = &h->fifo[outIdx];
  in_ = &h->fifo[1 - outIdx];
  outCopy_ = &h->copy[outIdx];
  inCopy_ = &h->copy[1 - outIdx];
  outData_ = segment_.data(outIdx);
  inData_ = segment_.data(1 - outIdx);
  mask_ = h->fifoBytes - 1;
}

Status ShmConnection::trySend(const void* data, size_t len, size_t* moved) {
  *moved = 0;
  uint32_t head = out_->head.load(std::memory_order_relaxed);
  uint32_t tail = out_->tail.load(std::memory_order_acquire);
  seenTail_ = tail;
  uint32_t cap = mask_ + 1;
  if (restartPending_) {
    // The consumer has not reached the restart yet; what it will skip was
    // empty space, so the FIFO is free from the restart on.
    const uint32_t at = out_->restartAt.load(std::memory_order_relaxed);
    if (static_cast<int32_t>(tail - at) >= 0) {
      restartPending_ = false;
    } else {
      tail = at;
    }
  }
  if (padSend_) {
    if (tail == head && (head & mask_) != 0) {
      // Empty: begin again at the start of the FIFO. The consumer learns of
      // it from restarts, published before head moves past the old end.
      head += cap - (head & mask_);
      out_->restartAt.store(head, std::memory_order_relaxed);
      out_->restarts.store(++restartsSent_, std::memory_order_release);
      restartPending_ = true;
      tail = head;
    } else {
      uint32_t padded = roundUp(head);
      if (cap - (head - tail) < padded - head) return {};
      head = padded;
    }
    padSend_ = false;
    out_->head.store(head);  // nothing to wake for: padding carries no data
  }
  size_t n = std::min<size_t>(len, cap - (head - tail));
  if (n == 0) return {};
  uint32_t off = head & mask_;
  size_t first = std::min<size_t>(n, cap - off);
  reduce::copyBytes(outData_ + off, data, first);
  if (n > first) reduce::copyBytes(outData_, static_cast<const char*>(data) + first, n - first);
  out_->head.store(head + static_cast<uint32_t>(n));  // seq_cst: pairs with the sleep flag
  if (out_->consumerSleeping.load()) futexWake(&out_->head);
  *moved = n;
  return {};
}

Status ShmConnection::tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) {
  *moved = 0;
  uint32_t tail = in_->tail.load(std::memory_order_relaxed);
  uint32_t head = in_->head.load(std::memory_order_acquire);
  seenHead_ = head;
  uint32_t cap = mask_ + 1;
  if (padRecv_) {
    // The producer decides where the next message starts (aligned, or at
    // the FIFO's beginning) before head moves past the previous one's end.
    if (head == tail) return {};
    uint32_t start = roundUp(tail);
    const uint32_t restarts = in_->restarts.load(std::memory_order_acquire);
    if (restarts != restartsTaken_) {
      // At most one is outstanding: the producer restarts only when the
      // FIFO is empty, so never before this message's bytes are taken.
      start = in_->restartAt.load(std::memory_order_relaxed);
      restartsTaken_ = restarts;
    }
    if (head - tail < start - tail) return {};
    tail = start;
    padRecv_ = false;
  }
  size_t n = std::min<size_t>(len, head - tail);
  if (r.fn) n -= n % r.elemSize;
  if (n == 0) {
    in_->tail.store(tail);
    return {};
  }
  uint32_t off = tail & mask_;
  size_t first = std::min<size_t>(n, cap - off);
  char* out = static_cast<char*>(dst);
  if (!r.fn) {
    reduce::copyBytes(out, inData_ + off, first);
    if (n > first) reduce::copyBytes(out + first, inData_, n - first);
  } else {
    // Messages start 64-byte aligned and the capacity is a power of two, so
    // an element never straddles the wrap (elemSize divides both).
    const char* a = static_cast<const char*>(r.a);
    r.fn(out, a, inData_ + off, first / r.elemSize);
    if (n > first) r.fn(out + first, a + first, inData_, (n - first) / r.elemSize);
  }
  in_->tail.store(tail + static_cast<uint32_t>(n));
  if (in_->producerSleeping.load()) futexWake(&in_->tail);
  *moved = n;
  return {};
}

void ShmConnection::endMessage(Direction d) {
  if (d == Direction::kSend)
    padSend_ = true;
  else
    padRecv_ = true;
}

void ShmConnection::armWait(WaitSet& ws, bool send, bool recv) {
  // Wait for a change from what the last try saw, so nothing that arrived
  // in between is slept through.
  if (send) ws.addFutex(&out_->tail, seenTail_, &out_->producerSleeping);
  if (recv) ws.addFutex(&in_->head, seenHead_, &in_->consumerSleeping);
  // A peer that dies never moves the counters: its end of the liveness
  // socket closing ends the wait instead.
  ws.addFd(liveness_.get(), POLLRDHUP);
}

namespace {

// A resync's token as the 32-bit word it is published under; never 0.
uint32_t syncWord(uint64_t token) {
  const uint32_t w = static_cast<uint32_t>(token ^ (token >> 32));
  return w ? w : 1;
}

}  // namespace

void ShmConnection::beginResync(uint64_t token) {
  // The new stream starts where this end's writes stopped, at a message
  // boundary as always (padSend_); the consumer jumps there.
  resyncToken_ = syncWord(token);
  padSend_ = true;
  out_->syncHead.store(out_->head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  out_->syncRestarts.store(restartsSent_, std::memory_order_relaxed);
  out_->syncToken.store(resyncToken_);  // seq_cst: pairs with the sleep flag
  if (out_->consumerSleeping.load()) futexWake(&out_->syncToken);
}

Status ShmConnection::pollResync(bool* done) {
  *done = false;
  if (in_->syncToken.load(std::memory_order_acquire) != resyncToken_) return checkAlive();
  const uint32_t tail = in_->syncHead.load(std::memory_order_relaxed);
  restartsTaken_ = in_->syncRestarts.load(std::memory_order_relaxed);
  padRecv_ = true;
  seenHead_ = in_->head.load(std::memory_order_acquire);
  in_->tail.store(tail);
  if (in_->producerSleeping.load()) futexWake(&in_->tail);
  *done = true;
  return {};
}

void ShmConnection::armResync(WaitSet& ws) {
  ws.addFutex(&in_->syncToken, in_->syncToken.load(), &in_->consumerSleeping);
}

Status ShmPairConnection::checkAlive() { return checkSocketAlive(liveness_.get(), peer()); }

}  // namespace rina::transport
