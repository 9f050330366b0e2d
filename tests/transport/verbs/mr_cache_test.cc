// MrCache: hits by containment, merging of overlaps, LRU eviction, pins and
// invalidation, against a fake registrar that records what is registered.
#include "transport/verbs/mr_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace rina::transport::verbs {
namespace {

// The "device": registered ranges by handle; a test inspects it directly.
struct FakeDevice {
  std::map<uint64_t, std::pair<uintptr_t, size_t>> live;
  uint64_t next = 100;
  int registrations = 0;
  bool fail = false;

  MrCache make(size_t maxEntries, size_t maxBytes) {
    return MrCache(
        maxEntries, maxBytes,
        [this](uintptr_t b, size_t len, MrKeys* k) -> Status {
          if (fail) return errorf(rinaSystemError, "ibv_reg_mr: Cannot allocate memory");
          ++registrations;
          k->handle = next++;
          k->lkey = static_cast<uint32_t>(k->handle) + 1000;
          k->rkey = static_cast<uint32_t>(k->handle) + 2000;
          live[k->handle] = {b, len};
          return {};
        },
        [this](const MrKeys& k) { live.erase(k.handle); });
  }
};

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(MrCache, ContainedRangeHitsTheSameRegistration) {
  FakeDevice dev;
  MrCache c = dev.make(8, 1 << 30);
  MrRegion r1, r2;
  ASSERT_TRUE(c.acquire(at(0x10000), 4096, &r1).ok());
  ASSERT_TRUE(c.acquire(at(0x10100), 100, &r2).ok());
  EXPECT_EQ(r1.keys.handle, r2.keys.handle);
  EXPECT_EQ(dev.registrations, 1);
  EXPECT_EQ(c.hits(), 1u);
  EXPECT_EQ(c.misses(), 1u);
  // One byte past the end is not contained: a new (merged) registration.
  ASSERT_TRUE(c.release(r1.id).ok());
  ASSERT_TRUE(c.release(r2.id).ok());
  MrRegion r3;
  ASSERT_TRUE(c.acquire(at(0x10000), 4097, &r3).ok());
  EXPECT_NE(r3.keys.handle, r1.keys.handle);
  EXPECT_EQ(dev.registrations, 2);
}

TEST(MrCache, OverlapMergesUnpinnedEntriesIntoTheUnion) {
  FakeDevice dev;
  MrCache c = dev.make(8, 1 << 30);
  MrRegion a, b, m;
  ASSERT_TRUE(c.acquire(at(0x1000), 0x1000, &a).ok());  // [0x1000, 0x2000)
  ASSERT_TRUE(c.acquire(at(0x3000), 0x1000, &b).ok());  // [0x3000, 0x4000)
  ASSERT_TRUE(c.release(a.id).ok());
  ASSERT_TRUE(c.release(b.id).ok());
  ASSERT_TRUE(c.acquire(at(0x1800), 0x2000, &m).ok());  // overlaps both
  EXPECT_EQ(m.begin, 0x1000u);
  EXPECT_EQ(m.end, 0x4000u);
  EXPECT_EQ(c.entries(), 1u);
  ASSERT_EQ(dev.live.size(), 1u);
  EXPECT_EQ(dev.live.begin()->second.first, 0x1000u);
  EXPECT_EQ(dev.live.begin()->second.second, 0x3000u);
}

TEST(MrCache, PinnedOverlapIsKeptAndANewEntryMade) {
  FakeDevice dev;
  MrCache c = dev.make(8, 1 << 30);
  MrRegion a, m;
  ASSERT_TRUE(c.acquire(at(0x1000), 0x1000, &a).ok());  // stays pinned
  ASSERT_TRUE(c.acquire(at(0x1800), 0x1000, &m).ok());
  EXPECT_EQ(m.begin, 0x1800u);
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_EQ(dev.live.size(), 2u);
}

TEST(MrCache, EvictsLeastRecentlyUsedUnpinnedBeyondBudget) {
  FakeDevice dev;
  MrCache c = dev.make(2, 1 << 30);
  MrRegion r;
  std::vector<uint64_t> handles;
  for (uintptr_t base : {0x10000, 0x20000}) {
    ASSERT_TRUE(c.acquire(at(base), 64, &r).ok());
    handles.push_back(r.keys.handle);
    ASSERT_TRUE(c.release(r.id).ok());
  }
  // Touch the first, so the second is the least recently used.
  ASSERT_TRUE(c.acquire(at(0x10000), 64, &r).ok());
  ASSERT_TRUE(c.release(r.id).ok());
  ASSERT_TRUE(c.acquire(at(0x30000), 64, &r).ok());
  ASSERT_TRUE(c.release(r.id).ok());
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_TRUE(dev.live.count(handles[0]));
  EXPECT_FALSE(dev.live.count(handles[1]));
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(c.hits(), 1u);
  EXPECT_EQ(c.misses(), 3u);
}

TEST(MrCache, ByteBudgetEvictsButNeverAPinnedEntry) {
  FakeDevice dev;
  MrCache c = dev.make(16, 8192);
  MrRegion big, other;
  ASSERT_TRUE(c.acquire(at(0x100000), 8192, &big).ok());    // pinned, whole budget
  ASSERT_TRUE(c.acquire(at(0x200000), 4096, &other).ok());  // over budget, pinned too
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_EQ(c.evictions(), 0u);           // nothing could go
  ASSERT_TRUE(c.release(other.id).ok());  // now evictable: goes
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.bytes(), 8192u);
  EXPECT_TRUE(dev.live.count(big.keys.handle));
}

