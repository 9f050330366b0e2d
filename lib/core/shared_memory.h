// Host memory that the ranks of one host can read from each other
// (rinaMemAlloc): each allocation is a memfd of its own, mapped shared, so a
// peer on the host opens it through /proc/<pid>/fd/<fd> and maps it too. An
// all-to-all whose send buffer lies in one is copied once, from the
// sender's buffer straight into each receiver's (algo/flat/slot_exchange.cc).
//
// An allocation is named by a serial unique in its process for the
// process's life: fd numbers and inode numbers are reused after a free,
// serials never, so a peer identifies what it opened by the serial in the
// memfd's name and a mapping cached by (rank, pid, serial) is never that of
// a later allocation.
#ifndef RINA_LIB_CORE_SHARED_MEMORY_H_
#define RINA_LIB_CORE_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace rina {

// Where a range of memory lies in an allocation of this process.
struct SharedMemoryRange {
  int fd = -1;
  uint64_t serial = 0;
  size_t offset = 0;  // of the range's first byte in the allocation
  size_t size = 0;    // of the allocation
};

// A new allocation of `size` bytes (> 0), zero-filled.
Status allocateSharedMemory(size_t size, void** ptr);
// Frees an allocation by its first byte; rinaInvalidUsage for any other
// pointer (not from allocateSharedMemory, or already freed).
Status freeSharedMemory(void* ptr);
// Whether [p, p + len) lies wholly inside one allocation (len 0: p inside
// one); *out says where.
bool findSharedMemory(const void* p, size_t len, SharedMemoryRange* out);

// What a peer says about its allocation: untrusted until checked.
struct PeerAllocation {
  int pid = 0;
  int fd = -1;
  uint64_t serial = 0;
};

// The peers' allocations this rank has mapped read-only, at most perPeer
// per peer (the least recently used goes first); unmapped on destruction.
class PeerMappings {
 public:
  explicit PeerMappings(size_t perPeer = 8) : perPeer_(perPeer) {}
  ~PeerMappings();
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // *at = bytes [offset, offset + bytes) of peer rank `peer`'s allocation
  // a, mapped (once) here. An allocation that does not answer to a.serial
  // or is too small is rinaRemoteError naming the peer; one this process
  // may not open or map (a container without /proc/<pid>/fd) is
  // rinaSystemError with the pid and errno, for the caller to fall back.
  Status map(int rank, int peer, const PeerAllocation& a, size_t offset, size_t bytes,
             const char** at);
  // The mappings held (tests).
  size_t size() const { return maps_.size(); }
  // Unmaps all (the ranks were renumbered: a rank may be another process).
  void clear();
  // Where the peers' /proc is (tests: a folder without it plays a process
  // that may not open its peers' memory).
  void setProcRoot(std::string root) { procRoot_ = std::move(root); }

 private:
  struct Mapping {
    int peer;
    int pid;
    uint64_t serial;
    char* base;
    size_t size;
    uint64_t used;  // clock_ at its last use
  };
  Status open(int rank, int peer, const PeerAllocation& a, Mapping* m);
  void evictOne(int peer);

  size_t perPeer_;
  std::string procRoot_ = "/proc";
  uint64_t clock_ = 0;
  std::vector<Mapping> maps_;
};

}  // namespace rina

#endif  // RINA_LIB_CORE_SHARED_MEMORY_H_
