#include "transport/cma.h"

#include <sys/uio.h>

#include <cerrno>

#include "transport/wait_set.h"

namespace rina::transport {
namespace {

// One process_vm_readv / writev of len bytes, resumed where the kernel
// stopped (it may copy less than asked: at a page it cannot reach, or early
// for a large request).
Status copyProcessMemory(bool write, int pid, char* local, uint64_t remote, size_t len) {
  size_t done = 0;
  for (int tries = 0; done < len; ++tries) {
    iovec mine{local + done, len - done};
    iovec theirs{reinterpret_cast<void*>(static_cast<uintptr_t>(remote + done)), len - done};
    const ssize_t n = write ? process_vm_writev(pid, &mine, 1, &theirs, 1, 0)
                            : process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n < 0 && errno == EINTR && tries < 100) continue;
    if (n <= 0) {
      return systemErrorf(
          n < 0 ? errno : EFAULT, "%s of %zu bytes %s 0x%llx %s process %d (%zu done)",
          write ? "process_vm_writev" : "process_vm_readv", len, write ? "to" : "at",
          static_cast<unsigned long long>(remote), write ? "of" : "from", pid, done);
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

uint64_t ticketOf(uint64_t job, uint32_t claimed) { return (job << 32) | claimed; }

// Takes the next chunk of plan's job: false when none is left (or the words
// have moved on to another job).
bool claimChunk(SharedCopyWords& w, const SharedCopyPlan& plan, uint32_t* k) {
  const uint64_t job = plan.job & 0xffffffffu;
  uint64_t t = w.ticket.load(std::memory_order_relaxed);
  for (;;) {
    if ((t >> 32) != job || static_cast<uint32_t>(t) >= plan.chunks()) return false;
    if (w.ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) {
      *k = static_cast<uint32_t>(t);
      return true;
    }
  }
}

void chunkDone(SharedCopyWords& w) {
  w.done.fetch_add(1);  // seq_cst: pairs with the reader's sleeping flag
  if (w.sleeping.load()) futexWake(&w.done);
}

}  // namespace

Status readProcessMemory(int pid, uint64_t from, void* dst, size_t len) {
  return copyProcessMemory(false, pid, static_cast<char*>(dst), from, len);
}

Status writeProcessMemory(int pid, const void* src, uint64_t to, size_t len) {
  return copyProcessMemory(true, pid, const_cast<char*>(static_cast<const char*>(src)), to, len);
}

void openSharedCopy(SharedCopyWords& w, const SharedCopyPlan& plan) {
  w.failed.store(0, std::memory_order_relaxed);
  w.done.store(0, std::memory_order_relaxed);
  w.ticket.store(ticketOf(plan.job & 0xffffffffu, 0), std::memory_order_release);
}

Status readSharedChunks(SharedCopyWords& w, const SharedCopyPlan& plan, int pid, uint64_t src,
                        char* dst) {
  uint32_t k = 0;
  while (claimChunk(w, plan, &k)) {
    RINA_TRY(readProcessMemory(pid, src + plan.offset(k), dst + plan.offset(k), plan.size(k)));
    chunkDone(w);
  }
  return {};
}

void writeSharedChunks(SharedCopyWords& w, const SharedCopyPlan& plan, const char* src, int pid,
                       uint64_t dst) {
  uint32_t k = 0;
  while (claimChunk(w, plan, &k)) {
    if (!writeProcessMemory(pid, src + plan.offset(k), dst + plan.offset(k), plan.size(k)).ok()) {
      // Settled, but by the reader: it reads the chunk once it sees `failed`.
      w.failed.store(k + 1);
      chunkDone(w);
      return;
    }
    chunkDone(w);
  }
}

Status sharedCopyFinished(SharedCopyWords& w, const SharedCopyPlan& plan, int pid, uint64_t src,
                          char* dst, bool* finished) {
  // done first: a chunk given up is marked failed before it counts as done.
  *finished = w.done.load(std::memory_order_acquire) == plan.chunks();
  const uint32_t failed = w.failed.load(std::memory_order_acquire);
  if (failed != 0) {
    const uint32_t k = failed - 1;
    w.failed.store(0, std::memory_order_relaxed);
    RINA_TRY(readProcessMemory(pid, src + plan.offset(k), dst + plan.offset(k), plan.size(k)));
  }
  return {};
}

}  // namespace rina::transport
