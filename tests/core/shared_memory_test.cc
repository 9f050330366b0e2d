// Memory from rinaMemAlloc: the registry's answers for ranges inside,
// outside and across allocations, frees of pointers it never gave, and a
// peer's view of an allocation (this process plays the peer, through
// /proc/<its pid>/fd), with descriptors that lie.
#include "core/shared_memory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "rina/rina.h"

namespace rina {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SharedMemory, FindsRangesWhollyInsideOneAllocation) {
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(rinaMemAlloc(&a, 1000), rinaSuccess);
  ASSERT_EQ(rinaMemAlloc(&b, 5000), rinaSuccess);
  char* pa = static_cast<char*>(a);
  SharedMemoryRange r;
  ASSERT_TRUE(findSharedMemory(pa, 1000, &r));
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(r.size, 1000u);
  ASSERT_TRUE(findSharedMemory(pa + 17, 983, &r));
  EXPECT_EQ(r.offset, 17u);
  SharedMemoryRange rb;
  ASSERT_TRUE(findSharedMemory(static_cast<char*>(b) + 4999, 1, &rb));
  EXPECT_EQ(rb.offset, 4999u);
  EXPECT_NE(rb.serial, r.serial);
  EXPECT_NE(rb.fd, r.fd);
  EXPECT_FALSE(findSharedMemory(pa + 17, 984, &r));  // one byte past the end
  EXPECT_FALSE(findSharedMemory(pa - 1, 2, &r));     // starts before it
  EXPECT_FALSE(findSharedMemory(pa + 1000, 1, &r));  // just after it
  int local = 0;
  EXPECT_FALSE(findSharedMemory(&local, sizeof local, &r));
  // Zero-filled, and writable.
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(pa[i], 0) << i;
  std::memset(pa, 7, 1000);
  EXPECT_EQ(rinaMemFree(a), rinaSuccess);
  EXPECT_EQ(rinaMemFree(b), rinaSuccess);
  EXPECT_FALSE(findSharedMemory(pa, 1, &r));
}

TEST(SharedMemory, BadArgumentsAndFreesAreRefusedWithAMessage) {
  EXPECT_EQ(rinaMemAlloc(nullptr, 10), rinaInvalidArgument);
  EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "rinaMemAlloc: ptr is NULL"));
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(rinaMemAlloc(&p, 0), rinaInvalidArgument);
  EXPECT_EQ(p, nullptr);
  EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "rinaMemAlloc: size is 0"));
  EXPECT_EQ(rinaMemFree(nullptr), rinaInvalidArgument);

  int local = 0;
  EXPECT_EQ(rinaMemFree(&local), rinaInvalidUsage);
  EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "is not memory from rinaMemAlloc"));
  ASSERT_EQ(rinaMemAlloc(&p, 4096), rinaSuccess);
  EXPECT_EQ(rinaMemFree(static_cast<char*>(p) + 8), rinaInvalidUsage);
  EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "is not the pointer it returned"));
  EXPECT_EQ(rinaMemFree(p), rinaSuccess);
  EXPECT_EQ(rinaMemFree(p), rinaInvalidUsage);  // twice
  EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "or was freed already"));
}

PeerAllocation describe(void* p) {
  SharedMemoryRange r;
  EXPECT_TRUE(findSharedMemory(p, 1, &r));
  return PeerAllocation{static_cast<int>(getpid()), r.fd, r.serial};
}

TEST(PeerMappings, MapsAPeersAllocationAndSeesItsWrites) {
  void* p = nullptr;
  ASSERT_EQ(rinaMemAlloc(&p, 8192), rinaSuccess);
  std::memset(p, 0x5a, 8192);
  PeerMappings maps;
  const char* at = nullptr;
  ASSERT_TRUE(maps.map(0, 1, describe(p), 100, 8092, &at).ok());
  EXPECT_EQ(at[0], 0x5a);
  static_cast<char*>(p)[100] = 0x11;  // shared, not a copy
  EXPECT_EQ(at[0], 0x11);
  EXPECT_EQ(maps.size(), 1u);
  ASSERT_TRUE(maps.map(0, 1, describe(p), 0, 8192, &at).ok());
  EXPECT_EQ(maps.size(), 1u);  // the same mapping again
  EXPECT_EQ(rinaMemFree(p), rinaSuccess);
}

