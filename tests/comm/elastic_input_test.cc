// Bad input to the elastic calls, each with the input that triggers it: a
// clear error naming the argument or the state, on the rank that gave it
// and, for a collective one, promptly on the others too (RINA_TIMEOUT_MS is
// 20 s here; every wait below is bounded well under it), never a hang and
// never a wrong sum; after a refused shrink the same communicator shrinks
// with good arguments.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <latch>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "elastic_checks.h"
#include "member_values.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

using Clock = std::chrono::steady_clock;

// 5 ranks; rank 4 takes no part (excluded by the good list {4}). Rank 1
// calls rinaCommShrink with `bad` and gets rinaInvalidArgument naming
// `badWhat`; ranks 0, 2, 3 get rinaInvalidUsage naming rank 1's reason at
// once. Then every survivor shrinks with the good list and sums exactly.
void refusedShrink(const std::vector<int>& bad, int badCount, int flags,
                   const std::string& badWhat) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  runWithTheLastRankOut(5, [&](int rank, rinaComm_t comm) {
    const int good[] = {4};
    rinaComm_t next = reinterpret_cast<rinaComm_t>(1);
    const Clock::time_point t0 = Clock::now();
    if (rank == 1) {
      EXPECT_EQ(rinaCommShrink(comm, bad.empty() ? nullptr : bad.data(), badCount, &next, flags),
                rinaInvalidArgument);
      EXPECT_TRUE(contains(rinaCommGetLastError(comm), badWhat)) << rinaCommGetLastError(comm);
      EXPECT_EQ(next, nullptr);
    } else {
      EXPECT_EQ(rinaCommShrink(comm, good, 1, &next, RINA_SHRINK_DEFAULT), rinaInvalidUsage);
      const std::string msg = rinaCommGetLastError(comm);
      EXPECT_TRUE(contains(msg, "rank 1")) << msg;
      EXPECT_TRUE(contains(msg, badWhat)) << msg;
      EXPECT_LT(msSince(t0), 5000);
    }
    // The same communicator, good arguments everywhere.
    ASSERT_EQ(rinaCommShrink(comm, good, 1, &next, RINA_SHRINK_DEFAULT), rinaSuccess)
        << rinaCommGetLastError(comm);
    std::vector<int32_t> v = memberInts(rank, 1000);
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, next), rinaSuccess);
    EXPECT_EQ(firstWrongInt(v, {0, 1, 2, 3}), -1);
    EXPECT_EQ(rinaCommDestroy(next), rinaSuccess);
  });
}

TEST(ShrinkInput, ARankListedTwice) {
  refusedShrink({4, 4}, 2, RINA_SHRINK_DEFAULT, "excludeRanks lists rank 4 twice");
}
TEST(ShrinkInput, ARankOutOfRange) {
  refusedShrink({4, 5}, 2, RINA_SHRINK_DEFAULT, "excludeRanks[1] = 5 is outside [0, 5)");
}
TEST(ShrinkInput, ANegativeRank) {
  refusedShrink({-1}, 1, RINA_SHRINK_DEFAULT, "excludeRanks[0] = -1 is outside [0, 5)");
}
TEST(ShrinkInput, ExcludingItself) {
  refusedShrink({4, 1}, 2, RINA_SHRINK_DEFAULT, "excludeRanks[1] is this rank (1)");
}
TEST(ShrinkInput, ExcludingEveryone) {
  refusedShrink({0, 2, 3, 4, 1}, 5, RINA_SHRINK_DEFAULT, "excludeRanks[4] is this rank (1)");
}
TEST(ShrinkInput, ANegativeCount) {
  refusedShrink({4}, -1, RINA_SHRINK_DEFAULT, "excludeCount -1 < 0");
}
TEST(ShrinkInput, ANullListWithACount) {
  refusedShrink({}, 1, RINA_SHRINK_DEFAULT, "excludeRanks is NULL with excludeCount 1");
}
TEST(ShrinkInput, UnknownFlags) {
  refusedShrink({4}, 1, 7, "flags 7 is neither RINA_SHRINK_DEFAULT nor RINA_SHRINK_ABORT");
}

