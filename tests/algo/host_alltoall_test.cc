// rinaAllToAll with every rank on this host, where it goes through the host
// segment (its slots below RINA_ALLTOALL_SLOT_BYTES per rank, else straight
// between the buffers): counts that differ between ranks, on the same path
// or on the two paths, are reported by every rank naming both counts; a
// rank that dies in the middle of its copies out of the slots fails the
// others' call naming it, whether it read the others' slots or their
// send buffers (from rinaMemAlloc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "rank_harness.h"

namespace rina::testing {
namespace {

bool contains(const char* text, const std::string& part) {
  return std::string(text).find(part) != std::string::npos;
}

// Rank 1 passes another count than rank 0: both small (both through the
// slots), or rank 1's at the cut-over (rank 0 through the slots, rank 1
// straight). Each rank's error names its peer's count and its own.
TEST(HostAllToAll, CountsThatDifferAreReportedByEveryRank) {
  const size_t cut = 64 << 10;
  for (size_t other : {size_t{101}, cut / 2}) {
    SCOPED_TRACE(other);
    config::Options options;
    options.allToAllSlotBytes = static_cast<int64_t>(cut);
    runThreads(2, options, [&](int rank, rinaComm_t comm) {
      const size_t mine = rank == 0 ? 100 : other, theirs = rank == 0 ? other : 100;
      std::vector<uint8_t> send(2 * mine, 1), recv(2 * mine);
      EXPECT_EQ(rinaAllToAll(send.data(), recv.data(), mine, rinaUint8, comm), rinaInvalidUsage);
      const char* e = rinaCommGetLastError(comm);
      EXPECT_TRUE(contains(e, "peer " + std::to_string(1 - rank) + " is in all-to-all")) << e;
      EXPECT_TRUE(contains(e, "(uint8, " + std::to_string(theirs) + " elements per block")) << e;
      EXPECT_TRUE(contains(e, "while this rank is in all-to-all #")) << e;
      EXPECT_TRUE(contains(e, "(uint8, " + std::to_string(mine) + " elements per block")) << e;
    });
  }
}

// Rank 2 dies while it copies its block from rank 0 out of rank 0's slot:
// at a page in the first of three chunks (a fault that kills it,
// dieWhenWritten). A rank posts one chunk ahead of the one it reads, so
// rank 2's third never comes: ranks 0 and 1 wait for it, and their call
// fails naming rank 2, without hanging. With the send buffers from
// rinaMemAlloc, rank 2 dies copying out of rank 0's buffer, and ranks 0 and
// 1, which may not return before rank 2 has read theirs, fail the same way.
class HostAllToAllDeath : public ::testing::TestWithParam<bool> {};

TEST_P(HostAllToAllDeath, ARankDyingMidCopyFailsTheOthers) {
  const bool fromRinaMemory = GetParam();
  if (!userfaultfdWorks()) GTEST_SKIP() << "no userfaultfd in this kernel or sandbox";
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  ScopedEnv slots("RINA_ALLTOALL_SLOT_BYTES", "8M");
  ProcessBarrier bothFailed(2);
  // 1.5 MiB blocks: 4.5 MiB per rank, below the cut-over; a rank's share
  // of its 1 MiB slot for one of 2 peers is 512 KiB.
  const size_t block = 3 << 19;
  std::vector<int> codes = runProcesses(
      3,
      [&](int rank, rinaComm_t comm) -> int {
        std::vector<uint8_t> plain(3 * block);
        void* memory = nullptr;
        if (fromRinaMemory && rinaMemAlloc(&memory, 3 * block) != rinaSuccess) return 69;
        uint8_t* send = memory ? static_cast<uint8_t*>(memory) : plain.data();
        std::memset(send, rank + 1, 3 * block);
        // One call together first: every pair connected, the slots touched.
        std::vector<uint8_t> warm(3 * block);
        if (rinaAllToAll(send, warm.data(), block, rinaUint8, comm) != rinaSuccess) {
          return 70;
        }
        const size_t page = static_cast<size_t>(getpagesize());
        auto* recv = static_cast<char*>(
            mmap(nullptr, 3 * block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (recv == MAP_FAILED) return 71;
        if (rank == 2 && !dieWhenWritten(recv + block / 8 / page * page)) return 72;
        const rinaResult_t rc = rinaAllToAll(send, recv, block, rinaUint8, comm);
        if (rank == 2) return 73;  // cannot finish: the fault's handler kills it
        if (rc != rinaRemoteError) return 74;
        const std::string e = rinaCommGetLastError(comm);
        if (!bothFailed.arriveAndWait(30000)) return 75;
        return e.find("peer 2 hung up") != std::string::npos ? 0 : 76;
      },
      60);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(codes[2], 128 + SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(SendBuffers, HostAllToAllDeath, ::testing::Values(false, true));

}  // namespace
}  // namespace rina::testing
