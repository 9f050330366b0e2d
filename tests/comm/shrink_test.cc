// rinaCommShrink: the survivors form a communicator without the excluded
// ranks, numbered in their old order, over the connections they had; its
// collectives are exact against a serial reference of the survivors'
// inputs (int32 and float32, several sizes, shared memory and TCP, flat
// and rack algorithms), after a healthy shrink, after a rank was killed in
// a loop of allreduces (revoke, then shrink), and after two shrinks in a
// row.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <latch>
#include <string>
#include <vector>

#include "elastic_checks.h"
#include "member_values.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

// Allreduces of 1, 1000 and 300000 elements, int32 and float32, on comm,
// whose members are ids (ids[r]: the identity of rank r), `rounds` times;
// 0 when all are exact, else 22 (and a line on stderr): forked ranks exit
// with it.
int exactAllReduces(rinaComm_t comm, const std::vector<int>& ids, int rounds = 2) {
  for (int round = 0; round < rounds; ++round) {
    if (auto r = exactMemberAllReduces(comm, ids, {1, 1000, 300000}); !r) {
      fprintf(stderr, "%s\n", r.message());
      return 22;
    }
  }
  return 0;
}

std::vector<int> without(int n, const std::vector<int>& out) {
  std::vector<int> ids;
  for (int r = 0; r < n; ++r) {
    if (std::find(out.begin(), out.end(), r) == out.end()) ids.push_back(r);
  }
  return ids;
}

// n thread ranks; `out` do not take part; the others shrink them away and
// check their collectives.
void healthyShrink(int n, const std::vector<int>& out) {
  std::latch shrunk(n - static_cast<int>(out.size()));
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(exactAllReduces(comm, without(n, {}), 1), 0);
    if (std::find(out.begin(), out.end(), rank) != out.end()) {
      shrunk.wait();  // its connections close under it; it only destroys
      return;
    }
    rinaComm_t next = nullptr;
    ASSERT_EQ(
        rinaCommShrink(comm, out.data(), static_cast<int>(out.size()), &next, RINA_SHRINK_DEFAULT),
        rinaSuccess)
        << rinaCommGetLastError(comm);
    shrunk.count_down();
    const std::vector<int> ids = without(n, out);
    int newRank = -1, size = 0;
    ASSERT_EQ(rinaCommUserRank(next, &newRank), rinaSuccess);
    ASSERT_EQ(rinaCommCount(next, &size), rinaSuccess);
    EXPECT_EQ(size, static_cast<int>(ids.size()));
    EXPECT_EQ(ids[newRank], rank);  // numbered in the old order
    EXPECT_EQ(exactAllReduces(next, ids), 0);
    // The old one is used up.
    int32_t v = 1;
    EXPECT_EQ(rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm), rinaInvalidUsage);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "used up by rinaCommShrink"))
        << rinaCommGetLastError(comm);
    EXPECT_EQ(rinaCommDestroy(next), rinaSuccess);
  });
}

TEST(Shrink, HealthyCommunicatorWithoutOneRank) { healthyShrink(5, {2}); }
TEST(Shrink, HealthyCommunicatorWithoutTheFirstAndLast) { healthyShrink(6, {0, 5}); }
TEST(Shrink, DownToOneRank) { healthyShrink(3, {0, 2}); }
TEST(Shrink, HealthyCommunicatorOverTcp) {
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  healthyShrink(5, {1, 3});
}
TEST(Shrink, HealthyCommunicatorOverStripedTcp) {
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  ScopedEnv nsocks("RINA_SOCKET_NSOCKS", "3");
  healthyShrink(4, {2});
}
TEST(Shrink, RackAlgorithmKeepsItsRacks) {
  ScopedEnv racks("RINA_RACKS", "3,2,2");
  ScopedEnv algo("RINA_ALGO", "hier");
  healthyShrink(7, {1, 4});
}

// A rank killed in the middle of a loop of allreduces: the survivors see an
// error (naming it, or revoked), revoke, shrink it away, and the next
// allreduces are exact; a second shrink then takes one more rank out.
void killThenShrink(const char* shmDisable, int n, size_t count) {
  ScopedEnv shm("RINA_SHM_DISABLE", shmDisable);
  ScopedEnv timeout("RINA_TIMEOUT_MS", "30000");
  const int victim = 1;
  // The second shrink starts once every survivor is done with the first
  // one's calls (a shrink with RINA_SHRINK_ABORT stops calls in progress).
  ProcessBarrier firstDone(n - 1);
  auto codes = runProcesses(
      n,
      [&](int rank, rinaComm_t comm) {
        std::vector<float> buf(count, 1.0f);
        int i = 0;
        for (; i < 1000; ++i) {
          if (rank == victim && i == 3) raise(SIGKILL);
          if (rinaAllReduce(buf.data(), buf.data(), count, rinaFloat32, rinaSum, comm) !=
              rinaSuccess) {
            break;
          }
        }
        if (i == 1000) return 2;
        rinaCommRevoke(comm);
        rinaComm_t next = nullptr;
        const int out[] = {victim};
        if (rinaCommShrink(comm, out, 1, &next, RINA_SHRINK_DEFAULT) != rinaSuccess) {
          fprintf(stderr, "rank %d: shrink: %s\n", rank, rinaCommGetLastError(comm));
          return 3;
        }
        std::vector<int> ids = without(n, {victim});
        if (int rc = exactAllReduces(next, ids); rc != 0) return rc;
        if (!firstDone.arriveAndWait(60000)) return 8;
        // Again: the last rank leaves (it destroys its communicator, its
        // connections close), the others shrink it away too.
        int newRank = -1;
        rinaCommUserRank(next, &newRank);
        const int last = static_cast<int>(ids.size()) - 1;
        if (newRank == last) {
          rinaCommDestroy(next);
          rinaCommDestroy(comm);
          return 0;
        }
        rinaComm_t third = nullptr;
        if (rinaCommShrink(next, &last, 1, &third, RINA_SHRINK_ABORT) != rinaSuccess) {
          fprintf(stderr, "rank %d: second shrink: %s\n", rank, rinaCommGetLastError(next));
          return 4;
        }
        ids.pop_back();
        int rc = exactAllReduces(third, ids);
        rinaCommDestroy(third);
        rinaCommDestroy(next);
        return rc;
      },
      120);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(codes[r], r == victim ? 128 + SIGKILL : 0) << "rank " << r;
  }
}

TEST(Shrink, AfterAKilledRankOverSharedMemory) { killThenShrink("0", 5, 1 << 18); }
TEST(Shrink, AfterAKilledRankOverTcp) { killThenShrink("1", 5, 1 << 18); }
TEST(Shrink, AfterAKilledRankInOneShot) { killThenShrink("0", 4, 64); }

}  // namespace
}  // namespace rina::testing
