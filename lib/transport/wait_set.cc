#include "transport/wait_set.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace rina::transport {
namespace {

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX2_SIZE_U32
#define FUTEX2_SIZE_U32 0x02
#endif

struct FutexWaitv {  // struct futex_waitv (Linux 5.16+)
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};

std::atomic<bool> waitvMissing{false};

timespec monotonicAfter(int ms) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += static_cast<long>(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec += 1;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

}  // namespace

void futexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void WaitSet::clear() {
  fds_.clear();
  futexes_.clear();
}

void WaitSet::addFd(int fd, short events) { fds_.push_back(pollfd{fd, events, 0}); }

void WaitSet::addFutex(std::atomic<uint32_t>* word, uint32_t expected,
                       std::atomic<uint32_t>* sleeping) {
  futexes_.push_back(FutexEntry{word, expected, sleeping});
}

void WaitSet::waitFutexes(int timeoutMs) {
  for (auto& f : futexes_) f.sleeping->store(1);
  // Re-check after raising the flags (the other side stores then loads the
  // flag; seq_cst on both sides means one of us sees the other).
  bool changed = false;
  for (auto& f : futexes_) changed |= f.word->load() != f.expected;
  if (!changed) {
    if (!waitvMissing.load(std::memory_order_relaxed) && futexes_.size() <= 128) {
      FutexWaitv v[128];
      for (size_t i = 0; i < futexes_.size(); ++i) {
        v[i] = FutexWaitv{futexes_[i].expected, reinterpret_cast<uint64_t>(futexes_[i].word),
                          FUTEX2_SIZE_U32, 0};
      }
      timespec deadline = monotonicAfter(timeoutMs);
      long rc = syscall(SYS_futex_waitv, v, static_cast<unsigned>(futexes_.size()), 0, &deadline,
                        CLOCK_MONOTONIC);
      if (rc < 0 && errno == ENOSYS) waitvMissing = true;
    }
    if (waitvMissing.load(std::memory_order_relaxed)) {
      // Older kernels: wait on the first word, in short slices for the rest.
      int slice = futexes_.size() == 1 ? timeoutMs : std::min(timeoutMs, 1);
      timespec rel{slice / 1000, static_cast<long>(slice % 1000) * 1000000L};
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(futexes_[0].word), FUTEX_WAIT,
              futexes_[0].expected, &rel, nullptr, 0);
    }
  }
  for (auto& f : futexes_) f.sleeping->store(0);
}

void WaitSet::wait(int timeoutMs) {
  if (timeoutMs < 0) timeoutMs = 0;
  if (futexes_.empty()) {
    if (!fds_.empty()) poll(fds_.data(), fds_.size(), timeoutMs);
    return;
  }
  if (fds_.empty()) {
    waitFutexes(timeoutMs);
    return;
  }
  // Both kinds: look at the sockets, then nap on the futexes briefly.
  if (poll(fds_.data(), fds_.size(), 0) > 0) return;
  waitFutexes(std::min(timeoutMs, 1));
}

}  // namespace rina::transport