TEST(MrCache, InvalidateDropsOverlapsAndDefersPinned) {
  FakeDevice dev;
  MrCache c = dev.make(8, 1 << 30);
  MrRegion a, b, again;
  ASSERT_TRUE(c.acquire(at(0x1000), 0x1000, &a).ok());
  ASSERT_TRUE(c.release(a.id).ok());
  ASSERT_TRUE(c.acquire(at(0x8000), 0x1000, &b).ok());  // pinned
  c.invalidate(at(0x1fff), 1);                          // last byte of a
  EXPECT_FALSE(dev.live.count(a.keys.handle));
  c.invalidate(at(0x8000), 0x1000);
  EXPECT_TRUE(dev.live.count(b.keys.handle));  // still in use
  // A stale entry is never handed out again, even though it contains the range.
  ASSERT_TRUE(c.acquire(at(0x8000), 16, &again).ok());
  EXPECT_NE(again.keys.handle, b.keys.handle);
  ASSERT_TRUE(c.release(b.id).ok());
  EXPECT_FALSE(dev.live.count(b.keys.handle));
  c.invalidate(at(0x2000), 0x6000);  // touches neither remaining range
  EXPECT_TRUE(dev.live.count(again.keys.handle));
}

TEST(MrCache, ErrorsAreReported) {
  FakeDevice dev;
  MrCache c = dev.make(8, 1 << 30);
  MrRegion r;
  EXPECT_EQ(c.acquire(at(0x1000), 0, &r).code(), rinaInvalidArgument);
  EXPECT_EQ(c.acquire(at(UINTPTR_MAX - 10), 100, &r).code(), rinaInvalidArgument);
  dev.fail = true;
  Status s = c.acquire(at(0x1000), 10, &r);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("ibv_reg_mr"), std::string::npos);
  EXPECT_EQ(c.entries(), 0u);
  dev.fail = false;
  ASSERT_TRUE(c.acquire(at(0x1000), 10, &r).ok());
  ASSERT_TRUE(c.release(r.id).ok());
  EXPECT_EQ(c.release(r.id).code(), rinaInternalError);  // double release
  EXPECT_EQ(c.release(999999).code(), rinaInternalError);
}

TEST(MrCache, DestructorDeregistersEverything) {
  FakeDevice dev;
  {
    MrCache c = dev.make(8, 1 << 30);
    MrRegion r;
    ASSERT_TRUE(c.acquire(at(0x1000), 10, &r).ok());
    ASSERT_TRUE(c.acquire(at(0x9000), 10, &r).ok());
    EXPECT_EQ(dev.live.size(), 2u);
  }
  EXPECT_TRUE(dev.live.empty());
}

}  // namespace
}  // namespace rina::transport::verbs