// Lists that differ across the survivors: every survivor fails at once,
// naming both lists; nobody gets a communicator.
TEST(ShrinkInput, ListsThatDifferAcrossRanks) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  runWithTheLastRankOut(5, [&](int rank, rinaComm_t comm) {
    const std::vector<int> list = rank == 3 ? std::vector<int>{2, 4} : std::vector<int>{4};
    rinaComm_t next = nullptr;
    const Clock::time_point t0 = Clock::now();
    EXPECT_EQ(rinaCommShrink(comm, list.data(), static_cast<int>(list.size()), &next,
                             RINA_SHRINK_DEFAULT),
              rinaInvalidUsage);
    EXPECT_EQ(next, nullptr);
    EXPECT_LT(msSince(t0), 5000);
    const std::string msg = rinaCommGetLastError(comm);
    EXPECT_TRUE(contains(msg, "{2,4}") && contains(msg, "{4}")) << msg;
  });
}

// A rank that failed but is not in the list: the survivors next to it see
// its connection closed and every survivor is told to exclude it.
TEST(ShrinkInput, AFailedRankLeftOutOfTheList) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  ProcessBarrier bothFailed(2);  // ranks 0 and 1 stay until both have their error
  // Every rank has its sum before rank 2 dies: a rank still in the call
  // when the shrink's failure revokes the communicator would be told so.
  ProcessBarrier allSummed(4);
  auto codes = runProcesses(
      4,
      [&](int rank, rinaComm_t comm) {
        int32_t v = 1;
        if (rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm) != rinaSuccess) {
          fprintf(stderr, "rank %d: allreduce: %s\n", rank, rinaCommGetLastError(comm));
          return 1;
        }
        if (!allSummed.arriveAndWait(20000)) return 6;
        if (rank == 2) raise(SIGKILL);
        const int out[] = {3};
        if (rank == 3) return 0;  // excluded: leaves
        rinaComm_t next = nullptr;
        const Clock::time_point t0 = Clock::now();
        const rinaResult_t rc = rinaCommShrink(comm, out, 1, &next, RINA_SHRINK_DEFAULT);
        const std::string msg = rinaCommGetLastError(comm);
        fprintf(stderr, "rank %d: %s after %lld ms: %s\n", rank, rinaGetErrorString(rc),
                static_cast<long long>(msSince(t0)), msg.c_str());
        if (rc == rinaSuccess) return 2;
        if (!contains(msg, "rank 2 is not excluded")) return 3;
        if (msSince(t0) >= 10000) return 4;
        return bothFailed.arriveAndWait(20000) ? 0 : 5;
      },
      60);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(codes[2], 128 + SIGKILL);
  EXPECT_EQ(codes[3], 0);
}

