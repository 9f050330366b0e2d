#include "transport/verbs/mr_cache.h"

#include <algorithm>
#include <utility>

namespace rina::transport::verbs {

MrCache::MrCache(size_t maxEntries, size_t maxBytes, RegisterFn reg, DeregisterFn dereg)
    : maxEntries_(std::max<size_t>(maxEntries, 1)),
      maxBytes_(maxBytes),
      register_(std::move(reg)),
      deregister_(std::move(dereg)) {}

MrCache::~MrCache() {
  for (Entry& e : entries_) deregister_(e.region.keys);
}

void MrCache::drop(std::list<Entry>::iterator it) {
  bytes_ -= it->region.end - it->region.begin;
  deregister_(it->region.keys);
  entries_.erase(it);
}

Status MrCache::acquire(const void* addr, size_t len, MrRegion* out) {
  const auto begin = reinterpret_cast<uintptr_t>(addr);
  if (len == 0 || begin + len < begin) {
    return errorf(rinaInvalidArgument, "memory registration of %zu bytes at %p: empty or wraps",
                  len, addr);
  }
  uintptr_t end = begin + len;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (!it->stale && it->region.begin <= begin && end <= it->region.end) {
      ++hits_;
      ++it->pins;
      entries_.splice(entries_.begin(), entries_, it);  // now most recent
      *out = entries_.front().region;
      return {};
    }
  }
  ++misses_;
  // Grow over overlapping, unpinned entries so they merge into one.
  uintptr_t lo = begin, hi = end;
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    bool overlaps = it->region.begin < hi && lo < it->region.end;
    if (overlaps && it->pins == 0 && !it->stale) {
      lo = std::min(lo, it->region.begin);
      hi = std::max(hi, it->region.end);
      drop(it);
    }
    it = next;
  }
  Entry e;
  e.region.begin = lo;
  e.region.end = hi;
  Status s = register_(lo, hi - lo, &e.region.keys);
  if (!s.ok()) return s;
  e.region.id = nextId_++;
  e.pins = 1;
  entries_.push_front(e);
  bytes_ += hi - lo;
  *out = e.region;
  evict();
  return {};
}

Status MrCache::release(uint64_t id) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->region.id != id) continue;
    if (it->pins == 0) {
      return errorf(rinaInternalError, "memory registration %llu released more often than acquired",
                    static_cast<unsigned long long>(id));
    }
    if (--it->pins == 0 && it->stale) drop(it);
    evict();
    return {};
  }
  return errorf(rinaInternalError, "memory registration %llu is not in the cache",
                static_cast<unsigned long long>(id));
}

void MrCache::invalidate(const void* addr, size_t len) {
  const auto begin = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t end = begin + len;
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (it->region.begin < end && begin < it->region.end) {
      if (it->pins == 0) {
        drop(it);
      } else {
        it->stale = true;
      }
    }
    it = next;
  }
}

void MrCache::evict() {
  // From the least recently used end; pinned entries stay even over budget.
  auto it = entries_.end();
  while (it != entries_.begin() && (entries_.size() > maxEntries_ || bytes_ > maxBytes_)) {
    --it;
    if (it->pins == 0) {
      auto victim = it;
      it = std::next(it);
      drop(victim);
      ++evictions_;
    }
  }
}

}  // namespace rina::transport::verbs
