// A cache of memory registrations, as pure bookkeeping: which registered
// ranges exist, which one covers an address range, which to evict. The ibv
// calls sit behind two callbacks, so this logic is unit-tested without an
// RDMA device.
//
// Rules: a lookup hits a registration that contains the whole range; a range
// that only overlaps unpinned registrations replaces them with one covering
// the union (so repeated growing buffers do not pile up registrations);
// entries in use (pinned) are never evicted or deregistered; beyond
// maxEntries / maxBytes the least recently used unpinned entries go first;
// invalidate() (the user freed memory) drops every entry overlapping a range,
// deferring pinned ones to their last release.
#ifndef RINA_LIB_TRANSPORT_VERBS_MR_CACHE_H_
#define RINA_LIB_TRANSPORT_VERBS_MR_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>

#include "core/status.h"

namespace rina::transport::verbs {

struct MrKeys {
  uint64_t handle = 0;  // the ibv_mr* (opaque here)
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct MrRegion {
  uintptr_t begin = 0;
  uintptr_t end = 0;  // exclusive
  MrKeys keys;
  uint64_t id = 0;  // returned by acquire, given back to release
};

class MrCache {
 public:
  using RegisterFn = std::function<Status(uintptr_t begin, size_t len, MrKeys* out)>;
  using DeregisterFn = std::function<void(const MrKeys&)>;

  MrCache(size_t maxEntries, size_t maxBytes, RegisterFn reg, DeregisterFn dereg);
  ~MrCache();  // deregisters everything left
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A registration containing [addr, addr+len), pinned until release(id).
  Status acquire(const void* addr, size_t len, MrRegion* out);
  // Unpins; an invalidated entry is deregistered on its last release.
  Status release(uint64_t id);
  // The memory [addr, addr+len) is going away: drop what overlaps it.
  void invalidate(const void* addr, size_t len);

  size_t entries() const { return entries_.size(); }
  size_t bytes() const { return bytes_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  // Unpinned entries deregistered to stay within maxEntries / maxBytes.
  uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    MrRegion region;
    int pins = 0;
    bool stale = false;  // invalidated while pinned
  };
  void drop(std::list<Entry>::iterator it);
  void evict();

  size_t maxEntries_;
  size_t maxBytes_;
  RegisterFn register_;
  DeregisterFn deregister_;
  std::list<Entry> entries_;  // most recently used first
  size_t bytes_ = 0;
  uint64_t nextId_ = 1;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_MR_CACHE_H_