// Every call on a revoked communicator says so, naming who revoked it;
// nothing runs, so no buffer changes.
TEST(RevokedInput, EveryCallSaysRevoked) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    if (rank == 0) {
      ASSERT_EQ(rinaCommRevoke(comm), rinaSuccess);
    }
    std::vector<int32_t> v(8, rank + 1);
    // Rank 1 may read the notice at any of these: each returns rinaRevoked
    // once it has, and none changes the buffer.
    for (int i = 0; i < 1000; ++i) {
      rinaResult_t rc = rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm);
      if (rc == rinaRevoked) break;
      ASSERT_EQ(rc, rinaSuccess) << rinaCommGetLastError(comm);  // both ranks ran it
      ASSERT_EQ(v[0] % 3, 0);
    }
    const std::vector<int32_t> before = v;
    EXPECT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm), rinaRevoked);
    EXPECT_EQ(rinaReduceScatter(v.data(), v.data(), 4, rinaInt32, rinaSum, comm), rinaRevoked);
    EXPECT_EQ(rinaAllGather(v.data(), v.data(), 4, rinaInt32, comm), rinaRevoked);
    EXPECT_EQ(rinaBroadcast(v.data(), v.data(), 8, rinaInt32, 0, comm), rinaRevoked);
    EXPECT_EQ(rinaRecv(v.data(), 8, rinaInt32, 1 - rank, comm), rinaRevoked);
    EXPECT_EQ(v, before);
    rinaComm_t child = nullptr;
    EXPECT_EQ(rinaCommSplit(comm, 0, 0, &child), rinaRevoked);
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
    EXPECT_EQ(rinaCommGrow(comm, 1, id, &child), rinaRevoked);
    const std::string msg = rinaCommGetLastError(comm);
    EXPECT_TRUE(contains(msg, "rinaCommGrow") && contains(msg, "revoked")) << msg;
    EXPECT_EQ(child, nullptr);
  });
}

TEST(SplitInput, ABadColorOnOneRankFailsEveryRankAtOnce) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  runThreads(3, [](int rank, rinaComm_t comm) {
    rinaComm_t child = nullptr;
    const Clock::time_point t0 = Clock::now();
    if (rank == 2) {
      EXPECT_EQ(rinaCommSplit(comm, -5, 0, &child), rinaInvalidArgument);
      EXPECT_TRUE(contains(rinaCommGetLastError(comm), "color -5")) << rinaCommGetLastError(comm);
    } else {
      EXPECT_EQ(rinaCommSplit(comm, 0, rank, &child), rinaInvalidUsage);
      EXPECT_TRUE(contains(rinaCommGetLastError(comm), "rank 2 refused its own arguments"))
          << rinaCommGetLastError(comm);
    }
    EXPECT_LT(msSince(t0), 5000);
    EXPECT_EQ(child, nullptr);
    // The parent is intact.
    std::vector<int32_t> v = memberInts(rank, 100);
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm), rinaSuccess)
        << rinaCommGetLastError(comm);
    EXPECT_EQ(firstWrongInt(v, {0, 1, 2}), -1);
  });
}

// A rank in a split while another is in an allgather of the same size:
// both are told the calls differ, neither reads the other's bytes.
TEST(SplitInput, ASplitAgainstAnotherCall) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  runThreads(2, [](int rank, rinaComm_t comm) {
    const Clock::time_point t0 = Clock::now();
    if (rank == 0) {
      rinaComm_t child = nullptr;
      EXPECT_EQ(rinaCommSplit(comm, 0, 0, &child), rinaInvalidUsage);
      EXPECT_EQ(child, nullptr);
    } else {
      std::vector<char> in(400), out(800);
      EXPECT_EQ(rinaAllGather(in.data(), out.data(), in.size(), rinaUint8, comm), rinaInvalidUsage);
    }
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "calls do not match"))
        << rinaCommGetLastError(comm);
    EXPECT_LT(msSince(t0), 5000);
  });
}

// A grow with arguments that differ across the 3 ranks fails on this one
// at once, saying `what`, and leaves comm usable.
void growFailsAtOnce(rinaComm_t comm, int nNew, const rinaUniqueId& id, const char* what) {
  rinaComm_t next = nullptr;
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(rinaCommGrow(comm, nNew, id, &next), rinaInvalidUsage);
  EXPECT_TRUE(contains(rinaCommGetLastError(comm), what)) << rinaCommGetLastError(comm);
  EXPECT_LT(msSince(t0), 5000);
  // Nothing was used up.
  int32_t v = 1;
  EXPECT_EQ(rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm), rinaSuccess);
  EXPECT_EQ(v, 3);
}

TEST(GrowInput, IdsThatDifferAcrossRanks) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  runThreads(3, [](int rank, rinaComm_t comm) {
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);  // each rank its own: wrong
    growFailsAtOnce(comm, 1, id, "uniqueId differs across ranks");
  });
}

