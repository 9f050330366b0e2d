// rinaAllToAll with send buffers from rinaMemAlloc, every rank on this
// host: such a sender's blocks are read straight out of its buffer by the
// receivers (slot_exchange.cc). On every rank or some only, at block sizes
// around the slot's share (one chunk, two), at offsets inside the
// allocation that are not aligned, and across a free and a new allocation
// at the same fd number; every byte against a serial reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algo/engine/context.h"
#include "api/handle.h"
#include "comm/communicator.h"
#include "rank_harness.h"
#include "transport/shm_group.h"

namespace rina::testing {
namespace {

// Byte i of rank `from`'s block for rank `to` in call `salt`.
uint8_t valueOf(int from, int to, size_t i, int salt) {
  return static_cast<uint8_t>(from * 31 + to * 7 + i * 13 + (i >> 8) * 3 + salt * 101);
}

// One all-to-all of `block` bytes per peer; send from rinaMemAlloc at
// `offset` bytes into the allocation when `mapped`. Returns the peers'
// allocations this rank has mapped since the communicator was made.
size_t allToAllChecked(int rank, int n, rinaComm_t comm, size_t block, bool mapped, size_t offset,
                       int salt) {
  const size_t total = block * static_cast<size_t>(n);
  void* allocation = nullptr;
  std::vector<uint8_t> plain;
  uint8_t* send;
  if (mapped) {
    EXPECT_EQ(rinaMemAlloc(&allocation, total + offset), rinaSuccess);
    send = static_cast<uint8_t*>(allocation) + offset;
  } else {
    plain.resize(total);
    send = plain.data();
  }
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < block; ++i) send[p * block + i] = valueOf(rank, p, i, salt);
  }
  std::vector<uint8_t> recv(total, 0xee);
  EXPECT_EQ(rinaAllToAll(send, recv.data(), block, rinaUint8, comm), rinaSuccess)
      << rinaCommGetLastError(comm);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < block; ++i) {
      if (recv[p * block + i] != valueOf(p, rank, i, salt)) {
        ADD_FAILURE() << "rank " << rank << ": byte " << i << " from rank " << p << " of " << block
                      << " (salt " << salt << ") is " << int(recv[p * block + i]) << ", not "
                      << int(valueOf(p, rank, i, salt));
        break;
      }
    }
  }
  if (allocation) {
    EXPECT_EQ(rinaMemFree(allocation), rinaSuccess);
  }
  return api::communicatorOf(comm)->hostGroup()->peerMappings().size();
}

// With 3 ranks a slot (1 MiB) carries 512 KiB per peer a round.
constexpr size_t kShare = 512 << 10;

struct Mix {
  const char* name;
  std::vector<bool> mapped;  // by rank
};

class MappedAllToAll : public ::testing::TestWithParam<int> {};

TEST_P(MappedAllToAll, BlocksAroundTheChunkSizeMatchTheReference) {
  const std::vector<Mix> mixes = {{"every rank", {true, true, true}},
                                  {"ranks 0 and 2", {true, false, true}},
                                  {"rank 1", {false, true, false}}};
  const Mix& mix = mixes[GetParam()];
  const size_t offsets[] = {0, 3, 4096 + 61};
  runThreads(3, [&](int rank, rinaComm_t comm) {
    int salt = 0;
    for (size_t block : {size_t{1}, size_t{1000}, kShare - 1, kShare, kShare + 1, 3 * kShare + 5}) {
      const size_t offset = offsets[salt % 3];
      SCOPED_TRACE(std::string(mix.name) + ", block " + std::to_string(block) + ", offset " +
                   std::to_string(offset));
      const size_t held = allToAllChecked(rank, 3, comm, block, mix.mapped[rank], offset, ++salt);
      // A rank that had a mapped peer has mapped it (one copy, not the slots).
      const bool peerMapped = mix.mapped[(rank + 1) % 3] || mix.mapped[(rank + 2) % 3];
      EXPECT_EQ(held > 0, peerMapped) << "rank " << rank;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Mixes, MappedAllToAll, ::testing::Values(0, 1, 2));

// Each call frees its buffer and the next allocates one, at the fd number
// just freed: the receivers must read the new values, never a mapping of
// the old allocation; the mappings held stay bounded.
TEST(MappedAllToAllReuse, ANewAllocationAtAFreedFdIsReadAfresh) {
  runThreads(3, [&](int rank, rinaComm_t comm) {
    for (int call = 0; call < 12; ++call) {
      SCOPED_TRACE(call);
      const size_t held = allToAllChecked(rank, 3, comm, 4000, true, 0, call);
      EXPECT_LE(held, 2u * 8u);
    }
  });
}

// Ranks that may not open their peers' memory (a container without
// /proc/<pid>/fd, played by a /proc that is not there) copy their blocks
// out of the senders' processes instead: the same bytes, nothing mapped.
TEST(MappedAllToAllFallback, RanksThatMayNotMapCopyFromTheSendersProcess) {
  runThreads(3, [&](int rank, rinaComm_t comm) {
    transport::ShmGroup* g = api::communicatorOf(comm)->hostGroup();
    ASSERT_NE(g, nullptr);
    if (!g->copiesWork()) GTEST_SKIP() << "no process_vm_readv here either";
    g->peerMappings().setProcRoot("/nonexistent-proc");
    for (size_t block : {size_t{1000}, kShare + 1}) {
      SCOPED_TRACE(block);
      EXPECT_EQ(allToAllChecked(rank, 3, comm, block, true, 3, 9), 0u);
    }
  });
}

// Ranks in processes of their own: the receivers open the senders' memory
// through /proc/<pid>/fd. Ranks 0 and 2 send from rinaMemAlloc.
TEST(MappedAllToAllProcesses, SendersInOtherProcessesAreReadStraight) {
  const std::vector<int> codes = runProcesses(
      4,
      [](int rank, rinaComm_t comm) -> int {
        for (size_t block : {size_t{100}, size_t{300000}, size_t{1} << 20}) {
          const size_t held = allToAllChecked(rank, 4, comm, block, rank % 2 == 0, 5, 7);
          if (held == 0) return 10;
          if (::testing::Test::HasFailure()) return 11;
        }
        return 0;
      },
      120);
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(codes[rank], 0) << "rank " << rank;
}

}  // namespace
}  // namespace rina::testing