TEST(PeerMappings, DescriptorsThatLieAreErrorsNamingThePeer) {
  void* p = nullptr;
  ASSERT_EQ(rinaMemAlloc(&p, 4096), rinaSuccess);
  PeerMappings maps;
  const char* at = nullptr;
  PeerAllocation a = describe(p);

  Status s = maps.map(0, 3, a, 4000, 97, &at);  // past the end
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_TRUE(contains(s.message(), "rank 0: peer 3 names bytes [4000, +97)")) << s.message();
  s = maps.map(0, 3, a, ~size_t{0}, 2, &at);  // an offset that wraps
  EXPECT_EQ(s.code(), rinaRemoteError);

  PeerAllocation wrongSerial = a;
  wrongSerial.serial += 1000;
  s = maps.map(0, 3, wrongSerial, 0, 1, &at);
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_TRUE(contains(s.message(), "peer 3 (pid")) << s.message();
  EXPECT_TRUE(contains(s.message(), "rina-mem-" + std::to_string(a.serial) + " (deleted)"))
      << s.message();

  // The bounds were checked on a mapping of the real allocation, now held:
  // a lie about its fd under its serial is not looked at again.
  EXPECT_EQ(maps.size(), 1u);
  PeerMappings fresh;
  const int devNull = open("/dev/null", O_RDONLY | O_CLOEXEC);  // not a memfd at all
  ASSERT_GE(devNull, 0);
  PeerAllocation notMemfd = a;
  notMemfd.fd = devNull;
  s = fresh.map(0, 3, notMemfd, 0, 1, &at);
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_TRUE(contains(s.message(), "/dev/null")) << s.message();
  close(devNull);

  PeerAllocation noFd = a;
  noFd.fd = 1 << 20;  // no such fd: what a process may not open
  s = fresh.map(0, 3, noFd, 0, 1, &at);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_TRUE(contains(s.message(), "peer 3")) << s.message();
  EXPECT_EQ(fresh.size(), 0u);
  EXPECT_EQ(rinaMemFree(p), rinaSuccess);
}

// A freed allocation's fd number is given to the next one; the mapping of
// the first, still held, must not answer for the second.
TEST(PeerMappings, AReusedFdNumberIsANewAllocation) {
  void* first = nullptr;
  ASSERT_EQ(rinaMemAlloc(&first, 4096), rinaSuccess);
  std::memset(first, 1, 4096);
  const PeerAllocation a = describe(first);
  PeerMappings maps;
  const char* at = nullptr;
  ASSERT_TRUE(maps.map(0, 1, a, 0, 4096, &at).ok());
  EXPECT_EQ(at[0], 1);
  ASSERT_EQ(rinaMemFree(first), rinaSuccess);
  void* second = nullptr;
  ASSERT_EQ(rinaMemAlloc(&second, 4096), rinaSuccess);
  std::memset(second, 2, 4096);
  const PeerAllocation b = describe(second);
  EXPECT_EQ(b.fd, a.fd);
  EXPECT_NE(b.serial, a.serial);
  ASSERT_TRUE(maps.map(0, 1, b, 0, 4096, &at).ok());
  EXPECT_EQ(at[0], 2);
  EXPECT_EQ(maps.size(), 2u);
  // The first allocation's serial names no live fd any more.
  EXPECT_EQ(rinaMemFree(second), rinaSuccess);
}

TEST(PeerMappings, KeepsAtMostItsBoundPerPeerDroppingTheLeastRecentlyUsed) {
  void* p[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rinaMemAlloc(&p[i], 4096), rinaSuccess);
    std::memset(p[i], i + 1, 4096);
  }
  PeerMappings maps(2);
  const char* at = nullptr;
  ASSERT_TRUE(maps.map(0, 1, describe(p[0]), 0, 1, &at).ok());
  ASSERT_TRUE(maps.map(0, 1, describe(p[1]), 0, 1, &at).ok());
  ASSERT_TRUE(maps.map(0, 2, describe(p[2]), 0, 1, &at).ok());  // another peer's
  ASSERT_TRUE(maps.map(0, 1, describe(p[0]), 0, 1, &at).ok());  // p[1] is now the oldest
  EXPECT_EQ(maps.size(), 3u);
  ASSERT_TRUE(maps.map(0, 1, describe(p[2]), 0, 1, &at).ok());
  EXPECT_EQ(maps.size(), 3u);
  EXPECT_EQ(at[0], 3);
  ASSERT_TRUE(maps.map(0, 1, describe(p[0]), 0, 1, &at).ok());
  EXPECT_EQ(maps.size(), 3u);  // still held
  EXPECT_EQ(at[0], 1);
  ASSERT_TRUE(maps.map(0, 1, describe(p[1]), 0, 1, &at).ok());  // mapped again
  EXPECT_EQ(maps.size(), 3u);
  EXPECT_EQ(at[0], 2);
  // The same serial from another process (a renumbered rank) is not a hit.
  PeerAllocation elsewhere = describe(p[1]);
  elsewhere.pid = static_cast<int>(getppid());
  EXPECT_FALSE(maps.map(0, 1, elsewhere, 0, 1, &at).ok());
  maps.clear();
  EXPECT_EQ(maps.size(), 0u);
  ASSERT_TRUE(maps.map(0, 1, describe(p[1]), 0, 1, &at).ok());
  EXPECT_EQ(at[0], 2);
  for (void* q : p) EXPECT_EQ(rinaMemFree(q), rinaSuccess);
}

}  // namespace
}  // namespace rina