// An id that thread rank 0 makes and every thread rank takes.
struct IdOfRankZero {
  rinaUniqueId id{};
  std::latch made{1};
  const rinaUniqueId& take(int rank) {
    if (rank == 0) {
      EXPECT_EQ(rinaGetUniqueId(&id), rinaSuccess);
      made.count_down();
    }
    made.wait();
    return id;
  }
};

TEST(GrowInput, JoinerCountsThatDifferAcrossRanks) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  IdOfRankZero shared;
  runThreads(3, [&](int rank, rinaComm_t comm) {
    growFailsAtOnce(comm, rank == 2 ? 2 : 1, shared.take(rank),
                    "nNew differs across ranks (from 1 to 2");
  });
}

TEST(GrowInput, AnIdThatIsNotOne) {
  runThreads(2, [](int, rinaComm_t comm) {
    rinaUniqueId garbage;
    std::memset(&garbage, 0x5a, sizeof garbage);
    rinaComm_t next = nullptr;
    EXPECT_EQ(rinaCommGrow(comm, 1, garbage, &next), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "unique id is not from rinaGetUniqueId"))
        << rinaCommGetLastError(comm);
    EXPECT_EQ(rinaCommGrow(comm, 0, garbage, &next), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "nNew 0")) << rinaCommGetLastError(comm);
    EXPECT_EQ(rinaCommJoin(&next, 3, garbage, 0), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "rank 0 of 3"))
        << rinaCommGetLastError(nullptr);
  });
}

// A rank in a grow while another is in an allreduce of the shape of the
// grow's check (6 uint64, max): both are told the calls differ, over the
// host segment and over TCP.
void growAgainstAnAllReduce() {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  runThreads(2, [](int rank, rinaComm_t comm) {
    const Clock::time_point t0 = Clock::now();
    if (rank == 0) {
      rinaUniqueId id;
      ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
      rinaComm_t next = nullptr;
      EXPECT_EQ(rinaCommGrow(comm, 1, id, &next), rinaInvalidUsage);
      EXPECT_EQ(next, nullptr);
    } else {
      uint64_t words[6] = {1, ~uint64_t{1}, 0, ~uint64_t{0}, 0, ~uint64_t{0}};
      EXPECT_EQ(rinaAllReduce(words, words, 6, rinaUint64, rinaMax, comm), rinaInvalidUsage);
    }
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "calls do not match"))
        << rinaCommGetLastError(comm);
    EXPECT_LT(msSince(t0), 5000);
  });
}
TEST(GrowInput, AGrowAgainstAnAllReduceOfItsShape) { growAgainstAnAllReduce(); }
TEST(GrowInput, AGrowAgainstAnAllReduceOfItsShapeOverTcp) {
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  growAgainstAnAllReduce();
}

// A joiner whose id nobody grows with, and ranks that grow without their
// joiner: both end with rinaTimeout saying how many ranks came.
TEST(GrowInput, AJoinerWithTheWrongId) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "1500");
  rinaUniqueId wrong;
  ASSERT_EQ(rinaGetUniqueId(&wrong), rinaSuccess);
  std::thread joiner([&] {
    rinaComm_t comm = nullptr;
    EXPECT_EQ(rinaCommJoin(&comm, 3, wrong, 2), rinaTimeout);
    EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "1 of 3 ranks arrived"))
        << rinaCommGetLastError(nullptr);
  });
  IdOfRankZero right;
  runThreads(2, [&](int rank, rinaComm_t comm) {
    rinaComm_t next = nullptr;
    EXPECT_EQ(rinaCommGrow(comm, 1, right.take(rank), &next), rinaTimeout);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "2 of 3 ranks arrived"))
        << rinaCommGetLastError(comm);
  });
  joiner.join();
}

}  // namespace
}  // namespace rina::testing
