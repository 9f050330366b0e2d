// Copying straight between the memory of two processes of one host
// (cross-memory attach, process_vm_readv / process_vm_writev): a block
// between two ranks then moves in one copy instead of two (into and out of a
// FIFO). The peer names the address; the copier checks nothing beyond what
// the kernel checks, so it is used only on connections whose peer is a rank
// of the same communicator on this host (Connection::sharedHostPid).
//
// A large block can be copied by both processes at once (SharedCopyWords):
// the receiving side publishes a job, and each side claims the next chunk
// until none is left, the receiver reading out of the sender's buffer and
// the sender writing into the receiver's. So the copy runs on two cores when
// both are free and on one when the other process is not running.
#ifndef RINA_LIB_TRANSPORT_CMA_H_
#define RINA_LIB_TRANSPORT_CMA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace rina::transport {

// Copies len bytes at address `from` in process pid into dst. An error
// (rinaSystemError) names the pid and errno; a kernel or container that
// forbids it (EPERM, ENOSYS) is reported the same way, and callers fall back
// to streaming.
Status readProcessMemory(int pid, uint64_t from, void* dst, size_t len);
// Copies len bytes at src into address `to` of process pid; errors as above.
Status writeProcessMemory(int pid, const void* src, uint64_t to, size_t len);

// The words of one shared copy, in memory both processes map (a pair's
// segment, shm_connection.h), per direction of the pair.
struct SharedCopyWords {
  // The job's low 32 bits (high half) and the chunks handed out of it (low
  // half), so a claim can never take a chunk of a later job.
  alignas(64) std::atomic<uint64_t> ticket;
  std::atomic<uint32_t> failed;  // 1 + a chunk the writer claimed and could not copy
  alignas(
      64) std::atomic<uint32_t> done;  // chunks settled (copied or failed): the reader waits on it
  std::atomic<uint32_t> sleeping;      // raised while the reader sleeps on `done`
};

// One block of `bytes` that both sides copy from byte `from` on (what lies
// before it the reader copied alone), in chunks of `chunk` bytes.
struct SharedCopyPlan {
  uint64_t job = 0;
  size_t from = 0;
  size_t bytes = 0;
  size_t chunk = 1;
  uint32_t chunks() const { return static_cast<uint32_t>((bytes - from + chunk - 1) / chunk); }
  size_t offset(uint32_t k) const { return from + static_cast<size_t>(k) * chunk; }
  size_t size(uint32_t k) const {
    const size_t at = offset(k);
    return bytes - at < chunk ? bytes - at : chunk;
  }
};

// The reader opens job plan.job on w (before telling the writer about it).
void openSharedCopy(SharedCopyWords& w, const SharedCopyPlan& plan);
// The reader: claims chunks and reads each out of process pid (its block at
// `src`) into dst, until none is left. Then it waits (sharedCopyFinished)
// for the writer's chunks.
Status readSharedChunks(SharedCopyWords& w, const SharedCopyPlan& plan, int pid, uint64_t src,
                        char* dst);
// The writer: claims chunks of job plan.job (none if the reader has moved
// on) and writes each from src into process pid (the block at `dst`), until
// none is left. A chunk the kernel refuses is left to the reader (failed)
// and the writer stops helping; that is no error.
void writeSharedChunks(SharedCopyWords& w, const SharedCopyPlan& plan, const char* src, int pid,
                       uint64_t dst);
// The reader, after readSharedChunks: *finished once every chunk is in. A
// chunk the writer gave up is read here (an error if that fails too).
Status sharedCopyFinished(SharedCopyWords& w, const SharedCopyPlan& plan, int pid, uint64_t src,
                          char* dst, bool* finished);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_CMA_H_
